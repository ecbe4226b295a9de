//! FRER (IEEE 802.1CB): what it costs against a control group (`frer compare`), and the
//! counters of running relays (`frer stats`).

use std::time::Duration;

use method::overhead::{Group, Groups, UdpLoad};
use model::results::RunResult;
use model::spec::{Direction, Protocol, Rate};
use model::stop::Stop;

use crate::request::{ClientRequest, FrerCompareRequest, LatencyRequest, Server};
use crate::target::{Setup, Target};
use crate::trials::base_spec;
use crate::{usage, Error, Quiet, Watch};

/// The two groups of a comparison: the `frer` lab with FRER relays, and the same lab whose
/// relays forward plainly over path A; each built when first measured, measured from its
/// talker as often as the comparison asks (the two labs are up side by side, so the
/// repetitions can alternate), and removed when the comparison ends.
struct FrerLabs<'a> {
    req: &'a FrerCompareRequest,
    watch: &'a mut dyn Watch,
    stop: &'a Stop,
    /// The control group's lab and the FRER group's, once built.
    labs: [Option<Setup>; 2],
    /// Measurements so far, for the progress line.
    done: u32,
    /// The data paths the relays of the control group's lab and the FRER group's used.
    data_paths: [Vec<String>; 2],
}

impl FrerLabs<'_> {
    /// The UDP test at the group's zero-loss rate: an RFC 2544 search (MLRsearch, trials of
    /// the comparison's time, up to the line rate or 10 Gbit/s) for the highest rate
    /// without loss, then the test at that rate.
    fn zero_loss(
        req: &FrerCompareRequest,
        stop: &Stop,
        udp: &ClientRequest,
    ) -> Result<RunResult, Error> {
        let mut cfg = crate::trials::client_config(&udp.server)?;
        cfg.stop = Some(stop.clone());
        let mut trial = crate::trials::ServerTrial {
            cfg,
            base: base_spec(Protocol::Udp),
        };
        let frame = udp.spec.len as u64 + crate::trials::UDP_FRAME_OVERHEAD;
        let search = zero_loss_search(
            wire::linerate::LineRate(req.line_rate.unwrap_or(10e9) as u64),
            udp.spec.duration,
        );
        let mut log = Vec::new();
        let found = method::rfc2544::throughput(
            &mut trial,
            frame,
            method::rfc2544::Search::Mlr,
            &search,
            &mut log,
        )?;
        let fps = found.fps.unwrap_or(0.0);
        if fps <= 0.0 {
            return Err(Error::Failed(
                "no UDP rate crossed the lab without loss".into(),
            ));
        }
        let at = ClientRequest {
            spec: model::spec::TestSpec {
                rate: Rate::PacketsPerSec(fps),
                ..udp.spec.clone()
            },
            ..udp.clone()
        };
        super::socket::client(&at, &mut Quiet, stop)
    }
}

impl Groups for FrerLabs<'_> {
    type Error = Error;

    fn measure(&mut self, frer: bool) -> Result<Group, Error> {
        let a = self.req;
        let (suffix, mode, what) = if frer {
            (
                "f",
                "mode=frer",
                "FRER: relays replicate onto both paths and eliminate",
            )
        } else {
            (
                "c",
                "mode=plain",
                "control group: relays forward over path A, no FRER",
            )
        };
        let total = 2 * a.repeat.max(1);
        self.done += 1;
        self.watch.progress(&if total > 2 {
            format!("{what} ({} of {total}) ...", self.done)
        } else {
            format!("{what} ...")
        });
        let name = format!("{}{suffix}", a.name);
        let setup = match &mut self.labs[usize::from(frer)] {
            Some(setup) => setup,
            empty @ None => {
                let mut args: Vec<String> = Vec::new();
                for (flag, spec) in [("--path-a", &a.path_a), ("--path-b", &a.path_b)] {
                    if let Some(s) = spec {
                        args.extend([flag.to_owned(), s.clone()]);
                    }
                }
                args.extend(["--frer".to_owned(), mode.to_owned()]);
                let request = lab::topology::Request {
                    topology: "frer".into(),
                    path_a: a.path_a.clone(),
                    path_b: a.path_b.clone(),
                    frer: Some(mode.into()),
                    ..Default::default()
                };
                empty.insert(Setup::new(&Target::Lab { request, args }, &name)?)
            }
        };
        let server = Server {
            host: setup.ctx.host.clone(),
            port: setup.ctx.port,
            key_file: None,
            allow_unauthenticated: false,
        };
        let time = Duration::from_secs_f64(a.time);
        let client = |protocol: Protocol, rate: Rate, len: usize| ClientRequest {
            server: server.clone(),
            spec: model::spec::TestSpec {
                protocol,
                rate,
                len,
                duration: time,
                direction: Direction::Forward,
                ..base_spec(protocol)
            },
            interval: None,
            cpu: None,
            round_trip: false,
            iperf3: false,
            connect: Default::default(),
            get_server_output: false,
            title: None,
        };
        let tcp = client(Protocol::Tcp, Rate::Unlimited, 128 * 1024);
        let udp = client(Protocol::Udp, Rate::Unlimited, a.length as usize);
        let latency = LatencyRequest {
            server: server.clone(),
            sizes: vec![64],
            time,
            spin: false,
            user_timestamps: false,
            latency_limits: vec![],
            marginal_band: None,
            interval: None,
        };
        let ns = setup.client_ns()?;
        let stop = self.stop;
        let mut before = lab::relay::state::Snapshot::of(&name, "merge");
        let mut per = [None; 3];
        let mut runs = Vec::new();
        for (i, per) in per.iter_mut().enumerate() {
            let cost = lab::cost::CostProbe::start(vec![name.clone()]);
            let mut r = engine::frameio::in_netns(ns.as_deref(), || match i {
                0 => super::socket::client(&tcp, &mut Quiet, stop),
                1 if a.udp == UdpLoad::ZeroLoss => Self::zero_loss(a, stop, &udp),
                1 => super::socket::client(&udp, &mut Quiet, stop),
                _ => super::socket::latency(&latency, stop),
            })??;
            if let Some(cost) = cost.map(lab::cost::CostProbe::finish) {
                let seen = &mut self.data_paths[usize::from(frer)];
                for p in cost.relay_data_paths() {
                    if !seen.iter().any(|s| s == p) {
                        seen.push(p.to_owned());
                    }
                }
                r.notes.extend(cost.notes());
                r.lab_cost = Some(cost);
            }
            runs.push(r);
            let now = lab::relay::state::Snapshot::settled(&name, "merge");
            *per = match (&before, &now) {
                (Some(b), Some(n)) => n
                    .since(b)
                    .and_then(|d| lab::relay::state::frames_per_delivered(&d)),
                _ => None,
            };
            before = now;
        }
        let [tcp, udp, latency]: [RunResult; 3] = runs
            .try_into()
            .map_err(|_| Error::Failed("a group's tests are missing".into()))?;
        Ok(Group {
            tcp,
            udp,
            latency,
            per_delivered: per,
        })
    }
}

/// Building one group's lab (1.0-1.3 s for `lab up frer` on this machine).
const LAB_UP: Duration = Duration::from_millis(1_500);

/// How long `req` will take: per group and repetition its lab, the TCP, UDP (with the
/// zero-loss search rehearsed, when asked) and latency tests, each trial with `setup`.
pub(crate) fn estimate(req: &FrerCompareRequest, setup: Duration) -> Duration {
    let time = Duration::from_secs_f64(req.time);
    let mut group = LAB_UP + (time + setup) * 3;
    if req.udp == method::overhead::UdpLoad::ZeroLoss {
        let line = wire::linerate::LineRate(req.line_rate.unwrap_or(10e9) as u64);
        let cfg = zero_loss_search(line, time);
        let mut r = method::rehearsal::Rehearsal::<Error>::new(line, 0.5, 0, setup);
        let frame = u64::from(req.length) + crate::trials::UDP_FRAME_OVERHEAD;
        let _ = method::rfc2544::throughput(
            &mut r,
            frame,
            method::rfc2544::Search::Mlr,
            &cfg,
            &mut Vec::new(),
        );
        group += r.time;
    }
    group * 2 * req.repeat.max(1)
}

/// The zero-loss search's goal: a load is a lower bound only when no full-length trial
/// lost a frame (exceed ratio 0), because the comparison measures once more at that load.
fn zero_loss_search(
    line: wire::linerate::LineRate,
    time: Duration,
) -> method::rfc2544::SearchConfig {
    method::rfc2544::SearchConfig {
        line_rate: line,
        duration: time,
        final_duration: time,
        exceed_ratio: 0.0,
        duration_sum_trials: 1,
        ..Default::default()
    }
}

/// The cost of FRER: the same TCP, UDP and latency tests through the `frer` lab with FRER
/// and with its relays forwarding plainly (both labs built and removed; needs root).
///
/// # Errors
/// Values out of range, no root, a lab that cannot be built, a test that fails.
pub fn frer_compare(
    a: &FrerCompareRequest,
    watch: &mut dyn Watch,
    stop: &Stop,
) -> Result<RunResult, Error> {
    if !(a.time.is_finite() && a.time >= 1.0 && a.time <= 600.0) {
        return Err(usage(format!("-t {}: give 1..=600 seconds", a.time)));
    }
    if !(18..=1472).contains(&a.length) {
        return Err(usage(format!("-l {}: give 18..=1472 bytes", a.length)));
    }
    if !(1..=100).contains(&a.repeat) {
        return Err(usage(format!("--repeat {}: give 1..=100", a.repeat)));
    }
    lab::naming::check(&format!("{}c", a.name)).map_err(|e| usage(format!("--name: {e}")))?;
    for s in [&a.path_a, &a.path_b].into_iter().flatten() {
        lab::impair::spec::ImpairSpec::parse_inline(s)
            .map_err(|e| usage(format!("impairment '{s}': {e}")))?;
    }
    crate::frames::need_root()?;
    let mut labs = FrerLabs {
        req: a,
        watch,
        stop,
        labs: [None, None],
        done: 0,
        data_paths: [vec![], vec![]],
    };
    let mut c = method::overhead::compare(&mut labs, a.length, a.line_rate, a.udp, a.repeat)?;
    let [control, frer] = std::mem::take(&mut labs.data_paths);
    drop(labs);
    let words = |p: Vec<String>| {
        if p.is_empty() {
            "not read (no relay state)".to_owned()
        } else {
            p.join(" and ")
        }
    };
    c.report.control_data_path = Some(words(control));
    c.report.frer_data_path = Some(words(frer));
    let params = serde_json::json!({
        "path_a": a.path_a, "path_b": a.path_b, "time_s": a.time, "udp_length": a.length,
        "line_rate_bps": a.line_rate, "repeat": a.repeat,
        "udp": match a.udp { UdpLoad::Unlimited => "unlimited", UdpLoad::ZeroLoss => "zero-loss" },
    });
    let mut doc = engine::env::result("frer compare", params);
    doc.frer = Some(c.report);
    doc.runs = c.runs;
    Ok(doc)
}

/// The counters of running relays: those of lab `lab`, or every relay (standalone ones
/// first), or the one publishing to `state`.
///
/// # Errors
/// No relay runs (or `state` cannot be read).
pub fn relays(lab: Option<&str>, state: Option<&std::path::Path>) -> Result<RunResult, Error> {
    let files = match state {
        Some(p) => vec![(p.display().to_string(), p.to_path_buf())],
        None => lab::relay::state::state_files(lab),
    };
    let mut reports = Vec::new();
    for (label, path) in files {
        match lab::relay::process::RelayState::read(&path) {
            Ok(s) => reports.push(s.report(label)),
            Err(e) if state.is_some() => {
                return Err(usage(format!("{}: {e}", path.display())));
            }
            Err(_) => {}
        }
    }
    if reports.is_empty() {
        return Err(usage(match lab {
            Some(l) => format!("lab '{l}' runs no FRER relay (see `wirebench lab status`)"),
            None => "no FRER relay runs (start one with `wirebench frer relay` or `wirebench lab up frer`)".into(),
        }));
    }
    let params = serde_json::json!({ "lab": lab, "state": state.map(|p| p.display().to_string()) });
    let mut doc = engine::env::result("frer stats", params);
    doc.relays = reports;
    Ok(doc)
}
