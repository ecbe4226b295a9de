//! Raw ports lent by a server (`wirebench server --raw-ports eth1,eth2`, which needs
//! `--auth-key-file`, so every session here is authenticated): a controller on another
//! host opens one of them for sending and/or receiving ([`ClientMsg::RawOpen`]) and runs
//! trials through it, the receive half ([`ClientMsg::RawReceive`] ...
//! [`ClientMsg::RawDone`]) and the send half ([`ClientMsg::RawSend`]) of
//! `engine::raw`'s trials, each answered with the same counters and histograms a local
//! port gives ([`engine::raw::Reception`], [`engine::raw::Sending`]).
//!
//! The server side is [`serve`]; the controller's side is [`RawAgent`]. What the trial
//! means (which port sends, settling received against sent, latency only on a shared or
//! synchronised clock) is the controller's. A port can also reflect ([`ClientMsg::RawReflect`]):
//! turn a test's frames around and send them back, for round-trip latency on one clock.

use std::net::{IpAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use engine::frameio::{Backend, Endpoint, FrameRx, FrameTx};
use engine::raw::{RawLoad, RawTrialSpec, Reception, Sending};

use crate::client::{ClientConfig, Session};
use crate::frame::{read_msg_within, write_msg};
use crate::messages::{ClientMsg, ErrorCode, ServerMsg};
use crate::server::{admit, kind, refuse, Ctx};
use crate::{auth, ProtoError};

/// Longest wait for a session's next request (a search's trials come one after another).
const IDLE: Duration = Duration::from_secs(600);
/// Beyond a trial's duration: the longest wait for its end.
const SLACK: Duration = Duration::from_secs(30);

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
    loop {
        let msg = match read_msg_within(&ctrl, IDLE) {
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
                    Err(e) => return Err(refuse(&mut ctrl, ErrorCode::Limit, e)),
                };
                let sent = send_watched(&ctrl, wait, |stop| {
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
                        sent: report.sending(),
                    },
                )?;
            }
            ClientMsg::RawStreams { test_id, streams } => {
                let Some(tx) = tx.as_deref_mut() else {
                    return bad(&mut ctrl, "this session did not open a sender".into());
                };
                let specs = match stream_specs(test_id, &streams, max_len, &limits) {
                    Ok(s) => s,
                    Err(e) => return Err(refuse(&mut ctrl, ErrorCode::Limit, e)),
                };
                let sent = send_watched(&ctrl, wait, |stop| {
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
                match count(&mut ctrl, rx, test_id, &streams, drain, wait)? {
                    Some(reception) => {
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
                match reflect(&mut ctrl, rx, tx, test_id, wait)? {
                    Some(reflected) => {
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
                        kind(&other)
                    ),
                ))
            }
        }
    }
}

/// One stream of a [`ClientMsg::RawStreams`]: an example frame (the port builds its own
/// of each size from its headers), the sizes and their order, the rate and when it runs.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RawStream {
    /// Stream id (unique in the test).
    pub stream_id: u8,
    /// A frame of the stream, hex: its headers are taken, its length and test header not.
    pub frame: String,
    /// The stream's frame sizes with FCS, each once.
    pub sizes: Vec<u64>,
    /// Frame n has size `sizes[pattern[n % len]]`.
    pub pattern: Vec<u16>,
    /// Frames per second.
    pub pps: f64,
    /// Seconds after the streams' start when it starts.
    pub start_s: f64,
    /// ... and when it stops.
    pub stop_s: f64,
}

/// What one stream of a [`ClientMsg::RawStreams`] sent.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RawStreamSent {
    /// Stream id.
    pub stream_id: u8,
    /// Frames sent.
    pub sent: u64,
    /// Their bytes (no FCS).
    pub bytes: u64,
    /// Seconds from its start to its stop (or to when it was stopped).
    pub active_s: f64,
    /// Share of its schedule it was behind at the end.
    pub behind_ratio: f64,
    /// It fell behind its schedule.
    pub generator_limited: bool,
}

impl From<engine::multi::StreamSent> for RawStreamSent {
    fn from(x: engine::multi::StreamSent) -> Self {
        Self {
            stream_id: x.stream_id,
            sent: x.sent,
            bytes: x.bytes,
            active_s: x.active.as_secs_f64(),
            behind_ratio: x.behind_ratio,
            generator_limited: x.generator_limited,
        }
    }
}

impl RawStreamSent {
    /// As the engine reports a local stream (no slots: no interval rows).
    pub fn into_sent(self) -> engine::multi::StreamSent {
        engine::multi::StreamSent {
            stream_id: self.stream_id,
            sent: self.sent,
            bytes: self.bytes,
            active: Duration::from_secs_f64(self.active_s.clamp(0.0, 1e9)),
            behind_ratio: self.behind_ratio,
            generator_limited: self.generator_limited,
            slots: Default::default(),
        }
    }
}

/// Most sizes per stream and pattern entries a [`ClientMsg::RawStreams`] may hold, and
/// the most bytes of frames it may have the port build (its templates).
const MAX_SIZES: usize = 64;
const MAX_PATTERN: usize = 4096;
const MAX_TEMPLATE_BYTES: u64 = 16 << 20;

/// The headers of an example frame (hex) a controller sent, for this port to build its
/// frames from.
fn example_spec(hex: &str) -> Result<wire::frame::FrameSpec, String> {
    let bytes = auth::from_hex(hex).ok_or("the frame is not hex")?;
    wire::frame::parse_frame(&bytes)
        .ok()
        .and_then(|p| p.spec())
        .ok_or_else(|| "the frame has no IP and transport header this server can build".into())
}

/// Whether frames of `len` bytes (with FCS) fit `spec`'s headers and this port.
fn fits_len(spec: &wire::frame::FrameSpec, len: u64) -> Result<(), String> {
    if !(64..=MAX_LEN).contains(&len) || (len as usize) < spec.min_frame_len() {
        return Err(format!("frame size {len} B does not fit its headers"));
    }
    Ok(())
}

/// The streams a [`ClientMsg::RawStreams`] asks for, built by this port from the example
/// frames' headers, within the server's limits (streams per test, longest test, most
/// bits/s in all), the largest frame the port was opened for, and 16 MiB of frames.
fn stream_specs(
    test_id: u16,
    streams: &[RawStream],
    max_len: u64,
    limits: &crate::messages::Limits,
) -> Result<Vec<engine::multi::StreamTx>, String> {
    let most = usize::from(limits.max_streams).clamp(1, 255);
    if streams.is_empty() || streams.len() > most {
        return Err(format!("1 to {most} streams (--max-streams)"));
    }
    let max_s = limits.max_duration_s;
    let (mut bits, mut template_bytes) = (0.0, 0u64);
    let mut out = Vec::with_capacity(streams.len());
    for s in streams {
        let name = format!("stream {}", s.stream_id);
        let mut distinct = s.sizes.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if s.sizes.is_empty() || s.sizes.len() > MAX_SIZES || distinct.len() != s.sizes.len() {
            return Err(format!("{name}: 1 to {MAX_SIZES} frame sizes, each once"));
        }
        if s.pattern.is_empty()
            || s.pattern.len() > MAX_PATTERN
            || s.pattern.iter().any(|i| usize::from(*i) >= s.sizes.len())
        {
            return Err(format!(
                "{name}: a pattern of 1 to {MAX_PATTERN} of its sizes"
            ));
        }
        if !(s.pps.is_finite() && s.pps > 0.0) {
            return Err(format!("{name}: a rate of {} frames/s", s.pps));
        }
        if !(s.start_s.is_finite()
            && s.stop_s.is_finite()
            && 0.0 <= s.start_s
            && s.start_s < s.stop_s)
        {
            return Err(format!("{name}: from {} s to {} s", s.start_s, s.stop_s));
        }
        if s.stop_s > max_s {
            return Err(format!(
                "{name}: {} s: this server's longest test is {max_s} s",
                s.stop_s
            ));
        }
        let spec = example_spec(&s.frame).map_err(|e| format!("{name}: {e}"))?;
        let hdr = wire::testhdr::TestHeaderRepr::template(test_id, s.stream_id);
        let mut templates = Vec::with_capacity(s.sizes.len());
        for len in &s.sizes {
            if *len > max_len {
                return Err(format!(
                    "{name}: frames of {len} bytes on a port opened for {max_len}"
                ));
            }
            fits_len(&spec, *len).map_err(|e| format!("{name}: {e}"))?;
            template_bytes += len;
            if template_bytes > MAX_TEMPLATE_BYTES {
                return Err(format!(
                    "more than {} MiB of frames to build",
                    MAX_TEMPLATE_BYTES >> 20
                ));
            }
            let n = *len as usize;
            let mut buf = vec![0u8; n];
            let built = spec
                .build(n, &hdr, &mut buf)
                .map_err(|e| format!("{name}: {e}"))?;
            buf.truncate(built);
            buf.shrink_to_fit();
            let layout = spec.layout(n).map_err(|e| format!("{name}: {e}"))?;
            templates.push((buf, engine::multi::Patch::L4(layout)));
        }
        let mean_len: f64 = s
            .pattern
            .iter()
            .map(|i| s.sizes[usize::from(*i)] as f64)
            .sum::<f64>()
            / s.pattern.len() as f64;
        bits += s.pps * mean_len * 8.0;
        out.push(engine::multi::StreamTx {
            stream_id: s.stream_id,
            templates,
            pattern: s.pattern.iter().map(|i| usize::from(*i)).collect(),
            pps: s.pps,
            start: Duration::from_secs_f64(s.start_s),
            stop: Duration::from_secs_f64(s.stop_s),
            live: std::sync::Arc::default(),
            slot_ns: 0,
        });
    }
    // All streams counted as if they ran at once (they may not overlap: conservative).
    if let Some(m) = limits.max_rate_bps.filter(|m| bits > *m) {
        return Err(format!(
            "{bits:.0} bit/s in all: this server allows {m:.0} bit/s per test"
        ));
    }
    Ok(out)
}

/// Largest frame a lent port sends, FCS included (jumbo 9216 and a VLAN tag).
const MAX_LEN: u64 = 9216 + 4;

/// Runs `send` (given a stop flag) while watching the control connection: an abort, the
/// connection closing, or the sending running past `wait` stops it (`None` for the first
/// two).
fn send_watched<T>(
    ctrl: &TcpStream,
    wait: Duration,
    send: impl FnOnce(&AtomicBool) -> std::io::Result<T>,
) -> std::io::Result<Option<T>> {
    let stop = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let gone = AtomicBool::new(false);
    let watch = ctrl.try_clone()?;
    std::thread::scope(|s| {
        s.spawn(|| crate::server::watch_controller(&watch, &done, &stop, &gone, wait));
        let r = send(&stop);
        done.store(true, Ordering::Release);
        let r = r?;
        Ok((!gone.load(Ordering::Relaxed)).then_some(r))
    })
}

/// The trial a [`ClientMsg::RawSend`] asks for, within the server's limits (longest test,
/// most bits/s).
fn send_spec(
    frame: &str,
    frame_len: u64,
    test_id: u16,
    stream_id: u8,
    load: RawLoad,
    limits: &crate::messages::Limits,
) -> Result<RawTrialSpec, String> {
    let spec = example_spec(frame)?;
    fits_len(&spec, frame_len)?;
    let max_s = limits.max_duration_s;
    let bits = |pps: f64| pps * frame_len as f64 * 8.0;
    match load {
        RawLoad::Rate { pps, .. } if !(pps.is_finite() && pps > 0.0) => {
            return Err(format!("a rate of {pps} frames/s: give one above 0"))
        }
        RawLoad::Rate { duration, .. } if duration.as_secs_f64() > max_s => {
            return Err(format!(
                "{} s: this server's longest test is {max_s} s",
                duration.as_secs_f64()
            ))
        }
        RawLoad::Rate { pps, .. } if limits.max_rate_bps.is_some_and(|m| bits(pps) > m) => {
            return Err(format!(
                "{:.0} bit/s: this server allows {:.0} bit/s per test",
                bits(pps),
                limits.max_rate_bps.unwrap_or_default()
            ))
        }
        RawLoad::Burst { target_pps, .. } if !(target_pps.is_finite() && target_pps > 0.0) => {
            return Err(format!("a burst at {target_pps} frames/s: give one above 0"))
        }
        RawLoad::Burst { frames, target_pps } if frames as f64 / target_pps > max_s => {
            return Err(format!(
                "a burst of {frames} frames at {target_pps:.0} frames/s lasts longer than this server's longest test of {max_s} s"
            ))
        }
        _ => {}
    }
    Ok(RawTrialSpec {
        frame: spec,
        frame_len: frame_len as usize,
        test_id,
        stream_id,
        load,
        drain: Duration::ZERO,
        interval: None,
    })
}

/// What the controller said while a receiver or a reflector ran.
enum Told {
    /// The sender is done after this many frames.
    Done(u64),
    /// Abort, or the connection closed: end the session.
    Gone,
}

/// Waits up to `wait` for [`ClientMsg::RawDone`]; an abort or a closed connection is
/// [`Told::Gone`]; anything else, or no word in time, is refused.
fn told(ctrl: &mut TcpStream, wait: Duration) -> Result<Told, ProtoError> {
    match read_msg_within(ctrl, wait) {
        Ok(ClientMsg::RawDone { sent }) => Ok(Told::Done(sent)),
        Ok(ClientMsg::Abort { .. }) | Err(ProtoError::Closed) => Ok(Told::Gone),
        Ok(other) => Err(refuse(
            ctrl,
            ErrorCode::Protocol,
            format!("expected raw_done, got {}", kind(&other)),
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
/// with the frames sent); `None` when it aborted or went away.
fn count(
    ctrl: &mut TcpStream,
    rx: &mut dyn FrameRx,
    test_id: u16,
    streams: &[u8],
    drain: Duration,
    wait: Duration,
) -> Result<Option<Reception>, ProtoError> {
    let generating = AtomicUsize::new(1);
    let expected = AtomicU64::new(u64::MAX);
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let counting = s.spawn(|| {
            engine::raw::receive_trial(rx, test_id, streams, drain, &generating, &expected, &stop)
        });
        let heard = write_msg(ctrl, &ServerMsg::RawReceiving).and_then(|()| told(ctrl, wait));
        if let Ok(Told::Done(sent)) = heard {
            expected.store(sent, Ordering::Release);
            generating.store(0, Ordering::Release);
        } else {
            stop.store(true, Ordering::Relaxed);
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
/// ([`ClientMsg::RawDone`]), then for [`REFLECT_DRAIN`] more (the last frames are still on
/// their way); `None` when it aborted or went away.
fn reflect(
    ctrl: &mut TcpStream,
    rx: &mut dyn FrameRx,
    tx: &mut dyn FrameTx,
    test_id: u16,
    wait: Duration,
) -> Result<Option<engine::raw::Reflected>, ProtoError> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let running = s.spawn(|| engine::raw::reflect(rx, tx, test_id, &stop));
        let heard = write_msg(ctrl, &ServerMsg::RawReflecting).and_then(|()| told(ctrl, wait));
        if matches!(heard, Ok(Told::Done(_))) {
            std::thread::sleep(REFLECT_DRAIN);
        }
        stop.store(true, Ordering::Relaxed);
        let done = running.join();
        outcome(ctrl, heard, done, "reflector")
    })
}

/// How long a reflector keeps going after the sender is done.
const REFLECT_DRAIN: Duration = Duration::from_millis(100);

/// What the server said about a port it opened.
#[derive(Debug, Clone)]
pub struct PortFacts {
    /// MAC address.
    pub mac: [u8; 6],
    /// First IPv4 address.
    pub ipv4: Option<std::net::Ipv4Addr>,
    /// First IPv6 address that is not link-local.
    pub ipv6: Option<std::net::Ipv6Addr>,
    /// MTU.
    pub mtu: Option<u32>,
    /// The next hop's MAC toward the address asked for.
    pub next_hop_mac: Option<[u8; 6]>,
    /// The backends, `sender / receiver`.
    pub backend: String,
    /// The server's boot id, when it said it: ports of servers with equal ones share a
    /// clock.
    pub host_id: Option<String>,
}

/// A raw port of a server, as the controller holds it: one authenticated session that
/// stays open for the trials.
pub struct RawAgent {
    ctrl: TcpStream,
    /// The server's longest test.
    max_s: f64,
    /// Why the session cannot go on (a request failed midway: its answer may still come).
    broken: Option<String>,
    /// `HOST/IFACE` as given.
    pub label: String,
    /// The interface there.
    pub iface: String,
    /// The port.
    pub facts: PortFacts,
    /// The server shares this host's clock (equal boot ids).
    pub same_host: bool,
    /// Set by Ctrl-C: a send is cut short by closing the session.
    stop: Option<std::sync::Arc<AtomicBool>>,
}

/// What a controller asks of a port.
#[derive(Debug, Clone, Default)]
pub struct RawOpenRequest {
    /// The interface.
    pub port: String,
    /// A sender with this backend (`auto`: the fastest that opens).
    pub send: Option<String>,
    /// A receiver with this backend (`auto`: the ring, then packet).
    pub receive: Option<String>,
    /// Largest frame, FCS included.
    pub max_len: u64,
    /// Resolve the next hop's MAC toward this address.
    pub resolve: Option<IpAddr>,
}

fn answer(ctrl: &TcpStream, wait: Duration) -> Result<ServerMsg, ProtoError> {
    match read_msg_within(ctrl, wait)? {
        ServerMsg::Error { code, message } => Err(ProtoError::Refused { code, message }),
        other => Ok(other),
    }
}

impl RawAgent {
    /// Sends `msg` and reads the answer within `wait`; a failure leaves the session
    /// unusable (a late answer must not pass for the next one).
    fn ask(&mut self, msg: &ClientMsg, wait: Duration) -> Result<ServerMsg, ProtoError> {
        if let Some(why) = &self.broken {
            return Err(ProtoError::Unexpected(format!(
                "the session failed earlier: {why}"
            )));
        }
        let r = write_msg(&mut self.ctrl, msg).and_then(|()| answer(&self.ctrl, wait));
        if let Err(e) = &r {
            self.broken = Some(e.to_string());
        }
        r
    }

    /// The server's longest test, seconds.
    pub fn longest_test(&self) -> f64 {
        self.max_s
    }

    /// The longest a request may take: the server's longest test and some.
    fn longest(&self) -> Duration {
        Duration::from_secs_f64(self.max_s.clamp(1.0, 86_400.0)) + SLACK
    }
}

fn unexpected(what: &str, got: &ServerMsg) -> ProtoError {
    ProtoError::Unexpected(format!("expected {what}, got {got:?}"))
}

impl RawAgent {
    /// Connects to the server of `cfg`, authenticates and opens the port.
    ///
    /// # Errors
    /// The server cannot be reached or authenticated, lends no such port, or cannot open it.
    pub fn open(cfg: &ClientConfig, label: &str, req: &RawOpenRequest) -> Result<Self, ProtoError> {
        let session = Session::connect(cfg)?;
        let same_host = session.same_host;
        let host_id = session.host_id.clone();
        let max_s = session.limits.max_duration_s;
        let mut ctrl = session.into_stream();
        write_msg(
            &mut ctrl,
            &ClientMsg::RawOpen {
                port: req.port.clone(),
                send: req.send.clone(),
                receive: req.receive.clone(),
                max_len: req.max_len,
                resolve: req.resolve,
            },
        )?;
        match answer(&ctrl, Duration::from_secs(30))? {
            ServerMsg::RawOpened {
                mac,
                ipv4,
                ipv6,
                mtu,
                next_hop_mac,
                backend,
            } => Ok(Self {
                ctrl,
                max_s,
                broken: None,
                label: label.to_owned(),
                iface: req.port.clone(),
                facts: PortFacts {
                    mac,
                    ipv4,
                    ipv6,
                    mtu,
                    next_hop_mac,
                    backend,
                    host_id,
                },
                same_host,
                stop: cfg.stop.clone(),
            }),
            other => Err(unexpected("raw_opened", &other)),
        }
    }

    /// Starts counting the frames of `test_id`, `streams`; returns once the port counts.
    ///
    /// # Errors
    /// The server refused or the connection failed.
    pub fn start_receive(
        &mut self,
        test_id: u16,
        streams: &[u8],
        drain: Duration,
    ) -> Result<(), ProtoError> {
        let msg = ClientMsg::RawReceive {
            test_id,
            streams: streams.to_vec(),
            drain_ms: drain.as_millis() as u64,
        };
        match self.ask(&msg, SLACK)? {
            ServerMsg::RawReceiving => Ok(()),
            other => Err(unexpected("raw_receiving", &other)),
        }
    }

    /// Tells the receiver the sender is done after `sent` frames; its counts once drained.
    ///
    /// # Errors
    /// The server refused or the connection failed.
    pub fn finish_receive(&mut self, sent: u64) -> Result<Reception, ProtoError> {
        match self.ask(&ClientMsg::RawDone { sent }, SLACK)? {
            ServerMsg::RawReceived { reception } => Ok(reception),
            other => Err(unexpected("raw_received", &other)),
        }
    }

    /// Starts turning the frames of `test_id` around (the port was opened for sending and
    /// receiving); returns once it runs.
    ///
    /// # Errors
    /// The server refused or the connection failed.
    pub fn start_reflect(&mut self, test_id: u16) -> Result<(), ProtoError> {
        match self.ask(&ClientMsg::RawReflect { test_id }, SLACK)? {
            ServerMsg::RawReflecting => Ok(()),
            other => Err(unexpected("raw_reflecting", &other)),
        }
    }

    /// Stops the reflector once the frames of `sent` have had time to come back.
    ///
    /// # Errors
    /// The server refused or the connection failed.
    pub fn finish_reflect(&mut self, sent: u64) -> Result<engine::raw::Reflected, ProtoError> {
        match self.ask(&ClientMsg::RawDone { sent }, SLACK)? {
            ServerMsg::RawReflected { reflected } => Ok(reflected),
            other => Err(unexpected("raw_reflected", &other)),
        }
    }

    /// Sends one stream of frames like `frame` as `spec` says (its frame and drain are
    /// not used: the port builds the frames from `frame`'s headers); returns when sent.
    ///
    /// # Errors
    /// The server refused or the connection failed.
    pub fn send(&mut self, frame: &[u8], spec: &RawTrialSpec) -> Result<Sending, ProtoError> {
        let msg = ClientMsg::RawSend {
            frame: auth::to_hex(frame),
            frame_len: spec.frame_len as u64,
            test_id: spec.test_id,
            stream_id: spec.stream_id,
            load: spec.load,
        };
        // A burst lasts what the generator makes of it; the server ends any send within
        // its longest test. A stop (Ctrl-C) closes the session: the server stops sending.
        let wait = self.longest();
        let stop = self.stop.clone();
        let ctrl = self.ctrl.try_clone().map_err(ProtoError::Io)?;
        let answer =
            crate::client::closing_on_stop(&ctrl, stop.as_deref(), || self.ask(&msg, wait))?;
        match answer {
            ServerMsg::RawSent { sent } => Ok(sent),
            other => Err(unexpected("raw_sent", &other)),
        }
    }

    /// Sends `streams` of test `test_id` at once, each on its schedule; returns when all
    /// have reached their stop offsets, with what each sent. `halt` (else the session's
    /// stop) ends it early: the session is closed and the server stops sending.
    ///
    /// # Errors
    /// The server refused, the connection failed, or [`ProtoError::Interrupted`].
    pub fn send_streams(
        &mut self,
        test_id: u16,
        streams: Vec<RawStream>,
        halt: Option<&AtomicBool>,
    ) -> Result<Vec<RawStreamSent>, ProtoError> {
        // The last stream's stop, and time to build the frames and answer.
        let last = streams.iter().map(|s| s.stop_s).fold(0.0, f64::max);
        let wait = Duration::from_secs_f64(last.clamp(0.0, self.max_s)) + SLACK;
        let stop = self.stop.clone();
        let halt = halt.or(stop.as_deref());
        let ctrl = self.ctrl.try_clone().map_err(ProtoError::Io)?;
        let answer = crate::client::closing_on_stop(&ctrl, halt, || {
            self.ask(&ClientMsg::RawStreams { test_id, streams }, wait)
        })?;
        match answer {
            ServerMsg::RawStreamsSent { sent } => Ok(sent),
            other => Err(unexpected("raw_streams_sent", &other)),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// A UDP frame of the headers a controller sends (a built test frame).
    fn frame() -> Vec<u8> {
        use wire::frame::{FrameSpec, L4Spec};
        let spec = FrameSpec {
            eth: wire::ethernet::EthernetRepr {
                src_addr: wire::EthernetAddress([2, 0, 0, 0, 0, 1]),
                dst_addr: wire::EthernetAddress([2, 0, 0, 0, 0, 2]),
                ethertype: wire::EtherType::IPV4,
            },
            vlan: None,
            ip: wire::IpRepr::V4(wire::ipv4::Ipv4Repr {
                src_addr: wire::Ipv4Address([198, 18, 0, 1]),
                dst_addr: wire::Ipv4Address([198, 18, 0, 2]),
                protocol: wire::IpProtocol::UDP,
                payload_len: 0,
                ttl: 64,
                dscp: 0,
                ecn: 0,
                dont_frag: true,
                ident: 0,
            }),
            l4: L4Spec::Udp {
                src_port: 1,
                dst_port: 2,
            },
        };
        let hdr = wire::testhdr::TestHeaderRepr::template(7, 1);
        let mut buf = vec![0u8; 128];
        let n = spec.build(128, &hdr, &mut buf).unwrap();
        buf.truncate(n);
        buf
    }

    fn rate(pps: f64, secs: u64) -> RawLoad {
        RawLoad::Rate {
            pps,
            duration: Duration::from_secs(secs),
            count: None,
        }
    }

    #[test]
    fn a_send_request_is_checked_before_anything_is_sent() {
        let hex = auth::to_hex(&frame());
        let limits = crate::messages::Limits {
            max_duration_s: 60.0,
            max_rate_bps: Some(1e9),
            ..Default::default()
        };
        let ok = send_spec(&hex, 128, 7, 1, rate(1000.0, 2), &limits).unwrap();
        assert_eq!((ok.frame_len, ok.test_id, ok.stream_id), (128, 7, 1));
        assert_eq!(ok.frame.eth.dst_addr.0, [2, 0, 0, 0, 0, 2]);
        let refused = |frame: &str, len: u64, load: RawLoad| {
            send_spec(frame, len, 7, 1, load, &limits).unwrap_err()
        };
        assert!(refused("zz", 128, rate(1.0, 1)).contains("not hex"));
        assert!(refused("0102", 128, rate(1.0, 1)).contains("no IP"));
        assert!(refused(&hex, 40, rate(1.0, 1)).contains("does not fit"));
        assert!(refused(&hex, 100_000, rate(1.0, 1)).contains("does not fit"));
        assert!(refused(&hex, 128, rate(f64::NAN, 1)).contains("above 0"));
        assert!(refused(&hex, 128, rate(-5.0, 1)).contains("above 0"));
        assert!(refused(&hex, 128, rate(1000.0, 61)).contains("longest test is 60 s"));
        // 1e6 frames/s of 128 bytes: 1.024 Gbit/s.
        assert!(refused(&hex, 128, rate(1e6, 1)).contains("allows 1000000000 bit/s"));
        let burst = |frames, target_pps| RawLoad::Burst { frames, target_pps };
        assert!(refused(&hex, 128, burst(u64::MAX, 1.0)).contains("longer than"));
        assert!(refused(&hex, 128, burst(61_000, 1000.0)).contains("longer than"));
        assert!(refused(&hex, 128, burst(10, 0.0)).contains("above 0"));
        assert!(send_spec(&hex, 128, 7, 1, burst(59_000, 1000.0), &limits).is_ok());
    }

    #[test]
    fn streams_are_built_here_and_checked_before_anything_is_sent() {
        let hex = auth::to_hex(&frame());
        let limits = crate::messages::Limits {
            max_duration_s: 60.0,
            max_rate_bps: Some(1e12),
            max_streams: 128,
            ..Default::default()
        };
        let stream = |id: u8, pps: f64, (start_s, stop_s): (f64, f64)| RawStream {
            stream_id: id,
            frame: hex.clone(),
            sizes: vec![128, 256],
            pattern: vec![0, 1, 1],
            pps,
            start_s,
            stop_s,
        };
        let ok = stream_specs(
            9,
            &[stream(1, 1000.0, (0.0, 2.0)), stream(2, 10.0, (0.5, 1.0))],
            1518,
            &limits,
        )
        .unwrap();
        assert_eq!(ok.len(), 2);
        assert_eq!((ok[0].stream_id, ok[0].pattern.clone()), (1, vec![0, 1, 1]));
        assert_eq!(ok[1].start, Duration::from_millis(500));
        // Each size built here, with this test's header, to its length without FCS.
        let lens: Vec<usize> = ok[0].templates.iter().map(|(b, _)| b.len()).collect();
        assert_eq!(lens, [124, 252]);
        let parsed = wire::frame::parse_frame(&ok[1].templates[1].0).unwrap();
        assert_eq!(parsed.test.map(|t| (t.test_id, t.stream_id)), Some((9, 2)));
        let refused = |streams: &[RawStream], max_len: u64| match stream_specs(
            9, streams, max_len, &limits,
        ) {
            Ok(_) => panic!("accepted"),
            Err(e) => e,
        };
        assert!(refused(&[], 1518).contains("1 to 128 streams"));
        let many: Vec<RawStream> = (0..129).map(|i| stream(i, 1.0, (0.0, 1.0))).collect();
        assert!(refused(&many, 1518).contains("--max-streams"));
        let mut bad = stream(1, 1000.0, (0.0, 1.0));
        bad.pattern = vec![0, 2];
        assert!(refused(&[bad], 1518).contains("pattern"));
        let mut bad = stream(1, 1000.0, (0.0, 1.0));
        bad.frame = "zz".into();
        assert!(refused(&[bad], 1518).contains("not hex"));
        let mut bad = stream(1, 1000.0, (0.0, 1.0));
        bad.sizes = vec![128, 128];
        assert!(refused(&[bad], 1518).contains("each once"));
        // 128 streams of 64 jumbo sizes would be 75 MiB of frames to build.
        let jumbo: Vec<RawStream> = (0..128)
            .map(|i| RawStream {
                sizes: (0..64).map(|k| 9000 + k).collect(),
                pattern: vec![0],
                ..stream(i, 1.0, (0.0, 1.0))
            })
            .collect();
        assert!(stream_specs(9, &jumbo, 9220, &limits).is_err_and(|e| e.contains("MiB of frames")));
        assert!(refused(&[stream(1, f64::NAN, (0.0, 1.0))], 1518).contains("frames/s"));
        assert!(refused(&[stream(1, 1.0, (1.0, 1.0))], 1518).contains("from 1 s to 1 s"));
        assert!(refused(&[stream(1, 1.0, (0.0, 61.0))], 1518).contains("longest test is 60 s"));
        assert!(refused(&[stream(1, 1.0, (0.0, 1.0))], 200).contains("opened for 200"));
        // Two streams of 500M frames/s, mean 213 bytes: 1.7 Tbit/s in all.
        let both = [stream(1, 5e8, (0.0, 1.0)), stream(2, 5e8, (0.0, 1.0))];
        assert!(refused(&both, 1518).contains("in all: this server allows"));
    }
}
