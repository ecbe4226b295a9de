//! The server's side of a lent raw port: [`serve`] opens the port a controller asks for
//! (within the server's admission, one sender and one receiver per port at a time) and
//! runs its trials, each one checked by [`super::check`] first, until the controller
//! closes the session.
//!
//! It does not decide what a trial means: the controller ([`super::RawAgent`]) settles
//! received against sent and reads latency.

use std::net::{IpAddr, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use engine::frameio::{Backend, Endpoint, FrameRx, FrameTx};
use engine::raw::Reception;
use model::clock::Clock;
use model::stop::Stop;

use super::check::{send_spec, stream_specs, MAX_LEN, SLACK};
use crate::conn::watch_controller;
use crate::frame::{read_msg_within, write_msg};
use crate::messages::raw::RawStreamSent;
use crate::messages::{ClientMsg, ErrorCode, ServerMsg};
use crate::session::{admit, refuse, Ctx};
use crate::ProtoError;

/// Longest wait for a session's next request (a search's trials come one after another).
const IDLE: Duration = Duration::from_secs(600);

/// The backends opened: `sender / receiver`.
fn backend_names(tx: Option<&dyn FrameTx>, rx: Option<&dyn FrameRx>) -> String {
    format!(
        "{} / {}",
        tx.map_or("-", FrameTx::name),
        rx.map_or("-", FrameRx::name)
    )
}

/// The backend named `name` (`auto`: `auto`'s order).
fn order<const N: usize>(name: &str, auto: [Backend; N]) -> Result<Vec<Backend>, String> {
    match name {
        "auto" => Ok(auto.to_vec()),
        n => Backend::from_name(n)
            .map(|b| vec![b])
            .ok_or_else(|| format!("unknown frame backend '{n}' (auto, packet, ring, xdp)")),
    }
}

/// Buffers a session's sender holds: a 64 MiB send buffer and its ring.
const SEND_MEMORY: u64 = 72 << 20;
/// Buffers a session's receiver holds: a 64 MiB receive ring.
const RECEIVE_MEMORY: u64 = 64 << 20;

/// A lent port's directions held by one session; free again when dropped.
struct Lease<'a> {
    ctx: &'a Ctx,
    keys: Vec<(String, bool)>,
}

impl<'a> Lease<'a> {
    /// Takes `port` for sending and/or receiving, unless another session holds that.
    fn take(ctx: &'a Ctx, port: &str, send: bool, receive: bool) -> Option<Self> {
        let mut busy = ctx
            .raw_busy
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let keys: Vec<(String, bool)> = [(send, true), (receive, false)]
            .into_iter()
            .filter(|(asked, _)| *asked)
            .map(|(_, sending)| (port.to_owned(), sending))
            .collect();
        if keys.iter().any(|k| busy.contains(k)) {
            return None;
        }
        busy.extend(keys.iter().cloned());
        Some(Self { ctx, keys })
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        let mut busy = self
            .ctx
            .raw_busy
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for k in &self.keys {
            busy.remove(k);
        }
    }
}

/// Serves a raw-port session that starts with `open` ([`ClientMsg::RawOpen`]).
pub(crate) fn serve(mut ctrl: TcpStream, ctx: &Ctx, open: ClientMsg) -> Result<(), ProtoError> {
    let ClientMsg::RawOpen {
        port,
        send,
        receive,
        max_len,
        resolve,
    } = open
    else {
        return Err(refuse(
            &mut ctrl,
            ErrorCode::Protocol,
            "expected raw_open".into(),
        ));
    };
    let bad = |ctrl: &mut TcpStream, m: String| Err(refuse(ctrl, ErrorCode::BadRequest, m));
    if ctx.key.is_none() || ctx.raw_ports.is_empty() {
        return bad(&mut ctrl, "this server lends no raw ports (start it as root with --raw-ports and --auth-key-file)".into());
    }
    if !ctx.raw_ports.contains(&port) {
        let lent = ctx.raw_ports.join(", ");
        return bad(
            &mut ctrl,
            format!("this server does not lend port '{port}' (it lends {lent})"),
        );
    }
    if send.is_none() && receive.is_none() {
        return bad(
            &mut ctrl,
            "open the port for sending, receiving or both".into(),
        );
    }
    if !(64..=MAX_LEN).contains(&max_len) {
        return bad(
            &mut ctrl,
            format!("frames of {max_len} bytes: 64 to {MAX_LEN}"),
        );
    }
    // AF_XDP takes every frame but ARP and neighbour discovery from the host: on the
    // interface this very connection runs over, the controller would lose the server.
    if receive.as_deref() == Some("xdp") {
        let local = ctrl.local_addr().map_err(ProtoError::Io)?.ip();
        let local = match local {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(local, IpAddr::V4),
            v4 => v4,
        };
        if engine::nic::interface_with_address(local).ok().flatten() == Some(port.clone()) {
            return bad(&mut ctrl, format!("an AF_XDP receiver on {port} would take this control connection's frames from the server: receive with the ring or packet there, or reach the server through another interface"));
        }
    }
    let memory = if send.is_some() { SEND_MEMORY } else { 0 }
        + if receive.is_some() { RECEIVE_MEMORY } else { 0 };
    let _admitted = admit(&mut ctrl, ctx, memory)?;
    let Some(_lease) = Lease::take(ctx, &port, send.is_some(), receive.is_some()) else {
        return Err(refuse(
            &mut ctrl,
            ErrorCode::Busy,
            format!("another session uses port {port} (one sender and one receiver at a time)"),
        ));
    };
    let ep = Endpoint {
        netns: None,
        iface: port.clone(),
    };
    let runner = &mut lab::SystemRunner;
    let addrs = match lab::probe::addresses(runner, &ep) {
        Ok(a) => a,
        Err(e) => return Err(refuse(&mut ctrl, ErrorCode::Internal, e.to_string())),
    };
    let next_hop_mac = match resolve {
        Some(ip) => match lab::probe::next_hop_mac(runner, &ep, ip) {
            Ok(m) => Some(m),
            Err(e) => return bad(&mut ctrl, e.to_string()),
        },
        None => None,
    };
    let mut tx = None;
    if let Some(name) = &send {
        let opened = order(name, Backend::AUTO_TX)
            .and_then(|o| {
                Backend::open_tx_first(&o, &ep, max_len as usize).map_err(|e| e.to_string())
            })
            .map(|(t, _)| t);
        match opened {
            Ok(t) => tx = Some(t),
            Err(e) => return Err(refuse(&mut ctrl, ErrorCode::Internal, e)),
        }
    }
    let mut rx = None;
    if let Some(name) = &receive {
        let opened = order(name, Backend::AUTO_RX)
            .and_then(|o| Backend::open_rx_first(&o, &ep).map_err(|e| e.to_string()))
            .map(|(r, _)| r);
        match opened {
            Ok(r) => rx = Some(r),
            Err(e) => return Err(refuse(&mut ctrl, ErrorCode::Internal, e)),
        }
    }
    tracing::info!(
        "raw port {port} lent to {}",
        ctrl.peer_addr().map_or("?".into(), |a| a.to_string())
    );
    write_msg(
        &mut ctrl,
        &ServerMsg::RawOpened {
            mac: addrs.mac,
            ipv4: addrs.ipv4,
            ipv6: addrs.ipv6,
            mtu: engine::nic::mtu(&port).ok(),
            next_hop_mac,
            backend: backend_names(tx.as_deref(), rx.as_deref()),
        },
    )?;
    let limits = ctx.limits;
    let wait = Duration::from_secs_f64(limits.max_duration_s) + SLACK;
    let clock = &*ctx.clock;
    loop {
        let msg = match read_msg_within(&ctrl, IDLE, clock) {
            Ok(m) => m,
            Err(ProtoError::Closed) => return Ok(()),
            Err(e) => return Err(e),
        };
        match msg {
            ClientMsg::RawSend {
                frame,
                frame_len,
                test_id,
                stream_id,
                load,
            } => {
                let Some(tx) = tx.as_deref_mut() else {
                    return bad(&mut ctrl, "this session did not open a sender".into());
                };
                if frame_len > max_len {
                    return bad(
                        &mut ctrl,
                        format!("frames of {frame_len} bytes on a port opened for {max_len}"),
                    );
                }
                let spec = match send_spec(&frame, frame_len, test_id, stream_id, load, &limits) {
                    Ok(s) => s,
                    Err(e) => return Err(refuse(&mut ctrl, ErrorCode::Limit, e.to_string())),
                };
                let sent = send_watched(&ctrl, wait, clock, |stop| {
                    engine::raw::run_trial(tx, None, &spec, stop)
                });
                let report = match sent {
                    Ok(Some(r)) => r,
                    // Aborted, or the controller went away: the sender stopped.
                    Ok(None) => return Ok(()),
                    Err(e) => return Err(refuse(&mut ctrl, ErrorCode::Internal, e.to_string())),
                };
                write_msg(
                    &mut ctrl,
                    &ServerMsg::RawSent {
                        sent: report.sending().into(),
                    },
                )?;
            }
            ClientMsg::RawStreams { test_id, streams } => {
                let Some(tx) = tx.as_deref_mut() else {
                    return bad(&mut ctrl, "this session did not open a sender".into());
                };
                let specs = match stream_specs(test_id, &streams, max_len, &limits) {
                    Ok(s) => s,
                    Err(e) => return Err(refuse(&mut ctrl, ErrorCode::Limit, e.to_string())),
                };
                let sent = send_watched(&ctrl, wait, clock, |stop| {
                    let r =
                        engine::multi::run(vec![(tx, specs)], vec![], Duration::ZERO, None, stop)?;
                    Ok(r.sent.into_iter().flatten().collect::<Vec<_>>())
                });
                let sent = match sent {
                    Ok(Some(s)) => s,
                    Ok(None) => return Ok(()),
                    Err(e) => return Err(refuse(&mut ctrl, ErrorCode::Internal, e.to_string())),
                };
                let sent = sent.into_iter().map(RawStreamSent::from).collect();
                write_msg(&mut ctrl, &ServerMsg::RawStreamsSent { sent })?;
            }
            ClientMsg::RawReceive {
                test_id,
                streams,
                drain_ms,
            } => {
                let Some(rx) = rx.as_deref_mut() else {
                    return bad(&mut ctrl, "this session did not open a receiver".into());
                };
                if streams.is_empty() || streams.len() > 255 {
                    return bad(&mut ctrl, "1 to 255 streams".into());
                }
                let drain = Duration::from_millis(drain_ms.min(2_000));
                match count(&mut ctrl, rx, test_id, &streams, drain, (wait, clock))? {
                    Some(reception) => {
                        let reception = reception.into();
                        write_msg(&mut ctrl, &ServerMsg::RawReceived { reception })?;
                    }
                    None => return Ok(()),
                }
            }
            ClientMsg::RawReflect { test_id } => {
                let (Some(tx), Some(rx)) = (tx.as_deref_mut(), rx.as_deref_mut()) else {
                    return bad(
                        &mut ctrl,
                        "a reflector needs the port opened for sending and receiving".into(),
                    );
                };
                match reflect(&mut ctrl, rx, tx, test_id, (wait, clock))? {
                    Some(reflected) => {
                        let reflected = reflected.into();
                        write_msg(&mut ctrl, &ServerMsg::RawReflected { reflected })?;
                    }
                    None => return Ok(()),
                }
            }
            ClientMsg::Abort { .. } => return Ok(()),
            other => {
                return Err(refuse(
                    &mut ctrl,
                    ErrorCode::Protocol,
                    format!(
                        "expected raw_send, raw_streams, raw_receive or raw_reflect, got {}",
                        other.kind()
                    ),
                ))
            }
        }
    }
}

/// Runs `send` (given a stop) while watching the control connection: an abort, the
/// connection closing, or the sending running past `wait` on `clock` stops it (`None` for
/// the first two).
fn send_watched<T>(
    ctrl: &TcpStream,
    wait: Duration,
    clock: &dyn Clock,
    send: impl FnOnce(&Stop) -> std::io::Result<T>,
) -> std::io::Result<Option<T>> {
    let stop = Stop::new();
    let done = Stop::new();
    let gone = Stop::new();
    let watch = ctrl.try_clone()?;
    std::thread::scope(|s| {
        s.spawn(|| watch_controller(&watch, &done, &stop, &gone, wait, clock));
        let r = send(&stop);
        done.raise();
        let r = r?;
        Ok((!gone.is_raised()).then_some(r))
    })
}

/// What the controller said while a receiver or a reflector ran.
enum Told {
    /// The sender is done after this many frames.
    Done(u64),
    /// Abort, or the connection closed: end the session.
    Gone,
}

/// Waits up to `wait` on `clock` for [`ClientMsg::RawDone`]; an abort or a closed
/// connection is [`Told::Gone`]; anything else, or no word in time, is refused.
fn told(ctrl: &mut TcpStream, (wait, clock): (Duration, &dyn Clock)) -> Result<Told, ProtoError> {
    match read_msg_within(ctrl, wait, clock) {
        Ok(ClientMsg::RawDone { sent }) => Ok(Told::Done(sent)),
        Ok(ClientMsg::Abort { .. }) | Err(ProtoError::Closed) => Ok(Told::Gone),
        Ok(other) => Err(refuse(
            ctrl,
            ErrorCode::Protocol,
            format!("expected raw_done, got {}", other.kind()),
        )),
        Err(ProtoError::Timeout) => Err(refuse(
            ctrl,
            ErrorCode::Timeout,
            format!(
                "no raw_done within {} s (this server's longest test and 30 s)",
                wait.as_secs()
            ),
        )),
        Err(e) => Err(e),
    }
}

/// Counts on `rx` until the controller says the sender is done ([`ClientMsg::RawDone`]
/// with the frames sent, within `wait`: how long, on which clock); `None` when it aborted
/// or went away.
fn count(
    ctrl: &mut TcpStream,
    rx: &mut dyn FrameRx,
    test_id: u16,
    streams: &[u8],
    drain: Duration,
    wait: (Duration, &dyn Clock),
) -> Result<Option<Reception>, ProtoError> {
    let generating = AtomicUsize::new(1);
    let expected = AtomicU64::new(u64::MAX);
    let stop = Stop::new();
    std::thread::scope(|s| {
        let counting = s.spawn(|| {
            engine::raw::receive_trial(rx, test_id, streams, drain, &generating, &expected, &stop)
        });
        let heard = write_msg(ctrl, &ServerMsg::RawReceiving).and_then(|()| told(ctrl, wait));
        if let Ok(Told::Done(sent)) = heard {
            expected.store(sent, Ordering::Release);
            generating.store(0, Ordering::Release);
        } else {
            stop.raise();
        }
        let counted = counting.join();
        outcome(ctrl, heard, counted, "receiver")
    })
}

/// What a receiver or reflector thread gave, as the session goes on: `None` when the
/// controller went away, its result when it said the sender is done (a failure refused
/// to the controller).
fn outcome<T>(
    ctrl: &mut TcpStream,
    heard: Result<Told, ProtoError>,
    joined: std::thread::Result<std::io::Result<T>>,
    what: &str,
) -> Result<Option<T>, ProtoError> {
    let result = joined
        .map_err(|_| ProtoError::Io(std::io::Error::other(format!("{what} thread panicked"))))?;
    match heard? {
        Told::Gone => Ok(None),
        Told::Done(_) => result
            .map(Some)
            .map_err(|e| refuse(ctrl, ErrorCode::Internal, e.to_string())),
    }
}

/// Reflects the frames of `test_id` until the controller says the sender is done
/// ([`ClientMsg::RawDone`], within `wait`: how long, on which clock), then for
/// [`REFLECT_DRAIN`] more (the last frames are still on their way); `None` when it aborted
/// or went away.
fn reflect(
    ctrl: &mut TcpStream,
    rx: &mut dyn FrameRx,
    tx: &mut dyn FrameTx,
    test_id: u16,
    wait: (Duration, &dyn Clock),
) -> Result<Option<engine::raw::Reflected>, ProtoError> {
    let stop = Stop::new();
    std::thread::scope(|s| {
        let running = s.spawn(|| engine::raw::reflect(rx, tx, test_id, &stop));
        let heard = write_msg(ctrl, &ServerMsg::RawReflecting).and_then(|()| told(ctrl, wait));
        if matches!(heard, Ok(Told::Done(_))) {
            std::thread::sleep(REFLECT_DRAIN);
        }
        stop.raise();
        let done = running.join();
        outcome(ctrl, heard, done, "reflector")
    })
}

/// How long a reflector keeps going after the sender is done.
const REFLECT_DRAIN: Duration = Duration::from_millis(100);
