//! What a `y1564` run is asked: the services, which of the two tests, their steps and
//! durations, and where the ports are.

use std::time::Duration;

use method::y1564::services::ServiceList;
use method::y1564::AvailabilityRule;

use crate::request::{Agents, FrameBackend};

/// One `y1564` run.
#[derive(Debug, Clone, PartialEq)]
pub struct Y1564Request {
    /// The service list's file, as named.
    pub file: String,
    /// The checked services.
    pub list: ServiceList,
    /// The lab whose `NODE:IFACE` the ends name.
    pub lab: String,
    /// Run the service configuration test (each service alone, step by step).
    pub configuration: bool,
    /// Run the service performance test (every service at its CIR at once).
    pub performance: bool,
    /// Each configuration step's length.
    pub step_time: Duration,
    /// The CIR steps, % of CIR.
    pub percents: Vec<f64>,
    /// The policing step's overshoot above CIR + EIR, a fraction (0.25).
    pub overshoot: f64,
    /// The performance test's length.
    pub duration: Duration,
    /// When a second is severely errored, and how many in a row change availability.
    pub availability: AvailabilityRule,
    /// Frame I/O backend for every sender.
    pub backend: FrameBackend,
    /// Servers whose ports are ends of services (`HOST/IFACE`).
    pub agents: Agents,
}
