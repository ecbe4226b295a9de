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
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use model::units;

use super::args::{backend, usage, FrameBackend};

/// The `streams` method.
pub struct Streams;

impl Method for Streams {
    type Request = Box<StreamsRequest>;
    type Args = StreamsArgs;

    fn request(&self, a: &StreamsArgs) -> Result<Self::Request, Error> {
        streams(a).map(Box::new)
    }

    fn json(&self, a: &StreamsArgs) -> bool {
        a.json
    }

    fn estimate(&self, req: &Box<StreamsRequest>) -> Option<std::time::Duration> {
        // Besides the profile: ports opened, the receivers drained, the lab's drop counters
        // read (3.7 s for the demo's 2-s profile on this machine).
        let setup = std::time::Duration::from_millis(1_500);
        Some(std::time::Duration::from_secs_f64(req.profile.duration) + setup)
    }

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

/// `streams`'s command line.
#[derive(Debug, Args)]
pub struct StreamsArgs {
    /// The profile (TOML: `[[stream]]` tables with name, source, destination, protocol,
    /// size, load, dscp, vlan, pcp, start, stop, expect, tolerance; see examples/).
    pub profile: PathBuf,
    /// Lab whose nodes NODE:IFACE names (default: the profile's `lab`, else "lab").
    #[arg(long)]
    pub lab: Option<String>,
    /// Frame I/O backend for every sender.
    #[arg(long, value_enum, default_value_t = FrameBackend::Auto)]
    pub backend: FrameBackend,
    /// Seconds between interval rows (per stream and their sum); 0 = none (and none when
    /// an end of a stream is a server's port).
    #[arg(short, long, value_parser = units::seconds_or_zero, default_value = "1")]
    pub interval: Duration,
    /// Pre-shared key file of the servers whose ports are ends of streams (`source` or
    /// `destination` = "HOST/IFACE": a port of a wirebench server started with
    /// --raw-ports).
    #[arg(long)]
    pub auth_key_file: Option<PathBuf>,
    /// Control port of those servers, unless a source says HOST:PORT/IFACE.
    #[arg(short, long, default_value_t = control::DEFAULT_PORT)]
    pub port: u16,
    /// Print one JSON document.
    #[arg(short = 'J', long)]
    pub json: bool,
    /// `--repeat N`.
    #[command(flatten)]
    pub repeat: super::args::Repeat,
}

/// `streams`: the profile read and checked.
fn streams(a: &StreamsArgs) -> Result<StreamsRequest, Error> {
    let file = a.profile.display().to_string();
    let text = std::fs::read_to_string(&a.profile)
        .map_err(|e| usage(format!("cannot read {file}: {e}")))?;
    let profile =
        method::streams::Profile::parse(&text).map_err(|e| usage(format!("{file}: {e}")))?;
    let lab = a
        .lab
        .clone()
        .or(profile.lab.clone())
        .unwrap_or_else(|| "lab".into());
    Ok(StreamsRequest {
        file,
        profile,
        lab,
        backend: backend(a.backend),
        interval: (!a.interval.is_zero()).then_some(a.interval),
        agents: crate::request::Agents {
            port: a.port,
            key_file: a.auth_key_file.clone(),
            synced_clocks: false,
        },
    })
}
