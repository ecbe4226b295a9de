//! Each subcommand: resolve the CLI into library configuration, run it, print.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use control::assemble;
use control::client::{ClientConfig, IntervalSample, Session, TestOutcome};
use control::messages::Limits;
use control::server::{Server, ServerConfig};
use method::{Trial, TrialRequest, TrialResult};
use model::results::{LatencyKind, LatencyRow, LatencyUs, RunResult};
use model::spec::{Direction, EchoSpec, Protocol, Rate, TestSpec, UdpBackend};
use model::stats::LatencyHistogram;

use crate::cli::{
    BackendArg, BlocksizeArgs, ClientArgs, DemoArgs, LatencyArgs, ServerArgs, SweepArgs, Target,
};

/// Default UDP payload: fills a 1500-byte MTU (1500 − 20 IPv4 − 8 UDP).
pub const DEFAULT_UDP_LEN: usize = 1472;
/// Default TCP write size (iperf3's).
pub const DEFAULT_TCP_LEN: usize = 128 * 1024;
/// Default UDP rate when none is given (iperf3's 1 Mbit/s).
pub const DEFAULT_UDP_RATE: f64 = 1e6;

/// An error in what the user asked for (exit code 2), as opposed to a failed run.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// The test ran, but a verdict it was asked to check failed (exit code 3).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct VerdictFailed(pub String);

fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

fn resolve_addr(host: &str, port: u16) -> Result<SocketAddr> {
    (host, port)
        .to_socket_addrs()
        .with_context(|| format!("cannot resolve {host}"))?
        .next()
        .ok_or_else(|| usage(format!("{host} has no address")))
}

pub(crate) fn client_config(t: &Target) -> Result<ClientConfig> {
    let key = match &t.auth_key_file {
        Some(p) => Some(control::auth::load_key(p).map_err(usage)?),
        None => None,
    };
    Ok(ClientConfig {
        server: resolve_addr(&t.host, t.port)?,
        key,
        connect_timeout: Duration::from_secs(5),
        cpu: None,
        force_round_trip: false,
    })
}

fn print_result(r: &RunResult, json: bool, text: impl FnOnce(&RunResult) -> String) {
    if json {
        print!("{}", report::json::to_string(r));
    } else {
        print!("{}", text(r));
    }
}

/// `wirebench server`.
pub fn server(a: &ServerArgs) -> Result<()> {
    let key = match &a.auth_key_file {
        Some(p) => Some(control::auth::load_key(p).map_err(usage)?),
        None => None,
    };
    if a.max_streams == 0 || a.max_tests == 0 {
        bail!(usage("--max-streams and --max-tests must be at least 1"));
    }
    let limits = Limits {
        max_rate_bps: a.max_rate.filter(|r| *r > 0.0),
        max_duration_s: a.max_duration.as_secs_f64(),
        max_streams: a.max_streams,
        max_tests: a.max_tests,
    };
    let cfg = ServerConfig {
        bind: SocketAddr::new(a.bind, a.port),
        limits,
        key,
        handshake_timeout: a.handshake_timeout,
    };
    let auth = cfg.key.is_some();
    let server =
        Server::bind(cfg).with_context(|| format!("cannot listen on {}:{}", a.bind, a.port))?;
    eprintln!(
        "wirebench server listening on {} (up to {} tests at once{})",
        server.local_addr()?,
        a.max_tests,
        if auth {
            ", authentication required"
        } else {
            ""
        }
    );
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    if let Some(d) = a.run_for {
        let s = stop.clone();
        std::thread::spawn(move || {
            std::thread::sleep(d);
            s.store(true, std::sync::atomic::Ordering::Relaxed);
        });
    }
    server.serve(&stop)?;
    Ok(())
}

fn backend(b: BackendArg) -> UdpBackend {
    match b {
        BackendArg::Auto => UdpBackend::Auto,
        BackendArg::Sendmmsg => UdpBackend::Sendmmsg,
        BackendArg::Gso => UdpBackend::Gso,
    }
}

/// Resolves `client` flags into a test request.
pub fn client_spec(a: &ClientArgs) -> Result<TestSpec> {
    let protocol = if a.udp { Protocol::Udp } else { Protocol::Tcp };
    let len = a.length.unwrap_or(if a.udp {
        DEFAULT_UDP_LEN
    } else {
        DEFAULT_TCP_LEN
    });
    let rate = match (a.bitrate, a.pps) {
        (Some(0.0), _) => Rate::Unlimited,
        (Some(b), _) => Rate::BitsPerSec(b),
        (None, Some(p)) if p > 0.0 && p.is_finite() => Rate::PacketsPerSec(p),
        (None, Some(p)) => return Err(usage(format!("--pps must be a positive number, got {p}"))),
        (None, None) if a.udp => Rate::BitsPerSec(DEFAULT_UDP_RATE),
        (None, None) => Rate::Unlimited,
    };
    let direction = if a.bidir {
        Direction::Bidir
    } else if a.reverse {
        Direction::Reverse
    } else {
        Direction::Forward
    };
    let window = match a.window {
        Some(w) => Some(u32::try_from(w).map_err(|_| usage("-w is larger than 4 GiB"))?),
        None => None,
    };
    let spec = TestSpec {
        protocol,
        duration: a.time,
        rate,
        len,
        streams: a.parallel,
        direction,
        udp_backend: backend(a.udp_backend),
        synced_clocks: a.synced_clocks,
        dscp: a.dscp,
        window,
        server_cpu: a.affinity.as_ref().and_then(|x| x.server),
    };
    spec.validate().map_err(usage)?;
    Ok(spec)
}

fn interval_of(secs: f64) -> Result<Option<Duration>> {
    if !secs.is_finite() || secs < 0.0 {
        return Err(usage(format!(
            "-i must be 0 or a positive number of seconds, got {secs}"
        )));
    }
    Ok((secs > 0.0).then(|| Duration::from_secs_f64(secs.max(0.01))))
}

/// Runs one test and returns the outcome, printing interval lines unless `quiet`.
pub(crate) fn run_one(
    cfg: &ClientConfig,
    spec: &TestSpec,
    interval: Option<Duration>,
    quiet: bool,
) -> Result<TestOutcome> {
    let session = Session::connect(cfg)
        .with_context(|| format!("cannot start a test with {}", cfg.server))?;
    let mut prev: Option<IntervalSample> = None;
    let outcome = session
        .run_test(spec, interval, |s| {
            if !quiet {
                for row in assemble::interval_rows(spec, prev.as_ref(), s) {
                    println!("{}", report::text::interval_line(&row));
                }
            }
            prev = Some(s.clone());
        })
        .with_context(|| format!("test with {} failed", cfg.server))?;
    Ok(outcome)
}

pub(crate) fn spec_params(spec: &TestSpec, cfg: &ClientConfig) -> serde_json::Value {
    serde_json::json!({ "server": cfg.server.to_string(), "client_cpu": cfg.cpu, "test": spec })
}

/// `wirebench client`.
pub fn client(a: &ClientArgs) -> Result<()> {
    let spec = client_spec(a)?;
    let mut cfg = client_config(&a.target)?;
    cfg.cpu = a.affinity.as_ref().map(|x| usize::from(x.client));
    cfg.force_round_trip = a.round_trip;
    let interval = interval_of(a.interval)?;
    let json = a.target.json;
    if !json {
        println!(
            "wirebench {} test to {}: {} stream(s), {}, {} s",
            spec.protocol.as_str().to_uppercase(),
            cfg.server,
            spec.streams,
            match spec.rate.bits_per_sec(spec.len) {
                Some(b) => format!("{} per stream", model::units::bps(b)),
                None => "unlimited rate".into(),
            },
            spec.duration.as_secs_f64()
        );
    }
    let outcome = run_one(&cfg, &spec, interval, json)?;
    let r = assemble::throughput_result(&outcome, "client", spec_params(&spec, &cfg));
    if !json {
        println!();
    }
    print_result(&r, json, report::text::client_summary);
    Ok(())
}

/// Runs method trials through a real server.
struct ServerTrial {
    cfg: ClientConfig,
    base: TestSpec,
    runs: Vec<RunResult>,
}

impl Trial for ServerTrial {
    type Error = anyhow::Error;

    fn run(&mut self, req: &TrialRequest) -> Result<TrialResult> {
        let spec = TestSpec {
            protocol: req.protocol,
            direction: req.direction,
            rate: req.rate,
            len: req.len,
            duration: req.duration,
            ..self.base.clone()
        };
        let outcome = run_one(&self.cfg, &spec, None, true)?;
        let r = assemble::throughput_result(&outcome, "trial", spec_params(&spec, &self.cfg));
        let s = r.summary.clone().context("the trial produced no result")?;
        self.runs.push(r);
        Ok(TrialResult {
            offered_bps: s.offered_bps,
            received_bps: s.received_bps,
            sent_packets: s.sent_packets,
            lost_packets: s.lost_packets,
            duration: Duration::from_secs_f64(s.duration_s),
            generator_limited: s.generator_limited,
        })
    }
}

pub(crate) fn base_spec(protocol: Protocol) -> TestSpec {
    TestSpec {
        protocol,
        duration: Duration::from_secs(1),
        rate: Rate::Unlimited,
        len: DEFAULT_UDP_LEN,
        streams: 1,
        direction: Direction::Forward,
        udp_backend: UdpBackend::Auto,
        synced_clocks: false,
        dscp: None,
        window: None,
        server_cpu: None,
    }
}

/// Runs a sweep against `cfg` and returns its result document.
/// The sweep's plan from its command line.
fn sweep_plan(a: &SweepArgs) -> Result<method::sweep::SweepPlan> {
    let direction = if a.reverse {
        Direction::Reverse
    } else {
        Direction::Forward
    };
    method::sweep::SweepPlan::new(a.from, a.to, a.step, a.length, a.time, direction)
        .map_err(|e| usage(e.to_string()))
}

/// Runs the sweep `plan` against `cfg` and returns its result document.
fn sweep_result(
    cfg: &ClientConfig,
    plan: &method::sweep::SweepPlan,
    print_rows: bool,
) -> Result<RunResult> {
    let targets = plan.targets();
    let probe = TestSpec {
        rate: Rate::BitsPerSec(targets.first().copied().unwrap_or(0.0)),
        duration: plan.duration(),
        len: plan.payload_len(),
        ..base_spec(Protocol::Udp)
    };
    probe.validate().map_err(usage)?;
    let mut trial = ServerTrial {
        cfg: cfg.clone(),
        base: base_spec(Protocol::Udp),
        runs: Vec::new(),
    };
    let table = plan.run(&mut trial, |row| {
        if print_rows {
            eprintln!(
                "  {} -> {} loss {:.3} % ({})",
                model::units::bps(row.target_bps),
                model::units::bps(row.achieved_bps),
                row.loss_pct,
                row.status.label()
            );
        }
    })?;
    let params = serde_json::json!({ "server": cfg.server.to_string(),
        "from_bps": targets.first(), "to_bps": targets.last(),
        "step_bps": targets.windows(2).next().map(|w| w[1] - w[0]),
        "duration_s": plan.duration().as_secs_f64(), "len": plan.payload_len(), "direction": plan.direction() });
    let mut r = engine::env::result("sweep", params);
    r.backend = trial.runs.first().and_then(|x| x.backend.clone());
    r.timestamp_source = trial.runs.first().and_then(|x| x.timestamp_source.clone());
    if table.rows.iter().any(|x| x.generator_limited) {
        r.notes.push("some steps were generator limited: the sender could not keep the asked rate, so those steps measure the tool".into());
    }
    r.sweep = Some(table);
    Ok(r)
}

/// `wirebench sweep`.
pub fn sweep(a: &SweepArgs) -> Result<()> {
    let cfg = client_config(&a.target)?;
    let r = sweep_result(&cfg, &sweep_plan(a)?, !a.target.json)?;
    print_result(&r, a.target.json, |r| {
        let mut s = r
            .sweep
            .as_ref()
            .map(report::text::sweep)
            .unwrap_or_default();
        s.push_str(&report::text::facts(r));
        s
    });
    Ok(())
}

fn blocksize_result(cfg: &ClientConfig, sizes: Vec<usize>, time: Duration) -> Result<RunResult> {
    let plan = method::blocksize::BlocksizePlan::new(sizes.clone(), time)
        .map_err(|e| usage(e.to_string()))?;
    let mut trial = ServerTrial {
        cfg: cfg.clone(),
        base: base_spec(Protocol::Tcp),
        runs: Vec::new(),
    };
    let rows = plan.run(&mut trial, |_| {})?;
    let params = serde_json::json!({ "server": cfg.server.to_string(), "sizes": sizes, "duration_s": time.as_secs_f64() });
    let mut r = engine::env::result("blocksize", params);
    r.backend = Some("tcp".into());
    r.blocksize = Some(rows);
    Ok(r)
}

/// `wirebench blocksize`.
pub fn blocksize(a: &BlocksizeArgs) -> Result<()> {
    let cfg = client_config(&a.target)?;
    let r = blocksize_result(&cfg, a.sizes.0.clone(), a.time)?;
    print_result(&r, a.target.json, |r| {
        r.blocksize
            .as_deref()
            .map(report::text::blocksize)
            .unwrap_or_default()
    });
    Ok(())
}

fn latency_result(
    cfg: &ClientConfig,
    sizes: &[usize],
    time: Duration,
    spin: bool,
    user_timestamps: bool,
) -> Result<RunResult> {
    if sizes.is_empty() {
        bail!(usage("give at least one message size with -l"));
    }
    if let Some(bad) = sizes
        .iter()
        .find(|&&s| !(TestSpec::MIN_UDP_LEN..=TestSpec::MAX_UDP_LEN).contains(&s))
    {
        bail!(usage(format!(
            "message size {bad} is outside {}..={} bytes",
            TestSpec::MIN_UDP_LEN,
            TestSpec::MAX_UDP_LEN
        )));
    }
    let total = time * u32::try_from(sizes.len()).unwrap_or(u32::MAX);
    let max_len = sizes.iter().copied().max().unwrap_or(64);
    let session = Session::connect(cfg)
        .with_context(|| format!("cannot start a test with {}", cfg.server))?;
    let reports = session
        .run_echo(
            &EchoSpec {
                duration: total,
                max_len,
                spin,
            },
            sizes,
            time,
            !user_timestamps,
        )
        .with_context(|| format!("latency test with {} failed", cfg.server))?;
    let mut rows = Vec::new();
    let mut kernel = false;
    for p in &reports {
        kernel |= p.kernel_timestamps;
        let Some(rtt) = p.rtt else { continue };
        rows.push(LatencyRow {
            size: p.size,
            samples: p.received,
            lost: p.sent.saturating_sub(p.received),
            rtt_us: LatencyUs::from_summary(LatencyKind::RoundTrip, &rtt),
            half_rtt_p50_us: rtt.p50_us / 2.0,
            mode: p.mode.clone(),
            histogram: p.rtt_histogram.as_ref().map(LatencyHistogram::to_base64),
        });
    }
    let params = serde_json::json!({ "server": cfg.server.to_string(), "sizes": sizes, "duration_s": time.as_secs_f64(), "spin": spin });
    let mut r = engine::env::result("latency", params);
    r.backend = Some("udp-pingpong".into());
    r.timestamp_source = Some(if kernel { "kernel-software" } else { "user" }.into());
    if rows.len() < reports.len() {
        r.notes
            .push("some message sizes got no answer at all".into());
    }
    r.latency = Some(rows);
    Ok(r)
}

/// `wirebench latency`.
pub fn latency(a: &LatencyArgs) -> Result<()> {
    let cfg = client_config(&a.target)?;
    let r = latency_result(&cfg, &a.length.0, a.time, a.spin, a.user_timestamps)?;
    print_result(&r, a.target.json, |r| {
        let mut s = r
            .latency
            .as_deref()
            .map(report::text::latency)
            .unwrap_or_default();
        s.push_str(&report::text::facts(r));
        s
    });
    Ok(())
}

/// `wirebench demo`: the whole story in about a minute, as a campaign of its own. As root
/// it runs examples/plan-demo.toml (built in): a FRER lab with path loss, a shaper lab and
/// the FRER overhead comparison; otherwise (or with `--loopback`) the loopback plan. It
/// writes the run directory and says where the report is.
pub fn demo(a: &DemoArgs) -> Result<()> {
    let root = lab::cmd::is_root() && !a.loopback;
    let files = a.out.join("demo-files");
    std::fs::create_dir_all(&files).with_context(|| format!("creating {}", files.display()))?;
    let plan = if root {
        std::fs::write(
            files.join("shaper.toml"),
            include_str!("../examples/shaper-two-classes.toml"),
        )?;
        std::fs::write(
            files.join("streams.toml"),
            include_str!("../examples/streams-demo.toml"),
        )?;
        let dir = files.canonicalize()?.display().to_string();
        include_str!("../examples/plan-demo.toml").replace("{dir}", &dir)
    } else {
        if !a.loopback {
            println!(
                "wirebench demo: not root, so on loopback; the FRER network with path loss and the shaper profile need network namespaces (run `sudo wirebench demo` for them)"
            );
        }
        include_str!("../examples/plan-demo-loopback.toml").to_owned()
    };
    let plan_file = files.join("plan.toml");
    std::fs::write(&plan_file, plan)?;
    println!(
        "wirebench demo: running {} (results in {})",
        if root {
            "the lab plan: a FRER network with path loss, a shaper and the FRER overhead"
        } else {
            "the loopback plan"
        },
        a.out.display()
    );
    crate::runcmd::run(&crate::cli::RunArgs {
        plan: plan_file,
        out: a.out.clone(),
        name: "demo".into(),
    })?;
    println!(
        "demo done: every figure in {} was measured just now on this machine",
        a.out.join("report.html").display()
    );
    Ok(())
}
