//! What every job's result records of the interfaces it used: their state when it started
//! and what the host counted on them while it ran, found from the test's server or its
//! raw ports.

use std::net::ToSocketAddrs;

use engine::frameio::{in_netns, Endpoint};
use model::results::RunResult;

use crate::request::Server;
use crate::Error;

/// Runs `job` and adds to its result the host's CPU load while it ran (with a note when
/// the host was saturated), what the devices of the labs it ran through used (the labs of
/// its ports and of the calling thread, with a note for a device that used a whole CPU),
/// the state of the interfaces `sides` (role, port) when it
/// started and what the host counted on them while it ran; an interface that cannot be
/// read is left out.
pub(crate) fn recorded(
    sides: Vec<(String, Endpoint)>,
    job: impl FnOnce() -> Result<RunResult, Error>,
) -> Result<RunResult, Error> {
    let labs = lab::cost::labs_of(sides.iter().filter_map(|(_, ep)| ep.netns.as_deref()));
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
    let cost = lab::cost::CostProbe::start(labs);
    let load = engine::nic::LoadProbe::start();
    let mut r = job()?;
    let load = load.finish();
    r.notes.extend(load.note());
    r.host_load = Some(load);
    if let Some(cost) = cost.map(lab::cost::CostProbe::finish) {
        r.notes.extend(cost.notes());
        r.lab_cost = Some(cost);
    }
    for (state, probe) in watched {
        r.interfaces.push(state);
        r.activity.push(probe.finish());
    }
    if r.command == "blocksize" {
        r.notes.extend(super::nic::virtual_note(&r.interfaces));
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
