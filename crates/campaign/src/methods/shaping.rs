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
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use model::units;

use super::args::{frame, FrameArgs};

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
    type Args = ShapingArgs;

    fn request(&self, a: &ShapingArgs) -> Result<Self::Request, Error> {
        Ok(shaping(a))
    }

    fn json(&self, a: &ShapingArgs) -> bool {
        a.json
    }

    fn estimate(&self, req: &ShapingRequest) -> Option<std::time::Duration> {
        let cells = req.sizes.len() * req.bandwidths.len();
        Some(
            (req.duration + super::method::RAW_TRIAL_SETUP)
                * u32::try_from(cells).unwrap_or(u32::MAX),
        )
    }

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

/// `shaping`'s command line.
#[derive(Debug, Args)]
pub struct ShapingArgs {
    /// Sending port: IFACE or NODE:IFACE of a lab, or HOST/IFACE: a port of the wirebench
    /// server at HOST[:PORT] started with --raw-ports.
    #[arg(long, default_value = "talker:eth0")]
    pub tx: String,
    /// Receiving port (after the shaper), as --tx.
    #[arg(long, default_value = "listener:eth0")]
    pub rx: String,
    /// Frame sizes with FCS: a list or a range with a step, e.g. 100..1500/100.
    #[arg(long, value_parser = units::frame_size_range, default_value = "128,512,1518")]
    pub sizes: std::vec::Vec<u64>,
    /// Bandwidths to configure, bit/s, e.g. 100m,90m,50m,10m,1m,64k.
    #[arg(long, value_parser = units::rate_list)]
    pub bandwidths: std::vec::Vec<f64>,
    /// How to set a bandwidth on the device: a shell command with {bandwidth} (bit/s),
    /// {bandwidth_k} (kbit/s) and {bandwidth_m} (Mbit/s) replaced; its exit status is
    /// checked. Without it, the first class of the lab's shaper (dut eth1, class 1:10) is
    /// changed directly.
    #[arg(long)]
    pub dut_cmd: Option<String>,
    /// Seconds of traffic per cell.
    #[arg(short = 't', long, value_parser = units::seconds, default_value = "2")]
    pub duration: Duration,
    /// How the test frames look.
    #[command(flatten)]
    pub frame: FrameArgs,
    /// Pre-shared key file of the servers lending HOST/IFACE ports.
    #[arg(long)]
    pub auth_key_file: Option<PathBuf>,
    /// Control port of those servers, unless a port says HOST:PORT/IFACE.
    #[arg(short, long, default_value_t = control::DEFAULT_PORT)]
    pub port: u16,
    /// Print one JSON document.
    #[arg(short = 'J', long)]
    pub json: bool,
    /// `--repeat N`.
    #[command(flatten)]
    pub repeat: super::args::Repeat,
}

/// `shaping`.
fn shaping(a: &ShapingArgs) -> ShapingRequest {
    ShapingRequest {
        tx: a.tx.clone(),
        rx: a.rx.clone(),
        sizes: a.sizes.clone(),
        bandwidths: a.bandwidths.clone(),
        dut_cmd: a.dut_cmd.clone(),
        duration: a.duration,
        frame: frame(&a.frame),
        agents: crate::request::Agents {
            port: a.port,
            key_file: a.auth_key_file.clone(),
            synced_clocks: false,
        },
    }
}
