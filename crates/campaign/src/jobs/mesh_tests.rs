//! Unit tests of the mesh over pairs run by a fake: which pairs run, what a failed or
//! interrupted pair gives, the verdict and notes, and what is refused before any pair.

use std::sync::Mutex;

use model::results::Summary;

use super::*;

/// Host `name`, its server at `name`:5301.
fn host(name: &str) -> MeshHost {
    MeshHost {
        name: name.into(),
        server: crate::request::Server {
            host: name.into(),
            port: 5301,
            key_file: None,
            allow_unauthenticated: false,
        },
    }
}

fn request(names: &[&str], parallel: usize) -> MeshRequest {
    MeshRequest {
        hosts: names.iter().map(|n| host(n)).collect(),
        spec: crate::trials::base_spec(Protocol::Udp),
        parallel,
    }
}

/// A pair's cell: measured at `bps`, or failed with `error`.
fn cell(from: &MeshHost, to: &MeshHost, bps: f64, error: Option<&str>) -> MeshCell {
    MeshCell {
        from: from.name.clone(),
        to: to.name.clone(),
        summary: error.is_none().then(|| Summary {
            received_bps: Some(bps),
            ..Summary::default()
        }),
        error: error.map(str::to_owned),
        connection: None,
        duration_s: 1.0,
    }
}

#[test]
fn every_ordered_pair_runs_once_and_its_cell_has_its_place() {
    let req = request(&["a", "b", "c"], 2);
    let ran = Mutex::new(Vec::new());
    let r = mesh_over(&req, &mut crate::Quiet, &Stop::new(), &|from, to| {
        ran.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(format!("{}>{}", from.name, to.name));
        (cell(from, to, 1e9, None), None)
    })
    .expect("the mesh");
    let mut ran = ran.into_inner().unwrap_or_else(|e| e.into_inner());
    ran.sort();
    assert_eq!(ran, ["a>b", "a>c", "b>a", "b>c", "c>a", "c>b"]);
    let report = r.mesh.as_ref().expect("a mesh report");
    let cells: Vec<String> = report
        .cells
        .iter()
        .map(|c| format!("{}>{}", c.from, c.to))
        .collect();
    assert_eq!(cells, ran, "row by row");
    assert_eq!(report.parallel, 2);
    let v = &r.verdicts[0];
    assert_eq!(
        (v.name.as_str(), v.passed, v.detail.as_str()),
        (
            "every pair of the mesh measured",
            true,
            "6 of 6 pairs measured"
        )
    );
    assert!(!r.interrupted);
}

#[test]
fn a_failed_pair_is_a_failed_cell_and_the_mesh_goes_on() {
    let req = request(&["a", "b"], 1);
    let r = mesh_over(&req, &mut crate::Quiet, &Stop::new(), &|from, to| {
        let error = (from.name == "b").then_some("cannot reach b at b:5301: refused");
        (cell(from, to, 1e9, error), None)
    })
    .expect("the mesh");
    let cells = &r.mesh.as_ref().expect("a mesh report").cells;
    assert!(cells[0].error.is_none() && cells[0].summary.is_some());
    assert_eq!(
        cells[1].error.as_deref(),
        Some("cannot reach b at b:5301: refused")
    );
    let v = &r.verdicts[0];
    assert_eq!(
        (v.passed, v.detail.as_str()),
        (false, "1 of 2 pairs measured")
    );
    assert_eq!(
        r.notes,
        [
            "1 of 2 pairs have no figures (their cells say failed):",
            "b -> a: failed: cannot reach b at b:5301: refused",
        ]
    );
}

#[test]
fn a_pair_that_panics_is_a_failed_cell() {
    let req = request(&["a", "b"], 2);
    let r = mesh_over(&req, &mut crate::Quiet, &Stop::new(), &|from, to| {
        assert!(from.name != "a", "a fails");
        (cell(from, to, 1e9, None), None)
    })
    .expect("the mesh");
    let cells = &r.mesh.as_ref().expect("a mesh report").cells;
    assert_eq!(
        cells[0].error.as_deref(),
        Some("the pair's thread panicked")
    );
    assert!(cells[1].error.is_none());
}

#[test]
fn a_stop_lets_running_pairs_finish_and_starts_no_more() {
    let req = request(&["a", "b", "c"], 1);
    let stop = Stop::new();
    let ran = Mutex::new(0);
    let r = mesh_over(&req, &mut crate::Quiet, &stop, &|from, to| {
        *ran.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        // Ctrl-C while the first pair runs.
        stop.raise();
        (cell(from, to, 1e9, None), None)
    })
    .expect("the mesh");
    assert_eq!(*ran.lock().unwrap_or_else(|e| e.into_inner()), 1);
    assert!(r.interrupted);
    let report = r.mesh.as_ref().expect("a mesh report");
    let not_run = report
        .cells
        .iter()
        .filter(|c| c.error.as_deref() == Some("not run: the mesh was interrupted"))
        .count();
    assert_eq!((report.cells.len(), not_run), (6, 5));
    assert!(!r.verdicts[0].passed);
}

#[test]
fn hosts_that_said_one_boot_id_are_noted_as_one_machine() {
    let req = request(&["a", "b", "c"], 1);
    let r = mesh_over(&req, &mut crate::Quiet, &Stop::new(), &|from, to| {
        let boot = if from.name == "c" { "2" } else { "1" };
        (cell(from, to, 1e9, None), Some(boot.to_owned()))
    })
    .expect("the mesh");
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("hosts on one machine (one boot id): a, b;")),
        "{:?}",
        r.notes
    );
}

#[test]
fn a_mesh_of_one_host_two_names_or_one_server_twice_is_refused() {
    let refused = |req: &MeshRequest| match mesh(req, &mut crate::Quiet, &Stop::new()) {
        Err(Error::Usage(m)) => m,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        refused(&request(&["a"], 1)),
        "a mesh needs at least two hosts"
    );
    assert_eq!(
        refused(&request(&["a", "a"], 1)),
        "two hosts of the mesh are named 'a'"
    );
    let mut twice = request(&["a", "b"], 1);
    twice.hosts[1].server.host = "a".into();
    assert!(
        refused(&twice).starts_with("hosts 'a' and 'b' are one server (a:5301)"),
        "{}",
        refused(&twice)
    );
}

#[test]
fn hosts_of_one_machine_are_named() {
    let host = |name: &str| MeshHost {
        name: name.into(),
        server: crate::request::Server {
            host: name.into(),
            port: 1,
            key_file: None,
            allow_unauthenticated: false,
        },
    };
    let hosts = ["a", "b", "c", "d", "e"].map(host);
    let id = |s: &str| Some(s.to_owned());
    assert_eq!(
        shared_machines(&hosts, &[id("1"), id("2"), id("3"), None, None]),
        None
    );
    let note = shared_machines(&hosts, &[id("1"), id("2"), id("1"), id("2"), None]).unwrap();
    assert!(
        note.starts_with("hosts on one machine (one boot id): a, c; b, d;"),
        "{note}"
    );
}
