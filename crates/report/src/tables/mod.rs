//! Every table, built once by its method's module from the results model: what a
//! command prints on a terminal and what the campaign report shows. The layouts of
//! [`crate::table::Table`] arrange them; nothing here formats a whole document.
//!
//! A report table has a `source` column naming the test each row came from; a value that
//! was not measured is `-`, never estimated.

pub mod blocksize;
pub mod campaign;
pub mod client;
pub mod frer;
pub mod lab;
pub mod latency;
pub mod mesh;
pub mod nic;
pub mod profile;
pub mod repeats;
pub mod rfc2544;
pub mod rrul;
pub mod shaping;
pub mod sweep;

use model::results::campaign::{Campaign, TestEntry};
use model::results::RunResult;

use crate::table::{columns, Table};

/// A section of the campaign report: its name (CSV file stem and anchor), title, the
/// sentence under the title, and its columns (see [`columns`]).
pub(crate) struct Section {
    pub(crate) name: &'static str,
    pub(crate) title: &'static str,
    pub(crate) intro: &'static str,
    pub(crate) columns: &'static str,
}

impl Section {
    /// The section's table with `rows`, or `None` when no test filled it.
    pub(crate) fn table(&self, rows: Vec<Vec<String>>) -> Option<Table> {
        (!rows.is_empty()).then(|| self.with(rows))
    }

    /// The section's table: `row` of every item that `items` finds in each test's result,
    /// led by the test's id (its `source`); `None` when no test has any.
    pub(crate) fn per_test<'c, T: 'c, I: IntoIterator<Item = &'c T>>(
        &self,
        c: &'c Campaign,
        items: impl Fn(&'c RunResult) -> I,
        row: impl Fn(&T) -> Vec<String>,
    ) -> Option<Table> {
        let rows = done(c).flat_map(|(t, r)| items(r).into_iter().map(|x| led(&t.id, row(x))));
        self.table(rows.collect())
    }

    /// The section's table with `rows`, even when there are none.
    pub(crate) fn with(&self, rows: Vec<Vec<String>>) -> Table {
        Table {
            name: self.name,
            title: self.title,
            intro: self.intro.into(),
            headers: columns(self.columns),
            rows,
        }
    }
}

/// The sections of the methods' tables, in report order: name (CSV file stem and anchor),
/// title, the sentence under the title, columns.
#[rustfmt::skip]
pub(crate) mod sections {
    use super::Section;
    pub(crate) const THROUGHPUT: Section = Section { name: "throughput", title: "Throughput", intro: "TCP and UDP tests (client); rates are payload bit/s as iperf3 counts them.", columns: "source|test|protocol|secs>|offered Mbit/s>|received Mbit/s>|loss %>|duplicates>|reordered>|latency p99 us>|note" };
    pub(crate) const SWEEP: Section = Section { name: "sweep", title: "Zero-loss sweep", intro: "UDP rate staircase (sweep): loss per target rate and the highest rate without loss.", columns: "source|target Mbit/s>|offered Mbit/s>|achieved Mbit/s>|loss %>|sent>|lost>|status" };
    pub(crate) const RFC2544_THROUGHPUT: Section = Section { name: "rfc2544_throughput", title: "Throughput by frame size (RFC 2544)", intro: "Throughput per frame size: with MLRsearch RFC 9971's conditional throughput (the forwarding rate at the relevant lower bound), with binary search the highest load that met the loss goal (RFC 2544 §26.1); the relevant lower and upper bounds, the trials and their time beside it; Mbit/s of frames incl. FCS; efficiency = measured / theoretical at line rate.", columns: "source|frame>|theoretical Mbit/s>|measured Mbit/s>|efficiency %>|frames/s>|lower fps>|upper fps>|search|trials>|trial s>|note" };
    pub(crate) const LATENCY: Section = Section { name: "latency", title: "Latency by frame size", intro: "RFC 2544 §26.2 latency at the throughput rate (one-way, from kernel stamps), and ping-pong round trips (latency tests); microseconds.", columns: "source|method|frame / message B>|load fps>|avg>|p50>|p99>|p99.9>|max>|verdict" };
    pub(crate) const RRUL: Section = Section { name: "rrul", title: "Latency under load (RRUL)", intro: "TCP streams up and down at once (rrul) with pings at a steady rate, and idle pings before and after as the baseline: throughput each way at the receivers, round trips idle and loaded in microseconds, the latency the load added (loaded − idle) and the TCP streams' own smoothed RTT.", columns: "source|up Mbit/s>|down Mbit/s>|idle p50>|loaded p50>|loaded p99>|added p50>|added p99>|loaded / idle>|TCP RTT>|pings sent>|pings lost>" };
    pub(crate) const MESH: Section = Section { name: "mesh", title: "Mesh", intro: "A client test from every host (row) to every other (column), run by the source host's server toward the destination's (mesh): Mbit/s of payload the destination received; failed = no figures (the test's notes say why).", columns: "source|from \\ to" };
    pub(crate) const LOSS: Section = Section { name: "loss", title: "Loss against offered load", intro: "RFC 2544 §26.3 frame loss rate, from 100 % of line rate down in steps.", columns: "source|frame>|load %>|offered fps>|sent>|received>|loss %>|note" };
    pub(crate) const STREAMS: Section = Section { name: "streams", title: "Multi-stream profile", intro: "Every stream at once on its own schedule (streams); Mbit/s of received frames incl. FCS.", columns: "source|stream|frame|load %>|sent>|received>|lost>|loss %>|duplicates>|Mbit/s>|verdict" };
    pub(crate) const SHAPING: Section = Section { name: "shaping", title: "Shaper accuracy (passed rate)", intro: "Line-rate traffic per frame size through each configured bandwidth; passed rate = received / offered (the RTX2000 report's figure), and in % of the bandwidth.", columns: "source|frame>|bandwidth Mbit/s>|received Mbit/s>|passed % of offered>|% of bandwidth>|note" };
    pub(crate) const OVERHEAD: Section = Section { name: "overhead", title: "Overhead against a control group (FRER)", intro: "The same measurements through the FRER network and through the same network forwarding plainly; overhead = what FRER costs in % of the control; throughputs against the line rate when one was given. Measured more than once (--repeat), the groups alternate, each figure is the median with its confidence interval [low, high] (order statistics), and a cost is a finding only when the intervals do not overlap.", columns: "source|measurement|unit|line rate>|control>|FRER>|overhead|reason" };
    pub(crate) const BLOCKSIZE: Section = Section { name: "blocksize", title: "Block-size sweep (netio style)", intro: "TCP throughput per write size (blocksize), each direction measured at its receiver: Tx client to server, Rx server to client; streams = TCP connections. Units si: MByte/s = 10^6 bytes/s. Units netio: as netio 1.33 writes them, MByte/s = 2^20 bytes/s (below 1 MByte/s in KByte/s = 2^10 bytes/s) and 32k = 32,767 bytes.", columns: "source|block|Tx MByte/s>|Rx MByte/s>|units|streams>" };
    pub(crate) const NIC_MATRIX: Section = Section { name: "nic_matrix", title: "NIC matrix", intro: "A block-size sweep per MTU and offload combination (nicmatrix): Tx / Rx MByte/s per block size, one column per combination, in the units the matrix names (si: 10^6 bytes/s; netio: 2^20 bytes/s, 32k = 32,767 bytes); a combination the driver refused shows its error.", columns: "source|units|block" };
    pub(crate) const NIC_ACTIVITY: Section = Section { name: "host_activity", title: "Host activity", intro: "What the host counted while each NIC matrix combination (or the whole test) ran, per side: interrupts on the interface's own IRQ lines (/proc/interrupts), NET_RX softirqs on all CPUs (/proc/softirqs), CPU busy in % of all CPUs (/proc/stat).", columns: "source|combination|side|interface|interrupts>|NET_RX softirqs>|CPU %>|secs>|note" };
    pub(crate) const INTERFACE_STATE: Section = Section { name: "interface_state", title: "Interfaces", intro: "The interfaces each test used, as the kernel's ethtool interface and sysfs gave them when it ran; PCIe as trained, of what the device can do; features on and off, and those the driver does not let change (fixed).", columns: "source|role|interface|driver|driver version|firmware|bus|speed|duplex|MTU>|PCIe|coalesce|rings|channels|features" };
    pub(crate) const LAB_COST: Section = Section { name: "lab_cost", title: "The lab's own cost", intro: "What the lab's devices used while each test ran through it: CPU time of each relay's and impairment stage's process, the run time of its BPF programs where the kernel fast path forwards (as the kernel counts it), in % of one CPU over the test; and the whole host's softirq time (where the kernel forwards, shapes and runs the fast paths, beside the test's own packets) and CPU load. A device near 100 % of a CPU may have set the figure.", columns: "source|lab|node|device|data path|process CPU s>|kernel CPU s>|% of one CPU>|host softirq s>|host busy %>" };
    pub(crate) const REPEATS: Section = Section { name: "repeats", title: "Repeated measurements", intro: "Tests measured more than once (--repeat N, a plan test's repeat = N): each headline figure's median over the runs, the order-statistic confidence interval for the median (95 % from 6 runs on; below that [min, max], whose own coverage is given), and the range. The tables above show, for such a test, the run whose first figure is the median.", columns: "source|figure|row|unit|runs>|median>|95 % interval>|coverage>|min>|max>" };
    pub(crate) const FRER_PATHS: Section = Section { name: "frer_paths", title: "FRER per path", intro: "What each path carried during each test, from the FRER relays' own counters: frames replicated onto it, frames that arrived over it, and how often its copy was the one passed.", columns: "source|stream|path port|sent>|received>|path loss %>|first>|first %>" };
}

/// `row` led by test id `id` (its `source`), or by any first cell.
fn led(id: &str, row: Vec<String>) -> Vec<String> {
    let mut cells = vec![id.to_owned()];
    cells.extend(row);
    cells
}

/// The rows `of` gives for each test's result, each led by the test's id.
pub(crate) fn sourced(
    c: &Campaign,
    of: impl Fn(&RunResult) -> Vec<Vec<String>>,
) -> Vec<Vec<String>> {
    let rows = done(c).flat_map(|(t, r)| of(r).into_iter().map(|row| led(&t.id, row)));
    rows.collect()
}

/// Numbers as they are written in tables: whole, or with `decimals` places.
pub(crate) fn fixed<const N: usize>(values: [f64; N], decimals: usize) -> [String; N] {
    values.map(|v| format!("{v:.decimals$}"))
}

/// Counts as text.
pub(crate) fn counts<const N: usize>(values: [u64; N]) -> [String; N] {
    values.map(|v| v.to_string())
}

/// The tests that produced a result, with it.
pub(crate) fn done(c: &Campaign) -> impl Iterator<Item = (&TestEntry, &RunResult)> {
    c.tests
        .iter()
        .filter_map(|t| t.result.as_ref().map(|r| (t, r)))
}

/// `generator limited` where a figure is bounded by the tool, else empty.
pub(crate) fn limited(generator_limited: bool) -> String {
    if generator_limited {
        "generator limited".into()
    } else {
        String::new()
    }
}
