//! A ping-pong latency session on the server's side: within `--max-duration`, one of
//! `--max-tests` and its address's share, an echo socket answers the client's messages
//! until the client finishes, goes away, or falls silent for the idle timeout; busy
//! polling is charged to the client's address at the gate.
//!
//! The dispatcher ([`crate::server`]) calls [`serve`]; this module imports nothing of it.

use std::net::{TcpStream, UdpSocket};
use std::sync::mpsc;
use std::time::Duration;

use engine::udp;
use model::spec::EchoSpec;
use model::stop::RaiseOnDrop;
use model::stop::Stop;

use crate::conn::spawn_reader;
use crate::frame::write_msg;
use crate::limits::check_echo;
use crate::messages::{ClientMsg, ErrorCode, ServerMsg};
use crate::session::admit::source_test;
use crate::session::{refuse, Ctx, Slot};
use crate::watch::FINISH_SLACK;
use crate::ProtoError;
use engine::clock::RealPauses;
use model::wait::{Poll, Wait};

/// Serves a [`ClientMsg::Echo`].
pub(crate) fn serve(mut ctrl: TcpStream, ctx: &Ctx, spec: EchoSpec) -> Result<(), ProtoError> {
    if let Err(e) = check_echo(&spec, &ctx.limits) {
        return Err(refuse(&mut ctrl, ErrorCode::Limit, e.to_string()));
    }
    let Some(_slot) = Slot::take(&ctx.active_tests, usize::from(ctx.limits.max_tests)) else {
        return Err(refuse(
            &mut ctrl,
            ErrorCode::Busy,
            "the server is running its maximum number of tests".into(),
        ));
    };
    let _source = source_test(&mut ctrl, ctx)?;
    let local_ip = ctrl.local_addr().map_err(ProtoError::Io)?.ip();
    let peer_ip = ctrl.peer_addr().map_err(ProtoError::Io)?.ip();
    let sock = UdpSocket::bind((local_ip, 0)).map_err(ProtoError::Io)?;
    let _ = engine::sys::enable_rx_timestamps(&sock);
    let port = sock.local_addr().map_err(ProtoError::Io)?.port();
    let stop = Stop::new();
    let (max_len, idle) = (spec.max_len, ctx.idle_timeout);
    // Spinning is charged to the client's address (`--max-spin-per-source`).
    let clock = &*ctx.clock;
    let mut charge = |spent: Duration| ctx.gate().charge_spin(peer_ip, spent, clock.mono());
    let (res, end) = std::thread::scope(|scope| {
        // However this ends, the echo thread is told to stop before the scope waits for it.
        let _stop = RaiseOnDrop::new(&stop);
        let echo = std::thread::Builder::new()
            .name("wb-echo".into())
            .spawn_scoped(scope, || {
                let spin = spec
                    .spin
                    .then_some(&mut charge as &mut dyn FnMut(Duration) -> bool);
                udp::run_echo(&sock, peer_ip, max_len, spin, idle, &stop)
            })
            .map_err(ProtoError::Io)?;
        write_msg(&mut ctrl, &ServerMsg::EchoReady { port })?;
        let limit = spec.duration + FINISH_SLACK;
        let rx = spawn_reader::<ClientMsg>(&ctrl, limit).map_err(ProtoError::Io)?;
        // The client's finish, its going away, or the echo falling idle (no message for
        // the idle timeout), whichever comes first; at the latest the session's limit. Each
        // wait for a message takes up to 50 ms itself.
        let res = Wait::on(&RealPauses(clock))
            .at_most(limit)
            .poll(|| {
                if echo.is_finished() {
                    return Poll::Ready(Err(ProtoError::Timeout));
                }
                match rx.recv_timeout(Duration::from_millis(50)) {
                    Ok(m) => Poll::Ready(m),
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        Poll::Ready(Err(ProtoError::Closed))
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => Poll::Again,
                }
            })
            .ready()
            .unwrap_or(Err(ProtoError::Timeout));
        stop.raise();
        let end = echo.join().unwrap_or(udp::EchoEnd {
            echoed: 0,
            went_idle: false,
            spin_refused: false,
        });
        Ok::<_, ProtoError>((res, end))
    })?;
    let (echoed, went_idle) = (end.echoed, end.went_idle);
    tracing::info!("echo test done: {echoed} messages echoed");
    if end.spin_refused {
        tracing::warn!(
            "{peer_ip} used up its busy-polling time (--max-spin-per-source {} s, given \
             back at a quarter of a core): its echo answered from recv instead",
            ctx.gate().spin_burst().as_secs_f64()
        );
    }
    if went_idle {
        return Err(refuse(
            &mut ctrl,
            ErrorCode::Timeout,
            format!(
                "no message for {} s (--idle-timeout): latency session ended",
                idle.as_secs_f64()
            ),
        ));
    }
    match res {
        Ok(ClientMsg::Finish { .. } | ClientMsg::Abort { .. }) | Err(ProtoError::Closed) => Ok(()),
        Ok(other) => Err(refuse(
            &mut ctrl,
            ErrorCode::Protocol,
            format!("unexpected {} during an echo test", other.kind()),
        )),
        Err(e) => Err(e),
    }
}
