//! `rfc2544`: throughput, latency, frame loss and back-to-back per frame size (RFC 2544
//! §26, MLRsearch RFC 9971 or binary search), over raw ports (`--tx`/`--rx`) or a
//! wirebench server. The run itself is [`crate::jobs::rfc2544`].

use engine::frameio::Endpoint;
use model::results::figures::{figures, Figure};
use model::results::RunResult;
use model::stop::Stop;
use model::units::Fixed;

use super::method::{Argv, Method, ThresholdMetric};
use super::shared;
use crate::request::{Rfc2544Path, Rfc2544Request, Rfc2544Test};
use crate::{Error, Watch};
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use method::rfc2544::{Search, SearchConfig};
use model::units;
use wire::linerate::LineRate;

use super::args::{frame, usage, FrameArgs};
use crate::request::Server;

/// The `rfc2544` method.
pub struct Rfc2544;

/// Whether a plan's flags name raw ports (`--tx`): then it sends frames itself.
fn raw_ports(args: &[String]) -> bool {
    args.iter().any(|a| a == "--tx" || a.starts_with("--tx="))
}

impl Method for Rfc2544 {
    type Request = Box<Rfc2544Request>;
    type Args = Rfc2544Args;

    fn request(&self, a: &Rfc2544Args) -> Result<Self::Request, Error> {
        rfc2544(a).map(Box::new)
    }

    fn json(&self, a: &Rfc2544Args) -> bool {
        a.json
    }

    fn estimate(&self, req: &Box<Rfc2544Request>) -> Option<std::time::Duration> {
        let setup = match req.path {
            crate::request::Rfc2544Path::Server(_) => super::method::TRIAL_SETUP,
            _ => super::method::RAW_TRIAL_SETUP,
        };
        Some(crate::jobs::rfc2544_estimate(req, setup))
    }

    fn kind(&self) -> &'static str {
        "rfc2544"
    }

    fn needs_server(&self, args: &[String]) -> bool {
        !raw_ports(args)
    }

    fn needs_root(&self, args: &[String]) -> bool {
        raw_ports(args)
    }

    /// The target's raw ports when it has them, else its server; the lab either way.
    fn argv(&self, a: &mut Argv<'_>) {
        a.push(&["rfc2544"]);
        match (a.ctx.raw.clone(), a.has("--tx")) {
            (_, true) => {}
            (Some((tx, rx)), false) => a.push(&["--tx", &tx, "--rx", &rx]),
            (None, false) => a.server(),
        }
        a.lab();
    }

    fn run(
        &self,
        req: &Box<Rfc2544Request>,
        watch: &mut dyn Watch,
        stop: &Stop,
    ) -> Result<RunResult, Error> {
        crate::jobs::rfc2544(req, watch, stop)
    }

    fn sides(&self, req: &Box<Rfc2544Request>) -> Vec<(String, Endpoint)> {
        match &req.path {
            Rfc2544Path::Server(s) => crate::jobs::server_side(s),
            Rfc2544Path::Ports { tx, rx, .. } => [tx, rx]
                .into_iter()
                .filter_map(|p| Some((p.clone(), crate::frames::port(p, &req.frame.lab).ok()?)))
                .collect(),
        }
    }

    fn text(&self, _req: &Box<Rfc2544Request>, r: &RunResult, _unit: Option<Fixed>) -> String {
        report::text::rfc2544(r)
    }

    fn failed_verdict(&self) -> Option<&'static str> {
        Some("a latency verdict failed")
    }

    fn thresholds(&self) -> &'static [ThresholdMetric] {
        &[
            shared::LATENCY[0],
            shared::LATENCY[1],
            shared::LATENCY[2],
            shared::LATENCY[3],
            shared::RFC2544_THROUGHPUT_BPS,
        ]
    }

    fn figures(&self, r: &RunResult) -> Vec<Figure> {
        figures(r)
    }
}

/// The throughput search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SearchArg {
    /// RFC 9971 MLRsearch (tolerates rare bad trials; re-measures undecided loads).
    Mlr,
    /// Classic RFC 2544 bisection.
    Binary,
}

/// One of the RFC 2544 benchmarks (§26).
#[allow(missing_docs)] // Its values have no docs: the help lists them bare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TestArg {
    Throughput,
    Latency,
    Loss,
    B2b,
}

/// `rfc2544`'s command line.
#[derive(Debug, Args)]
pub struct Rfc2544Args {
    /// A wirebench server to benchmark the path to, over UDP (instead of --tx/--rx):
    /// frame size L is sent as UDP payloads of L - 46 bytes (Ethernet, IPv4, UDP, FCS).
    #[arg(conflicts_with_all = ["tx", "rx"], required_unless_present_all = ["tx", "rx"])]
    pub host: Option<String>,
    /// Server control port (with HOST, and of HOST/IFACE ports that name none).
    #[arg(short, long, default_value_t = control::DEFAULT_PORT)]
    pub port: u16,
    /// Pre-shared key file, when the server requires authentication (with HOST), and of
    /// the servers lending HOST/IFACE ports (they all require one).
    #[arg(long)]
    pub auth_key_file: Option<PathBuf>,
    /// Sending port: IFACE, NODE:IFACE of a lab, or HOST/IFACE (HOST[:PORT], [IPv6]:PORT):
    /// a port of the wirebench server at HOST started with --raw-ports.
    #[arg(long, requires = "rx")]
    pub tx: Option<String>,
    /// Receiving port: IFACE, NODE:IFACE of a lab, or HOST/IFACE.
    #[arg(long, requires = "tx")]
    pub rx: Option<String>,
    /// The clocks of the hosts of HOST/IFACE ports and this one are synchronised (PTP,
    /// NTP): report one-way latency between hosts (ports on one host share its clock).
    #[arg(long)]
    pub synced_clocks: bool,
    /// The --rx port (HOST/IFACE) turns every frame around (addresses swapped) and sends
    /// it back, where --tx counts it: a far-end loopback, as hardware testers use;
    /// latency is then round-trip, on one clock.
    #[arg(long, requires = "rx")]
    pub reflect: bool,
    /// Benchmarks to run, in this order.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "throughput,latency,loss,b2b"
    )]
    pub tests: Vec<TestArg>,
    /// Frame sizes, FCS included (RFC 2544 §9).
    #[arg(long, value_parser = units::frame_sizes, default_value = "64,128,256,512,1024,1280,1518")]
    pub sizes: std::vec::Vec<u64>,
    /// Seconds per trial that decides the result (RFC 9971 Goal Final Trial Duration;
    /// RFC 2544 §24 asks for 60); MLRsearch's preceding targets use shorter trials.
    #[arg(short = 't', long, value_parser = units::seconds, default_value = "2")]
    pub duration: Duration,
    /// MLRsearch preceding targets: searches with shorter trials and twice the width
    /// each before the goal itself (0: every trial full length).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(0..=6))]
    pub preceding: u32,
    /// A verification trial at the result (its duration: --final-duration).
    #[arg(long)]
    pub verify: bool,
    /// Seconds of the verification trial (implies --verify; default: -t).
    #[arg(long, value_parser = units::seconds)]
    pub final_duration: Option<Duration>,
    /// Trial time one search may spend, seconds (default: 60 trials of -t); out of time,
    /// the result says between which loads the answer lies.
    #[arg(long, value_parser = units::seconds)]
    pub max_search_time: Option<Duration>,
    /// Loss tolerated per trial, in percent (0 = RFC 2544 throughput).
    #[arg(long, value_parser = units::percent_ratio, default_value = "0")]
    pub loss_tolerance: f64,
    /// Throughput search.
    #[arg(long, value_enum, default_value_t = SearchArg::Mlr)]
    pub search: SearchArg,
    /// Search precision, percent of the result.
    #[arg(long, value_parser = units::percent_ratio, default_value = "0.5")]
    pub width: f64,
    /// Latency trials per frame size (RFC 2544 §26.2 asks for 20).
    #[arg(long, default_value_t = 3)]
    pub latency_trials: usize,
    /// Latency verdict per frame size, e.g. p99.9=300us (repeatable).
    #[arg(long, value_parser = units::latency_limit)]
    pub latency_limit: Vec<(f64, f64)>,
    /// A latency over its limit by at most this share of it reads MARGINAL, not FAIL
    /// (default 15%: 300-345 us under a 300 us limit, as the LAN9662 report reads its
    /// tails); 0% turns the band off.
    #[arg(long, value_parser = units::percent_ratio, requires = "latency_limit", conflicts_with = "marginal_band")]
    pub marginal_above: Option<f64>,
    /// Instead, warn before the limit: a latency above this share of its limit that still
    /// holds it reads MARGINAL (e.g. 90%: 270-300 us under a 300 us limit), and any over it
    /// fails.
    #[arg(long, value_parser = units::percent_ratio, requires = "latency_limit")]
    pub marginal_band: Option<f64>,
    /// Frame loss rate step, percent of line rate (RFC 2544 §26.3: at most 10).
    #[arg(long, default_value_t = 10.0)]
    pub loss_step: f64,
    /// Back-to-back repetitions per frame size (RFC 2544 asks for 50).
    #[arg(long, default_value_t = 5)]
    pub b2b_trials: usize,
    /// Longest burst tried, frames (default: 2 s at line rate, RFC 2544 §26.4).
    #[arg(long)]
    pub b2b_max_burst: Option<u64>,
    /// How the test frames look.
    #[command(flatten)]
    pub frame: FrameArgs,
    /// Print one JSON document.
    #[arg(short = 'J', long)]
    pub json: bool,
    /// `--repeat N`.
    #[command(flatten)]
    pub repeat: super::args::Repeat,
}

/// `rfc2544`: over UDP to HOST, or between `--tx` and `--rx`.
fn rfc2544(a: &Rfc2544Args) -> Result<Rfc2544Request, Error> {
    let path = match (&a.host, &a.tx, &a.rx) {
        (Some(host), _, _) => Rfc2544Path::Server(Server {
            host: host.clone(),
            port: a.port,
            key_file: a.auth_key_file.clone(),
            allow_unauthenticated: false,
        }),
        (None, Some(tx), Some(rx)) => Rfc2544Path::Ports {
            tx: tx.clone(),
            rx: rx.clone(),
            agents: crate::request::Agents {
                port: a.port,
                key_file: a.auth_key_file.clone(),
                synced_clocks: a.synced_clocks,
            },
            reflect: a.reflect,
        },
        _ => return Err(usage("give HOST, or both --tx and --rx")),
    };
    let tests = a.tests.iter().map(|t| match t {
        TestArg::Throughput => Rfc2544Test::Throughput,
        TestArg::Latency => Rfc2544Test::Latency,
        TestArg::Loss => Rfc2544Test::Loss,
        TestArg::B2b => Rfc2544Test::B2b,
    });
    let config = SearchConfig {
        line_rate: LineRate(a.frame.line_rate as u64),
        duration: a.duration,
        final_duration: a.final_duration.unwrap_or(a.duration),
        verify: a.verify || a.final_duration.is_some(),
        preceding: a.preceding,
        max_search_time: a.max_search_time,
        loss_ratio: a.loss_tolerance,
        width: a.width.max(0.0001),
        ..SearchConfig::default()
    };
    Ok(Rfc2544Request {
        path,
        tests: tests.collect(),
        sizes: a.sizes.clone(),
        search: match a.search {
            SearchArg::Mlr => Search::Mlr,
            SearchArg::Binary => Search::Binary,
        },
        config,
        latency_trials: a.latency_trials,
        latency_limits: a.latency_limit.clone(),
        marginal_band: crate::limits::band(a.marginal_above, a.marginal_band),
        loss_step: a.loss_step,
        b2b_trials: a.b2b_trials,
        b2b_max_burst: a.b2b_max_burst,
        frame: frame(&a.frame),
    })
}
