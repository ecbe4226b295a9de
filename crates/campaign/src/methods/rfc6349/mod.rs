//! `rfc6349`: TCP throughput testing as RFC 6349 frames it, against a wirebench server (or
//! a stock iperf3 given the path's figures): the path MTU (a packetization-layer search,
//! RFC 4821), the baseline RTT and the bottleneck bandwidth (§3.2), the BDP and the window
//! each connection needs (§3.3), then a TCP throughput test with that window and the
//! three metrics (§4): transfer time ratio, TCP efficiency, buffer delay.
//!
//! - [`run`]: the probes and the test (I/O);
//! - [`show`]: the result in a terminal and in the campaign report;
//! - [`request`], [`result`]: what a run is asked and what it found (its result part);
//! - here: the method's command line and figures.
//!
//! The arithmetic (BDP, windows, the metrics, the MTU search's decisions) is
//! `method::rfc6349`'s; this module does not repeat it.

mod request;
mod result;
mod run;
mod show;

pub use request::{Rfc6349Request, WindowChoice};
pub use result::{part, PathFigures, Rfc6349Result, Source, PART};

use std::time::Duration;

use clap::Args;

use engine::frameio::Endpoint;
use model::results::figures::{figures, Figure, Named, Unit};
use model::results::RunResult;
use model::stop::Stop;
use model::units::{self, Fixed};

use super::args::{server, usage, Repeat, Target};
use super::method::{Method, OnSignal, ThresholdMetric};
use super::shared;
use crate::{Error, Watch};

/// The `rfc6349` method.
pub struct Rfc6349;

const TTR: Named = Named {
    name: "rfc6349_ttr",
    label: "transfer time ratio",
    unit: Unit::Number,
    higher_is_better: false,
};
const EFFICIENCY: Named = Named {
    name: "rfc6349_efficiency",
    label: "TCP efficiency",
    unit: Unit::Ratio,
    higher_is_better: true,
};
const BUFFER_DELAY: Named = Named {
    name: "rfc6349_buffer_delay",
    label: "buffer delay",
    unit: Unit::Percent,
    higher_is_better: false,
};
const BASELINE_RTT: Named = Named {
    name: "rfc6349_baseline_rtt",
    label: "baseline RTT",
    unit: Unit::Micros,
    higher_is_better: false,
};
const BOTTLENECK: Named = Named {
    name: "rfc6349_bottleneck_bps",
    label: "bottleneck bandwidth",
    unit: Unit::BitsPerSec,
    higher_is_better: true,
};

const THRESHOLDS: [ThresholdMetric; 6] = [
    shared::RECEIVED_BPS,
    shared::named(TTR),
    shared::named(EFFICIENCY),
    shared::named(BUFFER_DELAY),
    shared::named(BASELINE_RTT),
    shared::named(BOTTLENECK),
];

impl Method for Rfc6349 {
    type Request = Rfc6349Request;
    type Args = Rfc6349Args;

    fn kind(&self) -> &'static str {
        "rfc6349"
    }

    fn request(&self, a: &Rfc6349Args) -> Result<Rfc6349Request, Error> {
        request(a)
    }

    fn json(&self, a: &Rfc6349Args) -> bool {
        a.target.json
    }

    fn needs_server(&self, _args: &[String]) -> bool {
        true
    }

    fn run(
        &self,
        req: &Rfc6349Request,
        watch: &mut dyn Watch,
        stop: &Stop,
    ) -> Result<RunResult, Error> {
        run::run(req, watch, stop)
    }

    fn estimate(&self, req: &Rfc6349Request) -> Option<Duration> {
        let probes = if req.iperf3 {
            Duration::ZERO
        } else {
            // The echoes, then about a second of MTU probes and trains.
            req.rtt.map_or(req.rtt_time, |_| Duration::ZERO) + Duration::from_secs(1)
        };
        Some(probes + req.time + super::method::TRIAL_SETUP * 2)
    }

    fn sides(&self, req: &Rfc6349Request) -> Vec<(String, Endpoint)> {
        crate::jobs::server_side(&req.server)
    }

    fn text(&self, _req: &Rfc6349Request, r: &RunResult, unit: Option<Fixed>) -> String {
        show::text(r, unit)
    }

    fn on_signal(&self) -> OnSignal {
        OnSignal::StopTwiceExits
    }

    fn thresholds(&self) -> &'static [ThresholdMetric] {
        &THRESHOLDS
    }

    fn figures(&self, r: &RunResult) -> Vec<Figure> {
        let mut out = figures(r);
        if let Some(p) = part(r) {
            out.extend(p.transfer_time_ratio.map(|v| TTR.at("", v)));
            out.extend(p.tcp_efficiency_pct.map(|v| EFFICIENCY.at("", v / 100.0)));
            out.extend(p.buffer_delay_pct.map(|v| BUFFER_DELAY.at("", v)));
            out.push(BASELINE_RTT.at("", p.path.baseline_rtt_us));
            out.push(BOTTLENECK.at("", p.path.bottleneck_bps));
        }
        out
    }

    fn report_tables(&self, tests: &[(&str, &RunResult)]) -> Vec<report::table::Table> {
        show::tables(tests)
    }

    fn report_charts(&self, id: &str, r: &RunResult) -> Vec<report::campaign::Chart> {
        show::charts(id, r)
    }

    fn findings(&self, r: &RunResult) -> Vec<String> {
        show::findings(r)
    }
}

/// `rfc6349`'s command line.
#[derive(Debug, Args)]
pub struct Rfc6349Args {
    /// The server.
    #[command(flatten)]
    pub target: Target,
    /// The server is a stock iperf3 (port 5201 unless -p). It has no echo, so give the
    /// path's figures with --rtt and --bb; the path MTU is then read from the test
    /// connection (TCP_INFO).
    #[arg(long)]
    pub iperf3: bool,
    /// Seconds of the TCP throughput test.
    #[arg(short, long, value_parser = units::seconds, default_value = "10")]
    pub time: Duration,
    /// Seconds of idle-path echoes whose least round trip is the baseline RTT.
    #[arg(long, value_parser = units::seconds, default_value = "2")]
    pub rtt_time: Duration,
    /// The baseline RTT, given instead of measured (e.g. 40ms).
    #[arg(long, value_parser = positive_time)]
    pub rtt: Option<Duration>,
    /// The bottleneck bandwidth, given instead of measured: the link's rate with Ethernet
    /// framing (e.g. 100M, 1G).
    #[arg(long, value_parser = positive_rate)]
    pub bb: Option<f64>,
    /// The path MTU, given instead of searched, bytes.
    #[arg(long, value_parser = clap::value_parser!(u32).range(576..=65_535))]
    pub mtu: Option<u32>,
    /// Window per connection: `bdp` (from the bandwidth-delay product, split over several
    /// connections when one cannot hold it), `auto` (the kernel's autotuning), or bytes
    /// (e.g. 256K; 1K = 1024).
    #[arg(short, long, value_parser = window, default_value = "bdp")]
    pub window: WindowChoice,
    /// Connections, instead of as many as the BDP needs (the window is then split).
    #[arg(short = 'P', long, value_parser = clap::value_parser!(u8).range(1..=128))]
    pub parallel: Option<u8>,
    /// The most connections a BDP is split over.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u8).range(1..=128))]
    pub max_connections: u8,
    /// The largest window of one connection, bytes (default: the smaller of this host's
    /// net.core.rmem_max and wmem_max, the most a socket buffer may be set to).
    #[arg(long, value_parser = units::size_bytes)]
    pub max_window: Option<usize>,
    /// Trains sent to measure the bottleneck bandwidth (their median is taken).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub trains: u32,
    /// Packets in each train, of the path MTU each.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(2..=5000))]
    pub train_len: u32,
    /// Seconds between the TCP test's interval rows; each gives an RTT sample for the
    /// buffer delay.
    #[arg(short, long, value_parser = units::seconds, default_value = "1")]
    pub interval: Duration,
    /// Congestion control of the test connections (e.g. cubic, bbr; default: the host's).
    /// BBR paces at the bottleneck and keeps its queue short; a loss-based one (cubic,
    /// reno) fills the queue, which the buffer delay then shows.
    #[arg(short = 'C', long)]
    pub congestion: Option<String>,
    /// `--repeat N`.
    #[command(flatten)]
    pub repeat: Repeat,
}

/// A time above zero with its unit.
fn positive_time(s: &str) -> Result<Duration, String> {
    let us = units::time_us(s).map_err(|e| e.to_string())?;
    if us <= 0.0 {
        return Err(format!("'{s}' is not above zero"));
    }
    Ok(Duration::from_secs_f64(us / 1e6))
}

/// A rate above zero (`100M`).
fn positive_rate(s: &str) -> Result<f64, String> {
    units::positive_rate_bps(s).ok_or_else(|| format!("'{s}' is not a rate above zero (e.g. 100M)"))
}

/// `bdp`, `auto` or a size.
fn window(s: &str) -> Result<WindowChoice, String> {
    match s.trim() {
        "bdp" => Ok(WindowChoice::Bdp),
        "auto" => Ok(WindowChoice::Auto),
        size => match units::size_bytes(size) {
            Ok(0) => Err("a window of 0 bytes carries nothing".into()),
            Ok(b) => Ok(WindowChoice::Bytes(b as u64)),
            Err(_) => Err(format!(
                "'{s}' is not a window: give bdp, auto or a size (e.g. 256K)"
            )),
        },
    }
}

/// `rfc6349`.
fn request(a: &Rfc6349Args) -> Result<Rfc6349Request, Error> {
    let mut server = server(&a.target);
    if a.iperf3 {
        if a.target.port.is_none() {
            server.port = 5201;
        }
        if a.rtt.is_none() || a.bb.is_none() {
            return Err(usage(
                "an iperf3 server has no echo to measure the path with: give --rtt and --bb",
            ));
        }
    }
    if a.parallel.is_some_and(|p| p > a.max_connections) {
        return Err(usage("-P is above --max-connections"));
    }
    Ok(Rfc6349Request {
        server,
        iperf3: a.iperf3,
        time: a.time,
        rtt_time: a.rtt_time,
        rtt: a.rtt,
        bb: a.bb,
        mtu: a.mtu,
        window: a.window,
        connections: a.parallel,
        max_connections: a.max_connections,
        max_window: a.max_window.map(|w| w as u64),
        trains: (a.trains, a.train_len),
        interval: a.interval,
        congestion: a.congestion.clone(),
    })
}

#[cfg(test)]
mod test;
