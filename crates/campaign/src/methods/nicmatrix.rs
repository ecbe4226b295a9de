//! `nicmatrix`: a block-size sweep per MTU and offload combination, with the interfaces'
//! state and what the host counted, put back afterwards (the RTL8127 netio review). In a
//! lab it runs its own server on the listener; otherwise against the target's server. The
//! run itself is [`crate::jobs::nic_matrix`].

use model::results::figures::{figures, Figure};
use model::results::RunResult;
use model::stop::Stop;
use model::units::Fixed;

use super::method::{Argv, Hosts, Method, OnSignal, ThresholdMetric};
use super::shared;
use crate::request::NicMatrixRequest;
use crate::{Error, Watch};

/// The `nicmatrix` method.
pub struct NicMatrix;

impl Method for NicMatrix {
    type Request = Box<NicMatrixRequest>;

    fn kind(&self) -> &'static str {
        "nicmatrix"
    }

    fn needs_root(&self, _args: &[String]) -> bool {
        true
    }

    fn hosts(&self, _args: &[String]) -> Hosts {
        Hosts::One
    }

    /// In a lab: both lab ports (`--end`) unless named; otherwise the target's server.
    fn argv(&self, a: &mut Argv<'_>) {
        a.push(&["nicmatrix"]);
        if a.ctx.lab.is_some() {
            a.lab();
            if let Some((tx, rx)) = a.ctx.raw.clone().filter(|_| !a.has("--end")) {
                a.push(&["--end", &format!("{tx},{rx}")]);
            }
        } else {
            a.server();
        }
    }

    fn run(
        &self,
        req: &Box<NicMatrixRequest>,
        watch: &mut dyn Watch,
        stop: &Stop,
    ) -> Result<RunResult, Error> {
        crate::jobs::nic_matrix(req, watch, stop)
    }

    fn text(&self, _req: &Box<NicMatrixRequest>, r: &RunResult, _unit: Option<Fixed>) -> String {
        use report::text;
        let m = r.nic_matrix.as_ref().map(text::nic_matrix);
        m.unwrap_or_default() + &text::interfaces(r) + &text::facts(r)
    }

    fn on_signal(&self) -> OnSignal {
        OnSignal::Stop
    }

    fn thresholds(&self) -> &'static [ThresholdMetric] {
        &[shared::NIC_TX, shared::NIC_RX]
    }

    fn figures(&self, r: &RunResult) -> Vec<Figure> {
        figures(r)
    }
}
