//! `rfc2889`: benchmarking a LAN switch over N raw ports (lab ports, this host's own
//! interfaces, or for the traffic tests ports a server lends), as RFC 2889 describes it:
//!
//! - traffic tests: fully meshed (§5.1), one-to-many and many-to-one (§5.2),
//!   unidirectional (§5.4), congestion control (§5.5) and broadcast forwarding (§5.10),
//!   per frame size a throughput search over the pattern and a trial at the asked load,
//!   with each port's forwarding rate, loss and flood count ([`run`]);
//! - address caching capacity (§5.7) and address learning rate (§5.8): a search over the
//!   number of addresses or the learning rate, flooding watched on a monitor port
//!   (`addresses.rs`);
//! - [`show`]: the tables in a terminal and the campaign report;
//! - [`request`], [`result`]: what a run is asked and what it found (its result part);
//! - here: the method's command line and figures.
//!
//! - maximum forwarding rate (§5.6, its first procedure): fully meshed at load steps;
//! - errored frames filtering (§5.9): undersized and oversized frames among valid ones,
//!   the kinds a raw port here cannot send reported as not possible (`errored.rs`).
//!
//! The patterns, figures and searches are `method::rfc2889`'s. Forward pressure (§5.6's
//! second procedure) is refused: it needs a MAC whose inter-frame gap can be shortened.

mod addresses;
mod errored;
mod request;
mod result;
mod run;
mod show;

pub use request::{AddressSettings, Rfc2889Request, Test};
pub use result::{part, Rfc2889Result, PART};

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use method::rfc2889::Pattern;
use model::results::figures::{Figure, Named, Unit};
use model::results::RunResult;
use model::stop::Stop;
use model::units::{self, Fixed};
use wire::linerate::LineRate;

use super::args::{backend, usage, FrameBackend, Repeat};
use super::method::{Method, OnSignal, ThresholdMetric};
use super::shared;
use crate::{Error, Watch};

/// The `rfc2889` method.
pub struct Rfc2889;

const THROUGHPUT: Named = Named {
    name: "rfc2889_throughput",
    label: "throughput per port (% of line rate)",
    unit: Unit::Ratio,
    higher_is_better: true,
};
const FORWARDING: Named = Named {
    name: "rfc2889_forwarding_fps",
    label: "forwarding rate over all ports (frames/s)",
    unit: Unit::Number,
    higher_is_better: true,
};
const LOSS: Named = Named {
    name: "rfc2889_loss",
    label: "frame loss at the load",
    unit: Unit::Ratio,
    higher_is_better: false,
};
const FLOOD: Named = Named {
    name: "rfc2889_flood",
    label: "flood count at the load (frames)",
    unit: Unit::Number,
    higher_is_better: false,
};
const ADDRESSES: Named = Named {
    name: "rfc2889_addresses",
    label: "address caching capacity (addresses)",
    unit: Unit::Number,
    higher_is_better: true,
};
const LEARNING_RATE: Named = Named {
    name: "rfc2889_learning_fps",
    label: "address learning rate (addresses/s)",
    unit: Unit::Number,
    higher_is_better: true,
};

const MAX_FORWARDING: Named = Named {
    name: "rfc2889_max_forwarding_fps",
    label: "maximum forwarding rate over all ports (frames/s)",
    unit: Unit::Number,
    higher_is_better: true,
};

const THRESHOLDS: [ThresholdMetric; 7] = [
    shared::named(THROUGHPUT),
    shared::named(FORWARDING),
    shared::named(LOSS),
    shared::named(FLOOD),
    shared::named(ADDRESSES),
    shared::named(LEARNING_RATE),
    shared::named(MAX_FORWARDING),
];

impl Method for Rfc2889 {
    type Request = Box<Rfc2889Request>;
    type Args = Rfc2889Args;

    fn kind(&self) -> &'static str {
        "rfc2889"
    }

    fn request(&self, a: &Rfc2889Args) -> Result<Self::Request, Error> {
        request(a).map(Box::new)
    }

    fn json(&self, a: &Rfc2889Args) -> bool {
        a.json
    }

    fn needs_root(&self, _args: &[String]) -> bool {
        true
    }

    fn run(
        &self,
        req: &Box<Rfc2889Request>,
        watch: &mut dyn Watch,
        stop: &Stop,
    ) -> Result<RunResult, Error> {
        run::run(req, watch, stop)
    }

    fn estimate(&self, req: &Box<Rfc2889Request>) -> Option<Duration> {
        // Each profile opens its ports and drains its receivers (about 1.5 s).
        let setup = Duration::from_millis(1_500);
        match req.test.pattern() {
            Some(p) => {
                // A binary search to 0.5 % takes about 9 trials.
                let mut trials = if req.search && p.searchable() { 10 } else { 1 };
                if req.test == Test::MaxForwardingRate {
                    trials += req.steps;
                }
                let per_size = (req.trial + setup) * trials + run::LEARNING;
                Some(per_size * u32::try_from(req.sizes.len()).unwrap_or(u32::MAX))
            }
            None if req.test == Test::Errored => Some(req.trial + setup),
            None => None,
        }
    }

    /// Every port: the result records each one's state and what the host counted on it.
    fn sides(&self, req: &Box<Rfc2889Request>) -> Vec<(String, engine::frameio::Endpoint)> {
        req.ports
            .iter()
            .filter_map(|p| Some((p.clone(), crate::frames::port(p, &req.lab).ok()?)))
            .collect()
    }

    fn text(&self, _req: &Box<Rfc2889Request>, r: &RunResult, _unit: Option<Fixed>) -> String {
        show::text(r)
    }

    fn on_signal(&self) -> OnSignal {
        OnSignal::StopTwiceExits
    }

    fn failed_verdict(&self) -> Option<&'static str> {
        Some("the switch forwarded errored frames or lost valid ones")
    }

    fn thresholds(&self) -> &'static [ThresholdMetric] {
        &THRESHOLDS
    }

    /// Per frame size: the throughput, and the forwarding rate, loss and flood count at the
    /// load; or the address search's result.
    fn figures(&self, r: &RunResult) -> Vec<Figure> {
        let Some(p) = part(r) else { return Vec::new() };
        let mut out = Vec::new();
        let line = LineRate(p.line_rate_bps as u64);
        for s in &p.sizes {
            let at = format!("{} B", s.frame_len);
            if let Some(fps) = s.throughput.as_ref().and_then(|t| t.fps) {
                out.push(THROUGHPUT.at(at.as_str(), fps / line.max_fps(s.frame_len)));
            }
            let t = &s.at_load.totals;
            out.push(FORWARDING.at(at.as_str(), t.forwarding_fps));
            out.push(LOSS.at(at.as_str(), t.loss_ratio));
            out.push(FLOOD.at(at.as_str(), t.flood as f64));
            if let Some((fps, _)) = s.max_forwarding {
                out.push(MAX_FORWARDING.at(at.as_str(), fps));
            }
        }
        if let Some(a) = &p.addresses {
            if let Some(v) = a.result {
                let at = format!("{} B", a.frame_len);
                if p.test == Test::Caching.name() {
                    out.push(ADDRESSES.at(at, v));
                } else {
                    out.push(LEARNING_RATE.at(at, v));
                }
            }
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

/// The test, as the command line names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TestArg {
    /// §5.1: every port to every other port.
    FullyMeshed,
    /// §5.2: the first port to every other.
    OneToMany,
    /// §5.2: every other port to the first.
    ManyToOne,
    /// §5.4: the first half of the ports to every port of the second half.
    Unidirectional,
    /// §5.5: 4 ports A, B, C, D: A to C and D, B to C (C offered 150 %).
    Congestion,
    /// §5.10: the first port sends broadcasts to all others.
    Broadcast,
    /// §5.7: 3 ports learning, test, monitor: how many addresses the switch caches.
    AddressCaching,
    /// §5.8: 3 ports learning, test, monitor: how fast the switch learns addresses.
    LearningRate,
    /// §5.6: fully meshed at load steps up to --load; the highest forwarding rate.
    MaxForwardingRate,
    /// §5.6: refused (a MAC whose inter-frame gap can be shortened is needed).
    ForwardPressure,
    /// §5.9: 2 ports: valid, undersized and oversized frames; which the switch filters.
    ErroredFrames,
}

/// `rfc2889`'s command line.
#[derive(Debug, Args)]
pub struct Rfc2889Args {
    /// The test.
    #[arg(value_enum)]
    pub test: TestArg,
    /// The ports (IFACE, NODE:IFACE of --lab, or HOST/IFACE a server lends for the
    /// traffic tests), in the order the test gives them roles.
    #[arg(required = true, num_args = 2..)]
    pub ports: Vec<String>,
    /// Lab whose nodes NODE:IFACE names.
    #[arg(long, default_value = "lab")]
    pub lab: String,
    /// Frame sizes, FCS included (the address tests use the first).
    #[arg(long, value_parser = units::frame_sizes, default_value = "64,128,256,512,1024,1280,1518")]
    pub sizes: std::vec::Vec<u64>,
    /// Seconds of each trial (RFC 2889 recommends 30).
    #[arg(short = 't', long, value_parser = units::seconds, default_value = "30")]
    pub trial_time: Duration,
    /// Each port's line rate, what 100 % is (bit/s, e.g. 100M, 1G, 10G).
    #[arg(long, value_parser = units::rate_bps, default_value = "1G")]
    pub line_rate: f64,
    /// The intended load of each sending port, % of line rate.
    #[arg(long, value_parser = load, default_value = "100%")]
    pub load: f64,
    /// Only the trial at --load, no throughput search.
    #[arg(long)]
    pub no_search: bool,
    /// max-forwarding-rate: load steps from the throughput (or --load / steps) up to --load.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub steps: u32,
    /// The throughput search ends when its bounds are this close.
    #[arg(long, value_parser = units::percent_ratio, default_value = "0.5%")]
    pub width: f64,
    /// §5.7: the fewest addresses searched.
    #[arg(long, default_value_t = 1)]
    pub min_addresses: u64,
    /// §5.7: the most addresses searched.
    #[arg(long, default_value_t = 65_536)]
    pub max_addresses: u64,
    /// §5.7: the search ends when its bounds are this many addresses apart.
    #[arg(long, default_value_t = 1)]
    pub address_step: u64,
    /// §5.7: learning frames per second (below the switch's learning rate).
    #[arg(long, default_value_t = 1_000.0)]
    pub learning_fps: f64,
    /// §5.8: addresses learned in each trial (at most the switch's capacity).
    #[arg(long, default_value_t = 1_000)]
    pub addresses: u64,
    /// §5.8: the lowest learning rate searched, frames/s.
    #[arg(long, default_value_t = 1_000.0)]
    pub min_rate: f64,
    /// §5.8: the highest learning rate searched, frames/s.
    #[arg(long, default_value_t = 100_000.0)]
    pub max_rate: f64,
    /// §5.8: the search ends when its bounds are this close.
    #[arg(long, value_parser = units::percent_ratio, default_value = "1%")]
    pub rate_width: f64,
    /// The lab switch node under test: its bridge is flushed before each address trial
    /// (without it, each trial waits --ageing).
    #[arg(long)]
    pub switch: Option<String>,
    /// How long the switch keeps an address it no longer sees, s (without --switch).
    #[arg(long, value_parser = units::seconds, default_value = "300")]
    pub ageing: Duration,
    /// Frame I/O backend.
    #[arg(long, value_enum, default_value_t = FrameBackend::Auto)]
    pub backend: FrameBackend,
    /// Pre-shared key file of the servers whose ports (HOST/IFACE) are among the ports.
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
    pub repeat: Repeat,
}

/// A load: a % of line rate above 0, at most 100.
fn load(s: &str) -> Result<f64, String> {
    units::percent(s)
        .filter(|p| *p > 0.0 && *p <= 100.0)
        .map(|p| p / 100.0)
        .ok_or_else(|| format!("'{s}' is not a load in (0 %, 100 %]"))
}

/// `rfc2889`: the arguments checked.
fn request(a: &Rfc2889Args) -> Result<Rfc2889Request, Error> {
    let test = match a.test {
        TestArg::FullyMeshed => Test::Traffic(Pattern::FullyMeshed),
        TestArg::OneToMany => Test::Traffic(Pattern::OneToMany),
        TestArg::ManyToOne => Test::Traffic(Pattern::ManyToOne),
        TestArg::Unidirectional => Test::Traffic(Pattern::Unidirectional),
        TestArg::Congestion => Test::Traffic(Pattern::Congestion),
        TestArg::Broadcast => Test::Traffic(Pattern::Broadcast),
        TestArg::AddressCaching => Test::Caching,
        TestArg::LearningRate => Test::LearningRate,
        TestArg::ForwardPressure => {
            return Err(usage(
                "forward pressure (RFC 2889 §5.6) is not possible on these ports: it sends \
                 with an inter-frame gap below 96 bit times, which needs a tester MAC whose \
                 gap can be set; AF_PACKET and AF_XDP send through the NIC's own MAC, and \
                 veth has no medium",
            ))
        }
        TestArg::MaxForwardingRate => Test::MaxForwardingRate,
        TestArg::ErroredFrames => Test::Errored,
    };
    let n = a.ports.len();
    if let Some(p) = test.pattern() {
        method::rfc2889::flows(p, n).map_err(|e| usage(e.to_string()))?;
    } else if test == Test::Errored && n != 2 {
        return Err(usage(format!(
            "errored-frames (RFC 2889 §5.9) takes 2 ports: source and destination; {n} given"
        )));
    } else if test != Test::Errored && n != 3 {
        return Err(usage(format!(
            "{} (RFC 2889 §{}) takes 3 ports: learning, test and monitor; {n} given",
            test.name(),
            test.section()
        )));
    }
    let mut seen = Vec::new();
    for p in &a.ports {
        if seen.contains(&p) {
            return Err(usage(format!("port {p} is given twice")));
        }
        // A server's lent port sends checked frames from its own MAC only.
        let lent_refusal = match test {
            _ if !p.contains('/') => None,
            Test::Errored => Some(
                "errored frames are undersized and oversized, which a server's lent port \
                 does not send (none below 64 bytes, none beyond its MTU)"
                    .to_owned(),
            ),
            Test::Caching | Test::LearningRate => Some(format!(
                "{} sends from many source MACs, which a server's lent port does not (it \
                 sends from its own MAC)",
                test.name()
            )),
            Test::Traffic(_) | Test::MaxForwardingRate => None,
        };
        if let Some(why) = lent_refusal {
            return Err(usage(format!(
                "{p}: {why}; use ports of this host or a lab"
            )));
        }
        seen.push(p);
    }
    if a.line_rate < 1e3 {
        return Err(usage(format!(
            "a line rate of {} bit/s is too low",
            a.line_rate
        )));
    }
    let rate = |v: f64, name: &str| {
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(usage(format!("--{name} must be a rate above 0 frames/s")))
        }
    };
    Ok(Rfc2889Request {
        test,
        ports: a.ports.clone(),
        lab: a.lab.clone(),
        sizes: a.sizes.clone(),
        trial: a.trial_time,
        line_rate: LineRate(a.line_rate as u64),
        load: a.load,
        search: !a.no_search,
        steps: a.steps,
        width: a.width,
        backend: backend(a.backend),
        addresses: AddressSettings {
            count: (a.min_addresses, a.max_addresses, a.address_step),
            rate_fps: rate(a.learning_fps, "learning-fps")?,
            learn: a.addresses.max(1),
            rates: (
                rate(a.min_rate, "min-rate")?,
                rate(a.max_rate, "max-rate")?,
                a.rate_width,
            ),
            switch: a.switch.clone(),
            ageing: a.ageing,
        },
        agents: crate::request::Agents {
            port: a.port,
            key_file: a.auth_key_file.clone(),
            synced_clocks: false,
        },
    })
}

#[cfg(test)]
mod test;
