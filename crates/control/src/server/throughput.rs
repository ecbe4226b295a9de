//! A throughput test on the server's side: limits and admission first, then the data
//! streams set up on the client's request (UDP sockets or one TCP listener, AF_XDP where
//! asked and possible), started on the client's go-ahead, and the control loop that sends
//! interval samples and the results, and ends a test whose client falls silent, sends
//! above `--max-rate` or does not finish in time ([`crate::watch`] decides those). Time
//! is the server's clock's (`Ctx::clock`).
//!
//! The dispatcher ([`crate::server`]) calls [`serve`]; this module imports nothing of it.

use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Duration;

use engine::{tcp, udp};
use model::clock::Clock;
use model::spec::{Protocol, TestSpec};
use model::stop::RaiseOnDrop;

use crate::auth;
use crate::conn::spawn_reader;
use crate::frame::{read_msg_within, write_msg};
use crate::limits::{check_interval, check_limits, test_memory};
use crate::messages::{self, ClientMsg, ErrorCode, ServerHost, ServerMsg, StreamReport};
use crate::session::{admit, refuse, Ctx};
use crate::streams::{
    self, tcp_send_config, udp_recv_config, udp_send_config, Sender, SideRun, TestKey,
};
use crate::timing::{grace, sent_counts, tick_end};
use crate::watch::{Watch, FINISH_SLACK};
use crate::ProtoError;
use engine::clock::RealPauses;
use model::wait::{Poll, Wait};

/// Time the client has to connect its data streams after `Accepted`.
const STREAM_SETUP_TIMEOUT: Duration = Duration::from_secs(5);

/// Serves a [`ClientMsg::Test`]; `started` is set once the test has started (its end is
/// counted in the metrics, not as a refusal).
pub(crate) fn serve(
    mut ctrl: TcpStream,
    ctx: &Ctx,
    spec: TestSpec,
    one_way: bool,
    interval_ms: u32,
    started: &std::cell::Cell<bool>,
) -> Result<(), ProtoError> {
    if let Err(e) = check_limits(&spec, &ctx.limits) {
        return Err(refuse(&mut ctrl, ErrorCode::Limit, e.to_string()));
    }
    if let Err(e) = check_interval(interval_ms) {
        return Err(refuse(&mut ctrl, ErrorCode::Limit, e.to_string()));
    }
    let _admitted = admit(&mut ctrl, ctx, test_memory(&spec))?;
    // A test has ended, however it ended.
    let _ended = ctx.finished.as_ref().map(RaiseOnDrop::new);
    let test_id = ctx.next_test_id.fetch_add(1, Ordering::Relaxed);
    let Ok(nonce) = auth::nonce() else {
        return Err(refuse(
            &mut ctrl,
            ErrorCode::Internal,
            "no randomness for the test token".into(),
        ));
    };
    let token = u64::from_le_bytes([
        nonce[0], nonce[1], nonce[2], nonce[3], nonce[4], nonce[5], nonce[6], nonce[7],
    ]);
    let local_ip = ctrl.local_addr().map_err(ProtoError::Io)?.ip();
    let plan = streams::plan(&spec);
    let mut side = SideRun::new(spec.server_cpu.map(usize::from));
    let setup = match spec.protocol {
        Protocol::Udp => setup_udp(
            &mut ctrl,
            &spec,
            TestKey::new(&spec, test_id, token, one_way, interval_ms),
            local_ip,
            &plan,
            &mut side,
            ctx.rx_xdp,
        ),
        Protocol::Tcp => setup_tcp(
            &mut ctrl,
            &spec,
            (test_id, token),
            local_ip,
            &plan,
            &mut side,
            &*ctx.clock,
        ),
    };
    if let Err(e) = setup {
        side.abort();
        return Err(refuse(
            &mut ctrl,
            ErrorCode::Internal,
            format!("stream setup failed: {e}"),
        ));
    }
    write_msg(&mut ctrl, &ServerMsg::Ready)?;
    // The senders start on the client's go-ahead: by then the client has every stream's
    // handshake answer and its receivers run, so no data is lost to the handshake.
    match read_msg_within::<ClientMsg>(&ctrl, STREAM_SETUP_TIMEOUT, &*ctx.clock) {
        Ok(ClientMsg::Start) => {}
        Ok(ClientMsg::Abort { .. }) => return Ok(()),
        Ok(other) => {
            return Err(refuse(
                &mut ctrl,
                ErrorCode::Protocol,
                format!("expected start, got {}", other.kind()),
            ))
        }
        Err(e) => return Err(e),
    }
    if let Err(e) = side.start() {
        side.abort();
        return Err(refuse(
            &mut ctrl,
            ErrorCode::Internal,
            format!("cannot start the senders: {e}"),
        ));
    }
    // Scrapes read this test's streams until it ends, however it ends.
    let _watched = ctx.metrics.as_ref().map(|m| {
        let sends = |id: u8| plan.iter().any(|(i, w)| *i == id && *w == Sender::Server);
        let streams = side
            .lives()
            .into_iter()
            .map(|(id, live)| (sends(id), live))
            .collect();
        let client = ctrl
            .peer_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        m.start_test(test_id, spec.protocol.as_str(), client.ip(), streams)
    });
    started.set(true);
    let client_sent: Vec<u8> = plan
        .iter()
        .filter(|(_, w)| *w == Sender::Client)
        .map(|(id, _)| *id)
        .collect();
    let metering = Metering {
        idle: ctx.idle_timeout,
        max_rate: ctx.limits.max_rate_bps,
        client_sent,
    };
    let done = run_control_loop(ctrl, spec, interval_ms, side, &metering, &*ctx.clock);
    if let Some(m) = &ctx.metrics {
        m.ended(match &done {
            Ok(true) => "completed",
            Ok(false) => "aborted",
            Err(_) => "failed",
        });
    }
    done.map(|_| ())
}

#[allow(clippy::too_many_arguments)]
fn setup_udp(
    ctrl: &mut TcpStream,
    spec: &TestSpec,
    key: TestKey,
    local_ip: IpAddr,
    plan: &[(u8, Sender)],
    side: &mut SideRun,
    rx_xdp: bool,
) -> std::io::Result<()> {
    let mut socks = Vec::with_capacity(plan.len());
    for _ in plan {
        let s = UdpSocket::bind((local_ip, 0))?;
        udp::prepare_socket(&s, spec.window, spec.dscp)?;
        socks.push(s);
    }
    let ports = socks
        .iter()
        .map(|s| s.local_addr().map(|a| a.port()))
        .collect::<Result<Vec<_>, _>>()?;
    let receiving = plan
        .iter()
        .filter(|(_, who)| *who == Sender::Client)
        .count();
    // AF_XDP is chosen before the client hears the ports (its frames hold a GSO batch
    // only up to a size, which the client's senders must keep to) and attached after the
    // streams registered (their registrations come to the socket).
    let mut xdp: Vec<Option<Result<_, String>>> = plan
        .iter()
        .map(|(_, who)| {
            (rx_xdp && *who == Sender::Client).then(|| xdp_claim(local_ip, receiving, spec.len))
        })
        .collect();
    let udp_max_send = xdp
        .iter()
        .any(|x| matches!(x, Some(Ok(_))))
        .then_some(udp::AF_XDP_MAX_SEND as u32);
    write_msg(
        ctrl,
        &ServerMsg::Accepted {
            test_id: key.test_id,
            token: key.token,
            ports,
            udp_max_send,
        },
    )
    .map_err(|e| std::io::Error::other(e.to_string()))?;
    let peer_ip = ctrl.peer_addr()?.ip();
    let pairs: Vec<(&UdpSocket, u8)> = socks
        .iter()
        .zip(plan)
        .map(|(s, (id, _))| (s, *id))
        .collect();
    udp::accept_registrations(
        &pairs,
        key.test_id,
        key.token,
        peer_ip,
        STREAM_SETUP_TIMEOUT,
    )?;
    // Receivers first so that nothing the client sends at once is missed.
    for ((s, (id, who)), xdp) in socks.iter().zip(plan).zip(&mut xdp) {
        if *who != Sender::Client {
            continue;
        }
        let cfg = udp_recv_config(spec, key, *id);
        let mut not_xdp = None;
        match xdp
            .take()
            .map(|x| x.and_then(|claim| xdp_receiver(s, claim)))
        {
            Some(Ok((rx, claim))) => {
                side.udp_receiver_xdp(s.try_clone()?, rx, claim, cfg)?;
                continue;
            }
            Some(Err(why)) => {
                tracing::warn!("UDP test {}: af_xdp not used: {why}", key.test_id);
                not_xdp = Some(why);
            }
            None => {}
        }
        side.udp_receiver(s.try_clone()?, cfg, not_xdp)?;
    }
    for (s, (id, who)) in socks.into_iter().zip(plan) {
        if *who == Sender::Server {
            side.udp_sender_pending(s, udp_send_config(spec, key, *id));
        }
    }
    Ok(())
}

/// Interfaces whose AF_XDP receiver a test holds (one program per interface).
static XDP_IFACES: std::sync::Mutex<std::collections::BTreeSet<String>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// A test's hold on an interface's AF_XDP receiver (the interface's name), given back
/// when dropped.
struct XdpClaim(String);

impl Drop for XdpClaim {
    fn drop(&mut self) {
        XDP_IFACES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.0);
    }
}

/// The hold on the AF_XDP receiver of the interface that holds `local_ip`, for a test
/// stream's datagrams; or why it cannot have one: a test of more than one receiving
/// stream, datagrams longer than its frames hold, loopback, an interface another test
/// holds.
fn xdp_claim(local_ip: IpAddr, receiving: usize, datagram_len: usize) -> Result<XdpClaim, String> {
    if receiving != 1 {
        return Err(format!(
            "it serves one receiving stream per test, this one has {receiving}"
        ));
    }
    if datagram_len > udp::AF_XDP_MAX_SEND {
        return Err(format!(
            "its frames hold datagrams of up to {} bytes, this test's are {datagram_len}",
            udp::AF_XDP_MAX_SEND
        ));
    }
    let ip = local_ip.to_canonical();
    if ip.is_loopback() {
        // Known before any program is loaded; the client's batches stay as large as GSO's.
        return Err("AF_XDP does not work on loopback (its 64 KiB MTU)".into());
    }
    let iface = engine::sys::interface_with_address(ip)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no interface holds {ip}"))?;
    if !XDP_IFACES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(iface.clone())
    {
        return Err(format!("another test holds {iface}'s AF_XDP receiver"));
    }
    Ok(XdpClaim(iface))
}

/// An AF_XDP receiver on the claimed interface taking the datagrams to `sock`'s port; or
/// why there is none (an interface AF_XDP does not work on, no BPF).
fn xdp_receiver(
    sock: &UdpSocket,
    claim: XdpClaim,
) -> Result<(Box<dyn engine::frameio::FrameRx>, XdpClaim), String> {
    let port = sock.local_addr().map_err(|e| e.to_string())?.port();
    let ep = engine::frameio::Endpoint {
        netns: None,
        iface: claim.0.clone(),
    };
    let filter = engine::frameio::XdpFilter::UdpPorts(vec![port]);
    // Echo probes are answered as they are read: no gathering of short batches.
    let rx = engine::frameio::XdpFrameRx::open_with(&ep, &filter)
        .map_err(|e| e.to_string())?
        .without_gathering();
    Ok((Box::new(rx), claim))
}

/// One TCP listener for all streams of the test (`(test id, token)`); the client has
/// [`STREAM_SETUP_TIMEOUT`] on `clock` to connect them all.
fn setup_tcp(
    ctrl: &mut TcpStream,
    spec: &TestSpec,
    (test_id, token): (u16, u64),
    local_ip: IpAddr,
    plan: &[(u8, Sender)],
    side: &mut SideRun,
    clock: &dyn Clock,
) -> std::io::Result<()> {
    let listener = tcp::listen(SocketAddr::new(local_ip, 0), spec.tcp.mss)?;
    let port = listener.local_addr()?.port();
    write_msg(
        ctrl,
        &ServerMsg::Accepted {
            test_id,
            token,
            ports: vec![port],
            udp_max_send: None,
        },
    )
    .map_err(|e| std::io::Error::other(e.to_string()))?;
    listener.set_nonblocking(true)?;
    let peer_ip = ctrl.peer_addr()?.ip();
    let mut conns: Vec<Option<TcpStream>> = (0..plan.len()).map(|_| None).collect();
    let all_in = |conns: &[Option<TcpStream>]| conns.iter().all(Option::is_some);
    let arrived = Wait::on(&RealPauses(clock))
        .at_most(STREAM_SETUP_TIMEOUT)
        .poll(|| {
            if all_in(&conns) {
                return Poll::Ready(Ok(()));
            }
            match listener.accept() {
                // Only the control connection's peer may connect data streams.
                Ok((s, from)) if from.ip() != peer_ip => drop(s),
                Ok((s, _)) => {
                    if let Err(e) = place_stream(s, spec, (test_id, token), plan, &mut conns) {
                        return Poll::Ready(Err(e));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    return Poll::Wait(Duration::from_millis(2))
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
            if all_in(&conns) {
                Poll::Ready(Ok(()))
            } else {
                Poll::Again
            }
        });
    arrived.ready().unwrap_or_else(|| {
        Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "not all TCP data connections arrived",
        ))
    })?;
    let mut receiving = Vec::new();
    for (c, (id, who)) in conns.into_iter().zip(plan) {
        let Some(s) = c else { continue };
        match who {
            Sender::Client => receiving.push((s, *id)),
            Sender::Server => side.tcp_sender_pending(s, tcp_send_config(spec, *id)),
        }
    }
    side.tcp_receivers(receiving, spec.omit.unwrap_or_default())
}

/// Puts a data connection of the client in its stream's place: its greeting must come at
/// once (a silent connection cannot hold up the setup); one with another test's greeting,
/// or for a stream already in, is dropped.
fn place_stream(
    mut s: TcpStream,
    spec: &TestSpec,
    (test_id, token): (u16, u64),
    plan: &[(u8, Sender)],
    conns: &mut [Option<TcpStream>],
) -> std::io::Result<()> {
    s.set_nonblocking(false)?;
    let Ok(id) = streams::read_greeting(&mut s, test_id, token, Duration::from_millis(500)) else {
        return Ok(());
    };
    if let Some(slot) = plan.iter().position(|(i, _)| *i == id) {
        if conns[slot].is_none() {
            tcp::prepare_stream(&s, spec.window, spec.dscp, &spec.tcp)?;
            conns[slot] = Some(s);
        }
    }
    Ok(())
}

/// What a running test's client is metered by, besides its messages.
struct Metering {
    /// Longest the client may say nothing (and send nothing) before it has finished.
    idle: Duration,
    /// `--max-rate`, bits/s.
    max_rate: Option<f64>,
    /// The streams the client sends (metered against `max_rate`).
    client_sent: Vec<u8>,
}

impl Metering {
    /// Payload bytes received so far on the client's streams, a warm-up's too.
    fn received(&self, side: &SideRun) -> u64 {
        side.lives()
            .iter()
            .filter(|(id, _)| self.client_sent.contains(id))
            .map(|(_, live)| live.raw_bytes())
            .sum()
    }
}

/// Runs a started test to its end, its time on `clock`; `Ok(false)` when the client
/// aborted it.
fn run_control_loop(
    mut ctrl: TcpStream,
    spec: TestSpec,
    interval_ms: u32,
    mut side: SideRun,
    metering: &Metering,
    clock: &dyn Clock,
) -> Result<bool, ProtoError> {
    let limit = spec.total_duration() + FINISH_SLACK;
    let rx = spawn_reader::<ClientMsg>(&ctrl, limit).map_err(ProtoError::Io)?;
    let start = clock.mono();
    let mut watch = Watch::new(
        &spec,
        metering.client_sent.len(),
        metering.max_rate,
        metering.idle,
        start,
    );
    let cpu = engine::env::ProcessCpu::start();
    let interval = (interval_ms > 0).then(|| Duration::from_millis(u64::from(interval_ms)));
    // The measured time starts after the warm-up (-O); the intervals with it.
    let omit = spec.omit.unwrap_or_default();
    let tick_at = |k: u32| tick_end(interval, spec.duration, k).map(|t| omit + t);
    let mut index = 0u32;
    let mut client_reports: Option<Vec<StreamReport>> = None;
    let mut stopped_early = false;
    let mut last_interval: Option<u32> = None;
    // Runs until the client has finished and this side's senders are done; keeps reading
    // the control connection all along (an abort or a vanished client stops the test).
    while client_reports.is_none() || !side.senders_done() {
        let now = clock.mono().saturating_sub(start);
        if watch.overdue(start + now) {
            side.abort();
            return Err(refuse(
                &mut ctrl,
                ErrorCode::Timeout,
                "the client did not finish the test in time".into(),
            ));
        }
        // What the client sends: against the server's limit, and as a sign of life (its
        // Alive messages may wait behind the data on a saturated path).
        if watch.meter_due(clock.mono()) {
            let bytes = metering.received(&side);
            if let Err((bps, max)) = watch.metered(clock.mono(), bytes) {
                side.abort();
                return Err(refuse(
                    &mut ctrl,
                    ErrorCode::Limit,
                    format!(
                        "the client sent {} on average, more than this server's --max-rate of {} (+10 %): test ended",
                        model::units::bps(bps),
                        model::units::bps(max)
                    ),
                ));
            }
        }
        // A client that fell silent (stopped, or its host gone) before it finished.
        if client_reports.is_none() && watch.silent(clock.mono()) {
            side.abort();
            return Err(refuse(
                &mut ctrl,
                ErrorCode::Timeout,
                format!(
                    "the client said nothing for {} s (--idle-timeout): test ended",
                    watch.idle().as_secs_f64()
                ),
            ));
        }
        let next_tick = tick_at(index);
        let wait = next_tick
            .map(|t| t.saturating_sub(now))
            .unwrap_or(Duration::from_millis(20))
            .min(Duration::from_millis(20))
            .min(limit - now);
        let got = rx.recv_timeout(wait);
        if matches!(got, Ok(Ok(_))) {
            watch.heard(clock.mono());
        }
        match got {
            Ok(Ok(ClientMsg::Alive)) => {}
            Ok(Ok(ClientMsg::Finish {
                reports,
                early,
                intervals,
            })) if client_reports.is_none() => {
                if early {
                    side.stop_senders();
                    stopped_early = true;
                    last_interval = intervals;
                }
                client_reports = Some(reports)
            }
            Ok(Ok(ClientMsg::Abort { reason })) => {
                side.abort();
                tracing::info!("client aborted: {reason}");
                return Ok(false);
            }
            Ok(Ok(other)) => {
                side.abort();
                return Err(refuse(
                    &mut ctrl,
                    ErrorCode::Protocol,
                    format!("unexpected {} during a test", other.kind()),
                ));
            }
            Ok(Err(e)) => {
                side.abort();
                return Err(e);
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                side.abort();
                return Err(ProtoError::Closed);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        // The tick at the end is taken at the end, once this side's senders are done (a
        // receiver's count then leaves out what a queue still holds, as in iperf3).
        if let Some(t) = next_tick {
            let now = clock.mono().saturating_sub(start);
            if now >= t && (t < spec.total_duration() || side.senders_done()) {
                send_interval(&mut ctrl, &mut index, &side)?;
            }
        }
    }
    let mut reports = side.join_senders();
    // The tick at the end (and any the end overtook), now that both sides' senders are
    // done: what arrives after it (a queue's tail) is in the totals, not in an interval,
    // as in iperf3. A test stopped early has no more intervals than the client counted,
    // the last one partial (and no more than the test's duration has).
    while !stopped_early && tick_at(index).is_some() {
        send_interval(&mut ctrl, &mut index, &side)?;
    }
    while last_interval.is_some_and(|n| index < n) && tick_at(index).is_some() {
        send_interval(&mut ctrl, &mut index, &side)?;
    }
    let expected = sent_counts(client_reports.as_deref().unwrap_or_default());
    let (quiet, cap) = grace(&spec);
    reports.extend(side.finish_receivers(&expected, quiet, cap, clock));
    let tcp = spec.protocol == Protocol::Tcp;
    let host = ServerHost {
        cpu: cpu.used(),
        congestion: tcp
            .then(|| {
                spec.tcp
                    .congestion
                    .clone()
                    .or_else(engine::env::tcp_congestion_default)
            })
            .flatten(),
    };
    if let Ok(client) = ctrl.peer_addr() {
        tracing::info!(
            target: super::summary::TARGET,
            "{}",
            super::summary::line(client, &spec, &reports)
        );
    }
    messages::fit(&mut reports);
    write_msg(
        &mut ctrl,
        &ServerMsg::Results {
            reports,
            host: Some(host),
        },
    )?;
    Ok(true)
}

/// Sends this side's counters as interval `index` and moves to the next interval.
fn send_interval(ctrl: &mut TcpStream, index: &mut u32, side: &SideRun) -> Result<(), ProtoError> {
    write_msg(
        ctrl,
        &ServerMsg::Interval {
            index: *index,
            streams: side
                .sample()
                .into_iter()
                .map(|(id, s)| (id, s.into()))
                .collect(),
        },
    )?;
    *index += 1;
    Ok(())
}
