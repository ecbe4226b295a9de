//! An `rfc6349` run: the path's figures through the server's echo (or as given), the
//! window plan, the TCP throughput test (`jobs::client`), then the metrics.

use std::net::UdpSocket;
use std::time::Duration;

use control::client::Session;
use engine::probe;
use method::rfc6349::{self as rfc, PmtuSearch, WindowPlan, ETHERNET_OVERHEAD};
use model::results::{RunResult, TcpState};
use model::spec::{Protocol, TcpOptions, TestSpec};
use model::stop::Stop;
use model::units::bps;

use super::request::{Rfc6349Request, WindowChoice};
use super::result::{PathFigures, Rfc6349Result, Source, PART};
use crate::request::{ClientRequest, Connect};
use crate::trials::client_config;
use crate::{usage, Error, Watch};

/// Echoes of the baseline RTT: 64 bytes every 20 ms, answers waited for up to 2 s.
const ECHO_SIZE: usize = 64;
const ECHO_EVERY: Duration = Duration::from_millis(20);
const ECHO_WAIT: Duration = Duration::from_secs(2);

/// Sequence numbers of the MTU probes and the trains start here, above any echo's.
const PROBE_SEQ: u64 = 1 << 32;

/// Runs `req`.
pub(super) fn run(
    req: &Rfc6349Request,
    watch: &mut dyn Watch,
    stop: &Stop,
) -> Result<RunResult, Error> {
    let mut path = if req.iperf3 {
        given(req)?
    } else {
        probe_path(req, watch, stop)?
    };
    if stop.is_raised() {
        return Err(Error::Interrupted);
    }
    let rtt = Duration::from_secs_f64(path.baseline_rtt_us / 1e6);
    let bdp = rfc::bdp_bytes(rtt, path.bottleneck_bps);
    let max_window = req.max_window.unwrap_or_else(host_max_window).max(1);
    let plan = plan(req, bdp, max_window);
    watch.progress(&format!(
        "BDP {} bytes: {} connection(s), window {}",
        bdp,
        plan.connections,
        match req.window {
            WindowChoice::Auto => "not set (autotuning)".to_owned(),
            _ => format!("{} bytes each", plan.window_bytes),
        }
    ));
    let window = match req.window {
        WindowChoice::Auto => None,
        _ => Some(u32::try_from(plan.window_bytes).unwrap_or(u32::MAX)),
    };
    let test = ClientRequest {
        server: req.server.clone(),
        spec: TestSpec {
            duration: req.time,
            len: TestSpec::DEFAULT_TCP_LEN,
            streams: u8::try_from(plan.connections).unwrap_or(u8::MAX),
            window,
            tcp: TcpOptions {
                congestion: req.congestion.clone(),
                ..TcpOptions::default()
            },
            ..TestSpec::base(Protocol::Tcp)
        },
        interval: Some(req.interval),
        cpu: None,
        round_trip: false,
        iperf3: req.iperf3,
        connect: Connect::default(),
        get_server_output: false,
        title: None,
    };
    let mut r = crate::jobs::client(&test, watch, stop)?;
    if req.iperf3 {
        // The path MTU the connection found (TCP_INFO), as the probes would have.
        if let Some(m) = tcp_pmtu(&r) {
            path.mtu = m;
            path.mtu_from = Source::TcpInfo;
        }
    }
    let part = metrics(req, &r, path, plan, max_window);
    r.command = "rfc6349".into();
    if let serde_json::Value::Object(m) = &mut r.params {
        m.insert("rfc6349".into(), params(req));
    }
    r.set_part(PART, &part)
        .map_err(|e| Error::Failed(e.to_string()))?;
    Ok(r)
}

/// What was asked, for the document's `params`.
fn params(req: &Rfc6349Request) -> serde_json::Value {
    serde_json::json!({
        "time_s": req.time.as_secs_f64(),
        "rtt_time_s": req.rtt_time.as_secs_f64(),
        "rtt_us": req.rtt.map(|d| d.as_secs_f64() * 1e6),
        "bb_bps": req.bb,
        "mtu": req.mtu,
        "window": match req.window {
            WindowChoice::Bdp => serde_json::json!("bdp"),
            WindowChoice::Auto => serde_json::json!("auto"),
            WindowChoice::Bytes(b) => serde_json::json!(b),
        },
        "connections": req.connections,
        "max_connections": req.max_connections,
        "max_window": req.max_window,
        "congestion": req.congestion,
        "trains": req.trains.0,
        "train_len": req.trains.1,
    })
}

/// The connections and windows: from the BDP, or as given.
pub(super) fn plan(req: &Rfc6349Request, bdp: u64, max_window: u64) -> WindowPlan {
    let split = |n: u8| WindowPlan {
        bdp_bytes: bdp,
        connections: u32::from(n),
        window_bytes: bdp.div_ceil(u64::from(n)).clamp(1, max_window),
    };
    match (req.window, req.connections) {
        (WindowChoice::Bytes(b), n) => WindowPlan {
            bdp_bytes: bdp,
            connections: u32::from(n.unwrap_or(1)),
            window_bytes: b,
        },
        (_, Some(n)) => split(n),
        (_, None) => rfc::window_plan(bdp, max_window, u32::from(req.max_connections)),
    }
}

/// The most a socket buffer may be set to here: the smaller of `net.core.rmem_max` and
/// `net.core.wmem_max` (212992, Linux's default, if they cannot be read).
fn host_max_window() -> u64 {
    let read = |k: &str| {
        std::fs::read_to_string(format!("/proc/sys/net/core/{k}"))
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    };
    read("rmem_max")
        .unwrap_or(212_992)
        .min(read("wmem_max").unwrap_or(212_992))
}

/// The path's figures as given (an iperf3 server: no echo).
fn given(req: &Rfc6349Request) -> Result<PathFigures, Error> {
    let (Some(rtt), Some(bb)) = (req.rtt, req.bb) else {
        return Err(usage("give --rtt and --bb"));
    };
    Ok(PathFigures {
        mtu: req.mtu.unwrap_or(1500),
        mtu_from: Source::Given,
        mtu_search: None,
        baseline_rtt_us: rtt.as_secs_f64() * 1e6,
        rtt_from: Source::Given,
        rtt_echoes: None,
        bottleneck_bps: bb,
        bottleneck_from: Source::Given,
        trains_bps: Vec::new(),
    })
}

/// The path MTU the test connections reported in their interval rows, the least.
fn tcp_pmtu(r: &RunResult) -> Option<u32> {
    r.intervals
        .iter()
        .filter_map(|row| row.tcp.map(|t| t.pmtu))
        .filter(|m| *m > 0)
        .min()
        .and_then(|m| u32::try_from(m).ok())
}

/// The path's figures, measured through an echo session with the server where not given.
fn probe_path(
    req: &Rfc6349Request,
    watch: &mut dyn Watch,
    stop: &Stop,
) -> Result<PathFigures, Error> {
    let mut cfg = client_config(&req.server)?;
    cfg.stop = Some(stop.clone());
    let session = match Session::connect(&cfg) {
        Err(control::ProtoError::Iperf3Peer) => {
            return Err(usage(format!(
                "{} answers as iperf3, which has no echo to measure the path with: give \
                 --iperf3 with --rtt and --bb",
                cfg.server
            )))
        }
        r => r.map_err(|e| Error::from(e).context(format!("cannot reach {}", cfg.server)))?,
    };
    let budget = req.rtt_time + ECHO_WAIT + Duration::from_secs(120);
    let server = cfg.server;
    session
        .with_echo(TestSpec::MAX_UDP_LEN, budget, |sock| {
            probe_over(req, sock, watch, stop)
        })
        .map_err(|e| Error::from(e).context(format!("echo session with {server} failed")))?
}

/// RTT, MTU and bottleneck bandwidth over the connected echo socket `sock`.
fn probe_over(
    req: &Rfc6349Request,
    sock: &UdpSocket,
    watch: &mut dyn Watch,
    stop: &Stop,
) -> Result<PathFigures, Error> {
    let io = |e: std::io::Error| Error::Failed(format!("probing the path: {e}"));
    // §3.2.1: the least RTT over an idle period.
    let (rtt, rtt_echoes) = match req.rtt {
        Some(r) => (r, None),
        None => {
            watch.progress(&format!(
                "baseline RTT: echoes every {} ms for {} s",
                ECHO_EVERY.as_millis(),
                model::units::secs(req.rtt_time.as_secs_f64())
            ));
            let p = engine::udp::run_paced_pings(
                sock,
                ECHO_SIZE,
                ECHO_EVERY,
                req.rtt_time,
                ECHO_WAIT,
                stop,
                &Stop::new(),
            )
            .map_err(io)?;
            let samples: Vec<Duration> = p
                .samples
                .iter()
                .map(|s| Duration::from_nanos(s.rtt_ns))
                .collect();
            let answered = samples.len() as u64;
            let Some(min) = rfc::baseline_rtt(&samples) else {
                return Err(Error::Failed(format!(
                    "none of {} echoes came back: the path or the server drops UDP",
                    p.sent
                )));
            };
            (min, Some((p.sent, answered)))
        }
    };
    if stop.is_raised() {
        return Err(Error::Interrupted);
    }
    // RFC 4821: probes of one size at a time, the don't-fragment bit set.
    let mut seq = PROBE_SEQ;
    let (mtu, mtu_search) = match req.mtu {
        Some(m) => (m, None),
        None => {
            let ipv6 = sock.peer_addr().map_err(io)?.is_ipv6();
            let iface = engine::sys::route_mtu(sock, ipv6).map_err(io)?;
            let mut search = PmtuSearch::new(if ipv6 { 1280 } else { 576 }, iface);
            let timeout = (rtt * 4).clamp(Duration::from_millis(200), Duration::from_secs(3));
            watch.progress(&format!("path MTU: probing from the route's {iface} bytes"));
            while let Some(size) = search.next_probe() {
                if stop.is_raised() {
                    return Err(Error::Interrupted);
                }
                if probe::pmtu_probe(sock, size, seq, timeout).map_err(io)? {
                    search.answered(size);
                } else {
                    search.lost(size);
                }
                seq += 1;
            }
            let found = search.result();
            (found.mtu, Some(found))
        }
    };
    // §3.2.2: the bottleneck from trains sent faster than the path carries them.
    let (bb, trains_bps) = match req.bb {
        Some(b) => (b, Vec::new()),
        None => {
            let (count, len) = req.trains;
            watch.progress(&format!(
                "bottleneck bandwidth: {count} trains of {len} packets of {mtu} bytes"
            ));
            let quiet = rtt * 2 + Duration::from_millis(100);
            let mut rates = Vec::new();
            for _ in 0..count {
                if stop.is_raised() {
                    return Err(Error::Interrupted);
                }
                let t = probe::train(sock, mtu, len, seq, quiet, Duration::from_secs(10))
                    .map_err(io)?;
                seq += u64::from(len);
                rates.extend(rfc::bottleneck_bps(&t.arrivals, ETHERNET_OVERHEAD));
                // The queue the train built drains before the next.
                std::thread::sleep(rtt * 2);
            }
            let Some(bb) = rfc::median(&rates) else {
                return Err(Error::Failed(format!(
                    "no train of {len} packets of {mtu} bytes came back with two answers"
                )));
            };
            (bb, rates)
        }
    };
    watch.progress(&format!(
        "path: MTU {mtu} bytes, baseline RTT {:.3} ms, bottleneck {}",
        rtt.as_secs_f64() * 1e3,
        bps(bb)
    ));
    let measured = |given: bool| {
        if given {
            Source::Given
        } else {
            Source::Measured
        }
    };
    Ok(PathFigures {
        mtu,
        mtu_from: measured(req.mtu.is_some()),
        mtu_search,
        baseline_rtt_us: rtt.as_secs_f64() * 1e6,
        rtt_from: measured(req.rtt.is_some()),
        rtt_echoes,
        bottleneck_bps: bb,
        bottleneck_from: measured(req.bb.is_some()),
        trains_bps,
    })
}

/// The metrics of the TCP test `r` on `path` (§4), with what a reader should know.
pub(super) fn metrics(
    req: &Rfc6349Request,
    r: &RunResult,
    path: PathFigures,
    plan: WindowPlan,
    max_window: u64,
) -> Rfc6349Result {
    let mut notes = Vec::new();
    let s = r.summary.as_ref();
    // The payload per segment: the connection's MSS (TCP_MAXSEG: without the timestamp
    // option's 12 bytes), in packets of that plus the IP and TCP headers with timestamps,
    // at most the path MTU.
    let ipv6 = r
        .connection
        .as_ref()
        .and_then(|c| c.remote.parse::<std::net::SocketAddr>().ok())
        .is_some_and(|a| a.is_ipv6());
    let headers = if ipv6 { 72 } else { 52 };
    let mss = r
        .connection
        .as_ref()
        .and_then(|c| c.tcp_mss)
        .unwrap_or(path.mtu.saturating_sub(headers));
    let packet = (mss + headers).min(path.mtu);
    let ideal = rfc::max_tcp_throughput(path.bottleneck_bps, packet, mss, ETHERNET_OVERHEAD);
    // The receiver's count over the receiver's time: what arrived, including what the
    // path's queue still held when the sender stopped.
    let throughput = s.and_then(|s| s.received_bps).unwrap_or(0.0);
    let ttr = rfc::transfer_time_ratio(throughput, ideal);
    let efficiency = s.and_then(|s| s.tcp_efficiency_pct);
    if efficiency.is_none() {
        notes.push(
            "no TCP efficiency: the sender's TCP_INFO has no byte counts (Linux before 4.19, \
             or the sender is the iperf3 server)"
                .into(),
        );
    }
    // The sending connections' state at each interval's end.
    let states: Vec<TcpState> = r
        .intervals
        .iter()
        .filter(|row| row.direction == "tx")
        .filter_map(|row| row.tcp)
        .collect();
    let during: Vec<Duration> = states
        .iter()
        .map(|t| Duration::from_micros(t.rtt_us))
        .filter(|d| !d.is_zero())
        .collect();
    let advertised = states.iter().map(|t| t.snd_wnd).max().filter(|w| *w > 0);
    let baseline = Duration::from_secs_f64(path.baseline_rtt_us / 1e6);
    let buffer_delay = rfc::buffer_delay_percent(&during, baseline);
    let rtt_during = rfc::mean_rtt(&during).map(|m| (m.as_secs_f64() * 1e6, during.len()));
    if buffer_delay.is_none() {
        notes.push("no buffer delay: the test gave no RTT samples (interval rows)".into());
    }
    let held = plan.window_bytes * u64::from(plan.connections);
    if req.window != WindowChoice::Auto && held < plan.bdp_bytes {
        notes.push(format!(
            "{} connection(s) of {} bytes hold {held} of the BDP's {} bytes: the test is \
             window-limited to about {} over the baseline RTT, as its transfer time ratio \
             shows",
            plan.connections,
            plan.window_bytes,
            plan.bdp_bytes,
            bps(rfc::window_limited_bps(held, baseline))
        ));
    }
    if let (Some(lo), Some(hi)) = (
        path.trains_bps.iter().copied().reduce(f64::min),
        path.trains_bps.iter().copied().reduce(f64::max),
    ) {
        if hi > lo * 1.10 {
            notes.push(format!(
                "the trains disagree: {} to {} (the median is taken); cross traffic or a \
                 busy host spreads them",
                bps(lo),
                bps(hi)
            ));
        }
    }
    if throughput > ideal * 1.05 {
        notes.push(format!(
            "TCP moved {} against an ideal of {}: the bottleneck bandwidth is \
             underestimated (the trains measured something slower than the path: this host \
             sending them, or the server echoing them); give it with --bb",
            bps(throughput),
            bps(ideal)
        ));
    }
    Rfc6349Result {
        path,
        plan,
        window_from: req.window.from(),
        max_window,
        advertised_window: advertised,
        mss,
        ideal_bps: ideal,
        throughput_bps: throughput,
        transfer_time_ratio: ttr,
        tcp_efficiency_pct: efficiency,
        buffer_delay_pct: buffer_delay,
        rtt_during_us: rtt_during,
        notes,
    }
}
