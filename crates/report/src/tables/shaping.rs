//! The shaper accuracy matrix: on a terminal the passed rate and the received rate as
//! matrices (rows frame size, columns bandwidth, the RTX2000 report's layout); in the
//! report one row per cell.

use model::results::campaign::Campaign;
use model::results::shaping::{Cell, ShapingReport};
use model::units::bps;

use super::limited;
use super::sections::SHAPING;
use crate::table::{mbps, opt, Align, Table};

/// A matrix of `cell` values: rows frame size, columns bandwidth.
pub fn matrix(m: &ShapingReport, cell: &dyn Fn(&Cell) -> String) -> Table {
    let mut headers = vec![("frame".to_owned(), Align::Right)];
    headers.extend(m.bandwidths_bps.iter().map(|b| (bps(*b), Align::Right)));
    let rows = m
        .sizes
        .iter()
        .map(|len| {
            let mut row = vec![len.to_string()];
            row.extend(m.bandwidths_bps.iter().map(|bw| {
                m.cells
                    .iter()
                    .find(|c| c.frame_len == *len && c.bandwidth_bps == *bw)
                    .map(cell)
                    .unwrap_or_else(|| "-".into())
            }));
            row
        })
        .collect();
    Table {
        headers,
        rows,
        ..Table::plain("", vec![])
    }
}

/// The passed rate as the RTX2000 report gives it: received / offered in %, `*` marking
/// a generator-limited cell and `†` one offered less than the line rate it asked.
pub fn of_offered(m: &ShapingReport) -> Table {
    matrix(m, &|c| {
        let mark = if c.generator_limited {
            "*"
        } else if c.below_target {
            "†"
        } else {
            ""
        };
        opt(c.passed_of_offered, |v| format!("{:.2}{mark}", v * 100.0))
    })
}

/// The note of a cell in the report: generator limited, or what share of the line rate
/// it was offered when less than asked.
fn note(c: &Cell) -> String {
    match (c.generator_limited, c.below_target, c.target_fps) {
        (true, _, _) => limited(true),
        (false, true, Some(t)) if t > 0.0 => {
            format!(
                "offered {:.1} % of the line rate",
                c.offered_fps / t * 100.0
            )
        }
        (false, true, _) => "offered less than the line rate".into(),
        _ => String::new(),
    }
}

/// The passed rate in % of the bandwidth; a generator-limited cell (offered less than the
/// bandwidth) is a lower bound of what the shaper passes, `≥ 45.20`.
pub fn passed(m: &ShapingReport) -> Table {
    matrix(m, &of_bandwidth)
}

/// A cell's passed rate in % of the bandwidth, `≥` before a generator-limited one.
fn of_bandwidth(c: &Cell) -> String {
    let bound = if c.generator_limited { "≥ " } else { "" };
    format!("{bound}{:.2}", c.passed_ratio * 100.0)
}

/// The received L2 rate of every cell.
pub fn received(m: &ShapingReport) -> Table {
    matrix(m, &|c| bps(c.received_l2_bps))
}

fn cell_row(cell: &Cell) -> Vec<String> {
    let mut row = vec![cell.frame_len.to_string()];
    row.extend([cell.bandwidth_bps, cell.received_l2_bps].map(mbps));
    row.push(opt(cell.passed_of_offered, |v| format!("{:.2}", v * 100.0)));
    row.push(of_bandwidth(cell));
    row.push(note(cell));
    row
}

/// The report's table: every cell of every matrix.
pub fn report(c: &Campaign) -> Option<Table> {
    SHAPING.per_test(c, |r| r.shaping.iter().flat_map(|s| &s.cells), cell_row)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn a_generator_limited_cell_is_a_lower_bound_of_the_bandwidth_passed() {
        let cell = |limited| Cell {
            frame_len: 64,
            bandwidth_bps: 100e6,
            offered_fps: 50_000.0,
            sent: 50_000,
            received: 50_000,
            received_l2_bps: 25.6e6,
            passed_ratio: 0.256,
            target_fps: Some(148_809.0),
            below_target: limited,
            generator_limited: limited,
            passed_of_offered: Some(1.0),
            drain_s: None,
        };
        assert_eq!(of_bandwidth(&cell(true)), "≥ 25.60");
        assert_eq!(of_bandwidth(&cell(false)), "25.60");
        assert_eq!(cell_row(&cell(true))[4], "≥ 25.60");
        // Above the bandwidth but below the line rate asked: marked with its share.
        let partial = Cell {
            generator_limited: false,
            ..cell(true)
        };
        assert_eq!(note(&partial), "offered 33.6 % of the line rate");
        let m = ShapingReport {
            sizes: vec![64],
            bandwidths_bps: vec![100e6],
            configured_by: "lab".into(),
            cells: vec![partial],
        };
        assert!(of_offered(&m).text().contains("100.00†"));
    }
}
