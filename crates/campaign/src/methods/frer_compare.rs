//! `frer compare` (plan kind `frer-compare`): the same measurements through a FRER
//! network and through the same network forwarding plainly, and what FRER costs. The run
//! itself is [`crate::jobs::frer_compare`].

use model::results::figures::{figures, Figure};
use model::results::RunResult;
use model::stop::Stop;
use model::units::Fixed;

use super::method::{Argv, Method, OnSignal, ThresholdMetric};
use super::shared;
use crate::request::FrerCompareRequest;
use crate::{Error, Watch};
use clap::{Args, ValueEnum};
use model::units;

/// The `frer compare` method.
pub struct FrerCompare;

impl Method for FrerCompare {
    type Request = FrerCompareRequest;
    type Args = FrerCompareArgs;

    fn request(&self, a: &FrerCompareArgs) -> Result<Self::Request, Error> {
        Ok(frer_compare(a))
    }

    fn json(&self, a: &FrerCompareArgs) -> bool {
        a.json
    }

    fn estimate(&self, req: &FrerCompareRequest) -> Option<std::time::Duration> {
        Some(crate::jobs::frer_compare_estimate(
            req,
            super::method::TRIAL_SETUP,
        ))
    }

    fn repeats_itself(&self) -> bool {
        true
    }

    fn kind(&self) -> &'static str {
        "frer-compare"
    }

    fn command(&self) -> &'static str {
        "frer compare"
    }

    fn needs_root(&self, _args: &[String]) -> bool {
        true
    }

    /// It builds its own labs: nothing of the target.
    /// In a plan its labs are named after the run's (`--name` of `run` and `demo`):
    /// PREFIXc and PREFIXf, unless its flags name them.
    fn argv(&self, a: &mut Argv<'_>) {
        a.push(&["frer", "compare"]);
        if !a.has("--name") {
            let name = a.ctx.labs.clone();
            a.push(&["--name", &name]);
        }
    }

    fn run(
        &self,
        req: &FrerCompareRequest,
        watch: &mut dyn Watch,
        stop: &Stop,
    ) -> Result<RunResult, Error> {
        crate::jobs::frer_compare(req, watch, stop)
    }

    fn text(&self, _req: &FrerCompareRequest, r: &RunResult, _unit: Option<Fixed>) -> String {
        report::text::frer_overhead(r)
    }

    fn on_signal(&self) -> OnSignal {
        OnSignal::Stop
    }

    fn thresholds(&self) -> &'static [ThresholdMetric] {
        &[shared::FRER_OVERHEAD]
    }

    fn figures(&self, r: &RunResult) -> Vec<Figure> {
        figures(r)
    }
}

/// `frer compare`'s UDP throughput test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum UdpMode {
    /// As fast as the sender goes.
    Unlimited,
    /// Each group's zero-loss rate.
    ZeroLoss,
}

/// `frer compare`'s command line.
#[derive(Debug, Args)]
pub struct FrerCompareArgs {
    /// Impairment of path A in both groups (`loss=1%,delay=1ms`).
    #[arg(long)]
    pub path_a: Option<String>,
    /// Impairment of path B in both groups.
    #[arg(long)]
    pub path_b: Option<String>,
    /// Seconds per measurement.
    #[arg(short = 't', long, default_value_t = 5.0)]
    pub time: f64,
    /// UDP payload bytes of the throughput test.
    #[arg(short = 'l', long, default_value_t = 1472)]
    pub length: u32,
    /// Lab name prefix (the labs are PREFIXc and PREFIXf).
    #[arg(long, default_value = "cmp")]
    pub name: String,
    /// State the throughputs against this line rate (bit/s, e.g. 1G: the links' nominal
    /// speed, the FRER report's "theoretical" column).
    #[arg(long, value_parser = units::rate_bps)]
    pub line_rate: Option<f64>,
    /// The UDP throughput test: unlimited (where the relays saturate) or zero-loss (each
    /// group's highest rate without loss, found by an RFC 2544 search).
    #[arg(long, value_enum, default_value_t = UdpMode::Unlimited)]
    pub udp: UdpMode,
    /// Measure each group N times, alternating (control, FRER, FRER, control, ...): each
    /// figure is the median with its interval, and FRER's cost a finding only when the
    /// groups' intervals do not overlap (5 gives a 93.75 % interval, 6 or more 95 %).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub repeat: u32,
    /// Print JSON.
    #[arg(short = 'J', long)]
    pub json: bool,
}

/// `frer compare`.
fn frer_compare(a: &FrerCompareArgs) -> FrerCompareRequest {
    FrerCompareRequest {
        path_a: a.path_a.clone(),
        path_b: a.path_b.clone(),
        time: a.time,
        length: a.length,
        name: a.name.clone(),
        line_rate: a.line_rate,
        udp: match a.udp {
            UdpMode::Unlimited => method::overhead::UdpLoad::Unlimited,
            UdpMode::ZeroLoss => method::overhead::UdpLoad::ZeroLoss,
        },
        repeat: a.repeat,
    }
}
