//! `mesh`: a client test from every host to every other, each run by the source host's
//! server toward the destination's. Its figures are its own: each pair's received rate
//! (and loss, for UDP). The run itself is [`crate::jobs::mesh`].

use model::results::figures::{figures, Figure, Named, Unit};
use model::results::RunResult;
use model::stop::Stop;
use model::units::Fixed;

use super::method::{Argv, Hosts, Method, OnSignal, ThresholdMetric};
use super::shared;
use crate::hosts::PlanHost;
use crate::request::MeshRequest;
use crate::{Error, Watch};

/// The `mesh` method.
pub struct Mesh;

/// A pair's received rate, bit/s of payload, at `from -> to`.
pub const PAIR_RECEIVED_BPS: Named = Named {
    name: "mesh_received_bps",
    label: "received",
    unit: Unit::BitsPerSec,
    higher_is_better: true,
};
/// A pair's loss ratio (UDP), at `from -> to`.
pub const PAIR_LOSS: Named = Named {
    name: "mesh_loss",
    label: "loss",
    unit: Unit::Ratio,
    higher_is_better: false,
};

const THRESHOLDS: [ThresholdMetric; 2] =
    [shared::named(PAIR_RECEIVED_BPS), shared::named(PAIR_LOSS)];

impl Method for Mesh {
    type Request = MeshRequest;

    fn kind(&self) -> &'static str {
        "mesh"
    }

    fn hosts(&self, _args: &[String]) -> Hosts {
        Hosts::Many
    }

    /// `mesh NAME=HOST:PORT ...` over the hosts it names (all of the plan's when none),
    /// with their key and `--pairs-at-once` unless the test gives them.
    fn argv(&self, a: &mut Argv<'_>) {
        a.push(&["mesh"]);
        let chosen: Vec<&PlanHost> = match a.hosts {
            Some(names) => names
                .iter()
                .filter_map(|n| a.ctx.hosts.iter().find(|h| &h.name == n))
                .collect(),
            None => a.ctx.hosts.iter().collect(),
        };
        let mut words: Vec<String> = chosen
            .iter()
            .map(|h| format!("{}={}", h.name, crate::hosts::address(&h.host, h.port)))
            .collect();
        let key = chosen.first().and_then(|h| h.key_file.as_ref());
        if let Some(k) = key.filter(|_| !a.has("--auth-key-file")) {
            words.extend(["--auth-key-file".into(), k.display().to_string()]);
        }
        if let Some(p) = a.parallel.filter(|_| !a.has("--pairs-at-once")) {
            words.extend(["--pairs-at-once".into(), p.to_string()]);
        }
        a.out.extend(words);
    }

    fn run(
        &self,
        req: &MeshRequest,
        watch: &mut dyn Watch,
        stop: &Stop,
    ) -> Result<RunResult, Error> {
        crate::jobs::mesh(req, watch, stop)
    }

    fn text(&self, _req: &MeshRequest, r: &RunResult, _unit: Option<Fixed>) -> String {
        report::text::mesh(r)
    }

    fn on_signal(&self) -> OnSignal {
        OnSignal::StopTwiceExits
    }

    fn failed_verdict(&self) -> Option<&'static str> {
        Some("a pair of the mesh has no figures")
    }

    fn thresholds(&self) -> &'static [ThresholdMetric] {
        &THRESHOLDS
    }

    fn figures(&self, r: &RunResult) -> Vec<Figure> {
        let mut out = figures(r);
        for c in r.mesh.iter().flat_map(|m| &m.cells) {
            let Some(s) = &c.summary else { continue };
            let at = format!("{} -> {}", c.from, c.to);
            out.extend(s.received_bps.map(|v| PAIR_RECEIVED_BPS.at(at.clone(), v)));
            out.extend(s.loss_ratio.map(|v| PAIR_LOSS.at(at.clone(), v)));
        }
        out
    }
}
