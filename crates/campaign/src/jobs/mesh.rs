//! `mesh`: a client test from every host to every other, each run by the source host's
//! server toward the destination's (third-party tests, [`control::third_party`]), at most
//! `parallel` at once and no host in two at once ([`method::mesh`]). A host that cannot be
//! reached, or a pair whose test fails, is a failed cell with its reason; the rest of the
//! mesh goes on.

use std::sync::mpsc;

use control::client::Session;
use method::mesh::{MeshSchedule, Pair};
use model::clock::Clock;
use model::results::mesh::{MeshCell, MeshHost as HostOut, MeshReport};
use model::results::RunResult;
use model::spec::Protocol;
use model::stop::Stop;
use model::units::bps;

use crate::hosts::address;
use crate::request::{Connect, MeshHost, MeshRequest};
use crate::{usage, Error, Watch};

/// The test of one pair, asked of the source's server; with the source's boot id when
/// it said it. `stop` (Ctrl-C) ends it: the source's server stops when its controller
/// goes.
fn pair(
    req: &MeshRequest,
    (from, to): (&MeshHost, &MeshHost),
    stop: &Stop,
) -> (MeshCell, Option<String>) {
    // Its clock starts now: its mono() is the pair's time so far.
    let started = engine::clock::RealClock::new();
    let reached = address(&from.server.host, from.server.port);
    let mut boot_id = None;
    let result = crate::trials::client_config_with(&from.server, &Connect::default())
        .map_err(|e| e.to_string())
        .and_then(|mut cfg| {
            cfg.stop = Some(stop.clone());
            Session::connect(&cfg)
                .map_err(|e| format!("cannot reach {} at {reached}: {e}", from.name))
        })
        .and_then(|session| {
            boot_id.clone_from(&session.host_id);
            let to_addr = address(&to.server.host, to.server.port);
            match session.run_client_from(&to_addr, &req.spec) {
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(e @ control::ProtoError::Refused { .. }) => {
                    Err(format!("{} ({reached}) refused: {e}", from.name))
                }
                Err(e) => Err(format!("{} ({reached}): {e}", from.name)),
            }
        });
    let (summary, connection, error) = match result {
        Ok(r) => match r.summary {
            Some(s) => (Some(s), r.connection, None),
            None => (
                None,
                r.connection,
                Some("the test has no totals".to_owned()),
            ),
        },
        Err(e) => (None, None, Some(e)),
    };
    let cell = MeshCell {
        from: from.name.clone(),
        to: to.name.clone(),
        summary,
        error,
        connection,
        duration_s: started.mono().as_secs_f64(),
    };
    (cell, boot_id)
}

/// A note naming the hosts that run on one machine (one boot id): their tests share its
/// CPUs, so their figures describe that machine as much as the network.
fn shared_machines(hosts: &[MeshHost], boot_ids: &[Option<String>]) -> Option<String> {
    let mut groups: Vec<Vec<&str>> = Vec::new();
    for (i, id) in boot_ids.iter().enumerate() {
        let Some(id) = id else { continue };
        if boot_ids[..i].iter().any(|o| o.as_ref() == Some(id)) {
            continue;
        }
        let same: Vec<&str> = (i..hosts.len())
            .filter(|j| boot_ids[*j].as_ref() == Some(id))
            .map(|j| hosts[j].name.as_str())
            .collect();
        if same.len() > 1 {
            groups.push(same);
        }
    }
    (!groups.is_empty()).then(|| {
        let groups: Vec<String> = groups.iter().map(|g| g.join(", ")).collect();
        format!(
            "hosts on one machine (one boot id): {}; their tests share its CPUs, so these figures describe that machine as much as the network",
            groups.join("; ")
        )
    })
}

/// A cell's line of progress.
fn progress(c: &MeshCell) -> String {
    match (&c.error, c.received_bps()) {
        (Some(e), _) => format!("{} -> {}: failed: {e}", c.from, c.to),
        (None, Some(r)) => format!("{} -> {}: {}", c.from, c.to, bps(r)),
        (None, None) => format!("{} -> {}: no figure", c.from, c.to),
    }
}

/// Runs the mesh.
///
/// # Errors
/// Fewer than two hosts, two with one name, or a test the spec refuses. A pair that fails
/// is a failed cell, not an error.
pub fn mesh(req: &MeshRequest, watch: &mut dyn Watch, stop: &Stop) -> Result<RunResult, Error> {
    let n = req.hosts.len();
    if n < 2 {
        return Err(usage("a mesh needs at least two hosts"));
    }
    for (i, h) in req.hosts.iter().enumerate() {
        crate::hosts::check_name(&h.name)?;
        if req.hosts[..i].iter().any(|o| o.name == h.name) {
            return Err(usage(format!(
                "two hosts of the mesh are named '{}'",
                h.name
            )));
        }
        let same = |o: &&MeshHost| o.server.host == h.server.host && o.server.port == h.server.port;
        if let Some(o) = req.hosts[..i].iter().find(same) {
            return Err(usage(format!(
                "hosts '{}' and '{}' are one server ({}): a host in two pairs at once would share its link",
                o.name,
                h.name,
                address(&h.server.host, h.server.port)
            )));
        }
    }
    req.spec.check()?;
    mesh_over(req, watch, stop, &|from, to| pair(req, (from, to), stop))
}

/// What runs the test of one pair (`from`, `to`): its cell and the source's boot id.
type RunPair<'a> = dyn Fn(&MeshHost, &MeshHost) -> (MeshCell, Option<String>) + Sync + 'a;

/// [`mesh`] with each pair's test run by `run_pair` (a third-party test through the
/// source's server, or a fake in tests), once the request is checked.
fn mesh_over(
    req: &MeshRequest,
    watch: &mut dyn Watch,
    stop: &Stop,
    run_pair: &RunPair<'_>,
) -> Result<RunResult, Error> {
    let n = req.hosts.len();
    let mut schedule = MeshSchedule::new(n, req.parallel);
    let mut cells: Vec<Option<MeshCell>> = vec![None; n * n];
    let mut boot_ids: Vec<Option<String>> = vec![None; n];
    let (tx, rx) = mpsc::channel::<(Pair, (MeshCell, Option<String>))>();
    std::thread::scope(|s| {
        loop {
            // Ctrl-C: the pairs that run finish (each within its test's time); no more
            // start.
            if !stop.is_raised() {
                while let Some(p) = schedule.start() {
                    let tx = tx.clone();
                    let (from, to) = (&req.hosts[p.0], &req.hosts[p.1]);
                    s.spawn(move || {
                        // A pair whose thread panics is a failed cell, not a mesh that
                        // waits for it forever.
                        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            run_pair(from, to)
                        }))
                        .unwrap_or_else(|_| {
                            let failed = MeshCell {
                                from: from.name.clone(),
                                to: to.name.clone(),
                                summary: None,
                                error: Some("the pair's thread panicked".into()),
                                connection: None,
                                duration_s: 0.0,
                            };
                            (failed, None)
                        });
                        let _ = tx.send((p, done));
                    });
                }
            }
            if schedule.running() == 0 {
                break;
            }
            let Ok((p, (cell, boot_id))) = rx.recv() else {
                break;
            };
            schedule.done(p);
            if boot_id.is_some() {
                boot_ids[p.0] = boot_id;
            }
            watch.progress(&progress(&cell));
            cells[p.0 * n + p.1] = Some(cell);
        }
    });
    let interrupted = stop.is_raised() && !schedule.pending().is_empty();
    let mut out = Vec::with_capacity(n * (n - 1));
    for (i, c) in cells.into_iter().enumerate() {
        let (a, b) = (i / n, i % n);
        if a == b {
            continue;
        }
        out.push(c.unwrap_or_else(|| MeshCell {
            from: req.hosts[a].name.clone(),
            to: req.hosts[b].name.clone(),
            summary: None,
            error: Some("not run: the mesh was interrupted".into()),
            connection: None,
            duration_s: 0.0,
        }));
    }
    let hosts: Vec<HostOut> = req
        .hosts
        .iter()
        .map(|h| HostOut {
            name: h.name.clone(),
            address: address(&h.server.host, h.server.port),
        })
        .collect();
    let params = serde_json::json!({
        "hosts": hosts.iter().map(|h| serde_json::json!({"name": h.name, "address": h.address})).collect::<Vec<_>>(),
        "test": req.spec,
        "parallel": req.parallel.max(1),
    });
    let mut r = engine::env::result("mesh", params);
    let report = MeshReport {
        hosts,
        protocol: match req.spec.protocol {
            Protocol::Tcp => "tcp".into(),
            Protocol::Udp => "udp".into(),
        },
        test_s: req.spec.duration.as_secs_f64(),
        parallel: req.parallel.max(1),
        cells: out,
    };
    let failed = report.failed();
    if failed > 0 {
        r.notes.push(format!(
            "{failed} of {} pairs have no figures (their cells say failed):",
            report.cells.len()
        ));
        for c in report.cells.iter().filter(|c| c.error.is_some()) {
            r.notes.push(progress(c));
        }
    }
    r.notes.extend(shared_machines(&req.hosts, &boot_ids));
    r.verdicts.push(model::results::Verdict {
        name: "every pair of the mesh measured".into(),
        passed: failed == 0,
        detail: format!(
            "{} of {} pairs measured",
            report.cells.len() - failed,
            report.cells.len()
        ),
        marginal: false,
    });
    r.interrupted = interrupted;
    r.mesh = Some(report);
    Ok(r)
}

#[cfg(test)]
#[path = "mesh_tests.rs"]
mod test;
