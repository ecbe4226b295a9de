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
use crate::request::{Rfc2544Path, Rfc2544Request};
use crate::{Error, Watch};

/// The `rfc2544` method.
pub struct Rfc2544;

/// Whether a plan's flags name raw ports (`--tx`): then it sends frames itself.
fn raw_ports(args: &[String]) -> bool {
    args.iter().any(|a| a == "--tx" || a.starts_with("--tx="))
}

impl Method for Rfc2544 {
    type Request = Box<Rfc2544Request>;

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
