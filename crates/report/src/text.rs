//! Terminal output: each command's tables (built by [`crate::tables`]) laid out as text,
//! with the lines that say how to read them and the facts a reader needs to trust them.
//! Every function is a pure rendering of the results model: the same result gives the same
//! bytes.

use model::results::nic::NicMatrix;
use model::results::{BlocksizeRow, IntervalRow, LatencyRow, RunResult, SweepTable};
use model::units::{bps, us, Fixed};

use crate::table::Table;
use crate::tables;
use crate::tables::blocksize::Units;

/// How a test's rows are labelled: a direction with one stream shows that stream's id, as
/// iperf3 prints `[  5]` and no `[SUM]` for one stream; a direction with several shows
/// `SUM` on its sum rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowLabels {
    /// The id of the one stream client to server, when that direction has one.
    pub tx: Option<u8>,
    /// The id of the one stream server to client, when that direction has one.
    pub rx: Option<u8>,
}

impl RowLabels {
    /// For a test of `streams` per direction in `direction`: stream ids count from 1, the
    /// server-to-client ones of a `--bidir` test after the others.
    pub fn of(streams: u8, direction: model::spec::Direction) -> Self {
        use model::spec::Direction;
        if streams != 1 {
            return Self::default();
        }
        match direction {
            Direction::Forward => Self {
                tx: Some(1),
                rx: None,
            },
            Direction::Reverse => Self {
                tx: None,
                rx: Some(1),
            },
            Direction::Bidir => Self {
                tx: Some(1),
                rx: Some(2),
            },
        }
    }

    /// From a result's streams.
    pub fn of_result(r: &RunResult) -> Self {
        let one = |dir: &str| {
            let mut ids = r.streams.iter().filter(|s| s.direction == dir);
            match (ids.next(), ids.next()) {
                (Some(s), None) => Some(s.id),
                _ => None,
            }
        };
        Self {
            tx: one("tx"),
            rx: one("rx"),
        }
    }

    /// The label of a row of `direction` (`tx`, `rx`) and `stream` (`None`: the sum).
    fn label(self, direction: &str, stream: Option<u8>) -> String {
        let sole = if direction == "rx" { self.rx } else { self.tx };
        match stream.or(sole) {
            Some(id) => format!("{id:>3}"),
            None => "SUM".to_owned(),
        }
    }
}

/// One interval line, iperf3-like.
pub fn interval_line(r: &IntervalRow) -> String {
    interval_line_in(r, None, RowLabels::default())
}

/// [`interval_line`] with rates and amounts in one unit (`-f`), or scaled when `None`,
/// labelled as `labels` says.
pub fn interval_line_in(r: &IntervalRow, unit: Option<Fixed>, labels: RowLabels) -> String {
    let show = Show(unit);
    let who = labels.label(&r.direction, r.stream);
    let mut s = format!(
        "[{who} {}] {:6.2}-{:<6.2} s",
        r.direction, r.start_s, r.end_s
    );
    // A stock iperf3 sender sends no counts during a test: no "sent 0" for it.
    if let (Some(b), Some(v)) = (r.sent_bytes, r.sent_bps) {
        s.push_str(&format!(
            "  sent {:>10} {:>14}",
            show.amount(b),
            show.rate(v)
        ));
    }
    if let Some(rb) = r.received_bps {
        s.push_str(&format!("  received {:>14}", show.rate(rb)));
    }
    if let (Some(lost), Some(sent)) = (r.lost_packets, r.sent_packets) {
        s.push_str(&format!("  lost {lost}/{sent}"));
    }
    if let Some(j) = r.jitter_us {
        s.push_str(&format!("  jitter {} us", us(j)));
    }
    if let Some(l) = &r.latency {
        s.push_str(&format!("  p50 {} p99 {} us", us(l.p50_us), us(l.p99_us)));
    }
    for (n, what) in [(r.duplicate_packets, "dup"), (r.reordered_packets, "reord")] {
        if let Some(n) = n.filter(|n| *n > 0) {
            s.push_str(&format!("  {what} {n}"));
        }
    }
    if let Some(rt) = r.retransmits {
        s.push_str(&format!("  retr {rt}"));
    }
    s
}

/// A result's interval rows, one line each, then a blank line (nothing without rows).
pub fn intervals(r: &RunResult) -> String {
    if r.intervals.is_empty() {
        return String::new();
    }
    let mut out: String = r
        .intervals
        .iter()
        .map(|row| interval_line(row) + "\n")
        .collect();
    out.push('\n');
    out
}

/// The summary of a client run: throughput table, latency table, and the facts a reader
/// needs to trust them (backend, timestamps, CPU, pacing, generator limits, notes).
pub fn client_summary(r: &RunResult) -> String {
    client_summary_in(r, None)
}

/// How a throughput test's amounts and rates show: in one unit (`-f`), or scaled (amounts
/// as iperf3 scales them, rates in SI units). The header, the rows, the stream table and
/// the closing lines all write through it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Show(pub Option<Fixed>);

impl Show {
    /// Scaled as iperf3 does (powers of 1024), or in the one unit.
    pub fn amount(self, b: u64) -> String {
        self.0
            .map_or_else(|| model::units::iperf3_bytes(b), |u| u.amount(b))
    }

    /// Bits/s scaled in SI units, or in the one unit.
    pub fn rate(self, v: f64) -> String {
        self.0.map_or_else(|| bps(v), |u| u.rate(v))
    }
}

/// [`client_summary`] with the sender/receiver lines in one unit (`-f`).
pub fn client_summary_in(r: &RunResult, unit: Option<Fixed>) -> String {
    let (streams, latency) = tables::client::streams_in(r, unit);
    let mut out = streams.text();
    let udp = r.streams.first().is_some_and(|s| s.protocol == "udp");
    match latency {
        Some(l) => {
            out.push_str("\nlatency (us)\n");
            out.push_str(&l.text());
        }
        None if udp => out.push_str("\nlatency: no samples\n"),
        None => {}
    }
    out.push('\n');
    out.push_str(&sender_receiver_lines(r, unit));
    if let Some(t) = r
        .connection
        .as_ref()
        .and_then(|c| c.server_output.as_deref())
    {
        out.push_str("server output:\n");
        out.push_str(t);
        if !t.ends_with('\n') {
            out.push('\n');
        }
        out.push('\n');
    }
    out.push_str(&facts(r));
    out
}

/// iperf3's two closing lines per direction: what the sender sent and what the receiver
/// got, each over its own time.
fn sender_receiver_lines(r: &RunResult, unit: Option<Fixed>) -> String {
    let show = Show(unit);
    let labels = RowLabels::of_result(r);
    let mut out = String::new();
    let reverse = r.params.pointer("/test/direction").and_then(|d| d.as_str()) == Some("reverse");
    let main = if reverse { "rx" } else { "tx" };
    for (dir, s) in [
        (main, r.summary.as_ref()),
        ("rx", r.reverse_summary.as_ref()),
    ] {
        let Some(s) = s else { continue };
        let span = format!(
            "[{} {dir}]   0.00-{:<6.2} s",
            labels.label(dir, None),
            s.duration_s
        );
        if let (Some(b), Some(v)) = (s.sent_bytes, s.offered_bps) {
            let mut l = format!("{span}  {:>10} {:>14}", show.amount(b), show.rate(v));
            if let Some(p) = s.sent_packets {
                l.push_str(&format!("  {p} packets"));
            }
            if let Some(rt) = s.retransmits {
                l.push_str(&format!("  retr {rt}"));
            }
            out.push_str(&format!("{l}  sender\n"));
        }
        if let (Some(b), Some(v)) = (s.received_bytes, s.received_bps) {
            let mut l = format!("{span}  {:>10} {:>14}", show.amount(b), show.rate(v));
            if let (Some(lost), Some(sent)) = (s.lost_packets, s.sent_packets) {
                let pct = s.loss_ratio.unwrap_or(0.0) * 100.0;
                l.push_str(&format!("  lost {lost}/{sent} ({pct:.3} %)"));
            }
            if let Some(j) = s.jitter_us {
                l.push_str(&format!("  jitter {} us", us(j)));
            }
            out.push_str(&format!("{l}  receiver\n"));
        }
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

/// Backend, timestamp source, CPU, pacing and notes.
pub fn facts(r: &RunResult) -> String {
    let mut out = String::new();
    if let Some(b) = &r.backend {
        out.push_str(&format!("backend: {b}"));
        if let Some(t) = &r.timestamp_source {
            out.push_str(&format!(", timestamps: {t}"));
        }
        if let Some(m) = &r.receive_mode {
            out.push_str(&format!(", receiver: {m}"));
        }
        out.push('\n');
    }
    if let Some(c) = &r.af_xdp_frames {
        let verdict = if c.agrees() {
            "they agree"
        } else {
            "they DISAGREE: some frames were lost or counted twice between the program and the receiver"
        };
        out.push_str(&format!(
            "af_xdp frames: {} redirected by the XDP program, {} read, {} dropped by the kernel: {verdict}\n",
            c.redirected, c.read, c.dropped
        ));
    }
    for (label, s) in [
        ("", r.summary.as_ref()),
        ("reverse ", r.reverse_summary.as_ref()),
    ] {
        let Some(s) = s else { continue };
        let mut parts = Vec::new();
        if let Some(c) = s.sender_cpu {
            parts.push(format!("sender {c:.1} %"));
        }
        if let Some(c) = s.receiver_cpu {
            parts.push(format!("receiver {c:.1} %"));
        }
        if !parts.is_empty() {
            out.push_str(&format!("{label}cpu (of one core): {}\n", parts.join(", ")));
        }
        if let (Some(b), Some(e)) = (s.tcp_bytes, s.tcp_efficiency_pct) {
            out.push_str(&format!(
                "{label}tcp efficiency (RFC 6349): {e:.2} %, {} of {} bytes sent were retransmissions\n",
                b.retransmitted, b.sent
            ));
        }
        if let Some(g) = &s.rx_gap_us {
            out.push_str(&format!(
                "{label}pacing at the receiver: gap p50 {} us, p99 {} us{}\n",
                us(g.p50_us),
                us(g.p99_us),
                g.nominal_us
                    .map(|n| format!(" (nominal {} us)", us(n)))
                    .unwrap_or_default()
            ));
        }
        if let Some(p) = &s.pacing_error_us {
            out.push_str(&format!(
                "{label}sender lateness vs schedule: p50 {} us, p99 {} us\n",
                us(p.p50_us),
                us(p.p99_us)
            ));
        }
        if s.generator_limited {
            out.push_str(&format!(
                "{label}GENERATOR LIMITED: the sender could not keep the asked rate\n"
            ));
        }
    }
    if let (Some(t), Some(line)) = (tables::lab::devices(r), tables::lab::host_line(r)) {
        out.push_str(&format!("{line}\n{}", t.text()));
    }
    for n in &r.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// The zero-loss sweep table of the FRER report.
pub fn sweep(t: &SweepTable) -> String {
    let mut out = tables::sweep::steps(t).text();
    out.push_str(&tables::sweep::conclusion(t));
    out
}

/// The netio-style block-size table in SI units (MByte/s = 10^6 bytes/s):
/// [`blocksize_in`] without netio units.
pub fn blocksize(rows: &[BlocksizeRow]) -> String {
    blocksize_in(rows, false)
}

/// A block-size sweep: in SI units the table of block, Tx and Rx MByte/s (10^6 bytes/s);
/// with `netio`, netio 1.33's own lines (`Packet size  1k bytes:  418.08 MByte/s Tx,
/// 445.19 MByte/s Rx.`, powers of two, `32k` = 32,767 bytes). A line under it says which.
pub fn blocksize_in(rows: &[BlocksizeRow], netio: bool) -> String {
    let (mut out, units) = if netio {
        (tables::blocksize::netio_lines(rows), Units::Netio)
    } else {
        (tables::blocksize::steps(rows).text(), Units::Si)
    };
    out.push_str(units.legend());
    out.push('\n');
    out
}

/// The NIC matrix: `Tx / Rx` per block size (rows) and combination (columns) in the
/// matrix's units, the combinations that could not be set, what the host counted per
/// combination and side, and the best MTU.
pub fn nic_matrix(m: &NicMatrix) -> String {
    let mut out = format!(
        "NIC matrix ({}): Tx / Rx per block size and combination\n",
        if m.interfaces.is_empty() {
            "no interface set".to_owned()
        } else {
            m.interfaces.join(", ")
        }
    );
    out.push_str(&tables::nic::matrix(m).text());
    out.push_str(Units::named(Some(&m.units)).legend());
    out.push('\n');
    if let Some(t) = tables::nic::matrix_activity(m) {
        out.push_str("\nhost activity per combination (interrupts: the interface's own IRQ lines; NET_RX softirqs and CPU %: the whole host, so ends on one host show the same)\n");
        out.push_str(&t.text());
    }
    let basis = m.basis_words();
    match m.best_mtu {
        Some(mtu) => out.push_str(&format!("best MTU: {mtu}{basis}\n")),
        None if !basis.is_empty() => out.push_str(&format!("best MTU: none{basis}\n")),
        None => {}
    }
    out
}

/// The interfaces a test used, a few lines each (the main facts, then coalescing, rings
/// and channels, then the features), and what the host counted per side: for the end of a
/// terminal result. Empty when the result has neither.
pub fn interfaces(r: &RunResult) -> String {
    let mut out = String::new();
    if !r.interfaces.is_empty() {
        out.push_str("interfaces\n");
    }
    for i in &r.interfaces {
        let (named, rest) = tables::nic::facts(i);
        let (tuning, main): (Vec<_>, Vec<_>) = tables::nic::FACT_COLUMNS
            .iter()
            .zip(named)
            .filter_map(|(k, v)| Some(format!("{k} {}", v?)))
            .partition(|f| {
                ["coalesce ", "rings ", "channels "]
                    .iter()
                    .any(|t| f.starts_with(t))
            });
        out.push_str(&format!("{} {}: {}\n", i.role, i.name, main.join(", ")));
        if !tuning.is_empty() {
            out.push_str(&format!("  {}\n", tuning.join("; ")));
        }
        if !rest.is_empty() {
            out.push_str(&format!("  features {rest}\n"));
        }
    }
    if let Some(t) = tables::nic::activity(&r.activity) {
        out.push_str("host activity (interrupts: the interface's own IRQ lines; NET_RX softirqs and CPU %: the whole host)\n");
        out.push_str(&t.text());
    }
    out
}

/// Ping-pong latency per message size.
pub fn latency(rows: &[LatencyRow]) -> String {
    let mut out = String::from("round-trip time (us)\n");
    out.push_str(&tables::latency::round_trips(rows).text());
    if let Some(m) = rows.first().map(|r| &r.mode) {
        out.push_str(&format!("mode: {m}\n"));
    }
    out
}

/// A mesh: how it ran, the matrix of received rates (and of loss for UDP), then the
/// notes (why pairs failed).
pub fn mesh(r: &RunResult) -> String {
    let Some(m) = &r.mesh else {
        return facts(r);
    };
    let mut out = format!(
        "mesh of {} hosts: {} pairs, {} for {:.1} s each, at most {} at once; {} failed\n\n",
        m.hosts.len(),
        m.cells.len(),
        m.protocol.to_uppercase(),
        m.test_s,
        m.parallel,
        m.failed()
    );
    out.push_str(&tables::mesh::matrix(m, false).text());
    if m.protocol == "udp" {
        out.push('\n');
        out.push_str(&tables::mesh::matrix(m, true).text());
    }
    out.push_str(&verdicts(r));
    out.push_str(&facts(r));
    out
}

/// Latency under load: throughput each way, idle against loaded round trips, the latency
/// the load added, the TCP streams' RTT, then the facts.
pub fn rrul(r: &RunResult) -> String {
    let Some(x) = &r.rrul else {
        return facts(r);
    };
    let rate = |v: Option<f64>| v.map_or("-".to_owned(), bps);
    let mut out = format!(
        "{} TCP streams each way for {:.1} s: upload {}, download {}\n",
        x.streams,
        x.load_s,
        rate(x.up_bps),
        rate(x.down_bps)
    );
    out.push_str(&format!(
        "pings: {} Hz, {} sent, {} without answer; idle {:.1} s before and after the load\n\n",
        x.ping_hz, x.pings_sent, x.pings_lost, x.idle_s
    ));
    out.push_str(&tables::rrul::phases(x).text());
    if let Some(v) = x.loaded_over_idle {
        out.push_str(&format!("loaded median = {v:.1} x the idle median\n"));
    }
    if let Some(t) = x.tcp_rtt_us {
        out.push_str(&format!(
            "TCP smoothed RTT under load (TCP_INFO, mean over streams): {} us\n",
            us(t)
        ));
    }
    out.push_str(&facts(r));
    out
}

/// One line per verdict: name, pass/MARGINAL/FAIL, detail.
pub fn verdicts(r: &RunResult) -> String {
    r.verdicts
        .iter()
        .map(|v| format!("{}: {} ({})\n", v.name, v.word(), v.detail))
        .collect()
}

/// The shaper accuracy matrix: passed rate in % of the configured bandwidth, rows frame
/// size, columns bandwidth (the RTX2000 table), then the received rates.
pub fn shaping(r: &RunResult) -> String {
    let Some(m) = &r.shaping else {
        return facts(r);
    };
    let mut out = format!(
        "passed rate, % of the offered load (received / offered, bandwidth set by {})\n",
        m.configured_by
    );
    out.push_str(&tables::shaping::of_offered(m).text());
    out.push_str("\npassed rate, % of the configured bandwidth\n");
    out.push_str(&tables::shaping::passed(m).text());
    out.push_str("\nreceived, L2 bit/s of frames with FCS\n");
    out.push_str(&tables::shaping::received(m).text());
    if m.cells
        .iter()
        .any(|c| c.below_target && !c.generator_limited)
    {
        out.push_str("† offered less than the line rate it asked (see the note): the passed rate of offered is of that smaller load\n");
    }
    if m.cells.iter().any(|c| c.generator_limited) {
        out.push_str("* generator limited: offered less than the bandwidth; ≥: the shaper passes at least this share of its bandwidth, the generator could not find out more\n");
    }
    out.push_str(&facts(r));
    out
}

/// The RFC 2544 tables of the FRER report: throughput (frame size, theoretical, measured,
/// efficiency, frames/s), latency (average, p99, p99.9, verdict), frame loss rate and
/// back-to-back, then the verdicts, the trial log and the facts.
pub fn rfc2544(r: &RunResult) -> String {
    let Some(t) = &r.rfc2544 else {
        return facts(r);
    };
    let mut out = String::new();
    for (title, table) in tables::rfc2544::terminal(r, t) {
        out.push_str(&title);
        out.push_str(&table.text());
    }
    out.push_str(&verdicts(r));
    let duplicating = t.trials.iter().filter(|x| x.duplicates > 0).count();
    if duplicating > 0 {
        out.push_str(&format!(
            "\nnote: {duplicating} trial(s) received duplicate frames ({} in all): the device \
             duplicates (e.g. a FRER network whose elimination does not work); duplicates are \
             not counted as received\n",
            t.trials.iter().map(|x| x.duplicates).sum::<u64>()
        ));
    }
    if !t.trials.is_empty() {
        out.push_str(&format!("\ntrial log ({} trials)\n", t.trials.len()));
        out.push_str(&tables::rfc2544::trials(t).text());
    }
    out.push_str(&facts(r));
    out
}

/// The FRER overhead table: each measurement in the control group and through FRER, the
/// overhead in % of the control, and the reason measured alongside.
pub fn frer_overhead(r: &RunResult) -> String {
    let Some(f) = &r.frer else {
        return facts(r);
    };
    let path = |p: &Option<String>| {
        p.as_ref()
            .map(|p| format!(" (relays' data path: {p})"))
            .unwrap_or_default()
    };
    let head = format!(
        "FRER overhead\ncontrol: {}{}\n",
        f.control,
        path(&f.control_data_path)
    );
    let table = tables::frer::overhead(f).text();
    // With repetitions: how they ran, and what the brackets are.
    let spread = f.rows.iter().find_map(|x| x.control_spread.as_ref());
    let repeats = match (f.repeats, spread) {
        (Some(n), Some(s)) => format!(
            "each group measured {n} times, in the order {}; [low, high]: the median's {} confidence interval (order statistics); a cost is a finding only when the intervals do not overlap\n",
            f.order,
            s.coverage_label()
        ),
        _ => "each group measured once: the overheads are single samples, not findings (--repeat 5 or more gives intervals)\n".into(),
    };
    closed(
        r,
        format!(
            "{head}FRER:    {}{}\n{repeats}{table}",
            f.treatment,
            path(&f.frer_data_path)
        ),
    )
}

/// `body`, then the verdicts and the facts of `r`.
fn closed(r: &RunResult, body: String) -> String {
    body + &verdicts(r) + &facts(r)
}

/// The multi-stream table of the SmartBits analyzer: per stream and in total, frames sent,
/// received, lost, loss %, the received L2 rate and the expectation, then latency per
/// stream and the facts.
pub fn profile(r: &RunResult) -> String {
    let Some(p) = &r.profile else {
        return facts(r);
    };
    let mut out = intervals(r);
    out += &format!(
        "streams (load in % of {} line rate; Mbit/s of received frames incl. FCS)\n",
        bps(p.line_rate_bps as f64)
    );
    out.push_str(&tables::profile::streams(p).text());
    if p.rows.iter().any(|x| x.generator_limited && x.lost == 0) {
        out.push_str("≥: the generator sent less than the stream's load and the network carried it all: it carries at least this\n");
    }
    if let Some(d) = tables::profile::drops(p) {
        out.push_str(
            "\nwhere the lost frames went (each place's own counter while the streams ran)\n",
        );
        out.push_str(&d.text());
    }
    if let Some(l) = tables::profile::latency(p) {
        out.push_str("\nlatency per stream (us)\n");
        out.push_str(&l.text());
    }
    closed(r, out)
}

/// What `gen` sent (and, with a receiver, what arrived), the schedule it kept, and the
/// facts.
pub fn gen(r: &RunResult) -> String {
    let Some(g) = &r.gen else {
        return facts(r);
    };
    let p = &r.params;
    let mut out = intervals(r);
    out += &format!(
        "sent {} frames of {} bytes on {} in {:.3} s: {:.0} frames/s ({} L2, {} L1, {:.2} % of {} line rate), backend {}\n",
        g.sent,
        p["frame_len"],
        p["port"].as_str().unwrap_or("?"),
        g.elapsed_s,
        g.achieved_pps,
        bps(g.l2_bps),
        bps(g.l1_bps),
        g.percent_of_line_rate,
        bps(p["line_rate_bps"].as_f64().unwrap_or(0.0)),
        p["tx_backend"].as_str().unwrap_or("?"),
    );
    out.push_str(&format!(
        "schedule: asked {:.0} frames/s; {}{}\n",
        g.target_pps,
        if g.generator_limited {
            format!(
                "NOT kept: {:.1} % behind (generator limited)",
                g.behind_ratio * 100.0
            )
        } else {
            "kept".to_owned()
        },
        g.pacing_error_us
            .map(|p| format!(", lateness p50 {:.1} us, p99 {:.1} us", p.p50_us, p.p99_us))
            .unwrap_or_default()
    ));
    if let Some(rx) = &g.rx {
        out.push_str(&format!(
            "received on {}: {} of {} (lost {}, duplicates {}, reordered {}, kernel drops {})\n",
            p["rx_port"].as_str().unwrap_or("?"),
            rx.received,
            g.sent,
            rx.lost,
            rx.duplicates,
            rx.reordered,
            rx.rx_kernel_drops
        ));
        if let Some(l) = &rx.latency_us {
            out.push_str(&format!(
                "latency (kernel rx stamp - tx stamp): min {:.1} avg {:.1} p50 {:.1} p99 {:.1} p99.9 {:.1} max {:.1} us\n",
                l.min_us, l.avg_us, l.p50_us, l.p99_us, l.p999_us, l.max_us
            ));
        }
    }
    out
}

/// What `frer analyze` saw: per stream the merged view and a table of its paths.
pub fn frer_analysis(r: &RunResult) -> String {
    let Some(a) = &r.frer_analysis else {
        return facts(r);
    };
    let mut out = String::new();
    if a.streams.is_empty() {
        out.push_str(&format!("no test frames seen on {}\n", a.paths.join(", ")));
    }
    for s in &a.streams {
        out.push_str(&format!(
            "\ntest {:#06x} stream {}: numbers {}..={}, {} frames on all paths\n",
            s.test_id, s.stream_id, s.first_seq, s.last_seq, s.received
        ));
        out.push_str(&format!(
            "merged (what an eliminator passes): {} distinct, {} lost ({}), {} duplicates, {} out of order\n",
            s.unique,
            s.lost,
            tables::frer::share(s.lost, s.unique + s.lost),
            s.duplicates,
            s.out_of_order
        ));
        out.push_str(&tables::frer::analysed_paths(s).text());
        if let Some(k) = &s.skew_us {
            out.push_str(&format!(
                "skew between the copies of a number (last - first): p50 {:.1} us, p99 {:.1} us, max {:.1} us\n",
                k.p50_us, k.p99_us, k.max_us
            ));
        }
    }
    for n in &r.notes {
        out.push_str(&format!("note: {n}\n"));
    }
    out
}

/// The FRER relays' counters (`frer stats`): per relay its ports, streams (with the
/// 802.1CB counter names in the legend), the paths of each elimination, and what matched
/// no stream.
pub fn relays(r: &RunResult) -> String {
    r.relays.iter().map(relay).collect()
}

/// One relay's counters (`frer relay` when it stops, `frer stats`, `lab status`).
pub fn relay(s: &model::results::relay::RelayReport) -> String {
    let c = &s.counters;
    let mut out = format!(
        "\nFRER relay {} (pid {}, {}, {:.1} s)\n",
        s.label, s.pid, s.state, s.uptime_s
    );
    if !s.data_path.is_empty() {
        out.push_str(&format!("data path: {}\n", s.data_path));
    }
    let (ports, streams, paths) = tables::frer::relay(c);
    out.push_str(&ports.text());
    if let Some(t) = streams {
        out.push('\n');
        out.push_str(&t.text());
    }
    if let Some(t) = paths {
        out.push_str("\nper path (eliminating): which path delivered each number first\n");
        out.push_str(&t.text());
    }
    out.push_str(&format!(
        "frames of no stream: {} passed, {} dropped; malformed {}; too long {}\n",
        c.unmatched_passed, c.unmatched_dropped, c.malformed, c.too_long
    ));
    if let Some((at, stream, drift)) = s.latent_alarms.last() {
        out.push_str(&format!(
            "latent errors signalled: {} (last: stream {stream} at {at:.1} s, drift {drift})\n",
            s.latent_alarms.len(),
        ));
    }
    out.push_str(
        "802.1CB 10.8 counters: frames/passed = frerCpsSeqRcvyPassedPackets (frames replicated on a replicating port);\n\
         discarded = duplicates; lost (net) = frerCpsSeqRcvyLostPackets minus the numbers before the first frame\n\
         accepted after each reset, which the literal algorithm counts too (both are in -J); numbers still inside\n\
         the history window are not yet counted.\n",
    );
    out
}

/// The labs that are up (`lab status`): nodes and interfaces, then the shaper classes,
/// the relays and the impairment stages of those that have them.
pub fn lab_status(st: &model::results::lab::LabStatus) -> String {
    if st.nodes.is_empty() {
        return "no labs are up\n".into();
    }
    let nodes = st.nodes.iter().map(|n| {
        let ifaces = n.interfaces.join("; ");
        vec![n.lab.clone(), n.node.clone(), n.namespace.clone(), ifaces]
    });
    let mut out = Table::plain("lab|node|namespace|interfaces", nodes.collect()).text();
    if !st.classes.is_empty() {
        let rows = st.classes.iter().map(|c| {
            let n = [c.packets, c.bytes, c.dropped].map(|v| v.to_string());
            [
                vec![c.lab.clone(), c.id.clone(), c.rate.clone()],
                n.to_vec(),
            ]
            .concat()
        });
        out.push_str("\nshaper classes (dut eth1, toward the listener)\n");
        let spec = "lab|class|rate>|packets>|bytes>|dropped>";
        out.push_str(&Table::plain(spec, rows.collect()).text());
    }
    for r in &st.relays {
        out.push_str(&relay(r));
    }
    if !st.stages.is_empty() {
        let rows = st.stages.iter().map(|s| {
            let n = [
                Some(s.frames_in),
                Some(s.lost),
                Some(s.duplicated),
                Some(s.reordered),
                s.delayed,
                Some(s.queue_drops),
                Some(s.frames_out),
            ]
            .map(|v| v.map_or_else(|| "-".to_owned(), |v| v.to_string()));
            let head = vec![s.lab.clone(), s.node.clone(), s.direction.clone()];
            let tail = vec![s.state.clone(), s.data_path.clone()];
            [head, n.to_vec(), tail].concat()
        });
        out.push_str("\nimpairment stages (forward = toward the listener)\n");
        let spec = "lab|node|direction|frames in>|lost>|duplicated>|reordered>|delayed>|queue drops>|frames out>|state|data path";
        out.push_str(&Table::plain(spec, rows.collect()).text());
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;
    use model::results::nic::{HostActivity, InterfaceState, NicCell, PcieLink, Rings};
    use model::results::rfc2544::{BackToBack, LossRow, Rfc2544Report, Search, ThroughputResult};
    use model::results::{BlocksizeRow, IntervalRow, SweepRow, SweepStatus, SweepTable, Verdict};

    #[test]
    fn rfc2544_tables_show_theoretical_measured_and_efficiency() {
        let mut r = RunResult::new(
            "rfc2544",
            serde_json::json!({}),
            String::new(),
            Default::default(),
        );
        r.rfc2544 = Some(Rfc2544Report {
            line_rate_bps: 1_000_000_000,
            throughput: vec![ThroughputResult {
                frame_len: 1518,
                search: Search::Mlr,
                fps: Some(40_637.191),
                lower_fps: Some(40_700.0),
                upper_fps: Some(40_900.0),
                max_fps: 81_274.382,
                generator_cap_fps: None,
                irregular: None,
                trials: 7,
                trial_time_s: Some(9.5),
                goal: None,
            }],
            loss: vec![LossRow {
                frame_len: 1518,
                percent: 100.0,
                fps: 60_000.0,
                sent: 60_000,
                received: 40_000,
                loss_percent: 33.3333,
                generator_limited: true,
            }],
            b2b: vec![BackToBack {
                frame_len: 1518,
                bursts: vec![],
                mean: None,
                std_dev: None,
                buffer_time_us: None,
                note: Some("throughput is line rate".into()),
            }],
            ..Default::default()
        });
        r.verdicts.push(Verdict {
            name: "latency p99.9 at 1518 bytes".into(),
            passed: false,
            detail: "400 us".into(),
            marginal: false,
        });
        let t = rfc2544(&r);
        // Half of line rate: 493.50 of 987.00 Mbit/s of frames incl. FCS, 50.00 %.
        let row = t
            .lines()
            .find(|l| l.trim_start().starts_with("1518"))
            .unwrap();
        for cell in [
            "987.00", "493.50", "50.00 %", "40637", "40700", "40900", "mlr", " 7 ", "9.5",
        ] {
            assert!(row.contains(cell), "{cell} in {row}");
        }
        assert!(t.contains("60000 (generator limited)"), "{t}");
        assert!(t.contains("throughput is line rate"), "{t}");
        assert!(t.contains("latency p99.9 at 1518 bytes: FAIL"), "{t}");
        assert!(!t.contains("duplicate frames"), "{t}");
        // A device that duplicates (a FRER network without elimination) is called out.
        let rep = r.rfc2544.as_mut().unwrap();
        rep.trials.push(model::results::rfc2544::TrialLog {
            purpose: "throughput".into(),
            frame_len: 64,
            load: 1000.0,
            kind: "rate".into(),
            duration_s: 1.0,
            sent: 1000,
            received: 1000,
            duplicates: 997,
            loss_ratio: 0.0,
            offered_fps: 1000.0,
            generator_limited: false,
        });
        let t = rfc2544(&r);
        assert!(
            t.contains("1 trial(s) received duplicate frames (997 in all)"),
            "{t}"
        );
        let row = t
            .lines()
            .find(|l| l.split_whitespace().next() == Some("1") && l.contains("throughput"))
            .unwrap();
        assert!(row.contains("1000"), "{row}");
    }

    #[test]
    fn sweep_table_is_stable() {
        let row = |target: f64, achieved: f64, loss: f64, status| SweepRow {
            target_bps: target,
            offered_bps: target,
            achieved_bps: achieved,
            loss_pct: loss,
            sent_packets: 169_837,
            lost_packets: 0,
            duration_s: 5.0,
            status,
            generator_limited: false,
            repeats: None,
            achieved_range_bps: None,
            loss_range_pct: None,
        };
        let mut t = SweepTable {
            rows: vec![
                row(400e6, 399.9e6, 0.0, SweepStatus::ZeroLoss),
                SweepRow {
                    offered_bps: 440e6,
                    generator_limited: true,
                    ..row(450e6, 438e6, 0.45, SweepStatus::Marginal)
                },
            ],
            max_zero_loss_bps: Some(400e6),
            max_zero_loss_is_lower_bound: false,
            marginal_pct: None,
            high_pct: None,
            operating_bps: None,
            safety_margin: None,
        };
        let expected = concat!(
            "       target       achieved     loss  secs  status\n",
            "-------------  -------------  -------  ----  ----------------------------\n",
            "400.00 Mbit/s  399.90 Mbit/s  0.000 %   5.0  zero-loss\n",
            "450.00 Mbit/s  438.00 Mbit/s  0.450 %   5.0  marginal (generator limited)\n",
            "maximum sustained zero-loss rate: 400.00 Mbit/s\n",
        );
        assert_eq!(sweep(&t), expected);
        // Zero-loss steps the generator fell short of: a lower bound, never "none".
        let mut limited = t.clone();
        limited.rows[1].status = SweepStatus::ZeroLoss;
        limited.max_zero_loss_bps = Some(440e6);
        limited.max_zero_loss_is_lower_bound = true;
        assert!(
            sweep(&limited).ends_with(
                "maximum sustained zero-loss rate: ≥ 440.00 Mbit/s (generator-limited above: the network lost nothing the generator could offer)\n"
            ),
            "{}",
            sweep(&limited)
        );
        // The FRER report's table: repeated steps as min–max, four levels, the operating
        // rate under it.
        t.rows = vec![
            row(540e6, 540e6, 0.0, SweepStatus::ZeroLoss),
            SweepRow {
                repeats: Some(3),
                achieved_range_bps: Some([547e6, 550e6]),
                loss_range_pct: Some([0.24, 0.56]),
                ..row(550e6, 548.5e6, 0.56, SweepStatus::Loss)
            },
            row(700e6, 686e6, 2.3, SweepStatus::HighLoss),
        ];
        t.max_zero_loss_bps = Some(540e6);
        (t.marginal_pct, t.high_pct) = (Some(0.5), Some(1.0));
        (t.operating_bps, t.safety_margin) = (Some(432e6), Some(0.8));
        let expected = concat!(
            "       target              achieved           loss  secs  status\n",
            "-------------  --------------------  -------------  ----  -------------\n",
            "540.00 Mbit/s         540.00 Mbit/s        0.000 %   5.0  zero-loss\n",
            "550.00 Mbit/s  547.00–550.00 Mbit/s  0.240–0.560 %   5.0  loss detected\n",
            "700.00 Mbit/s         686.00 Mbit/s        2.300 %   5.0  high loss\n",
            "maximum sustained zero-loss rate: 540.00 Mbit/s\n",
            "recommended operating rate: 432.00 Mbit/s (80 % of the zero-loss rate)\n",
            "levels: marginal up to 0.5 % loss, high loss from 1 %\n",
        );
        assert_eq!(sweep(&t), expected);
    }

    #[test]
    fn blocksize_table_is_stable() {
        let rows = vec![
            BlocksizeRow {
                block_bytes: 1024,
                tx_mbyte_s: 101.234,
                rx_mbyte_s: 99.5,
                duration_s: 2.0,
                client_cpu: Some(41.2),
                server_cpu: Some(87.9),
            },
            BlocksizeRow {
                block_bytes: 32768,
                tx_mbyte_s: 1101.2,
                rx_mbyte_s: 1099.0,
                duration_s: 2.0,
                client_cpu: None,
                server_cpu: None,
            },
        ];
        let expected = concat!(
            "block  Tx MByte/s  Rx MByte/s  client CPU %  server CPU %\n",
            "-----  ----------  ----------  ------------  ------------\n",
            "   1k      101.23       99.50            41            88\n",
            "  32k     1101.20     1099.00             -             -\n",
            "MByte/s = 10^6 bytes/s\n",
        );
        assert_eq!(blocksize(&rows), expected);
        assert_eq!(blocksize_in(&rows, false), expected);
        // netio's own lines: 2^20 bytes/s, and 32k whether 32,767 or 32,768 bytes.
        let expected = concat!(
            "Packet size  1k bytes:   96.54 MByte/s Tx,   94.89 MByte/s Rx.\n",
            "Packet size 32k bytes:  1050.19 MByte/s Tx,  1048.09 MByte/s Rx.\n",
            "netio units: KByte/s and MByte/s are powers of 2 (2^10 and 2^20 bytes/s); 32k = 32767 bytes\n",
        );
        assert_eq!(blocksize_in(&rows, true), expected);
    }

    fn activity(irqs: Option<u64>) -> HostActivity {
        HostActivity {
            role: "local".into(),
            interface: "veth-a".into(),
            irqs,
            net_rx_softirqs: 120_000,
            cpu_busy_percent: 37.5,
            seconds: 10.0,
        }
    }

    #[test]
    fn nic_matrix_shows_cells_errors_activity_and_the_best_mtu() {
        let row = |b, tx, rx| BlocksizeRow {
            block_bytes: b,
            tx_mbyte_s: tx,
            rx_mbyte_s: rx,
            duration_s: 1.0,
            client_cpu: None,
            server_cpu: None,
        };
        let m = NicMatrix {
            interfaces: vec!["tx=veth-a".into(), "rx=veth-b".into()],
            units: "si".into(),
            cells: vec![
                NicCell {
                    label: "mtu 1500".into(),
                    mtu: Some(1500),
                    rows: vec![row(1024, 100.0, 90.0), row(2048, 150.0, 140.0)],
                    activity: vec![activity(None)],
                    ..Default::default()
                },
                NicCell {
                    label: "mtu 4000".into(),
                    mtu: Some(4000),
                    rows: vec![row(1024, 210.0, 200.0), row(2048, 320.5, 300.0)],
                    ..Default::default()
                },
                NicCell {
                    label: "mtu 9000".into(),
                    mtu: Some(9000),
                    error: Some("MTU 9000 above the device's maximum 4000".into()),
                    ..Default::default()
                },
            ],
            best_mtu: Some(4000),
            best_mtu_basis: Some("one run: not a finding (measure with --repeat)".into()),
        };
        let t = nic_matrix(&m);
        assert!(t.starts_with("NIC matrix (tx=veth-a, rx=veth-b)"), "{t}");
        let line = |first: &str| {
            t.lines()
                .find(|l| l.split_whitespace().next() == Some(first))
                .unwrap_or_else(|| panic!("no {first} line in {t}"))
        };
        let head = line("block");
        assert!(
            head.contains("mtu 1500") && head.contains("mtu 9000"),
            "{head}"
        );
        let two = line("2k");
        assert!(
            two.contains("150.00 / 140.00") && two.contains("320.50 / 300.00"),
            "{two}"
        );
        assert!(
            two.trim_end().ends_with('-'),
            "mtu 9000 measured nothing: {two}"
        );
        assert!(line("error").contains("error: MTU 9000 above the device's maximum 4000"));
        assert!(t.contains("MByte/s = 10^6 bytes/s\n"), "{t}");
        let side = line("mtu");
        assert!(side.contains("120000") && side.contains("37.5"), "{side}");
        assert!(
            side.contains("no IRQ lines of its own (virtual device)"),
            "{side}"
        );
        assert!(
            t.ends_with("best MTU: 4000 (one run: not a finding (measure with --repeat))\n"),
            "{t}"
        );
    }

    #[test]
    fn interfaces_list_every_fact_and_the_host_activity() {
        let mut r = RunResult::new(
            "blocksize",
            serde_json::json!({}),
            String::new(),
            Default::default(),
        );
        assert_eq!(interfaces(&r), "");
        r.interfaces.push(InterfaceState {
            role: "tx".into(),
            name: "enp3s0".into(),
            driver: Some("r8169".into()),
            driver_version: Some("6.8.0".into()),
            speed_mbps: Some(1000),
            duplex: Some("full".into()),
            mtu: Some(1500),
            features: [
                ("rx-checksum".to_owned(), true),
                ("rx-gro-hw".to_owned(), false),
            ]
            .into(),
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
        });
        r.activity = vec![activity(Some(4567)), activity(None)];
        let t = interfaces(&r);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "interfaces");
        assert_eq!(
            lines[1],
            "tx enp3s0: driver r8169, driver version 6.8.0, speed 1000 Mbit/s, duplex full, mtu 1500, pcie Gen3 x1 of Gen4 x1"
        );
        assert_eq!(lines[2], "  rings rx 256 of 4096, tx 256 of 4096");
        assert_eq!(lines[3], "  features on: rx-checksum; off: rx-gro-hw");
        assert!(lines[4].starts_with("host activity ("), "{}", lines[4]);
        assert!(
            lines[7].contains("4567") && !lines[7].contains("virtual"),
            "{t}"
        );
        assert!(
            lines[8].contains(" - ") && lines[8].ends_with("(virtual device)"),
            "{t}"
        );
    }

    #[test]
    fn interval_line_shows_loss_and_jitter() {
        let r = IntervalRow {
            start_s: 0.0,
            end_s: 1.0,
            direction: "tx".into(),
            stream: None,
            sent_bytes: Some(62_500_000),
            received_bytes: Some(62_400_000),
            sent_bps: Some(500e6),
            received_bps: Some(499.2e6),
            sent_packets: Some(42_459),
            received_packets: Some(42_391),
            lost_packets: Some(68),
            loss_attributed: true,
            duplicate_packets: Some(2),
            reordered_packets: Some(0),
            latency: Some(model::results::IntervalLatency {
                kind: model::results::LatencyKind::OneWay,
                count: 42_391,
                min_us: 10.0,
                p50_us: 21.0,
                p99_us: 95.5,
                max_us: 300.0,
            }),
            jitter_us: Some(3.125),
            retransmits: None,
            tcp: None,
        };
        let l = interval_line(&r);
        assert!(
            l.contains("p50 21.0 p99 95.5 us  dup 2") && !l.contains("reord"),
            "{l}"
        );
        assert!(
            l.contains("sent 59.60 MBytes  500.00 Mbit/s") && l.contains("received  499.20 Mbit/s"),
            "{l}"
        );
        assert!(
            l.contains("lost 68/42459") && l.contains("jitter 3.12 us"),
            "{l}"
        );
    }
}
