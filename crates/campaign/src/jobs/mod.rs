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

use crate::methods::TestRequest;
use crate::request::Server;
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
    let method = req.method();
    recorded(method.sides(req), || method.run(req, watch, stop))
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

/// The interface toward a test's server, as (`local`, port); none when the server's
/// address or its route cannot be found.
pub(crate) fn server_side(s: &Server) -> Vec<(String, Endpoint)> {
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
