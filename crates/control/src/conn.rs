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

use crate::frame::{read_msg, write_msg};
use crate::messages::ClientMsg;
use crate::ProtoError;
use engine::clock::{RealClock, RealPauses};
use model::wait::{Poll, Wait};

/// How often a client tells the server it is there ([`ClientMsg::Alive`]) while a test
/// or a lent port's send runs for it.
pub(crate) const ALIVE_EVERY: Duration = Duration::from_secs(1);

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

/// What a look at a controller's connection found.
pub(crate) enum Peeked {
    /// Nothing within the socket's read timeout.
    Quiet,
    /// A message has begun.
    Readable,
    /// Closed or broken.
    Gone,
}

/// Waits up to `ctrl`'s read timeout for something to read, and reads nothing.
pub(crate) fn peek(ctrl: &TcpStream) -> Peeked {
    let mut byte = [0u8; 1];
    match ctrl.peek(&mut byte) {
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ) =>
        {
            Peeked::Quiet
        }
        Ok(n) if n > 0 => Peeked::Readable,
        _ => Peeked::Gone,
    }
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
    // Each peek waits up to its read timeout: a quiet controller is polled again at once.
    let watched = Wait::on(&RealPauses(clock)).at_most(wait).poll(|| {
        if done.is_raised() {
            return Poll::Ready(false);
        }
        match peek(ctrl) {
            Peeked::Quiet => Poll::Again,
            // Readable, closed or broken: the controller is done with us.
            Peeked::Readable | Peeked::Gone => Poll::Ready(true),
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

/// Runs `work` (which waits on `ctrl` for a long answer, and writes nothing) while a
/// helper says [`ClientMsg::Alive`] on `ctrl` every [`ALIVE_EVERY`] on `clock`, so that
/// the server goes on with what it runs for this client only as long as the client is
/// there (a frozen or vanished one falls silent). The helper ends with the work; a
/// failed write ends it early (the work's read fails then too).
pub(crate) fn saying_alive<T>(
    ctrl: &TcpStream,
    clock: &dyn Clock,
    work: impl FnOnce() -> Result<T, ProtoError>,
) -> Result<T, ProtoError> {
    let done = Stop::new();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut w = ctrl;
            let pauses = RealPauses(clock);
            let mut next = clock.mono() + ALIVE_EVERY;
            Wait::on(&pauses).or_stop(&done).poll(|| {
                let now = clock.mono();
                if now < next {
                    return Poll::Wait(next - now);
                }
                next = now + ALIVE_EVERY;
                match write_msg(&mut w, &ClientMsg::Alive) {
                    Ok(()) => Poll::Wait(ALIVE_EVERY),
                    Err(_) => Poll::Ready(()),
                }
            })
        });
        // The helper ends however the work ends (a panic too).
        let _done = RaiseOnDrop::new(&done);
        work()
    })
}
