//! Latency under load (`rrul`): idle against loaded round trips on a terminal, and the
//! report's table of throughput each way with the latency the load added.

use model::results::campaign::Campaign;
use model::results::rrul::RrulResult;
use model::results::LatencyUs;
use model::units::us;

use super::sections::RRUL;
use crate::table::{mbps, opt, Table};

/// Round trips idle and loaded, and what the load added, as a terminal shows them.
pub fn phases(r: &RrulResult) -> Table {
    let row = |name: &str, l: Option<&LatencyUs>| {
        let mut cells = vec![name.to_owned(), opt(l, |l| l.count.to_string())];
        cells.extend([
            opt(l, |l| us(l.min)),
            opt(l, |l| us(l.p50)),
            opt(l, |l| us(l.p90)),
            opt(l, |l| us(l.p99)),
            opt(l, |l| us(l.max)),
        ]);
        cells
    };
    let mut rows = vec![
        row("idle", r.idle.as_ref()),
        row("loaded", r.loaded.as_ref()),
    ];
    if let Some(a) = &r.added_us {
        let mut cells = vec!["added by the load".to_owned(), "-".into(), "-".into()];
        cells.extend([a.p50, a.p90, a.p99].map(us));
        cells.push("-".into());
        rows.push(cells);
    }
    Table::plain("round trip (us)|samples>|min>|p50>|p90>|p99>|max>", rows)
}

/// The report's table: one row per `rrul` test.
pub fn report(c: &Campaign) -> Option<Table> {
    RRUL.per_test(
        c,
        |r| r.rrul.as_ref(),
        |x: &RrulResult| {
            let p50 = |l: Option<&LatencyUs>| opt(l, |l| us(l.p50));
            vec![
                opt(x.up_bps, mbps),
                opt(x.down_bps, mbps),
                p50(x.idle.as_ref()),
                p50(x.loaded.as_ref()),
                opt(x.loaded.as_ref(), |l| us(l.p99)),
                opt(x.added_us.as_ref(), |a| us(a.p50)),
                opt(x.added_us.as_ref(), |a| us(a.p99)),
                opt(x.loaded_over_idle, |v| format!("{v:.1}")),
                opt(x.tcp_rtt_us, us),
                x.pings_sent.to_string(),
                x.pings_lost.to_string(),
            ]
        },
    )
}
