//! The tests against a wirebench server: throughput (`client`), the zero-loss sweep, the
//! block-size sweep and ping-pong latency.

use control::client::{IntervalSample, Session};
use model::results::{LatencyKind, LatencyRow, LatencyUs, RunResult};
use model::spec::{EchoSpec, Protocol, TestSpec};
use model::stats::LatencyHistogram;
use model::stop::Stop;

use crate::request::{BlocksizeRequest, ClientRequest, LatencyRequest, SweepRequest};
use crate::trials::client_config;
use crate::trials::{base_spec, ServerTrial, TestServer};
use crate::{usage, Error, Watch};

/// The parameters every server test records.
fn params(spec: &TestSpec, cfg: &control::client::ClientConfig) -> serde_json::Value {
    serde_json::json!({ "server": cfg.server.to_string(), "client_cpu": cfg.cpu, "test": spec })
}

/// A client test's parameters, with its title (`-T`) when it has one.
fn client_params(req: &ClientRequest, cfg: &control::client::ClientConfig) -> serde_json::Value {
    let mut p = params(&req.spec, cfg);
    if let Some(t) = &req.title {
        p["title"] = t.as_str().into();
    }
    p
}

/// A throughput test; its interval rows go to `watch` as both sides' figures come in.
///
/// # Errors
/// The server cannot be reached or refuses, the test fails, or `stop` was raised.
pub fn client(req: &ClientRequest, watch: &mut dyn Watch, stop: &Stop) -> Result<RunResult, Error> {
    let mut cfg = crate::trials::client_config_with(&req.server, &req.connect)?;
    cfg.cpu = req.cpu;
    cfg.force_round_trip = req.round_trip;
    cfg.stop = Some(stop.clone());
    let spec = &req.spec;
    spec.check()?;
    if req.iperf3 {
        return iperf3_client(req, &cfg, watch, stop, false);
    }
    let session = match Session::connect(&cfg) {
        // A stock iperf3 on the port: speak its dialect (iperf3 UDP stamps, its results).
        Err(control::ProtoError::Iperf3Peer) => {
            watch.progress(&format!(
                "{} answers as iperf3: running the test in iperf3's dialect",
                cfg.server
            ));
            return iperf3_client(req, &cfg, watch, stop, true).map_err(|e| match e {
                Error::Interrupted => e,
                e if !e.is_usage() => Error::Failed(format!(
                    "{e} (an `iperf3 -s -1` spends its one test on the dialect probe: give --iperf3)"
                )),
                other => other,
            });
        }
        r => r.map_err(|e| {
            Error::from(e).context(format!("cannot start a test with {}", cfg.server))
        })?,
    };
    let mut prev: Option<IntervalSample> = None;
    let outcome = session
        .run_test(spec, req.interval, |s| {
            for row in control::assemble::interval_rows(spec, prev.as_ref(), s) {
                watch.interval(&row);
            }
            prev = Some(s.clone());
        })
        .map_err(|e| Error::from(e).context(format!("test with {} failed", cfg.server)))?;
    let params = client_params(req, &cfg);
    let mut r = control::assemble::throughput_result(&outcome, "client", params);
    if req.get_server_output {
        r.notes.push(
            "--get-server-output: a wirebench server's own figures are the remote side of every row above".into(),
        );
    }
    Ok(r)
}

/// A throughput test against a stock iperf3 server; the iperf3 server's own figures are
/// kept beside ours. `after_probe`: the server was just found out by the dialect probe.
fn iperf3_client(
    req: &ClientRequest,
    cfg: &control::client::ClientConfig,
    watch: &mut dyn Watch,
    stop: &Stop,
    after_probe: bool,
) -> Result<RunResult, Error> {
    let c = control::iperf3::client::Iperf3Client {
        server: cfg.server,
        spec: req.spec.clone(),
        stop: Some(stop.clone()),
        interval: req.interval,
        bind: cfg.bind,
        cport: cfg.cport,
        connect_timeout: cfg.connect_timeout,
        get_server_output: req.get_server_output,
    };
    let spec = &req.spec;
    // An iperf3 server closes its port for a moment after a test (or after our dialect
    // probe, when it may also reset a connection that came in meanwhile): a refused (or,
    // after the probe, reset) connection is tried again for a second.
    let mut tries = 0;
    let done = loop {
        let r = c.run(|cur, prev| {
            for row in control::assemble::interval_rows(spec, prev, cur) {
                watch.interval(&row);
            }
        });
        let again = |e: &control::ProtoError| match e {
            control::ProtoError::Io(e) => {
                e.kind() == std::io::ErrorKind::ConnectionRefused
                    || (after_probe && e.kind() == std::io::ErrorKind::ConnectionReset)
            }
            control::ProtoError::Closed => after_probe,
            _ => false,
        };
        match r {
            Err(e) if tries < 10 && again(&e) => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            r => {
                break r.map_err(|e| {
                    Error::from(e).context(format!("iperf3 test with {} failed", cfg.server))
                })?
            }
        }
    };
    let mut params = client_params(req, cfg);
    params["peer"] = "iperf3".into();
    let mut r = control::assemble::throughput_result(&done.outcome, "client", params);
    if let Some(c) = r.connection.as_mut() {
        c.server_output = done.server.server_output.clone();
    }
    // An iperf3 server echoes no probes: there is no latency to explain.
    r.notes.retain(|n| !n.contains("echoed probes"));
    r.notes.push(
        "the server is a stock iperf3: what it received is its own accounting; what this side received is wirebench's (exact loss, duplicates, reordering, jitter). One-way latency only from an iperf3 on this host: iperf3 stamps datagrams with CLOCK_MONOTONIC, which no other host shares. Interval rows show this side's counters only (an iperf3 server sends none during a test)".into(),
    );
    for s in &done.server.streams {
        r.notes.push(format!(
            "iperf3 server, stream {}: {} bytes, {} packets, {} lost, jitter {:.3} ms{}",
            s.id,
            s.bytes,
            s.packets,
            s.errors,
            s.jitter_s * 1e3,
            s.retransmits
                .map(|x| format!(", {x} retransmits"))
                .unwrap_or_default()
        ));
    }
    Ok(r)
}

/// The zero-loss sweep: a UDP trial per target rate; each step goes to `watch`.
///
/// # Errors
/// A trial that could not run.
pub fn sweep(req: &SweepRequest, watch: &mut dyn Watch, stop: &Stop) -> Result<RunResult, Error> {
    let plan = &req.plan;
    let targets = plan.targets();
    let probe = TestSpec {
        rate: model::spec::Rate::BitsPerSec(targets.first().copied().unwrap_or(0.0)),
        duration: plan.duration(),
        len: plan.payload_len(),
        ..base_spec(Protocol::Udp)
    };
    probe.check()?;
    let mut cfg = client_config(&req.server)?;
    cfg.stop = Some(stop.clone());
    sweep_over(req, cfg, watch)
}

/// [`sweep`] against the server `server` reaches (its session, or a fake in tests).
fn sweep_over<S: TestServer>(
    req: &SweepRequest,
    server: S,
    watch: &mut dyn Watch,
) -> Result<RunResult, Error> {
    let plan = &req.plan;
    let targets = plan.targets();
    let server_addr = server.server().to_string();
    let mut trial = Traced::new(ServerTrial {
        cfg: server,
        base: base_spec(Protocol::Udp),
    });
    let table = plan.run(&mut trial, |row| {
        watch.progress(&format!(
            "  {} -> {} loss {:.3} % ({})",
            model::units::bps(row.target_bps),
            model::units::bps(row.achieved_bps),
            row.loss_pct,
            row.status.label()
        ))
    })?;
    let mut params = serde_json::json!({ "server": server_addr,
        "from_bps": targets.first(), "to_bps": targets.last(),
        "step_bps": (targets.len() > 1).then(|| plan.step()),
        "duration_s": plan.duration().as_secs_f64(), "len": plan.payload_len(), "direction": plan.direction() });
    if plan.repeats() > 1 {
        params["repeat"] = plan.repeats().into();
    }
    if !plan.points().is_empty() {
        params["points_bps"] = plan.points().into();
    }
    let mut r = engine::env::result("sweep", params);
    (r.backend, r.timestamp_source) = trial.first;
    if table.rows.iter().any(|x| x.generator_limited) {
        r.notes.push("some steps were generator limited: the sender could not keep the asked rate, so those steps measure the tool".into());
    }
    r.sweep = Some(table);
    Ok(r)
}

/// A trial runner that remembers how the first trial was measured (backend, timestamps).
struct Traced<T> {
    inner: T,
    first: (Option<String>, Option<String>),
}

impl<T> Traced<T> {
    fn new(inner: T) -> Self {
        Self {
            inner,
            first: (None, None),
        }
    }
}

impl<T: method::Trial> method::Trial for Traced<T> {
    type Error = T::Error;

    fn run(&mut self, req: &method::TrialRequest) -> Result<method::TrialData, T::Error> {
        let d = self.inner.run(req)?;
        if self.first.0.is_none() {
            self.first = (d.backend.clone(), d.timestamp_source.clone());
        }
        Ok(d)
    }
}

/// The block-size sweep: TCP each way per write size.
///
/// # Errors
/// A trial that could not run.
pub fn blocksize(
    req: &BlocksizeRequest,
    watch: &mut dyn Watch,
    stop: &Stop,
) -> Result<RunResult, Error> {
    let mut cfg = client_config(&req.server)?;
    cfg.stop = Some(stop.clone());
    blocksize_over(req, cfg, watch)
}

/// [`blocksize`] against the server `server` reaches (its session, or a fake in tests).
fn blocksize_over<S: TestServer>(
    req: &BlocksizeRequest,
    server: S,
    watch: &mut dyn Watch,
) -> Result<RunResult, Error> {
    let addr = server.server().to_string();
    let mut trial = ServerTrial {
        cfg: server,
        base: TestSpec {
            streams: req.streams.max(1),
            ..base_spec(Protocol::Tcp)
        },
    };
    let rows = req.plan.run(&mut trial, |row| {
        watch.progress(&format!(
            "  {} bytes: Tx {:.2} Rx {:.2} MByte/s (10^6)",
            row.block_bytes, row.tx_mbyte_s, row.rx_mbyte_s
        ));
    })?;
    let units = if req.netio { "netio" } else { "si" };
    let params = serde_json::json!({
        "server": addr, "sizes": req.sizes, "duration_s": req.time.as_secs_f64(),
        "streams": req.streams.max(1), "units": units,
    });
    let mut r = engine::env::result("blocksize", params);
    r.backend = Some("tcp".into());
    r.blocksize = Some(rows);
    Ok(r)
}

/// Ping-pong latency per message size.
///
/// # Errors
/// Sizes out of range, or the test could not run.
pub fn latency(req: &LatencyRequest, stop: &Stop) -> Result<RunResult, Error> {
    let sizes = &req.sizes;
    if sizes.is_empty() {
        return Err(usage("give at least one message size with -l"));
    }
    let range = TestSpec::MIN_UDP_LEN..=TestSpec::MAX_UDP_LEN;
    if let Some(bad) = sizes.iter().find(|s| !range.contains(s)) {
        return Err(usage(format!(
            "message size {bad} is outside {}..={} bytes",
            range.start(),
            range.end()
        )));
    }
    let mut cfg = client_config(&req.server)?;
    cfg.stop = Some(stop.clone());
    let total = req.time * u32::try_from(sizes.len()).unwrap_or(u32::MAX);
    let max_len = sizes.iter().copied().max().unwrap_or(64);
    let session = Session::connect(&cfg)
        .map_err(|e| Error::from(e).context(format!("cannot start a test with {}", cfg.server)))?;
    let echo = EchoSpec {
        duration: total,
        max_len,
        spin: req.spin,
    };
    let reports = session
        .run_echo(&echo, sizes, req.time, !req.user_timestamps, req.interval)
        .map_err(|e| Error::from(e).context(format!("latency test with {} failed", cfg.server)))?;
    Ok(latency_result(req, cfg.server, &reports))
}

/// The ping-pong document of `reports` (one per message size, in order) from `server`:
/// a row per size that was answered, the latency limits as verdicts, the interval rows.
fn latency_result(
    req: &LatencyRequest,
    server: std::net::SocketAddr,
    reports: &[engine::udp::PingPongReport],
) -> RunResult {
    let sizes = &req.sizes;
    let kernel = reports.iter().any(|p| p.kernel_timestamps);
    let rows: Vec<LatencyRow> = reports
        .iter()
        .filter_map(|p| {
            let rtt = p.rtt?;
            Some(LatencyRow {
                size: p.size,
                samples: p.received,
                lost: p.sent.saturating_sub(p.received),
                rtt_us: LatencyUs::from_summary(LatencyKind::RoundTrip, &rtt),
                half_rtt_p50_us: rtt.p50_us / 2.0,
                mode: p.mode.clone(),
                histogram: p.rtt_histogram.as_ref().map(|h| h.to_base64()),
            })
        })
        .collect();
    let params = serde_json::json!({ "server": server.to_string(), "sizes": sizes, "duration_s": req.time.as_secs_f64(), "spin": req.spin });
    let mut r = engine::env::result("latency", params);
    r.backend = Some("udp-pingpong".into());
    r.timestamp_source = Some(if kernel { "kernel-software" } else { "user" }.into());
    if rows.len() < reports.len() {
        r.notes
            .push("some message sizes got no answer at all".into());
    }
    for row in &rows {
        let h = row
            .histogram
            .as_deref()
            .and_then(|b| LatencyHistogram::from_base64(b).ok());
        let rtt = &row.rtt_us;
        let value = |q: f64| match q {
            q if q < 0.0 => Some(rtt.avg),
            q if q >= 100.0 => Some(rtt.max),
            q if q <= 0.0 => Some(rtt.min),
            q => h.as_ref().and_then(|h| h.percentile_us(q)),
        };
        let at = format!("{} bytes", row.size);
        r.verdicts.extend(crate::limits::latency_limits(
            &at,
            &req.latency_limits,
            req.marginal_band,
            value,
        ));
    }
    r.latency = Some(rows);
    r.intervals = ping_intervals(reports, req.time);
    r
}

/// Ping-pong interval rows: each message size's intervals in turn (the sizes run one after
/// the other, `per_size` each), with the round trips of the answers in each.
fn ping_intervals(
    reports: &[engine::udp::PingPongReport],
    per_size: std::time::Duration,
) -> Vec<model::results::IntervalRow> {
    use model::stats::intervals::{rows, StreamTotals, Tick};
    let mut out = Vec::new();
    for (k, p) in reports.iter().enumerate() {
        let size = p.size as u64;
        let ticks: Vec<Tick> = p
            .ticks
            .iter()
            .map(|(end, sent, received, latency)| Tick {
                end: *end,
                streams: vec![StreamTotals {
                    id: 1,
                    sent: *sent,
                    sent_bytes: sent * size,
                    received: model::stats::Counters {
                        received: *received,
                        lost: sent.saturating_sub(*received),
                        ..Default::default()
                    },
                    received_bytes: received * size,
                    latency: latency.clone(),
                }],
            })
            .collect();
        let offset = per_size.as_secs_f64() * k as f64;
        out.extend(
            rows(&ticks, LatencyKind::RoundTrip)
                .into_iter()
                .map(|mut r| {
                    r.start_s += offset;
                    r.end_s += offset;
                    r
                }),
        );
    }
    out
}

#[cfg(test)]
#[path = "socket_tests.rs"]
mod test;
