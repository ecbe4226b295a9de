//! `shaping`: the shaper accuracy matrix (line-rate traffic per frame size through each
//! configured bandwidth), as the RTX2000 report measured it. Its figures are its own: what
//! each cell passed, as a share of the configured bandwidth. The run itself is
//! [`crate::jobs::shaping`].

use model::results::figures::{figures, Figure, Named, Unit};
use model::results::RunResult;
use model::stop::Stop;
use model::units::Fixed;

use super::method::{Method, OnSignal, ThresholdMetric};
use super::shared;
use crate::request::ShapingRequest;
use crate::{Error, Watch};

/// The `shaping` method.
pub struct Shaping;

/// What a cell passed (received L2 bit/s incl. FCS) as a share of its configured
/// bandwidth, at `FRAME B at BANDWIDTH`.
pub const PASSED_OF_BANDWIDTH: Named = Named {
    name: "shaping_passed_of_bandwidth",
    label: "passed of bandwidth",
    unit: Unit::Ratio,
    higher_is_better: true,
};

const THRESHOLDS: [ThresholdMetric; 1] = [shared::named(PASSED_OF_BANDWIDTH)];

impl Method for Shaping {
    type Request = ShapingRequest;

    fn kind(&self) -> &'static str {
        "shaping"
    }

    fn needs_root(&self, _args: &[String]) -> bool {
        true
    }

    fn run(
        &self,
        req: &ShapingRequest,
        watch: &mut dyn Watch,
        stop: &Stop,
    ) -> Result<RunResult, Error> {
        crate::jobs::shaping(req, watch, stop)
    }

    fn text(&self, _req: &ShapingRequest, r: &RunResult, _unit: Option<Fixed>) -> String {
        report::text::shaping(r)
    }

    fn on_signal(&self) -> OnSignal {
        OnSignal::Stop
    }

    fn thresholds(&self) -> &'static [ThresholdMetric] {
        &THRESHOLDS
    }

    fn figures(&self, r: &RunResult) -> Vec<Figure> {
        let mut out = figures(r);
        for c in r.shaping.iter().flat_map(|s| &s.cells) {
            if c.bandwidth_bps > 0.0 {
                let at = format!(
                    "{} B at {}",
                    c.frame_len,
                    model::units::bps(c.bandwidth_bps)
                );
                let share = c.received_l2_bps / c.bandwidth_bps;
                out.push(Figure {
                    size: Some(c.frame_len),
                    ..PASSED_OF_BANDWIDTH.at(at, share)
                });
            }
        }
        out
    }
}
