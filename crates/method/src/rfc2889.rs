//! RFC 2889 (benchmarking LAN switching devices) as pure logic: who sends to whom in each
//! traffic test (§5.1 fully meshed, §5.2 one-to-many and many-to-one, §5.4 unidirectional,
//! §5.5 congestion control, §5.10 broadcast), each port's figures from what every flow
//! sent and where its frames arrived (forwarding rate at the correct port, loss, flood
//! count: RFC 2285 §3.6.1, §3.8.3), the congestion test's head-of-line blocking verdict,
//! and the bisection of §5.7 (address caching capacity) and §5.8 (address learning rate).
//!
//! It does not send frames or keep time: the runner (`campaign`) runs each trial and hands
//! its counts in, and says which tests a port cannot make (forward pressure, §5.6.3.2, needs
//! a gap shorter than a MAC sends; a bad FCS for §5.9, one it spoils).

use crate::PlanError;

/// A traffic test's pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// §5.1: every port sends to every other port, its load shared evenly.
    FullyMeshed,
    /// §5.2: the first port sends to every other, its load shared evenly.
    OneToMany,
    /// §5.2: every other port sends its full load to the first (overloading it when the
    /// loads add up past its line rate).
    ManyToOne,
    /// §5.4: the first half of the ports send to every port of the second half; nothing
    /// flows back.
    Unidirectional,
    /// §5.5 (4 ports A, B, C, D): A sends half its load to C and half to D, B all of its
    /// load to C; C is offered 150 %, D 50 %.
    Congestion,
    /// §5.10: the first port sends broadcast frames, every other port should receive each.
    Broadcast,
}

impl Pattern {
    /// The name on the command line and in the result.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::FullyMeshed => "fully-meshed",
            Pattern::OneToMany => "one-to-many",
            Pattern::ManyToOne => "many-to-one",
            Pattern::Unidirectional => "unidirectional",
            Pattern::Congestion => "congestion",
            Pattern::Broadcast => "broadcast",
        }
    }

    /// Its RFC 2889 section.
    pub fn section(self) -> &'static str {
        match self {
            Pattern::FullyMeshed => "5.1",
            Pattern::OneToMany | Pattern::ManyToOne => "5.2",
            Pattern::Unidirectional => "5.4",
            Pattern::Congestion => "5.5",
            Pattern::Broadcast => "5.10",
        }
    }

    /// Whether a throughput search means something: it does not for congestion control,
    /// whose point is the overload.
    pub fn searchable(self) -> bool {
        self != Pattern::Congestion
    }
}

/// One flow of a pattern: from port `from` to port `to` (for a broadcast flow, the first
/// of its receivers; it reaches every port but `from`), `share` of the sending port's load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Flow {
    /// Sending port (index into the port list).
    pub from: usize,
    /// Receiving port.
    pub to: usize,
    /// Share of the sending port's intended load (0..=1).
    pub share: f64,
    /// Addressed to ff:ff:ff:ff:ff:ff.
    pub broadcast: bool,
}

/// The flows of `pattern` over `n` ports.
///
/// # Errors
/// Too few ports for the pattern (congestion control takes exactly four).
pub fn flows(pattern: Pattern, n: usize) -> Result<Vec<Flow>, PlanError> {
    let least = match pattern {
        Pattern::FullyMeshed | Pattern::OneToMany | Pattern::Unidirectional => 2,
        Pattern::ManyToOne | Pattern::Broadcast => 3,
        Pattern::Congestion => 4,
    };
    if n < least || (pattern == Pattern::Congestion && n != 4) {
        let want = if pattern == Pattern::Congestion {
            "exactly 4 ports (A, B, C, D)".to_owned()
        } else {
            format!("at least {least} ports")
        };
        return Err(PlanError::Range(format!(
            "{} (RFC 2889 §{}) takes {want}; {n} given",
            pattern.name(),
            pattern.section()
        )));
    }
    let unicast = |from, to, share| Flow {
        from,
        to,
        share,
        broadcast: false,
    };
    let others = (n - 1) as f64;
    Ok(match pattern {
        Pattern::FullyMeshed => (0..n)
            .flat_map(|f| {
                (0..n)
                    .filter(move |t| *t != f)
                    .map(move |t| unicast(f, t, 1.0 / others))
            })
            .collect(),
        Pattern::OneToMany => (1..n).map(|t| unicast(0, t, 1.0 / others)).collect(),
        Pattern::ManyToOne => (1..n).map(|f| unicast(f, 0, 1.0)).collect(),
        Pattern::Unidirectional => {
            let half = n.div_ceil(2);
            let receivers = (n - half) as f64;
            (0..half)
                .flat_map(|f| (half..n).map(move |t| unicast(f, t, 1.0 / receivers)))
                .collect()
        }
        Pattern::Congestion => vec![unicast(0, 2, 0.5), unicast(0, 3, 0.5), unicast(1, 2, 1.0)],
        Pattern::Broadcast => vec![Flow {
            from: 0,
            to: 1,
            share: 1.0,
            broadcast: true,
        }],
    })
}

/// What one flow's frames did in a trial: how many were sent, how many arrived at its
/// port (for a broadcast flow, at its first receiver) and how many at each port
/// (`at[p]`, its own port's count included).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FlowCount {
    /// Frames sent.
    pub sent: u64,
    /// Distinct frames that arrived at each port, by port index.
    pub at: Vec<u64>,
    /// Seconds from the first to the last of them at each port, by port index (0 where
    /// none arrived, or not known).
    pub span_s: Vec<f64>,
}

/// One port's figures in a trial.
#[derive(Debug, Clone, PartialEq)]
pub struct PortFigures {
    /// Port index.
    pub port: usize,
    /// Intended load, frames/s (0 for a port that only receives).
    pub iload_fps: f64,
    /// Offered load: frames it sent per second.
    pub oload_fps: f64,
    /// Frames it sent.
    pub sent: u64,
    /// Its frames that did not arrive where they were sent (for broadcasts: deliveries
    /// missed, counted per receiver).
    pub lost: u64,
    /// Frames addressed to it that arrived here.
    pub received: u64,
    /// Forwarding rate (RFC 2285 §3.6.1): frames per second arriving here that were meant
    /// for it, over the time they arrived, at least the trial's: a queue that drains after
    /// the senders stopped delivers its frames later, not faster.
    pub forwarding_fps: f64,
    /// Flood count: frames of the test that arrived here but were meant for another
    /// port.
    pub flood: u64,
    /// Frames meant for it, per second: what a switch that forwards everything delivers.
    pub intended_rx_fps: f64,
    /// Deliveries its frames should have made: one per unicast frame, one per receiver
    /// per broadcast frame.
    pub deliveries: u64,
}

impl PortFigures {
    /// Lost over the deliveries its frames should have made; 0 for a port that sent
    /// nothing.
    pub fn loss_ratio(&self) -> f64 {
        if self.deliveries == 0 {
            0.0
        } else {
            self.lost as f64 / self.deliveries as f64
        }
    }
}

/// Every port's figures for a trial at `iload_fps` per sending port (each flow at its
/// share) that lasted `seconds` (what the offered load is over; the forwarding rate is
/// over the longer of that and the time the port's frames arrived over).
///
/// Unicast frames count at their own port (forwarded) or elsewhere (flooded); broadcast
/// frames count at every port but their sender's, each delivery once.
pub fn port_figures(
    flows: &[Flow],
    counts: &[FlowCount],
    n: usize,
    iload_fps: f64,
    seconds: f64,
) -> Vec<PortFigures> {
    let per_s = |x: u64| {
        if seconds > 0.0 {
            x as f64 / seconds
        } else {
            0.0
        }
    };
    let mut rows: Vec<PortFigures> = (0..n)
        .map(|port| PortFigures {
            port,
            iload_fps: 0.0,
            oload_fps: 0.0,
            sent: 0,
            lost: 0,
            received: 0,
            forwarding_fps: 0.0,
            flood: 0,
            intended_rx_fps: 0.0,
            deliveries: 0,
        })
        .collect();
    // Per port: the longest time its own frames arrived over.
    let mut arriving = vec![0.0f64; n];
    for (f, c) in flows.iter().zip(counts) {
        let fps = iload_fps * f.share;
        let receivers: Vec<usize> = if f.broadcast {
            (0..n).filter(|p| *p != f.from).collect()
        } else {
            vec![f.to]
        };
        let from = &mut rows[f.from];
        from.iload_fps += fps;
        from.sent += c.sent;
        from.deliveries += c.sent * receivers.len() as u64;
        for p in 0..n {
            let got = c.at.get(p).copied().unwrap_or(0);
            if receivers.contains(&p) {
                let span = c.span_s.get(p).copied().unwrap_or(0.0);
                if span.is_finite() {
                    arriving[p] = arriving[p].max(span);
                }
                rows[p].received += got;
                rows[p].intended_rx_fps += fps;
                rows[f.from].lost += c.sent.saturating_sub(got);
            } else if p != f.from {
                rows[p].flood += got;
            }
        }
    }
    for (r, span) in rows.iter_mut().zip(arriving) {
        r.oload_fps = per_s(r.sent);
        let window = seconds.max(span);
        r.forwarding_fps = if window > 0.0 {
            r.received as f64 / window
        } else {
            0.0
        };
    }
    rows
}

/// The trial's totals over every port (a result writes them as they are).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Aggregate {
    /// Intended load over all ports, frames/s.
    pub iload_fps: f64,
    /// Offered load over all ports, frames/s.
    pub oload_fps: f64,
    /// Forwarding rate over all ports, frames/s.
    pub forwarding_fps: f64,
    /// Frames sent.
    pub sent: u64,
    /// Deliveries missed.
    pub lost: u64,
    /// Loss over the deliveries the frames should have made.
    pub loss_ratio: f64,
    /// Flood count over all ports.
    pub flood: u64,
}

/// The totals of `rows`.
pub fn aggregate(rows: &[PortFigures]) -> Aggregate {
    let deliveries: u64 = rows.iter().map(|r| r.deliveries).sum();
    let lost: u64 = rows.iter().map(|r| r.lost).sum();
    Aggregate {
        iload_fps: rows.iter().map(|r| r.iload_fps).sum(),
        oload_fps: rows.iter().map(|r| r.oload_fps).sum(),
        forwarding_fps: rows.iter().map(|r| r.forwarding_fps).sum(),
        sent: rows.iter().map(|r| r.sent).sum(),
        lost,
        loss_ratio: if deliveries == 0 {
            0.0
        } else {
            lost as f64 / deliveries as f64
        },
        flood: rows.iter().map(|r| r.flood).sum(),
    }
}

/// §5.5's verdicts from the flows of [`Pattern::Congestion`] (A→C, A→D, B→C).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CongestionVerdict {
    /// Loss of the frames offered to the congested port C.
    pub congested_loss: f64,
    /// Loss of the frames offered to the uncongested port D.
    pub uncongested_loss: f64,
    /// The share of C's offered frames that cannot fit its line rate
    /// (1 − 100 % / C's offered load in %).
    pub overload_share: f64,
    /// Head-of-line blocking: D lost frames although it was not congested (RFC 2285
    /// §3.7.3).
    pub head_of_line_blocking: bool,
}

/// Judges a congestion trial: `counts` in the order of [`flows`]'s congestion flows, each
/// source at `load` (a fraction of line rate).
pub fn congestion(counts: &[FlowCount], load: f64) -> Option<CongestionVerdict> {
    let [ac, ad, bc] = counts else { return None };
    let got = |c: &FlowCount, p: usize| c.at.get(p).copied().unwrap_or(0);
    let lost = |c: &FlowCount, p: usize| c.sent.saturating_sub(got(c, p));
    let ratio = |l: u64, s: u64| if s == 0 { 0.0 } else { l as f64 / s as f64 };
    let offered_c = 1.5 * load;
    Some(CongestionVerdict {
        congested_loss: ratio(lost(ac, 2) + lost(bc, 2), ac.sent + bc.sent),
        uncongested_loss: ratio(lost(ad, 3), ad.sent),
        overload_share: if offered_c > 1.0 {
            1.0 - 1.0 / offered_c
        } else {
            0.0
        },
        head_of_line_blocking: lost(ad, 3) > 0,
    })
}

/// A bisection over a count (§5.7: addresses) or a rate (§5.8: frames/s): the largest
/// value whose trial passes, between `min` and `max`, to within `resolution` (a count's
/// step; a rate's fraction of the upper bound).
///
/// It tries `max` first (a device that passes there is done), then `min` (a device that
/// fails there is below the range), then halves the gap between the highest pass and the
/// lowest failure. Each trial is believed once: the runner repeats a search to see its
/// spread.
#[derive(Debug, Clone, PartialEq)]
pub struct Bisection {
    min: f64,
    max: f64,
    resolution: f64,
    /// Counts are whole.
    whole: bool,
    /// The highest value that passed.
    pass: Option<f64>,
    /// The lowest value that failed.
    fail: Option<f64>,
    /// Every trial: (value, passed).
    pub trials: Vec<(f64, bool)>,
}

/// Where a bisection ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Outcome {
    /// The highest value that passed, with the lowest that failed above it (`None` when
    /// `max` passed: the answer is at least `max`).
    Found {
        /// Passed.
        value: f64,
        /// Failed, if anything did.
        failed: Option<f64>,
    },
    /// Even `min` failed (the lowest value tried).
    BelowMin {
        /// The value that failed.
        failed: f64,
    },
}

impl Bisection {
    /// Counts from `min` to `max`, `step` apart at the end (`step` ≥ 1).
    ///
    /// # Errors
    /// `min` of 0, `max` below `min`, a step of 0.
    pub fn count(min: u64, max: u64, step: u64) -> Result<Self, PlanError> {
        if min == 0 || max < min || step == 0 {
            return Err(PlanError::Range(format!(
                "an address search from {min} to {max} in steps of {step}: give 1 <= min <= max and a step of at least 1"
            )));
        }
        Ok(Self::new(min as f64, max as f64, step as f64, true))
    }

    /// Rates from `min` to `max` frames/s, until the bounds are `width` (a fraction of the
    /// upper bound) apart.
    ///
    /// # Errors
    /// A rate range that is empty or not positive, a width outside (0, 1).
    pub fn rate(min: f64, max: f64, width: f64) -> Result<Self, PlanError> {
        let ok = min > 0.0 && max >= min && max.is_finite() && width > 0.0 && width < 1.0;
        if !ok {
            return Err(PlanError::Range(format!(
                "a rate search from {min} to {max} frames/s to {width} of the upper bound"
            )));
        }
        Ok(Self::new(min, max, width, false))
    }

    fn new(min: f64, max: f64, resolution: f64, whole: bool) -> Self {
        Self {
            min,
            max,
            resolution,
            whole,
            pass: None,
            fail: None,
            trials: Vec::new(),
        }
    }

    /// The next value to try, or `None` when the search is over.
    pub fn next(&self) -> Option<f64> {
        match (self.pass, self.fail) {
            (None, None) => Some(self.max),
            (Some(_), None) => None,
            (None, Some(f)) if f > self.min => Some(self.min),
            (None, Some(_)) => None,
            (Some(p), Some(f)) => {
                let close = if self.whole {
                    f - p <= self.resolution
                } else {
                    (f - p) / f <= self.resolution
                };
                if close {
                    return None;
                }
                let mid = (p + f) / 2.0;
                Some(if self.whole {
                    mid.floor().max(p + 1.0)
                } else {
                    mid
                })
            }
        }
    }

    /// Records the trial at `value`.
    pub fn record(&mut self, value: f64, passed: bool) {
        self.trials.push((value, passed));
        if passed {
            self.pass = Some(self.pass.map_or(value, |p| p.max(value)));
        } else {
            self.fail = Some(self.fail.map_or(value, |f| f.min(value)));
        }
    }

    /// Where it ended (or stands).
    pub fn outcome(&self) -> Outcome {
        match (self.pass, self.fail) {
            (Some(value), failed) => Outcome::Found { value, failed },
            (None, failed) => Outcome::BelowMin {
                failed: failed.unwrap_or(self.min),
            },
        }
    }
}

/// One address trial's verdict (§5.7, §5.8): every test frame arrived at the learning
/// port, and none was flooded to the monitor port.
pub fn addresses_learned(sent: u64, at_learning_port: u64, at_monitor: u64) -> bool {
    at_monitor == 0 && at_learning_port == sent && sent > 0
}

#[cfg(test)]
mod test {
    use super::*;

    fn count(sent: u64, at: &[u64]) -> FlowCount {
        FlowCount {
            sent,
            at: at.to_vec(),
            span_s: vec![0.0; at.len()],
        }
    }

    /// Two ports into one for 1 s: the egress's queue delivers 60 frames more after the
    /// senders stopped, over 0.2 s more. Its forwarding rate is over the 1.2 s its frames
    /// arrived, never above what it carries; a port whose frames all came within the
    /// trial is over the trial's time.
    #[test]
    fn the_forwarding_rate_is_over_the_time_the_frames_arrived() {
        let f = flows(Pattern::ManyToOne, 3).unwrap();
        let mut a = count(300, &[180, 0, 0]);
        a.span_s[0] = 1.2;
        let mut b = count(300, &[180, 0, 0]);
        b.span_s[0] = 1.1;
        let rows = port_figures(&f, &[a, b], 3, 300.0, 1.0);
        assert!((rows[0].forwarding_fps - 360.0 / 1.2).abs() < 1e-9);
        assert_eq!(rows[1].oload_fps, 300.0, "offered over the trial's second");
        let mut c = count(300, &[250, 0, 0]);
        c.span_s[0] = 0.9;
        let rows = port_figures(&f, &[c, count(0, &[0, 0, 0])], 3, 300.0, 1.0);
        assert_eq!(rows[0].forwarding_fps, 250.0);
    }

    #[test]
    fn each_pattern_sends_what_the_rfc_says() {
        let f = flows(Pattern::FullyMeshed, 4).unwrap();
        assert_eq!(f.len(), 12);
        assert!(f
            .iter()
            .all(|x| x.from != x.to && (x.share - 1.0 / 3.0).abs() < 1e-12));
        let m = flows(Pattern::ManyToOne, 3).unwrap();
        assert_eq!(
            m.iter().map(|x| (x.from, x.to)).collect::<Vec<_>>(),
            [(1, 0), (2, 0)]
        );
        let u = flows(Pattern::Unidirectional, 4).unwrap();
        assert_eq!(
            u.iter().map(|x| (x.from, x.to)).collect::<Vec<_>>(),
            [(0, 2), (0, 3), (1, 2), (1, 3)]
        );
        let c = flows(Pattern::Congestion, 4).unwrap();
        let into = |p| c.iter().filter(|x| x.to == p).map(|x| x.share).sum::<f64>();
        assert_eq!((into(2), into(3)), (1.5, 0.5));
        let b = flows(Pattern::Broadcast, 4).unwrap();
        assert!(b.len() == 1 && b[0].broadcast);
        for (p, n, want) in [
            (Pattern::Congestion, 3, "exactly 4 ports"),
            (Pattern::Congestion, 5, "exactly 4 ports"),
            (Pattern::ManyToOne, 2, "at least 3 ports; 2 given"),
            (Pattern::FullyMeshed, 1, "§5.1) takes at least 2"),
        ] {
            let e = flows(p, n).unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn a_non_blocking_switch_at_full_mesh_forwards_everything_to_its_port() {
        // §5 of the spec's sanity checks: 4 ports, 64 B at 1 Gbit/s, 100 %.
        let line = 1_488_095.0_f64;
        let f = flows(Pattern::FullyMeshed, 4).unwrap();
        let per_flow = (line / 3.0).round() as u64; // one second
        let counts: Vec<FlowCount> = f
            .iter()
            .map(|x| {
                let mut at = vec![0; 4];
                at[x.to] = per_flow;
                count(per_flow, &at)
            })
            .collect();
        let rows = port_figures(&f, &counts, 4, line, 1.0);
        for r in &rows {
            assert_eq!(r.lost, 0);
            assert_eq!(r.flood, 0);
            assert!((r.forwarding_fps - 3.0 * per_flow as f64).abs() < 1.0);
            assert!((r.intended_rx_fps - line).abs() < 1e-6);
        }
        let a = aggregate(&rows);
        assert!((a.forwarding_fps - 5_952_381.0).abs() < 4.0);
        assert_eq!(a.loss_ratio, 0.0);
    }

    #[test]
    fn a_flooded_frame_counts_at_the_port_it_reached_and_as_lost_when_it_missed_its_own() {
        let f = flows(Pattern::OneToMany, 3).unwrap();
        // 0 -> 1: 100 sent, 90 at 1, and all 100 also flooded to 2 (not yet learned).
        // 0 -> 2: 100 sent, 100 at 2.
        let counts = vec![count(100, &[0, 90, 100]), count(100, &[0, 0, 100])];
        let rows = port_figures(&f, &counts, 3, 200.0, 1.0);
        assert_eq!((rows[0].sent, rows[0].lost), (200, 10));
        assert_eq!((rows[1].received, rows[1].flood), (90, 0));
        assert_eq!((rows[2].received, rows[2].flood), (100, 100));
        assert!((rows[0].loss_ratio() - 0.05).abs() < 1e-12);
        let a = aggregate(&rows);
        assert_eq!((a.flood, a.lost), (100, 10));
    }

    #[test]
    fn two_ports_into_one_lose_half_and_a_broadcast_counts_every_delivery() {
        // §5.2: 2 -> 1 at 100 % each on a fair switch: half of every source lost.
        let f = flows(Pattern::ManyToOne, 3).unwrap();
        let counts = vec![count(1000, &[500, 0, 0]), count(1000, &[0, 0, 0])];
        let rows = port_figures(&f, &counts, 3, 1000.0, 1.0);
        assert_eq!(rows[0].forwarding_fps, 500.0);
        assert_eq!(rows[0].intended_rx_fps, 2000.0);
        assert_eq!(rows[1].loss_ratio(), 0.5);
        assert_eq!(rows[2].loss_ratio(), 1.0);
        assert_eq!(aggregate(&rows).loss_ratio, 0.75);
        // §5.10: 1 -> 3; one receiver missed 10 frames.
        let b = flows(Pattern::Broadcast, 4).unwrap();
        let rows = port_figures(&b, &[count(100, &[0, 100, 90, 100])], 4, 100.0, 1.0);
        assert_eq!(rows[0].lost, 10);
        assert!((rows[0].loss_ratio() - 10.0 / 300.0).abs() < 1e-12);
        assert_eq!(rows.iter().map(|r| r.flood).sum::<u64>(), 0);
        assert_eq!(rows[2].received, 90);
    }

    #[test]
    fn congestion_tells_head_of_line_blocking_from_the_overload() {
        // §5.5 at 100 %: C offered 150 % loses its third; D loses nothing.
        let fair = [
            count(1000, &[0, 0, 667, 0]),
            count(1000, &[0, 0, 0, 1000]),
            count(2000, &[0, 0, 1333, 0]),
        ];
        let v = congestion(&fair, 1.0).unwrap();
        assert!((v.congested_loss - 1000.0 / 3000.0).abs() < 1e-3);
        assert!((v.overload_share - 1.0 / 3.0).abs() < 1e-12);
        assert!(!v.head_of_line_blocking);
        let mut blocked = fair.clone();
        blocked[1] = count(1000, &[0, 0, 0, 700]);
        let v = congestion(&blocked, 1.0).unwrap();
        assert!(v.head_of_line_blocking);
        assert!((v.uncongested_loss - 0.3).abs() < 1e-12);
        assert!(congestion(&fair[..2], 1.0).is_none());
    }

    /// A bridge that learns `limit` addresses: the search over `min..=max`.
    fn search_limit(limit: u64, min: u64, max: u64) -> Bisection {
        let mut b = Bisection::count(min, max, 1).unwrap();
        let mut guard = 0;
        while let Some(n) = b.next() {
            b.record(n, n as u64 <= limit);
            guard += 1;
            assert!(guard < 64, "the search does not end");
        }
        b
    }

    #[test]
    fn the_address_search_finds_a_learning_limit_exactly() {
        let b = search_limit(512, 1, 1024);
        assert_eq!(
            b.outcome(),
            Outcome::Found {
                value: 512.0,
                failed: Some(513.0)
            }
        );
        // The spec's check: a search over 1..65,536 with resolution 1 takes 16 trials
        // after max and min.
        let b = search_limit(40_000, 1, 65_536);
        assert_eq!(b.trials.len(), 2 + 16);
        assert!(matches!(b.outcome(), Outcome::Found { value, .. } if value == 40_000.0));
        // Passing at max, failing at min.
        let b = search_limit(5_000, 1, 1024);
        assert_eq!(b.trials.len(), 1);
        assert_eq!(
            b.outcome(),
            Outcome::Found {
                value: 1024.0,
                failed: None
            }
        );
        assert_eq!(
            search_limit(3, 8, 1024).outcome(),
            Outcome::BelowMin { failed: 8.0 }
        );
        assert!(Bisection::count(0, 10, 1).is_err());
        assert!(Bisection::count(10, 9, 1).is_err());
    }

    #[test]
    fn the_rate_search_ends_within_its_width() {
        let mut b = Bisection::rate(1_000.0, 100_000.0, 0.01).unwrap();
        while let Some(r) = b.next() {
            b.record(r, r <= 37_000.0);
        }
        let Outcome::Found { value, failed } = b.outcome() else {
            panic!("found nothing")
        };
        let failed = failed.unwrap();
        assert!(value <= 37_000.0 && failed > 37_000.0);
        assert!((failed - value) / failed <= 0.01);
        assert!(Bisection::rate(0.0, 10.0, 0.01).is_err());
        assert!(Bisection::rate(10.0, 100.0, 1.5).is_err());
    }

    #[test]
    fn an_address_trial_passes_only_with_nothing_flooded_and_everything_delivered() {
        assert!(addresses_learned(512, 512, 0));
        assert!(!addresses_learned(512, 512, 1));
        assert!(!addresses_learned(512, 511, 0));
        assert!(!addresses_learned(0, 0, 0));
    }
}
