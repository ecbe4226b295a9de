//! The mesh (`mesh`): received rate from every host (row) to every other (column), as a
//! terminal matrix, and the report's table with one block of rows per mesh test. A pair
//! without figures shows `failed`; the diagonal is `-`.

use model::results::campaign::Campaign;
use model::results::mesh::{MeshCell, MeshReport};

use super::sections::MESH;
use super::sourced;
use crate::table::{columns, Table};

/// A cell as the tables write it: Mbit/s received, `loss` % for UDP with `loss`.
fn cell(c: Option<&MeshCell>, loss: bool) -> String {
    let Some(c) = c else {
        return "-".into();
    };
    if c.error.is_some() {
        return "failed".into();
    }
    let s = c.summary.as_ref();
    if loss {
        return s
            .and_then(|s| s.loss_ratio)
            .map_or("-".into(), |l| format!("{:.2}", l * 100.0));
    }
    c.received_bps()
        .map_or("-".into(), |b| format!("{:.1}", b / 1e6))
}

/// The matrix rows of `m` over the columns `names`: a host not in `m` is empty, the
/// diagonal `-`.
fn rows(m: &MeshReport, names: &[String], loss: bool) -> Vec<Vec<String>> {
    let member = |n: &String| m.hosts.iter().any(|h| &h.name == n);
    m.hosts
        .iter()
        .map(|from| {
            let mut row = vec![from.name.clone()];
            row.extend(names.iter().map(|to| match member(to) {
                true => cell(m.cell(&from.name, to), loss),
                false => String::new(),
            }));
            row
        })
        .collect()
}

fn header(first: &str, names: &[String]) -> String {
    let mut h = first.to_owned();
    for n in names {
        h.push('|');
        h.push_str(n);
        h.push('>');
    }
    h
}

/// The terminal matrix: received Mbit/s from each row's host to each column's (with
/// `loss`: loss % of UDP tests).
pub fn matrix(m: &MeshReport, loss: bool) -> Table {
    let names: Vec<String> = m.hosts.iter().map(|h| h.name.clone()).collect();
    let first = if loss {
        "loss % from \\ to"
    } else {
        "Mbit/s from \\ to"
    };
    Table::plain(&header(first, &names), rows(m, &names, loss))
}

/// The report's table: every mesh test's matrix, led by its id; the columns are every
/// host any mesh named, in order of appearance.
pub fn report(c: &Campaign) -> Option<Table> {
    let mut names: Vec<String> = Vec::new();
    for t in &c.tests {
        let hosts = t
            .result
            .iter()
            .flat_map(|r| r.mesh.iter())
            .flat_map(|m| &m.hosts);
        for h in hosts {
            if !names.contains(&h.name) {
                names.push(h.name.clone());
            }
        }
    }
    let rows = sourced(c, |r| {
        r.mesh
            .as_ref()
            .map(|m| rows(m, &names, false))
            .unwrap_or_default()
    });
    let t = MESH.table(rows)?;
    Some(Table {
        headers: columns(&header("source|from \\ to", &names)),
        ..t
    })
}
