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
use std::path::PathBuf;

use clap::Args;
use model::units;

use super::args::{sweep_request, SweepOptions};
use crate::request::Server;

/// The `nicmatrix` method.
pub struct NicMatrix;

impl Method for NicMatrix {
    type Request = Box<NicMatrixRequest>;
    type Args = NicMatrixArgs;

    fn request(&self, a: &NicMatrixArgs) -> Result<Self::Request, Error> {
        nic_matrix(a).map(Box::new)
    }

    fn json(&self, a: &NicMatrixArgs) -> bool {
        a.json
    }

    fn estimate(&self, req: &Box<NicMatrixRequest>) -> Option<std::time::Duration> {
        let cells = method::nicmatrix::combinations(&req.mtus, &req.features, |n| n).len();
        let one = super::method::rehearsed(|r| {
            let _ = req.sweep.plan.run(r, |_| {});
        });
        Some(one * u32::try_from(cells).unwrap_or(u32::MAX))
    }

    /// The best MTU over the runs, by the intervals of each MTU's median.
    fn repeated(&self, r: &mut RunResult) {
        let runs: Vec<&[model::results::nic::NicCell]> = r
            .runs
            .iter()
            .filter_map(|x| Some(x.nic_matrix.as_ref()?.cells.as_slice()))
            .collect();
        let best = method::nicmatrix::best_mtu_over_runs(&runs);
        if let Some(m) = r.nic_matrix.as_mut() {
            m.best_mtu = best.as_ref().and_then(|b| b.mtu);
            m.best_mtu_basis = best.map(|b| b.basis);
        }
    }

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

/// `nicmatrix`'s command line.
#[derive(Debug, Args)]
pub struct NicMatrixArgs {
    /// A wirebench server to sweep against; without it, a server of this run serves on
    /// the last --end (NODE:IFACE of --lab) and the sweep runs from the first.
    pub host: Option<String>,
    /// Server control port (with HOST).
    #[arg(short, long, default_value_t = control::DEFAULT_PORT)]
    pub port: u16,
    /// Pre-shared key file (with HOST).
    #[arg(long)]
    pub auth_key_file: Option<PathBuf>,
    /// Interfaces to set: IFACE of this host or NODE:IFACE of --lab (comma-separated or
    /// repeated).
    #[arg(long = "end", value_delimiter = ',', required = true)]
    pub ends: Vec<String>,
    /// Lab whose nodes NODE:IFACE names.
    #[arg(long, default_value = "lab")]
    pub lab: String,
    /// MTUs to set: 1500,9000 or a sweep 1500..9000/500 (default: left as they are).
    #[arg(long, value_parser = units::mtu_list)]
    pub mtu: Option<std::vec::Vec<u32>>,
    /// A feature and its states, e.g. rx-checksum=on,off, lro=on,off, tx=off (kernel names
    /// or ethtool's, its groups too: `tx` is every transmit checksum feature, `tso` every
    /// TCP segmentation one; repeatable).
    #[arg(long, value_parser = units::feature_states)]
    pub offload: Vec<(String, std::vec::Vec<bool>)>,
    /// The block-size sweep.
    #[command(flatten)]
    pub sweep: SweepOptions,
    /// Print one JSON document.
    #[arg(short = 'J', long)]
    pub json: bool,
    /// `--repeat N`.
    #[command(flatten)]
    pub repeat: super::args::Repeat,
}

/// `nicmatrix`.
fn nic_matrix(a: &NicMatrixArgs) -> Result<NicMatrixRequest, Error> {
    let server = Server {
        host: a.host.clone().unwrap_or_default(),
        port: a.port,
        key_file: a.auth_key_file.clone(),
        allow_unauthenticated: false,
    };
    Ok(NicMatrixRequest {
        sweep: sweep_request(server, &a.sweep)?,
        remote: a.host.is_some(),
        lab: a.lab.clone(),
        ends: a.ends.clone(),
        mtus: a.mtu.clone().unwrap_or_default(),
        features: a.offload.clone(),
    })
}
