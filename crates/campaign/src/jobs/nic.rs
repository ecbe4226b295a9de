//! The NIC matrix (`nicmatrix`): for each MTU and feature combination, set every end, run
//! the block-size sweep and count what the hosts did; every setting is put back afterwards,
//! also when the run stops early (Ctrl-C) or fails ([`Tuning`] restores on drop).
//!
//! The settings go through the kernel's interfaces (`engine::nic`), in each end's
//! namespace; a remote server's own interface through its tuning session
//! (`control::tuning`, a server started with `--allow-tuning`).

use std::collections::BTreeMap;

use engine::frameio::{in_netns, Endpoint};
use engine::nic::{self, ActivityProbe};
use method::nicmatrix::{best_mtu_over_runs, combinations, Combination};
use model::results::nic::{NicCell, NicMatrix};
use model::results::RunResult;
use model::spec::Protocol;
use model::stop::Stop;

use crate::request::{NicMatrixRequest, Server};
use crate::trials::{base_spec, client_config, ServerTrial};
use crate::{frames, usage, Error, Watch};

/// Most combinations one matrix runs.
const MAX_CELLS: usize = 256;

/// One end as it was before the matrix touched it.
struct Saved {
    name: String,
    ep: Endpoint,
    mtu: u32,
    features: BTreeMap<String, bool>,
}

/// The settings of every end as they were; [`Tuning::restore`] (or dropping it) puts them
/// back. A remote server's interface is set through its tuning session, which it ends
/// (and restores) when the session closes.
struct Tuning {
    saved: Vec<Saved>,
    remote: Option<control::tuning::Tuner>,
    restored: bool,
}

fn at<T: Send>(
    ep: &Endpoint,
    f: impl FnOnce(&str) -> std::io::Result<T> + Send,
) -> Result<T, String> {
    let iface = ep.iface.clone();
    match in_netns(ep.netns.as_deref(), move || f(&iface)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) | Err(e) => Err(e.to_string()),
    }
}

impl Tuning {
    fn save(ends: &[(String, Endpoint)]) -> Result<Self, Error> {
        let saved = ends
            .iter()
            .map(|(name, ep)| {
                let s =
                    at(ep, |i| nic::state(name, i)).map_err(|e| usage(format!("{name}: {e}")))?;
                Ok(Saved {
                    name: name.clone(),
                    ep: ep.clone(),
                    mtu: s.mtu.unwrap_or(1500),
                    features: s.features,
                })
            })
            .collect::<Result<_, Error>>()?;
        Ok(Self {
            saved,
            remote: None,
            restored: false,
        })
    }

    /// Sets every end to `c`; the first refusal is the error.
    fn apply(&mut self, c: &Combination) -> Result<(), String> {
        self.restored = false;
        for s in &self.saved {
            if let Some(m) = c.mtu {
                at(&s.ep, |i| nic::set_mtu(i, m)).map_err(|e| format!("{}: {e}", s.name))?;
            }
            for (f, on) in &c.features {
                if !nic::has_feature(&s.features, f) {
                    return Err(format!("{}: {} has no feature '{f}'", s.name, s.ep.iface));
                }
                at(&s.ep, |i| nic::set_feature(i, f, *on))
                    .map_err(|e| format!("{}: {e}", s.name))?;
            }
        }
        if let Some(t) = &mut self.remote {
            match t.apply(c.mtu, &c.features) {
                Ok((_, None)) => {}
                Ok((_, Some(refused))) => return Err(format!("server: {refused}")),
                Err(e) => return Err(format!("server: {e}")),
            }
        }
        Ok(())
    }

    /// Puts every end's MTU and every feature that differs back; says what could not be.
    fn restore(&mut self) -> Vec<String> {
        self.restored = true;
        let mut failed = Vec::new();
        for s in &self.saved {
            if let Err(e) = at(&s.ep, |i| nic::set_mtu(i, s.mtu)) {
                failed.push(format!("{}: {e}", s.name));
            }
            let now = at(&s.ep, |i| nic::state(&s.name, i)).map(|x| x.features);
            for (f, on) in &s.features {
                if now.as_ref().is_ok_and(|n| n.get(f) == Some(on)) {
                    continue;
                }
                if let Err(e) = at(&s.ep, |i| nic::set_feature(i, f, *on)) {
                    failed.push(format!("{}: {e}", s.name));
                }
            }
        }
        if let Some(t) = self.remote.take() {
            match t.restore() {
                Ok((_, None)) => {}
                Ok((_, Some(e))) => failed.push(format!("server: {e}")),
                Err(e) => failed.push(format!("server: {e} (it restores when the session closes)")),
            }
        }
        failed
    }
}

impl Drop for Tuning {
    fn drop(&mut self) {
        if !self.restored {
            for e in self.restore() {
                tracing::warn!("not restored: {e}");
            }
        }
    }
}

/// What a block-size figure measures when every interface is virtual (veth, loopback): the
/// host's CPU and kernel, not a NIC.
pub(crate) fn virtual_note(ifaces: &[model::results::nic::InterfaceState]) -> Option<String> {
    let virtual_if = |i: &&model::results::nic::InterfaceState| {
        i.name == "lo" || matches!(i.driver.as_deref(), Some("veth" | "loopback"))
    };
    (!ifaces.is_empty() && ifaces.iter().all(|i| virtual_if(&i))).then(|| {
        "every interface is virtual (veth or loopback): these rates measure this host's CPU and kernel, not a NIC".to_owned()
    })
}

/// The NIC matrix.
///
/// # Errors
/// Bad ends or combinations, a server that cannot start, or a sweep that failed (the
/// settings are restored first).
pub fn nic_matrix(
    req: &NicMatrixRequest,
    watch: &mut dyn Watch,
    stop: &Stop,
) -> Result<RunResult, Error> {
    crate::need_root("nicmatrix sets MTUs and features: run it with sudo")?;
    if req.ends.is_empty() {
        return Err(usage(
            "give the interfaces to set with --end (IFACE, or NODE:IFACE of --lab)",
        ));
    }
    let ends: Vec<(String, Endpoint)> = req
        .ends
        .iter()
        .map(|e| Ok((e.clone(), frames::port(e, &req.lab)?)))
        .collect::<Result<_, Error>>()?;
    let combos = combinations(&req.mtus, &req.features, nic::feature_name);
    if combos.len() > MAX_CELLS {
        return Err(usage(format!(
            "{} combinations: at most {MAX_CELLS} (fewer MTUs or features)",
            combos.len()
        )));
    }
    if let Some(bad) = req.mtus.iter().find(|m| !(68..=65_535).contains(*m)) {
        return Err(usage(format!("MTU {bad} is outside 68..=65535")));
    }
    // Without a remote server, one of this run serves on the last end and the sweep runs
    // from the first end's namespace.
    let (server, _handle, client_ns) = if req.remote {
        // The sweep runs from the first end's namespace (a lab node's, or this host's).
        let ns = ends.first().and_then(|(_, ep)| ep.netns.clone());
        (req.sweep.server.clone(), None, ns)
    } else {
        let (Some((_, first)), Some((last_name, last))) = (ends.first(), ends.last()) else {
            return Err(usage("give --end for both ends"));
        };
        if ends.len() < 2 || last.netns.is_none() {
            return Err(usage(
                "without HOST, give both ends as NODE:IFACE of --lab: the sweep runs from the first, the server on the last",
            ));
        }
        let addr = lab::probe::addresses(&mut lab::SystemRunner, last)?
            .ipv4
            .ok_or_else(|| usage(format!("{last_name} has no IPv4 address to serve on")))?;
        let bind = std::net::SocketAddr::new(addr.into(), 0);
        let handle = in_netns(last.netns.as_deref(), || crate::target::serve(bind))?
            .map_err(|e| Error::Failed(format!("cannot start a server on {last_name}: {e}")))?;
        let server = Server {
            host: addr.to_string(),
            port: handle.addr().port(),
            key_file: None,
            allow_unauthenticated: false,
        };
        (server, Some(handle), first.netns.clone())
    };
    let mut interfaces: Vec<_> = ends
        .iter()
        .filter_map(|(name, ep)| at(ep, |i| nic::state(name, i)).ok())
        .collect();
    let mut tuning = Tuning::save(&ends)?;
    if req.remote && (!req.mtus.is_empty() || !req.features.is_empty()) {
        // The server's end: a tuning session from the sweep's namespace; an empty request
        // first, whose answer is the interface as it was.
        let cfg = client_config(&server)?;
        let what = format!("cannot set {}'s interface", server.host);
        let mut tuner = in_netns(client_ns.as_deref(), || {
            control::client::Session::connect(&cfg).map(control::tuning::Tuner::new)
        })?
        .map_err(|e| Error::from(e).context(&what))?;
        let (state, _) = tuner
            .apply(None, &BTreeMap::new())
            .map_err(|e| Error::from(e).context(&what))?;
        interfaces.extend(state);
        tuning.remote = Some(tuner);
    }
    let mut cells = Vec::new();
    let mut notes = Vec::new();
    for (n, c) in combos.iter().enumerate() {
        if stop.is_raised() {
            notes.push(format!(
                "stopped: {} of {} combinations ran",
                n,
                combos.len()
            ));
            break;
        }
        let label = c.label();
        watch.progress(&format!("[{}/{}] {label}", n + 1, combos.len()));
        let mut cell = NicCell {
            label,
            mtu: c.mtu,
            features: c.features.clone(),
            ..NicCell::default()
        };
        if let Err(e) = tuning.apply(c) {
            cell.error = Some(e);
            cells.push(cell);
            continue;
        }
        let probes: Vec<ActivityProbe> = ends
            .iter()
            .filter_map(|(name, ep)| at(ep, |i| Ok(ActivityProbe::start(name, i))).ok())
            .collect();
        let sweep = in_netns(client_ns.as_deref(), || sweep(req, &server, stop))?;
        match sweep {
            Ok(rows) => cell.rows = rows,
            Err(_) if stop.is_raised() => {
                notes.push(format!(
                    "stopped during {}: that combination has no sweep",
                    cell.label
                ));
                break;
            }
            Err(e) => return Err(e),
        }
        cell.activity = probes.into_iter().map(ActivityProbe::finish).collect();
        cells.push(cell);
    }
    for e in tuning.restore() {
        notes.push(format!("not restored: {e}"));
    }
    let params = serde_json::json!({
        "ends": req.ends, "mtus": req.mtus,
        "features": req.features.iter().map(|(f, s)| (f.clone(), s.clone())).collect::<BTreeMap<_, _>>(),
        "sizes": req.sweep.sizes, "duration_s": req.sweep.time.as_secs_f64(),
        "streams": req.sweep.streams, "units": if req.sweep.netio { "netio" } else { "si" },
        "server": format!("{}:{}", server.host, server.port),
    });
    let mut r = engine::env::result("nicmatrix", params);
    r.backend = Some("tcp".into());
    notes.extend(virtual_note(&interfaces));
    r.interfaces = interfaces;
    r.notes = notes;
    let best = best_mtu_over_runs(&[&cells]);
    r.nic_matrix = Some(NicMatrix {
        interfaces: ends
            .iter()
            .map(|(n, ep)| format!("{n}={}", ep.iface))
            .collect(),
        units: if req.sweep.netio { "netio" } else { "si" }.into(),
        best_mtu: best.as_ref().and_then(|b| b.mtu),
        best_mtu_basis: best.map(|b| b.basis),
        cells,
    });
    Ok(r)
}

/// One block-size sweep against `server`.
fn sweep(
    req: &NicMatrixRequest,
    server: &Server,
    stop: &Stop,
) -> Result<Vec<model::results::BlocksizeRow>, Error> {
    let mut cfg = client_config(server)?;
    cfg.stop = Some(stop.clone());
    let mut trial = ServerTrial {
        cfg,
        base: model::spec::TestSpec {
            streams: req.sweep.streams.max(1),
            ..base_spec(Protocol::Tcp)
        },
    };
    req.sweep.plan.run(&mut trial, |_| {})
}

#[cfg(test)]
mod test {
    use super::*;
    use model::results::nic::InterfaceState;

    fn iface(name: &str, driver: Option<&str>) -> InterfaceState {
        InterfaceState {
            name: name.into(),
            driver: driver.map(str::to_owned),
            ..InterfaceState::default()
        }
    }

    #[test]
    fn rates_over_only_virtual_interfaces_are_said_to_measure_the_host() {
        let virtual_only = [iface("lo", None), iface("veth1", Some("veth"))];
        assert!(virtual_note(&virtual_only)
            .is_some_and(|n| n.starts_with("every interface is virtual")));
        let with_nic = [iface("lo", None), iface("eth0", Some("ixgbe"))];
        assert_eq!(virtual_note(&with_nic), None);
        assert_eq!(virtual_note(&[]), None, "nothing read, nothing said");
    }
}
