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

/// The `latency` method.
pub struct Latency;

impl Method for Latency {
    type Request = LatencyRequest;

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
