//! `client`: a TCP or UDP throughput test against a wirebench server (or a stock iperf3
//! with `--iperf3`), as iperf3 runs it. The run itself is [`crate::jobs::client`].

use engine::frameio::Endpoint;
use model::results::figures::{figures, Figure};
use model::results::RunResult;
use model::stop::Stop;
use model::units::Fixed;

use super::method::{Method, OnSignal, ThresholdMetric};
use super::shared;
use crate::request::ClientRequest;
use crate::{Error, Watch};

/// The `client` method.
pub struct Client;

impl Method for Client {
    type Request = ClientRequest;

    fn kind(&self) -> &'static str {
        "client"
    }

    fn needs_server(&self, _args: &[String]) -> bool {
        true
    }

    fn run(
        &self,
        req: &ClientRequest,
        watch: &mut dyn Watch,
        stop: &Stop,
    ) -> Result<RunResult, Error> {
        crate::jobs::client(req, watch, stop)
    }

    fn sides(&self, req: &ClientRequest) -> Vec<(String, Endpoint)> {
        crate::jobs::server_side(&req.server)
    }

    fn text(&self, _req: &ClientRequest, r: &RunResult, unit: Option<Fixed>) -> String {
        report::text::client_summary_in(r, unit)
    }

    fn on_signal(&self) -> OnSignal {
        OnSignal::StopTwiceExits
    }

    fn thresholds(&self) -> &'static [ThresholdMetric] {
        &[
            shared::RECEIVED_BPS,
            shared::LOSS,
            shared::LATENCY[0],
            shared::LATENCY[1],
            shared::LATENCY[2],
            shared::LATENCY[3],
        ]
    }

    fn figures(&self, r: &RunResult) -> Vec<Figure> {
        figures(r)
    }
}
