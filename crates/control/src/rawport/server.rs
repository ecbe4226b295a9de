//! The server's side of a lent raw port: [`serve`] opens the port a controller asks for
//! (within the server's admission, one sender and one receiver per port at a time) and
//! runs its trials, each one checked by [`super::check`] first (the server's limits and
//! the port's policy), until the controller closes the session.
//!
//! While the port sends, the server watches the controller ([`send_watched`]): it says it
//! is there every second, and a silent one (frozen, or its host gone) has its send
//! stopped after `--idle-timeout`; the port's frames are metered as they leave, and a
//! sender found above `--raw-max-rate` is stopped too.
//!
//! It does not decide what a trial means: the controller ([`super::RawAgent`]) settles
//! received against sent and reads latency.

use std::net::{IpAddr, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use engine::clock::RealPauses;
use engine::frameio::{Backend, Endpoint, FrameRx, FrameTx};
use engine::raw::Reception;
use model::clock::Clock;
use model::stop::Stop;
use model::wait::{Poll, Wait};

use super::check::{send_spec, stream_specs, PortRules, MAX_LEN, SLACK};
use crate::conn::{peek, Peeked};
use crate::frame::{read_msg_within, write_msg};
use crate::messages::raw::RawStreamSent;
use crate::messages::{ClientMsg, ErrorCode, ServerMsg};
use crate::session::{admit, refuse, Ctx};
use crate::watch::Watch;
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
    let networks = match lab::probe::networks(runner, &ep) {
        Ok(n) => n,
        Err(e) => return Err(refuse(&mut ctrl, ErrorCode::Internal, e.to_string())),
    };
    let rules = PortRules {
        mac: addrs.mac,
        networks: &networks,
        policy: &ctx.raw_policy,
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
    let watching = Watching {
        wait,
        idle: ctx.idle_timeout,
        max_rate: ctx.raw_policy.max_rate_bps,
        clock,
    };
    loop {
        let msg = match read_msg_within(&ctrl, IDLE, clock) {
            Ok(m) => m,
            Err(ProtoError::Closed) => return Ok(()),
            Err(e) => return Err(e),
        };
        match msg {
            // A heartbeat the agent wrote as the last send ended.
            ClientMsg::Alive => {}
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
                let ids = (test_id, stream_id);
                let spec = match send_spec(&frame, frame_len, ids, load, &limits, &rules) {
                    Ok(s) => s,
                    Err(e) => return Err(refuse(&mut ctrl, ErrorCode::Limit, e.to_string())),
                };
                let burst_bits = (tx.batch_max() as u64 * frame_len * 8) as f64;
                let sent = send_watched(&ctrl, tx, burst_bits, &watching, |tx, stop| {
                    engine::raw::run_trial(tx, None, &spec, stop)
                });
                let report = match sent {
                    Ok(Watched::Sent(r)) => r,
                    // Aborted, or the controller went away: the sender stopped.
                    Ok(Watched::Gone) => return Ok(()),
                    Ok(Watched::Cut(code, why)) => return Err(refuse(&mut ctrl, code, why)),
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
                let specs = match stream_specs(test_id, &streams, max_len, &limits, &rules) {
                    Ok(s) => s,
                    Err(e) => return Err(refuse(&mut ctrl, ErrorCode::Limit, e.to_string())),
                };
                // A first batch of the largest frames from each stream at once.
                let burst_bits = (streams.len() * tx.batch_max()) as f64 * max_len as f64 * 8.0;
                let sent = send_watched(&ctrl, tx, burst_bits, &watching, |tx, stop| {
                    let r =
                        engine::multi::run(vec![(tx, specs)], vec![], Duration::ZERO, None, stop)?;
                    Ok(r.sent.into_iter().flatten().collect::<Vec<_>>())
                });
                let sent = match sent {
                    Ok(Watched::Sent(s)) => s,
                    Ok(Watched::Gone) => return Ok(()),
                    Ok(Watched::Cut(code, why)) => return Err(refuse(&mut ctrl, code, why)),
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
                // None: the port only listens, for the test's other streams (strays).
                if streams.len() > 255 {
                    return bad(&mut ctrl, "0 to 255 streams".into());
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

/// What a send is watched with: the longest it may take, how long its controller may be
/// silent, the port's `--raw-max-rate` (bits/s), and the server's clock.
struct Watching<'a> {
    wait: Duration,
    idle: Duration,
    max_rate: f64,
    clock: &'a dyn Clock,
}

/// How a watched send ended.
enum Watched<T> {
    /// It ran its course (or its time ran out), with what it sent.
    Sent(T),
    /// The controller aborted or went away: the session ends.
    Gone,
    /// The server stopped it: the refusal to send (the session ends).
    Cut(ErrorCode, String),
}

/// A lent port's sender that counts the bytes of the frames it hands over, FCS included
/// (as `--raw-max-rate` counts them), for the watch to meter.
struct MeteredTx<'a> {
    inner: &'a mut dyn FrameTx,
    bytes: &'a AtomicU64,
    /// The lengths of the current batch's frames.
    lens: Vec<usize>,
}

impl FrameTx for MeteredTx<'_> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn batch_max(&self) -> usize {
        self.inner.batch_max()
    }

    fn send_frames(
        &mut self,
        n: usize,
        len: usize,
        fill: &mut dyn FnMut(usize, &mut [u8]) -> usize,
    ) -> std::io::Result<usize> {
        self.lens.clear();
        self.lens.resize(n, 0);
        let lens = &mut self.lens;
        let taken = self.inner.send_frames(n, len, &mut |i, buf| {
            let l = fill(i, buf);
            if let Some(slot) = lens.get_mut(i) {
                *slot = l;
            }
            l
        })?;
        let bytes: usize = self.lens.iter().take(taken).map(|l| l + 4).sum();
        self.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        Ok(taken)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Runs `send` on `tx` (metered; given a stop) while watching the controller and the
/// port: an abort or the connection closing stops it ([`Watched::Gone`]); so do the
/// controller falling silent for the idle timeout, or the port's frames exceeding
/// `--raw-max-rate` (10 % over, beyond `burst_bits` and a quarter second at the rate),
/// each [`Watched::Cut`] with the refusal; the send running past its wait is stopped and
/// answered with what it sent.
fn send_watched<T>(
    ctrl: &TcpStream,
    tx: &mut dyn FrameTx,
    burst_bits: f64,
    watching: &Watching,
    send: impl FnOnce(&mut dyn FrameTx, &Stop) -> std::io::Result<T>,
) -> std::io::Result<Watched<T>> {
    let stop = Stop::new();
    let done = Stop::new();
    let bytes = AtomicU64::new(0);
    let clock = watching.clock;
    let mut watch = Watch::raw_send(
        watching.max_rate,
        burst_bits,
        watching.idle,
        watching.wait,
        clock.mono(),
    );
    let watch_ctrl = ctrl.try_clone()?;
    let mut metered = MeteredTx {
        inner: tx,
        bytes: &bytes,
        lens: Vec::new(),
    };
    std::thread::scope(|s| {
        let watcher = s.spawn(|| {
            let cut = watch_send(&watch_ctrl, &done, &mut watch, &bytes, clock);
            if cut.is_some() {
                stop.raise();
            }
            cut
        });
        let r = send(&mut metered, &stop);
        done.raise();
        let cut = watcher
            .join()
            .map_err(|_| std::io::Error::other("the send's watcher panicked"))?;
        let r = r?;
        Ok(match cut {
            None | Some(Cut::Overdue) => Watched::Sent(r),
            Some(Cut::Gone) => Watched::Gone,
            Some(Cut::Silent(idle)) => Watched::Cut(
                ErrorCode::Timeout,
                format!(
                    "the controller said nothing for {} s (--idle-timeout): the port stopped sending",
                    idle.as_secs_f64()
                ),
            ),
            Some(Cut::OverRate(bps, max)) => Watched::Cut(
                ErrorCode::Limit,
                format!(
                    "the port sent {} on average, more than this server's --raw-max-rate of {} (+10 %): it stopped sending",
                    model::units::bps(bps),
                    model::units::bps(max)
                ),
            ),
            Some(Cut::Unexpected(kind)) => Watched::Cut(
                ErrorCode::Protocol,
                format!("expected alive or abort while the port sends, got {kind}"),
            ),
        })
    })
}

/// Why the watch stopped a send.
enum Cut {
    /// The controller aborted, closed or broke the connection.
    Gone,
    /// The controller said nothing for this long.
    Silent(Duration),
    /// The port sent this many bits/s on average, above this cap.
    OverRate(f64, f64),
    /// The send ran past its wait.
    Overdue,
    /// The controller sent a message of this kind during the send.
    Unexpected(&'static str),
}

/// Watches a send until `done`: reads the controller's heartbeats (and an abort) off
/// `ctrl` and meters `bytes` sent, deciding with `watch` on `clock`; what stopped it, if
/// anything did.
fn watch_send(
    ctrl: &TcpStream,
    done: &Stop,
    watch: &mut Watch,
    bytes: &AtomicU64,
    clock: &dyn Clock,
) -> Option<Cut> {
    let pauses = RealPauses(clock);
    // Each peek waits up to its read timeout: a quiet controller is polled again at once.
    let watched = Wait::on(&pauses).or_stop(done).poll(|| {
        let now = clock.mono();
        if watch.overdue(now) {
            return Poll::Ready(Cut::Overdue);
        }
        if watch.meter_due(now) {
            if let Err((bps, max)) = watch.metered(now, bytes.load(Ordering::Relaxed)) {
                return Poll::Ready(Cut::OverRate(bps, max));
            }
        }
        if watch.silent(now) {
            return Poll::Ready(Cut::Silent(watch.idle()));
        }
        let _ = ctrl.set_read_timeout(Some(Duration::from_millis(100)));
        match peek(ctrl) {
            Peeked::Quiet => return Poll::Again,
            Peeked::Readable => {}
            Peeked::Gone => return Poll::Ready(Cut::Gone),
        }
        // A message has begun: all of it within a second.
        match read_msg_within::<ClientMsg>(ctrl, Duration::from_secs(1), clock) {
            Ok(ClientMsg::Alive) => {
                watch.heard(clock.mono());
                Poll::Again
            }
            Ok(ClientMsg::Abort { .. }) | Err(_) => Poll::Ready(Cut::Gone),
            Ok(other) => Poll::Ready(Cut::Unexpected(other.kind())),
        }
    });
    watched.ready()
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
