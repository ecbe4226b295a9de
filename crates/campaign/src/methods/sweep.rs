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

/// The `sweep` method.
pub struct Sweep;

impl Method for Sweep {
    type Request = SweepRequest;

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
