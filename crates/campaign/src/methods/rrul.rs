//! `rrul`: latency under load as flent's RRUL test measures it (TCP streams up and down
//! at once, pings before, during and after). Its figures are its own: throughput each
//! way, and the round trips under load and what the load added to them. The run itself
//! is [`crate::jobs::rrul`].

use engine::frameio::Endpoint;
use model::results::figures::{figures, Figure, Named, Unit};
use model::results::RunResult;
use model::stop::Stop;
use model::units::Fixed;

use super::method::{Method, OnSignal, ThresholdMetric};
use super::shared;
use crate::request::RrulRequest;
use crate::{Error, Watch};
use std::time::Duration;

use clap::Args;
use model::units;

use super::args::{server, Target};

/// The `rrul` method.
pub struct Rrul;

/// Throughput up (client to server) while loaded, bit/s of payload at the receivers.
pub const UP_BPS: Named = Named {
    name: "rrul_up_bps",
    label: "up",
    unit: Unit::BitsPerSec,
    higher_is_better: true,
};
/// Throughput down (server to client) while loaded.
pub const DOWN_BPS: Named = Named {
    name: "rrul_down_bps",
    label: "down",
    unit: Unit::BitsPerSec,
    higher_is_better: true,
};
/// The round trip p99 under load, µs.
pub const LOADED_P99_US: Named = Named {
    name: "rrul_loaded_p99_us",
    label: "round trip under load p99",
    unit: Unit::Micros,
    higher_is_better: false,
};
/// What the load added to the round trip at p99 (loaded − idle), µs.
pub const ADDED_P99_US: Named = Named {
    name: "rrul_added_p99_us",
    label: "round trip added by the load p99",
    unit: Unit::Micros,
    higher_is_better: false,
};

const THRESHOLDS: [ThresholdMetric; 4] = [
    shared::named(UP_BPS),
    shared::named(DOWN_BPS),
    shared::named(LOADED_P99_US),
    shared::named(ADDED_P99_US),
];

impl Method for Rrul {
    type Request = RrulRequest;
    type Args = RrulArgs;

    fn request(&self, a: &RrulArgs) -> Result<Self::Request, Error> {
        Ok(rrul(a))
    }

    fn json(&self, a: &RrulArgs) -> bool {
        a.target.json
    }

    fn estimate(&self, req: &RrulRequest) -> Option<std::time::Duration> {
        // Idle pings before and after the load.
        Some(req.idle * 2 + req.time + super::method::TRIAL_SETUP)
    }

    fn kind(&self) -> &'static str {
        "rrul"
    }

    fn needs_server(&self, _args: &[String]) -> bool {
        true
    }

    fn run(
        &self,
        req: &RrulRequest,
        watch: &mut dyn Watch,
        stop: &Stop,
    ) -> Result<RunResult, Error> {
        crate::jobs::rrul(req, watch, stop)
    }

    fn sides(&self, req: &RrulRequest) -> Vec<(String, Endpoint)> {
        crate::jobs::server_side(&req.server)
    }

    fn text(&self, _req: &RrulRequest, r: &RunResult, _unit: Option<Fixed>) -> String {
        report::text::rrul(r)
    }

    fn on_signal(&self) -> OnSignal {
        OnSignal::StopTwiceExits
    }

    fn thresholds(&self) -> &'static [ThresholdMetric] {
        &THRESHOLDS
    }

    fn figures(&self, r: &RunResult) -> Vec<Figure> {
        let mut out = figures(r);
        let Some(x) = &r.rrul else { return out };
        out.extend(x.up_bps.map(|v| UP_BPS.at("", v)));
        out.extend(x.down_bps.map(|v| DOWN_BPS.at("", v)));
        out.extend(x.loaded.as_ref().map(|l| LOADED_P99_US.at("", l.p99)));
        out.extend(x.added_us.as_ref().map(|a| ADDED_P99_US.at("", a.p99)));
        out
    }
}

/// `rrul`'s command line.
#[derive(Debug, Args)]
pub struct RrulArgs {
    /// The server.
    #[command(flatten)]
    pub target: Target,
    /// Seconds of load.
    #[arg(short, long, value_parser = units::seconds, default_value = "10")]
    pub time: Duration,
    /// Seconds of idle baseline before the load, and again after it.
    #[arg(long, value_parser = units::seconds, default_value = "2")]
    pub idle: Duration,
    /// TCP streams in each direction.
    #[arg(short = 'P', long, default_value_t = 4)]
    pub streams: u16,
    /// Pings per second (1..=1000).
    #[arg(long, default_value_t = 100.0)]
    pub ping_rate: f64,
    /// Seconds between throughput samples.
    #[arg(short, long, value_parser = units::seconds, default_value = "0.5")]
    pub interval: Duration,
    /// `--repeat N`.
    #[command(flatten)]
    pub repeat: super::args::Repeat,
}

/// `rrul`.
fn rrul(a: &RrulArgs) -> RrulRequest {
    RrulRequest {
        server: server(&a.target),
        time: a.time,
        idle: a.idle,
        streams: a.streams,
        ping_hz: a.ping_rate,
        interval: a.interval,
    }
}
