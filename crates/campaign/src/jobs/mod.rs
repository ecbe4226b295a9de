//! Running a request: each job takes its typed request, runs it in this process and gives
//! the result document (`wirebench.result/1`). Jobs do not print: progress and interval
//! rows go to a [`Watch`]; verdicts are in the document.

mod frames;
mod frer;
mod mesh;
mod nic;
mod rfc2544;
mod rrul;
mod socket;
mod streams;

pub use frames::{analyze, gen};
pub use frer::{frer_compare, relays};
pub(crate) use mesh::address;
pub use mesh::mesh;
pub use nic::nic_matrix;
pub use rfc2544::rfc2544;
pub use rrul::rrul;
pub use socket::{blocksize, client, latency, sweep};
pub use streams::{shaping, streams};

use std::net::ToSocketAddrs;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use engine::frameio::{in_netns, Endpoint};
use model::results::RunResult;

use crate::request::{Rfc2544Path, TestRequest};
use crate::{Error, Watch};

/// Runs any test a plan can hold, and records the interfaces it used: their state when it
/// started, and what the host counted on them while it ran.
///
/// # Errors
/// The job's.
pub fn run(
    req: &TestRequest,
    watch: &mut dyn Watch,
    stop: &Arc<AtomicBool>,
) -> Result<RunResult, Error> {
    recorded(sides(req), || run_job(req, watch, stop))
}

/// Runs `job` and adds to its result the state of the interfaces `sides` (role, port)
/// when it started and what the host counted on them while it ran; an interface that
/// cannot be read is left out.
pub(crate) fn recorded(
    sides: Vec<(String, Endpoint)>,
    job: impl FnOnce() -> Result<RunResult, Error>,
) -> Result<RunResult, Error> {
    let watched: Vec<_> = sides
        .into_iter()
        .filter_map(|(role, ep)| {
            let iface = ep.iface.clone();
            in_netns(ep.netns.as_deref(), move || {
                let state = engine::nic::state(&role, &iface).ok()?;
                Some((state, engine::nic::ActivityProbe::start(&role, &iface)))
            })
            .ok()
            .flatten()
        })
        .collect();
    let mut r = job()?;
    for (state, probe) in watched {
        r.interfaces.push(state);
        r.activity.push(probe.finish());
    }
    if r.command == "blocksize" {
        r.notes.extend(nic::virtual_note(&r.interfaces));
    }
    Ok(r)
}

/// The interfaces a test uses, as (role, port): toward its server (`local`), or its raw
/// ports as named (`talker:eth0`).
fn sides(req: &TestRequest) -> Vec<(String, Endpoint)> {
    let server = match req {
        TestRequest::Client(r) => Some(&r.server),
        TestRequest::Sweep(r) => Some(&r.server),
        TestRequest::Blocksize(r) => Some(&r.server),
        TestRequest::Latency(r) => Some(&r.server),
        TestRequest::Rrul(r) => Some(&r.server),
        TestRequest::Rfc2544(r) => match &r.path {
            Rfc2544Path::Server(s) => Some(s),
            Rfc2544Path::Ports { tx, rx, .. } => {
                return [tx, rx]
                    .into_iter()
                    .filter_map(|p| Some((p.clone(), crate::frames::port(p, &r.frame.lab).ok()?)))
                    .collect()
            }
        },
        _ => None,
    };
    let Some(s) = server else { return vec![] };
    let Some(ip) = (s.host.as_str(), s.port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .map(|a| a.ip())
    else {
        return vec![];
    };
    lab::probe::route_interface(&mut lab::SystemRunner, None, ip)
        .map(|iface| {
            let ep = Endpoint { netns: None, iface };
            vec![("local".to_owned(), ep)]
        })
        .unwrap_or_default()
}

fn run_job(
    req: &TestRequest,
    watch: &mut dyn Watch,
    stop: &Arc<AtomicBool>,
) -> Result<RunResult, Error> {
    match req {
        TestRequest::Client(r) => client(r, watch, stop),
        TestRequest::Sweep(r) => sweep(r, watch, stop),
        TestRequest::Blocksize(r) => blocksize(r, watch, stop),
        TestRequest::Latency(r) => latency(r, stop),
        TestRequest::Rrul(r) => rrul(r, watch, stop),
        TestRequest::Rfc2544(r) => rfc2544(r, watch, stop),
        TestRequest::Streams(r) => streams(r, watch, stop),
        TestRequest::Shaping(r) => shaping(r, watch, stop),
        TestRequest::FrerCompare(r) => frer_compare(r, watch, stop),
        TestRequest::NicMatrix(r) => nic_matrix(r, watch, stop),
        TestRequest::Mesh(r) => mesh(r, watch, stop),
    }
}
