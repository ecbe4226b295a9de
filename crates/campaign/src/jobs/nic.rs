//! The NIC matrix (`nicmatrix`): for each MTU and feature combination, set every end, run
//! the block-size sweep and count what the hosts did; every setting is put back afterwards,
//! also when the run stops early (Ctrl-C) or fails ([`Tuning`] restores on drop).
//!
//! The settings go through the kernel's interfaces (`engine::nic`), in each end's
//! namespace. A remote server's interface is not set here.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use engine::frameio::{in_netns, Endpoint};
use engine::nic::{self, ActivityProbe};
use model::results::nic::{NicCell, NicMatrix};
use model::results::RunResult;
use model::spec::Protocol;

use crate::request::{NicMatrixRequest, Server};
use crate::trials::{base_spec, client_config, ServerTrial};
use crate::{frames, usage, Error, Watch};

/// Most combinations one matrix runs.
const MAX_CELLS: usize = 256;

/// One combination: an MTU (or none) and feature states by kernel name.
#[derive(Debug, Clone, PartialEq)]
struct Combination {
    mtu: Option<u32>,
    features: BTreeMap<String, bool>,
}

impl Combination {
    fn label(&self) -> String {
        let mut parts: Vec<String> = self.mtu.map(|m| format!("mtu {m}")).into_iter().collect();
        parts.extend(
            self.features
                .iter()
                .map(|(f, on)| format!("{f} {}", if *on { "on" } else { "off" })),
        );
        if parts.is_empty() {
            "as set".into()
        } else {
            parts.join(", ")
        }
    }
}

/// Every combination, MTU outermost, then the features in the order given.
fn combinations(mtus: &[u32], features: &[(String, Vec<bool>)]) -> Vec<Combination> {
    let mut out: Vec<Combination> = if mtus.is_empty() {
        vec![Combination {
            mtu: None,
            features: BTreeMap::new(),
        }]
    } else {
        mtus.iter()
            .map(|&m| Combination {
                mtu: Some(m),
                features: BTreeMap::new(),
            })
            .collect()
    };
    for (name, states) in features {
        let kernel = nic::feature_name(name);
        out = out
            .iter()
            .flat_map(|c| {
                states.iter().map(move |&on| {
                    let mut c = c.clone();
                    c.features.insert(kernel.to_owned(), on);
                    c
                })
            })
            .collect();
    }
    out
}

/// One end as it was before the matrix touched it.
struct Saved {
    name: String,
    ep: Endpoint,
    mtu: u32,
    features: BTreeMap<String, bool>,
}

/// The settings of every end as they were; [`Tuning::restore`] (or dropping it) puts them
/// back.
struct Tuning {
    saved: Vec<Saved>,
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
                if !s.features.contains_key(f) {
                    return Err(format!("{}: {} has no feature '{f}'", s.name, s.ep.iface));
                }
                at(&s.ep, |i| nic::set_feature(i, f, *on))
                    .map_err(|e| format!("{}: {e}", s.name))?;
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

/// The MTU whose cells had the highest mean rate, with more than one MTU.
fn best_mtu(cells: &[NicCell]) -> Option<u32> {
    let mut by_mtu: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    for c in cells {
        if let (Some(m), Some(v)) = (c.mtu, c.mean_mbyte_s()) {
            by_mtu.entry(m).or_default().push(v);
        }
    }
    if by_mtu.len() < 2 {
        return None;
    }
    by_mtu
        .into_iter()
        .map(|(m, v)| (m, v.iter().sum::<f64>() / v.len() as f64))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(m, _)| m)
}

/// The NIC matrix.
///
/// # Errors
/// Bad ends or combinations, a server that cannot start, or a sweep that failed (the
/// settings are restored first).
pub fn nic_matrix(
    req: &NicMatrixRequest,
    watch: &mut dyn Watch,
    stop: &Arc<AtomicBool>,
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
    let combos = combinations(&req.mtus, &req.features);
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
        (req.sweep.server.clone(), None, None)
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
        };
        (server, Some(handle), first.netns.clone())
    };
    let interfaces = ends
        .iter()
        .filter_map(|(name, ep)| at(ep, |i| nic::state(name, i)).ok())
        .collect();
    let mut tuning = Tuning::save(&ends)?;
    let mut cells = Vec::new();
    let mut notes = Vec::new();
    for (n, c) in combos.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
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
            Err(_) if stop.load(Ordering::Relaxed) => {
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
    r.interfaces = interfaces;
    r.notes = notes;
    r.nic_matrix = Some(NicMatrix {
        interfaces: ends
            .iter()
            .map(|(n, ep)| format!("{n}={}", ep.iface))
            .collect(),
        units: if req.sweep.netio { "netio" } else { "si" }.into(),
        best_mtu: best_mtu(&cells),
        cells,
    });
    Ok(r)
}

/// One block-size sweep against `server`.
fn sweep(
    req: &NicMatrixRequest,
    server: &Server,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<model::results::BlocksizeRow>, Error> {
    let mut cfg = client_config(server)?;
    cfg.stop = Some(Arc::clone(stop));
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

    #[test]
    fn combinations_cross_mtus_and_features() {
        let c = combinations(
            &[1500, 9000],
            &[
                ("rx-checksum".into(), vec![true, false]),
                ("lro".into(), vec![false]),
            ],
        );
        assert_eq!(c.len(), 4);
        assert_eq!(c[0].label(), "mtu 1500, rx-checksum on, rx-lro off");
        assert_eq!(c[3].label(), "mtu 9000, rx-checksum off, rx-lro off");
        assert_eq!(combinations(&[], &[]).len(), 1);
        assert_eq!(combinations(&[], &[]).remove(0).label(), "as set");
    }

    #[test]
    fn the_best_mtu_has_the_highest_mean() {
        let cell = |mtu, v| NicCell {
            mtu: Some(mtu),
            rows: vec![model::results::BlocksizeRow {
                block_bytes: 1024,
                tx_mbyte_s: v,
                rx_mbyte_s: v,
                duration_s: 1.0,
                client_cpu: None,
                server_cpu: None,
            }],
            ..NicCell::default()
        };
        let cells = [
            cell(1500, 100.0),
            cell(4000, 300.0),
            cell(9000, 200.0),
            cell(4000, 250.0),
        ];
        assert_eq!(best_mtu(&cells), Some(4000));
        assert_eq!(best_mtu(&cells[..1]), None);
    }
}
