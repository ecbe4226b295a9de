//! `streams`: a multi-stream profile (every stream at once on its own schedule) over raw
//! ports, with per-stream loss, rate and latency, as a SmartBits profile runs. The run
//! itself is [`crate::jobs::streams`].

use model::results::figures::{figures, Figure};
use model::results::RunResult;
use model::stop::Stop;
use model::units::Fixed;

use super::method::{Method, OnSignal, ThresholdMetric};
use super::shared;
use crate::request::StreamsRequest;
use crate::{Error, Watch};

/// The `streams` method.
pub struct Streams;

impl Method for Streams {
    type Request = Box<StreamsRequest>;

    fn kind(&self) -> &'static str {
        "streams"
    }

    fn needs_root(&self, _args: &[String]) -> bool {
        true
    }

    fn run(
        &self,
        req: &Box<StreamsRequest>,
        watch: &mut dyn Watch,
        stop: &Stop,
    ) -> Result<RunResult, Error> {
        crate::jobs::streams(req, watch, stop)
    }

    fn text(&self, _req: &Box<StreamsRequest>, r: &RunResult, _unit: Option<Fixed>) -> String {
        report::text::profile(r)
    }

    fn on_signal(&self) -> OnSignal {
        OnSignal::StopTwiceExits
    }

    fn failed_verdict(&self) -> Option<&'static str> {
        Some("a stream missed its expected rate")
    }

    fn thresholds(&self) -> &'static [ThresholdMetric] {
        &[shared::STREAM_RECEIVED_BPS]
    }

    fn figures(&self, r: &RunResult) -> Vec<Figure> {
        figures(r)
    }
}
