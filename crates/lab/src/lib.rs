//! Test networks on one Linux machine: network namespaces joined by veth pairs, with
//! addresses from the RFC 2544 benchmarking range 198.18.0.0/15 and locally administered
//! MAC addresses.
//!
//! Every `ip`/`sysctl` action is a typed [`cmd::Cmd`] run through a [`cmd::Runner`], so the
//! same topology can be built, or printed for a user to copy to a real router (dry run).
//! Names carry a fixed prefix plus the lab name ([`naming`]), so `down --all` finds
//! everything a lab made and nothing else; a failure half-way through `up` tears down what
//! was built.
//!
//! Topologies: `direct`, `router`, `shaper` (HTB classes, [`shaper`]), `impair` (an
//! impairment stage on the dut's forwarding path, [`impair`]), `twopath` (two
//! independently impaired paths) and `frer` (the same with software 802.1CB relays at both
//! ends, [`relay`]), built-in or from a TOML file ([`topology::Topology::from_toml`]).
//! The stages' and relays' kernel fast paths share [`bpf`].
//! Managed processes (impairment stages, FRER relays: [`processes`], sharing [`managed`])
//! are started by `up` and stopped by `down`.
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

pub mod bpf;
pub mod cmd;
pub mod cost;
pub mod impair;
pub mod lifecycle;
pub mod managed;
pub mod naming;
pub mod probe;
pub mod processes;
pub mod relay;
pub mod shaper;
pub mod status;
pub mod switch;
pub mod topofile;
pub mod topology;
mod wait;

pub use cmd::{Cmd, DryRun, Runner, SystemRunner};
pub use lifecycle::{Lab, Owner};
pub use topology::Topology;

/// Errors of the lab.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LabError {
    /// A command could not be started or failed.
    #[error("`{cmd}` failed: {detail}")]
    Command {
        /// The command line.
        cmd: String,
        /// Exit status and stderr, or the spawn error.
        detail: String,
    },
    /// A lab of this name exists already.
    #[error("a lab named '{0}' exists already: `wirebench lab down {0}` first")]
    Exists(String),
    /// Building was stopped (Ctrl-C, SIGTERM); what was built is removed.
    #[error("stopped while building: what was built is removed again")]
    Interrupted,
    /// No lab of this name exists.
    #[error("no lab named '{0}' (see `wirebench lab status`)")]
    NotFound(String),
    /// The lab or node name is not usable.
    #[error("bad name '{0}': use 1 to 8 characters a-z, 0-9 or '-'")]
    BadName(String),
    /// The topology is unknown.
    #[error("unknown topology '{0}': built-in topologies are direct, router, shaper, impair, twopath and frer, or give a TOML file")]
    UnknownTopology(String),
    /// A topology file that does not parse, or impairment settings that do not.
    #[error("{0}")]
    BadTopology(String),
    /// `shaper` without a class list.
    #[error(
        "the shaper topology needs its classes (--shape FILE.toml) or a plain port rate (--egress 100M); see `wirebench lab up --help`"
    )]
    NeedsShape,
    /// A shaper class list that does not parse.
    #[error("shaper classes: {0}")]
    BadShape(String),
    /// An interface that is missing, not Ethernet, or not usable as asked.
    #[error("{0}")]
    Interface(String),
    /// The node is not part of the lab.
    #[error("lab '{lab}' has no node '{node}' (it has: {nodes})")]
    NoSuchNode {
        /// The lab.
        lab: String,
        /// The node asked for.
        node: String,
        /// The nodes it has.
        nodes: String,
    },
}
