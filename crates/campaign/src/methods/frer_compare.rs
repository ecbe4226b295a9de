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

/// The `frer compare` method.
pub struct FrerCompare;

impl Method for FrerCompare {
    type Request = FrerCompareRequest;

    fn kind(&self) -> &'static str {
        "frer-compare"
    }

    fn needs_root(&self, _args: &[String]) -> bool {
        true
    }

    /// It builds its own labs: nothing of the target.
    fn argv(&self, a: &mut Argv<'_>) {
        a.push(&["frer", "compare"]);
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
