//! What an `rfc2889` run is asked: the test, the ports in their roles' order, the frame
//! sizes, loads and trials, and for the address tests the search and how the switch forgets.

use std::time::Duration;

use method::rfc2889::Pattern;
use wire::linerate::LineRate;

use crate::request::{Agents, FrameBackend};

/// The EtherType of the test frames: IEEE 802 local experimental EtherType 1.
pub(super) const ETHERTYPE: u16 = 0x88b5;

/// Which RFC 2889 test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    /// A traffic test (§5.1, §5.2, §5.4, §5.5, §5.10).
    Traffic(Pattern),
    /// §5.7: how many addresses the switch caches.
    Caching,
    /// §5.8: how fast it learns them.
    LearningRate,
    /// §5.6 (first procedure): the forwarding rate at load steps up to the maximum
    /// offered load, fully meshed, and the highest seen.
    MaxForwardingRate,
    /// §5.9: errored frames among valid ones, one port to another.
    Errored,
}

impl Test {
    /// The name on the command line and in the result.
    pub fn name(self) -> &'static str {
        match self {
            Test::Traffic(p) => p.name(),
            Test::Caching => "address-caching",
            Test::LearningRate => "learning-rate",
            Test::MaxForwardingRate => "max-forwarding-rate",
            Test::Errored => "errored-frames",
        }
    }

    /// The traffic pattern it sends, if it is a traffic test (§5.6 sends §5.1's).
    pub fn pattern(self) -> Option<Pattern> {
        match self {
            Test::Traffic(p) => Some(p),
            Test::MaxForwardingRate => Some(Pattern::FullyMeshed),
            _ => None,
        }
    }

    /// Its RFC 2889 section.
    pub fn section(self) -> &'static str {
        match self {
            Test::Traffic(p) => p.section(),
            Test::Caching => "5.7",
            Test::LearningRate => "5.8",
            Test::MaxForwardingRate => "5.6",
            Test::Errored => "5.9",
        }
    }
}

/// The address tests' settings (§5.7, §5.8).
#[derive(Debug, Clone, PartialEq)]
pub struct AddressSettings {
    /// §5.7: the fewest and most addresses searched, and the step the search ends at.
    pub count: (u64, u64, u64),
    /// §5.7: the rate the learning frames are sent at, frames/s.
    pub rate_fps: f64,
    /// §5.8: the addresses learned in each trial.
    pub learn: u64,
    /// §5.8: the lowest and highest learning rate searched, frames/s, and the width the
    /// search ends at (a fraction of the upper bound).
    pub rates: (f64, f64, f64),
    /// The lab switch node whose bridge is flushed before each trial, if any.
    pub switch: Option<String>,
    /// Otherwise, how long the switch keeps an address it no longer sees: each trial waits
    /// this long (and a second) before it starts.
    pub ageing: Duration,
}

/// One `rfc2889` run.
#[derive(Debug, Clone, PartialEq)]
pub struct Rfc2889Request {
    /// The test.
    pub test: Test,
    /// The ports (`IFACE`, `NODE:IFACE` or a server's `HOST/IFACE`), in the order the
    /// test gives them roles.
    pub ports: Vec<String>,
    /// The lab whose nodes `NODE:IFACE` names.
    pub lab: String,
    /// Frame sizes, bytes with FCS.
    pub sizes: Vec<u64>,
    /// Each trial's length.
    pub trial: Duration,
    /// Each port's line rate (what "100 %" is).
    pub line_rate: LineRate,
    /// The intended load of each sending port, a fraction of line rate.
    pub load: f64,
    /// Search each size's throughput before the trial at the load.
    pub search: bool,
    /// §5.6: load steps from 100 % / steps up to 100 %.
    pub steps: u32,
    /// The throughput search ends when its bounds are this close (fraction).
    pub width: f64,
    /// Frame I/O backend.
    pub backend: FrameBackend,
    /// The address tests' settings.
    pub addresses: AddressSettings,
    /// The servers whose ports (`HOST/IFACE`) are among the ports.
    pub agents: Agents,
}
