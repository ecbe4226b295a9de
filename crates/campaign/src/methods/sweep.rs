//! `sweep`: a zero-loss UDP rate staircase against a wirebench server. The run itself is
//! [`crate::jobs::sweep`].

use engine::frameio::Endpoint;
use model::results::figures::{figures, Figure};
use model::results::RunResult;
use model::stop::Stop;
use model::units::Fixed;

use super::method::{Method, ThresholdMetric};
use super::shared;
use crate::request::SweepRequest;
use crate::{Error, Watch};
use std::time::Duration;

use clap::Args;
use model::spec::Direction;
use model::units;

use super::args::{server, Target};

/// The `sweep` method.
pub struct Sweep;

impl Method for Sweep {
    type Request = SweepRequest;
    type Args = SweepArgs;

    fn request(&self, a: &SweepArgs) -> Result<Self::Request, Error> {
        sweep(a)
    }

    fn json(&self, a: &SweepArgs) -> bool {
        a.target.json
    }

    fn estimate(&self, req: &SweepRequest) -> Option<std::time::Duration> {
        Some(super::method::rehearsed(|r| {
            let _ = req.plan.run(r, |_| {});
        }))
    }

    fn repeats_itself(&self) -> bool {
        true
    }

    fn kind(&self) -> &'static str {
        "sweep"
    }

    fn needs_server(&self, _args: &[String]) -> bool {
        true
    }

    fn run(
        &self,
        req: &SweepRequest,
        watch: &mut dyn Watch,
        stop: &Stop,
    ) -> Result<RunResult, Error> {
        crate::jobs::sweep(req, watch, stop)
    }

    fn sides(&self, req: &SweepRequest) -> Vec<(String, Endpoint)> {
        crate::jobs::server_side(&req.server)
    }

    fn text(&self, _req: &SweepRequest, r: &RunResult, _unit: Option<Fixed>) -> String {
        r.sweep
            .as_ref()
            .map(report::text::sweep)
            .unwrap_or_default()
            + &report::text::facts(r)
    }

    fn thresholds(&self) -> &'static [ThresholdMetric] {
        &[shared::ZERO_LOSS_BPS]
    }

    fn figures(&self, r: &RunResult) -> Vec<Figure> {
        figures(r)
    }
}

/// `sweep`'s command line.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The server.
    #[command(flatten)]
    pub target: Target,
    /// Lowest target rate, bits/s.
    #[arg(long, value_parser = units::rate_bps)]
    pub from: f64,
    /// Highest target rate, bits/s.
    #[arg(long, value_parser = units::rate_bps)]
    pub to: f64,
    /// Step between targets, bits/s.
    #[arg(long, value_parser = units::rate_bps)]
    pub step: f64,
    /// Seconds per step.
    #[arg(short, long, value_parser = units::seconds, default_value = "5")]
    pub time: Duration,
    /// UDP payload bytes.
    #[arg(short, long, value_parser = units::size_bytes, default_value = "1472")]
    pub length: usize,
    /// Sweep the server-to-client direction.
    #[arg(short = 'R', long)]
    pub reverse: bool,
    /// More steps, bits/s, e.g. 520M,540M (joined to the staircase in rate order).
    #[arg(long, value_parser = units::rate_list)]
    pub points: Option<std::vec::Vec<f64>>,
    /// Run every step N times; the table shows min–max and the worst loss decides.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    /// Loss up to this is "marginal" (percent).
    #[arg(long, value_parser = units::percent_ratio, default_value = "0.5%")]
    pub marginal: f64,
    /// Loss from this on is "high loss" (percent); between the two: "loss detected".
    #[arg(long, value_parser = units::percent_ratio, default_value = "1%")]
    pub high: f64,
    /// The recommended operating rate: the highest zero-loss rate times this (percent).
    #[arg(long, value_parser = units::percent_ratio, default_value = "80%")]
    pub safety_margin: f64,
}

/// `sweep`.
fn sweep(a: &SweepArgs) -> Result<SweepRequest, Error> {
    let direction = if a.reverse {
        Direction::Reverse
    } else {
        Direction::Forward
    };
    let levels = method::sweep::Levels {
        marginal: a.marginal,
        high: a.high,
    };
    let plan = method::sweep::SweepPlan::new(a.from, a.to, a.step, a.length, a.time, direction)
        .and_then(|p| p.with_points(a.points.as_deref().unwrap_or_default()))
        .and_then(|p| p.repeat(a.repeat))
        .and_then(|p| p.levels(levels))
        .and_then(|p| p.safety_margin(a.safety_margin))
        .map_err(Error::from)?;
    Ok(SweepRequest {
        server: server(&a.target),
        plan,
    })
}
