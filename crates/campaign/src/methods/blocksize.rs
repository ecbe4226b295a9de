//! `blocksize`: a netio-style TCP block-size sweep against a wirebench server. The run
//! itself is [`crate::jobs::blocksize`].

use engine::frameio::Endpoint;
use model::results::figures::{figures, Figure};
use model::results::RunResult;
use model::stop::Stop;
use model::units::Fixed;

use super::method::{Method, ThresholdMetric};
use super::shared;
use crate::request::BlocksizeRequest;
use crate::{Error, Watch};
use clap::Args;

use super::args::{server, sweep_request, SweepOptions, Target};

/// The `blocksize` method.
pub struct Blocksize;

impl Method for Blocksize {
    type Request = BlocksizeRequest;
    type Args = BlocksizeArgs;

    fn request(&self, a: &BlocksizeArgs) -> Result<Self::Request, Error> {
        blocksize(a)
    }

    fn json(&self, a: &BlocksizeArgs) -> bool {
        a.target.json
    }

    fn estimate(&self, req: &BlocksizeRequest) -> Option<std::time::Duration> {
        Some(super::method::rehearsed(|r| {
            let _ = req.plan.run(r, |_| {});
        }))
    }

    fn kind(&self) -> &'static str {
        "blocksize"
    }

    fn needs_server(&self, _args: &[String]) -> bool {
        true
    }

    fn run(
        &self,
        req: &BlocksizeRequest,
        watch: &mut dyn Watch,
        stop: &Stop,
    ) -> Result<RunResult, Error> {
        crate::jobs::blocksize(req, watch, stop)
    }

    fn sides(&self, req: &BlocksizeRequest) -> Vec<(String, Endpoint)> {
        crate::jobs::server_side(&req.server)
    }

    fn text(&self, req: &BlocksizeRequest, r: &RunResult, _unit: Option<Fixed>) -> String {
        let rows = r.blocksize.as_deref().unwrap_or_default();
        report::text::blocksize_in(rows, req.netio) + &report::text::interfaces(r)
    }

    fn thresholds(&self) -> &'static [ThresholdMetric] {
        &[shared::BLOCK_TX, shared::BLOCK_RX]
    }

    fn figures(&self, r: &RunResult) -> Vec<Figure> {
        figures(r)
    }
}

/// `blocksize`'s command line.
#[derive(Debug, Args)]
pub struct BlocksizeArgs {
    /// The server.
    #[command(flatten)]
    pub target: Target,
    /// The block-size sweep.
    #[command(flatten)]
    pub sweep: SweepOptions,
    /// `--repeat N`.
    #[command(flatten)]
    pub repeat: super::args::Repeat,
}

/// `blocksize`.
fn blocksize(a: &BlocksizeArgs) -> Result<BlocksizeRequest, Error> {
    sweep_request(server(&a.target), &a.sweep)
}
