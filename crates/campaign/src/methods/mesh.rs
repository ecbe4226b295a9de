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
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use model::spec::{Protocol, Rate, TestSpec};
use model::units;

use super::args::usage;
use crate::request::{MeshHost, Server};

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
    type Args = MeshArgs;

    fn request(&self, a: &MeshArgs) -> Result<Self::Request, Error> {
        mesh(a)
    }

    fn json(&self, a: &MeshArgs) -> bool {
        a.json
    }

    fn estimate(&self, req: &MeshRequest) -> Option<std::time::Duration> {
        // Every ordered pair, at most `parallel` at once.
        let n = req.hosts.len();
        let rounds = (n * n.saturating_sub(1)).div_ceil(req.parallel.max(1));
        let one =
            req.spec.duration + req.spec.omit.unwrap_or_default() + super::method::TRIAL_SETUP;
        Some(one * u32::try_from(rounds).unwrap_or(u32::MAX))
    }

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

/// `mesh`'s command line.
#[derive(Debug, Args)]
pub struct MeshArgs {
    /// The hosts, at least two: [NAME=]HOST[:PORT] (an IPv6 address as [ADDR]:PORT; port
    /// 5301 by default; without NAME=, the host is named as written). Each host reaches
    /// the others at the address given here.
    #[arg(required = true, num_args = 2.., value_name = "[NAME=]HOST[:PORT]")]
    pub hosts: Vec<String>,
    /// Pre-shared key file of the fleet: this controller proves it to every host, and each
    /// source host proves its own (the same) key to its destination.
    #[arg(long, required = true)]
    pub auth_key_file: Option<PathBuf>,
    /// Most pairs tested at once; no host is in two at once, so N hosts allow N/2.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub pairs_at_once: u16,
    /// UDP instead of TCP.
    #[arg(short, long)]
    pub udp: bool,
    /// Seconds each pair sends.
    #[arg(short, long, value_parser = units::seconds, default_value = "5")]
    pub time: Duration,
    /// Rate per stream in bits/s (k/M/G suffixes); 0 = unlimited. UDP default 1M, TCP
    /// unlimited.
    #[arg(short, long, value_parser = units::rate_bps)]
    pub bitrate: Option<f64>,
    /// Payload bytes per datagram (UDP, default 1472) or per write (TCP, default 128k).
    #[arg(short, long, value_parser = units::size_bytes)]
    pub length: Option<usize>,
    /// Parallel streams of each pair's test.
    #[arg(short = 'P', long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=128))]
    pub parallel: u8,
    /// DSCP value for data packets (0-63).
    #[arg(long, value_parser = clap::value_parser!(u8).range(0..=63))]
    pub dscp: Option<u8>,
    /// Print one JSON document instead of the matrix.
    #[arg(short = 'J', long)]
    pub json: bool,
    /// `--repeat N`.
    #[command(flatten)]
    pub repeat: super::args::Repeat,
}

/// A mesh host, `[NAME=]HOST[:PORT]` (`[ADDR]:PORT` for IPv6).
fn mesh_host(text: &str, key_file: Option<&std::path::Path>) -> Result<MeshHost, Error> {
    let (name, addr) = match text.split_once('=') {
        Some((n, a)) if !n.is_empty() => (Some(n), a),
        Some(_) => return Err(usage(format!("'{text}': the name before = is empty"))),
        None => (None, text),
    };
    let (host, port) = crate::hosts::split_address(addr)?;
    Ok(MeshHost {
        name: name.unwrap_or(addr).to_owned(),
        server: Server {
            host,
            port,
            key_file: key_file.map(std::path::Path::to_path_buf),
            allow_unauthenticated: false,
        },
    })
}

/// `mesh`.
fn mesh(a: &MeshArgs) -> Result<MeshRequest, Error> {
    let hosts = a
        .hosts
        .iter()
        .map(|h| mesh_host(h, a.auth_key_file.as_deref()))
        .collect::<Result<Vec<_>, _>>()?;
    let protocol = if a.udp { Protocol::Udp } else { Protocol::Tcp };
    let rate = match a.bitrate {
        Some(0.0) => Rate::Unlimited,
        Some(b) => Rate::BitsPerSec(b),
        None if a.udp => Rate::BitsPerSec(TestSpec::DEFAULT_UDP_RATE),
        None => Rate::Unlimited,
    };
    let spec = TestSpec {
        duration: a.time,
        rate,
        len: a.length.unwrap_or(if a.udp {
            TestSpec::DEFAULT_UDP_LEN
        } else {
            TestSpec::DEFAULT_TCP_LEN
        }),
        streams: a.parallel,
        dscp: a.dscp,
        ..crate::trials::base_spec(protocol)
    };
    spec.check()?;
    Ok(MeshRequest {
        hosts,
        spec,
        parallel: usize::from(a.pairs_at_once),
    })
}
