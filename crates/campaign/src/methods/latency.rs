//! `latency`: ping-pong round trips per message size against a wirebench server, as
//! sockperf measures them, with the test's own latency limits as verdicts. The run itself
//! is [`crate::jobs::latency`].

use engine::frameio::Endpoint;
use model::results::figures::{figures, Figure};
use model::results::RunResult;
use model::stop::Stop;
use model::units::Fixed;

use super::method::{Method, ThresholdMetric};
use super::shared;
use crate::request::LatencyRequest;
use crate::{Error, Watch};
use std::time::Duration;

use clap::Args;
use model::units;

use super::args::{server, Target};

/// The `latency` method.
pub struct Latency;

impl Method for Latency {
    type Request = LatencyRequest;
    type Args = LatencyArgs;

    fn request(&self, a: &LatencyArgs) -> Result<Self::Request, Error> {
        Ok(latency(a))
    }

    fn json(&self, a: &LatencyArgs) -> bool {
        a.target.json
    }

    fn estimate(&self, req: &LatencyRequest) -> Option<std::time::Duration> {
        let one = req.time + super::method::TRIAL_SETUP;
        Some(one * u32::try_from(req.sizes.len()).unwrap_or(u32::MAX))
    }

    fn kind(&self) -> &'static str {
        "latency"
    }

    fn needs_server(&self, _args: &[String]) -> bool {
        true
    }

    fn run(
        &self,
        req: &LatencyRequest,
        _watch: &mut dyn Watch,
        stop: &Stop,
    ) -> Result<RunResult, Error> {
        crate::jobs::latency(req, stop)
    }

    fn sides(&self, req: &LatencyRequest) -> Vec<(String, Endpoint)> {
        crate::jobs::server_side(&req.server)
    }

    fn text(&self, _req: &LatencyRequest, r: &RunResult, _unit: Option<Fixed>) -> String {
        use report::text;
        let table = r.latency.as_deref().map(text::latency).unwrap_or_default();
        text::intervals(r) + &table + &text::facts(r) + &text::verdicts(r)
    }

    fn failed_verdict(&self) -> Option<&'static str> {
        Some("a latency verdict failed")
    }

    fn thresholds(&self) -> &'static [ThresholdMetric] {
        &shared::LATENCY
    }

    fn figures(&self, r: &RunResult) -> Vec<Figure> {
        figures(r)
    }
}

/// `latency`'s command line.
#[derive(Debug, Args)]
pub struct LatencyArgs {
    /// The server.
    #[command(flatten)]
    pub target: Target,
    /// Message sizes in bytes, comma-separated (minimum 18, the test header).
    #[arg(short, long, value_parser = units::size_list, default_value = "64")]
    pub length: std::vec::Vec<usize>,
    /// Seconds per message size.
    #[arg(short, long, value_parser = units::seconds, default_value = "5")]
    pub time: Duration,
    /// Busy-poll for answers instead of sleeping in recv (lower latency, one core busy).
    #[arg(long)]
    pub spin: bool,
    /// Stamp answers when recv returns (user space, as sockperf does) instead of with the
    /// kernel's receive timestamp; includes this host's wake-up time.
    #[arg(long)]
    pub user_timestamps: bool,
    /// Round-trip verdict per message size, e.g. p99.9=300us (repeatable); exit code 3
    /// when one fails.
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
    /// Seconds between interval rows (messages, answers and round trips per interval);
    /// 0 = none.
    #[arg(short, long, value_parser = units::seconds_or_zero, default_value = "1")]
    pub interval: Duration,
    /// `--repeat N`.
    #[command(flatten)]
    pub repeat: super::args::Repeat,
}

/// `latency`.
fn latency(a: &LatencyArgs) -> LatencyRequest {
    LatencyRequest {
        server: server(&a.target),
        sizes: a.length.clone(),
        time: a.time,
        spin: a.spin,
        user_timestamps: a.user_timestamps,
        latency_limits: a.latency_limit.clone(),
        marginal_band: crate::limits::band(a.marginal_above, a.marginal_band),
        interval: (!a.interval.is_zero()).then_some(a.interval),
    }
}
