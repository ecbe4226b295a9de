//! The control connection as a socket, for both sides: TCP keepalive and a user timeout
//! ([`keep_alive`]), a reader thread so that a loop can wait on messages with a timeout
//! ([`spawn_reader`]), and the two watchers that tie work to the connection: a server
//! stops what it runs for a controller that went away ([`watch_controller`], its wait on
//! the server's clock), a client closes the connection when it is told to stop
//! ([`closing_on_stop`]). Both wait with [`crate::wait`].
//!
//! It does not speak the protocol: what the messages mean is for the server, the client
//! and the services.

use std::net::TcpStream;
use std::sync::mpsc;
use std::time::Duration;

use model::clock::Clock;
use model::stop::{RaiseOnDrop, Stop};

use crate::frame::read_msg;
use crate::ProtoError;
use engine::clock::{RealClock, RealPauses};
use model::wait::{Poll, Wait};

/// TCP keepalive (first probe after 3 s idle, then every second, 3 unanswered end it) and
/// a 10 s user timeout (unacknowledged data): a control connection to a host that
/// vanished fails within about 10 s.
pub(crate) fn keep_alive(s: &TcpStream) {
    let sock = socket2::SockRef::from(s);
    let ka = socket2::TcpKeepalive::new()
        .with_time(Duration::from_secs(3))
        .with_interval(Duration::from_secs(1))
        .with_retries(3);
    let _ = sock.set_tcp_keepalive(&ka);
    let _ = sock.set_tcp_user_timeout(Some(Duration::from_secs(10)));
}

/// Reads the peer's messages on a helper thread so that the control loop can wait with a
/// timeout without tearing a message in half.
pub(crate) fn spawn_reader<T>(
    ctrl: &TcpStream,
    timeout: Duration,
) -> std::io::Result<mpsc::Receiver<Result<T, ProtoError>>>
where
    T: serde::de::DeserializeOwned + Send + 'static,
{
    let mut r = ctrl.try_clone()?;
    r.set_read_timeout(Some(timeout))?;
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("wb-ctrl-rx".into())
        .spawn(move || loop {
            let m = read_msg::<T>(&mut r);
            let end = m.is_err();
            if tx.send(m).is_err() || end {
                break;
            }
        })?;
    Ok(rx)
}

/// Watches a controller that says nothing while its work runs, until `done`: anything
/// readable (an abort) or the end of its connection sets `stop` and `gone`; `wait`
/// passing on `clock` sets `stop` alone.
pub(crate) fn watch_controller(
    ctrl: &TcpStream,
    done: &Stop,
    stop: &Stop,
    gone: &Stop,
    wait: Duration,
    clock: &dyn Clock,
) {
    let _ = ctrl.set_read_timeout(Some(Duration::from_millis(100)));
    let mut byte = [0u8; 1];
    // Each peek waits up to its read timeout: a quiet controller is polled again at once.
    let watched = Wait::on(&RealPauses(clock)).at_most(wait).poll(|| {
        if done.is_raised() {
            return Poll::Ready(false);
        }
        match ctrl.peek(&mut byte) {
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                Poll::Again
            }
            // Readable, closed or broken: the controller is done with us.
            _ => Poll::Ready(true),
        }
    });
    match watched.ready() {
        Some(true) => {
            gone.raise();
            stop.raise();
        }
        Some(false) => {}
        // Out of time, unless the work ended just then.
        None if done.is_raised() => {}
        None => stop.raise(),
    }
}

/// Runs `work` (which waits on `ctrl`) while a watcher shuts `ctrl` down once `stop` is
/// set: the server sees its controller go and stops what it runs for it. `Err(Interrupted)`
/// when the stop came.
pub(crate) fn closing_on_stop<T>(
    ctrl: &TcpStream,
    stop: Option<&Stop>,
    work: impl FnOnce() -> Result<T, ProtoError>,
) -> Result<T, ProtoError> {
    let Some(stop) = stop else { return work() };
    let done = Stop::new();
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            Wait::on(&RealClock::new()).or_stop(&done).poll(|| {
                if stop.is_raised() {
                    let _ = ctrl.shutdown(std::net::Shutdown::Both);
                    return Poll::Ready(());
                }
                Poll::Wait(Duration::from_millis(50))
            })
        });
        // The watcher ends however the work ends (a panic too).
        let _done = RaiseOnDrop::new(&done);
        work()
    });
    if stop.is_raised() {
        return Err(ProtoError::Interrupted);
    }
    r
}
