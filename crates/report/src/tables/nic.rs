//! The NIC matrix (`nicmatrix`: one block-size sweep per MTU and offload combination),
//! what the host counted during a sweep or a test (interrupts, NET_RX softirqs, CPU), and
//! the interfaces a test used with every fact the kernel gave. Rates are written in the
//! matrix's [`Units`]; a value that was not measured is `-`.

use model::results::campaign::Campaign;
use model::results::nic::{HostActivity, InterfaceState, NicCell, NicMatrix};

use super::blocksize::Units;
use super::sections::{INTERFACE_STATE, NIC_ACTIVITY, NIC_MATRIX};
use super::{done, fixed, led, sourced};
use crate::table::{columns, Align, Table};

/// What the host activity table says of a side whose interface has no IRQ lines.
pub const NO_IRQ_LINES: &str = "no IRQ lines of its own (virtual device)";

/// The facts an interface row shows in their own column (names of
/// [`InterfaceState::facts`]); the features and any other fact share the last column.
pub const FACT_COLUMNS: [&str; 11] = [
    "driver",
    "driver version",
    "firmware",
    "bus",
    "speed",
    "duplex",
    "mtu",
    "pcie",
    "coalesce",
    "rings",
    "channels",
];

/// The block sizes of a matrix's sweeps, ascending, each once.
fn sizes(m: &NicMatrix) -> Vec<usize> {
    let mut all: Vec<usize> = m
        .cells
        .iter()
        .flat_map(|c| c.rows.iter().map(|r| r.block_bytes))
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// A combination's `Tx / Rx` at `size`, or `-` when its sweep has no such step.
fn cell_at(c: &NicCell, size: usize, units: Units) -> String {
    match c.rows.iter().find(|r| r.block_bytes == size) {
        Some(r) => format!(
            "{} / {}",
            units.rate(r.tx_mbyte_s),
            units.rate(r.rx_mbyte_s)
        ),
        None => "-".into(),
    }
}

/// The matrix's rows: a block size, then `Tx / Rx` for each of `labels` (a label the
/// matrix does not have is `-`); then, when a combination could not be set, a row
/// `error` with each one's reason.
fn matrix_rows(m: &NicMatrix, labels: &[String]) -> Vec<Vec<String>> {
    let units = Units::named(Some(&m.units));
    let find = |l: &String| m.cells.iter().find(|c| c.label == *l);
    let mut rows: Vec<Vec<String>> = sizes(m)
        .into_iter()
        .map(|size| {
            let mut row = vec![units.size(size)];
            row.extend(labels.iter().map(|l| match find(l) {
                Some(c) => cell_at(c, size, units),
                None => "-".into(),
            }));
            row
        })
        .collect();
    if m.cells.iter().any(|c| c.error.is_some()) {
        let mut row = vec!["error".to_owned()];
        row.extend(labels.iter().map(|l| {
            let why = find(l).and_then(|c| c.error.as_deref());
            why.map(|e| format!("error: {e}")).unwrap_or_default()
        }));
        rows.push(row);
    }
    rows
}

fn labels(m: &NicMatrix) -> Vec<String> {
    m.cells.iter().map(|c| c.label.clone()).collect()
}

/// One column per combination label, right-aligned, after `lead`.
fn with_labels(lead: &str, labels: &[String]) -> Vec<(String, Align)> {
    let mut h = columns(lead);
    h.extend(labels.iter().map(|l| (l.clone(), Align::Right)));
    h
}

/// The matrix on a terminal: rows block size, one column per combination, `Tx / Rx`.
pub fn matrix(m: &NicMatrix) -> Table {
    let labels = labels(m);
    Table {
        headers: with_labels("block>", &labels),
        ..Table::plain("", matrix_rows(m, &labels))
    }
}

/// One side's counters: side, interface, interrupts, NET_RX softirqs, CPU %, seconds, and
/// a note when the interface has no IRQ lines of its own.
fn activity_row(a: &HostActivity) -> Vec<String> {
    let irqs = a.irqs.map_or_else(|| "-".into(), |n| n.to_string());
    let mut row = vec![a.role.clone(), a.interface.clone(), irqs];
    row.push(a.net_rx_softirqs.to_string());
    row.extend(fixed([a.cpu_busy_percent, a.seconds], 1));
    row.push(if a.irqs.is_none() { NO_IRQ_LINES } else { "" }.into());
    row
}

const ACTIVITY_COLUMNS: &str = "side|interface|interrupts>|NET_RX softirqs>|CPU %>|secs>|note";

/// What the host counted during each combination's sweep, per side, on a terminal; `None`
/// when nothing was counted.
pub fn matrix_activity(m: &NicMatrix) -> Option<Table> {
    let rows: Vec<Vec<String>> = m
        .cells
        .iter()
        .flat_map(|c| c.activity.iter().map(|a| led(&c.label, activity_row(a))))
        .collect();
    let spec = format!("combination|{ACTIVITY_COLUMNS}");
    (!rows.is_empty()).then(|| Table::plain(&spec, rows))
}

/// What the host counted during a test, per side, on a terminal; `None` when nothing was.
pub fn activity(rows: &[HostActivity]) -> Option<Table> {
    let rows: Vec<Vec<String>> = rows.iter().map(activity_row).collect();
    (!rows.is_empty()).then(|| Table::plain(ACTIVITY_COLUMNS, rows))
}

/// An interface's facts: the value of each of [`FACT_COLUMNS`] (`None`: the driver did not
/// say), and the rest in one text: the features that are on and off (`on: rx-checksum,
/// rx-gro; off: rx-lro`), those the driver does not let change, and any other fact.
pub fn facts(i: &InterfaceState) -> (Vec<Option<String>>, String) {
    let all = i.facts();
    let named = FACT_COLUMNS.map(|n| all.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()));
    // Features the driver cannot change and that are off say nothing about a result:
    // counted, not listed (the JSON has them all).
    let (mut on, mut off, mut fixed_off, mut other) = (vec![], vec![], 0, vec![]);
    for (k, v) in &all {
        if FACT_COLUMNS.contains(&k.as_str()) {
            continue;
        }
        let Some(feature) = k.strip_prefix("feature ") else {
            other.push(format!("{k} {v}"));
            continue;
        };
        match (v.starts_with("on"), v.ends_with("[fixed]")) {
            (true, false) => on.push(feature.to_owned()),
            (true, true) => on.push(format!("{feature} [fixed]")),
            (false, false) => off.push(feature.to_owned()),
            (false, true) => fixed_off += 1,
        }
    }
    let mut rest = Vec::new();
    for (word, list) in [("on", on), ("off", off)] {
        if !list.is_empty() {
            rest.push(format!("{word}: {}", list.join(", ")));
        }
    }
    if fixed_off > 0 {
        rest.push(format!("{fixed_off} more off and fixed"));
    }
    rest.extend(other);
    (named.to_vec(), rest.join("; "))
}

/// An interface as a report row: role, name, each of [`FACT_COLUMNS`], the rest.
fn interface_row(i: &InterfaceState) -> Vec<String> {
    let (named, rest) = facts(i);
    let mut row = vec![i.role.clone(), i.name.clone()];
    row.extend(named.into_iter().map(|v| v.unwrap_or_else(|| "-".into())));
    row.push(rest);
    row
}

/// The report's NIC matrix: per test, rows block size and one column per combination
/// (every label of every matrix, in the order first run), `Tx / Rx` in the matrix's units.
pub fn matrix_report(c: &Campaign) -> Option<Table> {
    let mut all: Vec<String> = Vec::new();
    for (_, r) in done(c) {
        for l in r.nic_matrix.iter().flat_map(labels) {
            if !all.contains(&l) {
                all.push(l);
            }
        }
    }
    let rows = sourced(c, |r| {
        let Some(m) = &r.nic_matrix else {
            return vec![];
        };
        let units = Units::named(Some(&m.units)).name();
        let rows = matrix_rows(m, &all).into_iter();
        rows.map(|row| led(units, row)).collect()
    });
    let t = NIC_MATRIX.table(rows)?;
    Some(Table {
        headers: with_labels(NIC_MATRIX.columns, &all),
        ..t
    })
}

/// The report's host activity: per test, what the host counted during each NIC matrix
/// combination and during the test itself (`whole test`), per side.
pub fn activity_report(c: &Campaign) -> Option<Table> {
    NIC_ACTIVITY.table(sourced(c, |r| {
        let cells = r.nic_matrix.iter().flat_map(|m| &m.cells);
        let per_cell =
            cells.flat_map(|c| c.activity.iter().map(|a| led(&c.label, activity_row(a))));
        let whole = r
            .activity
            .iter()
            .map(|a| led("whole test", activity_row(a)));
        per_cell.chain(whole).collect()
    }))
}

/// The report's interfaces: per test and role, the interface with every fact; an
/// interface that several tests found the same is one row naming them all (`t1, t2, t4`),
/// and a cell that differs from the same interface's first row is marked `≠`.
pub fn interfaces_report(c: &Campaign) -> Option<Table> {
    let mut rows: Vec<(Vec<String>, Vec<String>)> = Vec::new();
    for (t, r) in done(c) {
        for i in &r.interfaces {
            let row = interface_row(i);
            match rows.iter_mut().find(|(_, x)| *x == row) {
                Some((ids, _)) => ids.push(t.id.clone()),
                None => rows.push((vec![t.id.clone()], row)),
            }
        }
    }
    let mut first: Vec<&Vec<String>> = Vec::new();
    let marked: Vec<Vec<String>> = rows
        .iter()
        .map(|(ids, row)| {
            // The same interface: the same role and name (the first two cells).
            let same = first.iter().find(|f| f[..2] == row[..2]).copied();
            let cells = match same {
                Some(f) => row
                    .iter()
                    .zip(f.iter())
                    .enumerate()
                    .map(|(k, (a, b))| {
                        if k >= 2 && a != b {
                            format!("≠ {a}")
                        } else {
                            a.clone()
                        }
                    })
                    .collect(),
                None => {
                    first.push(row);
                    row.clone()
                }
            };
            led(&ids.join(", "), cells)
        })
        .collect();
    INTERFACE_STATE.table(marked)
}

#[cfg(test)]
mod test {
    use super::*;
    use model::results::nic::{Coalesce, PcieLink, Rings};
    use model::results::BlocksizeRow;

    fn row(block_bytes: usize, tx: f64, rx: f64) -> BlocksizeRow {
        BlocksizeRow {
            block_bytes,
            tx_mbyte_s: tx,
            rx_mbyte_s: rx,
            duration_s: 2.0,
            client_cpu: None,
            server_cpu: None,
        }
    }

    fn sample() -> NicMatrix {
        NicMatrix {
            interfaces: vec!["tx=eth0".into()],
            units: "si".into(),
            cells: vec![
                NicCell {
                    label: "mtu 1500".into(),
                    mtu: Some(1500),
                    rows: vec![row(1024, 100.0, 90.0), row(4096, 200.5, 190.25)],
                    activity: vec![HostActivity {
                        role: "local".into(),
                        interface: "veth0".into(),
                        irqs: None,
                        net_rx_softirqs: 4321,
                        cpu_busy_percent: 12.345,
                        seconds: 4.0,
                    }],
                    ..Default::default()
                },
                NicCell {
                    label: "mtu 9000".into(),
                    mtu: Some(9000),
                    rows: vec![row(4096, 400.0, 380.0)],
                    ..Default::default()
                },
                NicCell {
                    label: "mtu 9000, rx-lro on".into(),
                    error: Some("driver refused rx-lro".into()),
                    ..Default::default()
                },
            ],
            best_mtu: Some(9000),
            best_mtu_basis: None,
        }
    }

    #[test]
    fn the_matrix_has_a_column_per_combination_and_a_row_per_block() {
        let t = matrix(&sample());
        let head: Vec<&str> = t.headers.iter().map(|h| h.0.as_str()).collect();
        assert_eq!(
            head,
            ["block", "mtu 1500", "mtu 9000", "mtu 9000, rx-lro on"]
        );
        assert_eq!(t.rows[0], ["1k", "100.00 / 90.00", "-", "-"]);
        assert_eq!(t.rows[1], ["4k", "200.50 / 190.25", "400.00 / 380.00", "-"]);
        assert_eq!(t.rows[2], ["error", "", "", "error: driver refused rx-lro"]);
        assert_eq!(t.rows.len(), 3);
        // netio units: the same rates in 2^20 bytes/s.
        let m = NicMatrix {
            units: "netio".into(),
            ..sample()
        };
        assert_eq!(matrix(&m).rows[1][2], "381.47 / 362.40");
    }

    #[test]
    fn activity_without_irq_lines_says_so() {
        let t = matrix_activity(&sample()).expect("one side counted");
        assert_eq!(
            t.rows,
            [[
                "mtu 1500",
                "local",
                "veth0",
                "-",
                "4321",
                "12.3",
                "4.0",
                NO_IRQ_LINES
            ]]
        );
        let counted = HostActivity {
            irqs: Some(77),
            ..sample().cells[0].activity[0].clone()
        };
        let t = activity(&[counted]).unwrap();
        assert_eq!((t.rows[0][2].as_str(), t.rows[0][6].as_str()), ("77", ""));
        assert!(activity(&[]).is_none());
    }

    #[test]
    fn features_are_compacted_into_one_cell() {
        let i = InterfaceState {
            role: "tx".into(),
            name: "eth0".into(),
            driver: Some("igc".into()),
            mtu: Some(9000),
            features: [
                ("rx-checksum".to_owned(), true),
                ("rx-gro".to_owned(), true),
                ("rx-lro".to_owned(), false),
            ]
            .into(),
            fixed_features: vec!["rx-lro".into()],
            coalesce: Some(Coalesce {
                rx_usecs: 3,
                ..Default::default()
            }),
            rings: Some(Rings {
                rx: 256,
                rx_max: 4096,
                tx: 256,
                tx_max: 4096,
            }),
            pcie: Some(PcieLink {
                current_gts: 8.0,
                current_width: 1,
                max_gts: 16.0,
                max_width: 1,
            }),
            ..Default::default()
        };
        let (named, rest) = facts(&i);
        // Off and unchangeable says nothing about a result: counted, not listed.
        assert_eq!(rest, "on: rx-checksum, rx-gro; 1 more off and fixed");
        let at = |n: &str| named[FACT_COLUMNS.iter().position(|c| *c == n).unwrap()].clone();
        assert_eq!(at("driver").as_deref(), Some("igc"));
        assert_eq!(at("mtu").as_deref(), Some("9000"));
        assert_eq!(at("pcie").as_deref(), Some("Gen3 x1 of Gen4 x1"));
        assert_eq!(
            at("rings").as_deref(),
            Some("rx 256 of 4096, tx 256 of 4096")
        );
        assert_eq!(at("firmware"), None);
        let row = interface_row(&i);
        assert_eq!(row.len(), 2 + FACT_COLUMNS.len() + 1);
        assert_eq!(
            (row[0].as_str(), row[1].as_str(), row[4].as_str()),
            ("tx", "eth0", "-")
        );
    }
}
