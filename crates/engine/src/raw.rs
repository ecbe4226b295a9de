//! Raw-frame trials: a paced generator of whole Ethernet frames and a receiver that counts
//! them by test header, over any [`FrameTx`] / [`FrameRx`] backend.
//!
//! Each frame is a copy of one template built by [`wire::frame::FrameSpec::build`] with its
//! sequence number and transmit time patched in (checksum updated incrementally). The
//! generator follows an absolute schedule (frame n at t0 + n/rate) and reports how far it
//! fell behind; a burst is sent as fast as the backend takes frames. The receiver runs on
//! its own thread (the receive loop of [`crate::multi`], with a one-stream table) until the
//! generator is done and the traffic has drained, and counts only frames of this test and
//! stream: received, duplicates, reordered, late, latency (kernel receive stamp − transmit
//! stamp; one host, one clock).

use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use wire::frame::{FrameLayout, FrameSpec};
use wire::testhdr::TestHeaderRepr;

use crate::clock::RealClock;
use crate::frameio::{FrameRx, FrameTx};
use crate::live::{LiveCounters, LiveSnapshot};
use crate::multi::Ticker;
use crate::pace::{self, Step};
use crate::sys;
use model::clock::{Clock, UnixNanos};
use model::pacing::{self, PaceAction, Pacer, Schedule};
use model::stats::histogram::LatencyHistogram;
use model::stats::intervals::Tick;
use model::stats::slots::{slot_width, TxSlots};
use model::stats::table::StreamTable;
use model::stats::Counters;
use model::stop::Stop;

/// What to send.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RawLoad {
    /// `pps` frames per second for `duration` (or until `count` frames, if given).
    Rate {
        /// Frames per second.
        pps: f64,
        /// How long at most.
        duration: Duration,
        /// How many frames at most.
        count: Option<u64>,
    },
    /// `frames` frames back to back, as fast as the backend takes them; `target_pps` is the
    /// line rate the burst should reach (to tell whether the generator kept up).
    Burst {
        /// Burst length.
        frames: u64,
        /// Line rate for this frame size, frames/s.
        target_pps: f64,
    },
}

impl RawLoad {
    /// How long it sends at most (a burst: a second, for slot sizing).
    pub fn duration(&self) -> Duration {
        match self {
            RawLoad::Rate { duration, .. } => *duration,
            RawLoad::Burst { .. } => Duration::from_secs(1),
        }
    }
}

/// One trial.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawTrialSpec {
    /// Headers of every frame.
    pub frame: FrameSpec,
    /// Frame size with FCS (RFC 2544).
    pub frame_len: usize,
    /// Test id in the test header (frames of other tests are ignored).
    pub test_id: u16,
    /// Stream id.
    pub stream_id: u8,
    /// The load.
    pub load: RawLoad,
    /// After the last frame left, the receiver stops once every frame is counted, or once
    /// none of this trial arrived for this long, and at the latest after
    /// [`crate::multi::MAX_DRAIN`] (RFC 2544 §23 waits 2 s for residual frames).
    pub drain: Duration,
    /// Take the totals every this long (interval rows; `None`: no intervals).
    pub interval: Option<Duration>,
}

/// What a trial measured.
#[derive(Debug, Clone, Default)]
pub struct RawTrialReport {
    /// Frames the backend took (`sent`) and what the receiver counted of this trial's
    /// stream, settled (`lost = sent − received`).
    pub counters: Counters,
    /// Bytes of the distinct frames received (without their FCS).
    pub received_bytes: u64,
    /// From the first to the last frame received (kernel stamps), when any arrived.
    pub rx_span: Option<Duration>,
    /// Other frames the receiver saw (not of this test and stream).
    pub foreign: u64,
    /// Frames the receive socket's kernel buffer dropped.
    pub rx_drops: u64,
    /// From the first to the last frame sent.
    pub elapsed: Duration,
    /// Frames/s actually offered.
    pub offered_pps: f64,
    /// The generator fell behind its schedule (or a burst fell short of line rate).
    pub generator_limited: bool,
    /// Share of the schedule the generator was behind at the end.
    pub behind_ratio: f64,
    /// Lateness of frames against their schedule.
    pub pacing_error: Option<model::stats::histogram::LatencySummary>,
    /// Transmit-to-receive latency of received frames (kernel receive stamps).
    pub latency: LatencyHistogram,
    /// Received frames without a kernel receive stamp (not in `latency`).
    pub unstamped: u64,
    /// Send errors (the backend refused a batch).
    pub send_errors: u64,
    /// The generator threads' CPU time, added up.
    pub tx_cpu: Duration,
    /// The stream's totals at each interval's end (with an interval).
    pub ticks: Vec<Tick>,
    /// Per stream (one per generator thread): its id, the frames sent and the distinct
    /// frames received per slot of send time (with an interval).
    pub slots: Vec<(u8, TxSlots, TxSlots)>,
    /// The wall clock when the generator started.
    pub t0_wall: UnixNanos,
}

/// Runs a trial: a receiver thread on `rx` (if any) and the generator on `tx`.
///
/// # Errors
/// The template does not build, or a backend fails outright.
pub fn run_trial(
    tx: &mut dyn FrameTx,
    rx: Option<&mut dyn FrameRx>,
    spec: &RawTrialSpec,
    stop: &Stop,
) -> io::Result<RawTrialReport> {
    run_trial_threads(&mut [tx], rx, spec, stop)
}

/// What generator `g` of `n` sends: its own stream id (`spec.stream_id + g`, so each keeps
/// its own sequence numbers) and its share of the load ([`share_load`]).
fn share(spec: &RawTrialSpec, g: usize, n: usize) -> RawTrialSpec {
    RawTrialSpec {
        stream_id: spec.stream_id.wrapping_add(g as u8),
        load: share_load(spec.load, g, n),
        ..*spec
    }
}

/// Generator `g`'s share of `load` among `n`: the rate divided evenly, the frames too, the
/// first `count % n` generators one more, so the shares add up to the whole.
fn share_load(load: RawLoad, g: usize, n: usize) -> RawLoad {
    let part = |total: u64| total / n as u64 + u64::from((g as u64) < total % n as u64);
    match load {
        RawLoad::Rate {
            pps,
            duration,
            count,
        } => RawLoad::Rate {
            pps: pps / n as f64,
            duration,
            count: count.map(part),
        },
        RawLoad::Burst { frames, target_pps } => RawLoad::Burst {
            frames: part(frames),
            target_pps: target_pps / n as f64,
        },
    }
}

/// Runs a trial with one generator thread per sender of `txs` (at most 255), each with
/// its share of the load on its own stream ([`share`]), and a receiver thread on `rx` (if
/// any) that counts every stream; the report adds the streams up (the pacing error is the
/// first generator's).
///
/// # Errors
/// The template does not build, or a backend fails outright.
pub fn run_trial_threads(
    txs: &mut [&mut dyn FrameTx],
    rx: Option<&mut dyn FrameRx>,
    spec: &RawTrialSpec,
    stop: &Stop,
) -> io::Result<RawTrialReport> {
    let n = txs.len();
    if n == 0 || n > 255 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "1 to 255 generator threads",
        ));
    }
    let specs: Vec<RawTrialSpec> = (0..n).map(|g| share(spec, g, n)).collect();
    let mut templates = Vec::with_capacity(n);
    for sp in &specs {
        let hdr = TestHeaderRepr::template(sp.test_id, sp.stream_id);
        let mut template = vec![0u8; sp.frame_len];
        let len = sp
            .frame
            .build(sp.frame_len, &hdr, &mut template)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("frame: {e}")))?;
        template.truncate(len);
        templates.push(template);
    }
    let layout = spec
        .frame
        .layout(spec.frame_len)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("frame: {e}")))?;
    let generating = AtomicUsize::new(1);
    let sent_total = AtomicU64::new(u64::MAX);
    let clock = RealClock::new();
    let lives: Vec<Arc<LiveCounters>> = (0..n).map(|_| Arc::default()).collect();
    let t0_ns = Arc::new(AtomicU64::new(u64::MAX));
    let slot_ns = spec.interval.map_or(0, |i| {
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        slot_width(ns(i), ns(spec.load.duration()))
    });
    let ids: Vec<u8> = specs.iter().map(|s| s.stream_id).collect();
    std::thread::scope(|s| {
        let receiver = rx.map(|rx| {
            let (left, total, clock) = (&generating, &sent_total, &clock);
            let mut ticker = spec.interval.map(|i| {
                Ticker::new(
                    i,
                    Arc::clone(&t0_ns),
                    ids.iter().copied().zip(lives.iter().cloned()).collect(),
                )
            });
            let ids = ids.clone();
            s.spawn(move || {
                let mut table = StreamTable::new(spec.test_id, ids).with_slots(slot_ns);
                let drops = crate::multi::receive(
                    rx,
                    &mut table,
                    left,
                    Some(total),
                    spec.drain,
                    clock,
                    stop,
                    ticker.as_mut(),
                )?;
                Ok::<_, io::Error>((table, drops, ticker.map(|t| t.ticks).unwrap_or_default()))
            })
        });
        let t0_wall = clock.wall();
        t0_ns.store(
            u64::try_from(clock.mono().as_nanos()).unwrap_or(u64::MAX),
            Ordering::Release,
        );
        let (layout, clock) = (&layout, &clock);
        let generators: Vec<_> = txs
            .iter_mut()
            .zip(&specs)
            .zip(&templates)
            .zip(&lives)
            .map(|(((tx, sp), template), live)| {
                s.spawn(move || {
                    let mut tx_slots = TxSlots::new(slot_ns);
                    let publish = sp.interval.is_some().then_some(live.as_ref());
                    generate(
                        &mut **tx,
                        sp,
                        template,
                        layout,
                        stop,
                        clock,
                        publish,
                        &mut tx_slots,
                    )
                    .map(|r| (r, tx_slots))
                })
            })
            .collect();
        let mut sent: Vec<io::Result<(RawTrialReport, TxSlots)>> = generators
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(io::Error::other("generator thread panicked")))
            })
            .collect();
        let total: u64 = sent
            .iter()
            .filter_map(|r| r.as_ref().ok())
            .map(|(r, _)| r.counters.sent)
            .sum();
        sent_total.store(total, Ordering::Release);
        generating.store(0, Ordering::Release);
        let mut parts = Vec::with_capacity(n);
        for r in sent.drain(..) {
            parts.push(r?);
        }
        let mut report = combine_generators(&parts);
        report.t0_wall = t0_wall;
        if let Some(h) = receiver {
            let (table, drops, ticks) = h
                .join()
                .map_err(|_| io::Error::other("receiver thread panicked"))??;
            report.ticks = ticks;
            if slot_ns > 0 {
                for ((_, tx_slots), id) in parts.iter().zip(&ids) {
                    if let Some(st) = table.stream(*id) {
                        report.slots.push((*id, tx_slots.clone(), st.slots.clone()));
                    }
                }
            }
            let sent: Vec<(u8, u64)> = ids
                .iter()
                .zip(&parts)
                .map(|(id, (part, _))| (*id, part.counters.sent))
                .collect();
            report.add_reception(&sent, &Reception::of(&table, &ids, drops));
        }
        Ok(report)
    })
}

/// A sender's figures of a trial whose receiver runs elsewhere (serialisable: they travel
/// in the control protocol).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sending {
    /// Frames the backend took.
    pub sent: u64,
    /// From the first to the last frame sent.
    pub elapsed: Duration,
    /// Frames/s actually offered.
    pub offered_pps: f64,
    /// The generator fell behind its schedule.
    pub generator_limited: bool,
    /// Share of the schedule it was behind at the end.
    pub behind_ratio: f64,
    /// Lateness of frames against their schedule.
    pub pacing_error: Option<model::stats::histogram::LatencySummary>,
    /// Batches the backend refused.
    pub send_errors: u64,
    /// The generator's CPU time.
    pub tx_cpu: Duration,
    /// The wall clock when the generator started.
    pub t0_wall: UnixNanos,
}

impl RawTrialReport {
    /// The sender's part of this report.
    pub fn sending(&self) -> Sending {
        Sending {
            sent: self.counters.sent,
            elapsed: self.elapsed,
            offered_pps: self.offered_pps,
            generator_limited: self.generator_limited,
            behind_ratio: self.behind_ratio,
            pacing_error: self.pacing_error,
            send_errors: self.send_errors,
            tx_cpu: self.tx_cpu,
            t0_wall: self.t0_wall,
        }
    }

    /// A report of what a sender elsewhere sent (nothing received yet).
    pub fn sent(s: &Sending) -> Self {
        Self {
            counters: Counters {
                sent: s.sent,
                ..Counters::default()
            },
            elapsed: s.elapsed,
            offered_pps: s.offered_pps,
            generator_limited: s.generator_limited,
            behind_ratio: s.behind_ratio,
            pacing_error: s.pacing_error,
            send_errors: s.send_errors,
            tx_cpu: s.tx_cpu,
            t0_wall: s.t0_wall,
            ..Self::default()
        }
    }
}

/// What a receiver counted of a trial's streams, apart from the sender: the receive half
/// of a trial whose generator runs elsewhere (another host's port). Serialisable, so it
/// travels in the control protocol.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Reception {
    /// Per stream id: what arrived.
    pub streams: Vec<ReceivedStream>,
    /// Per stream id, what arrived of this test's other streams: frames a switch flooded
    /// here, or that were addressed elsewhere (RFC 2889's flood count).
    pub strays: Vec<ReceivedStream>,
    /// Frames not of this test.
    pub foreign: u64,
    /// Frames the receive socket's kernel buffer dropped.
    pub drops: u64,
}

/// What arrived of one stream (its counters not yet settled against what was sent).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReceivedStream {
    /// Stream id.
    pub id: u8,
    /// Received, duplicates, reordered, late.
    pub counters: Counters,
    /// Bytes of the distinct frames (without FCS).
    pub bytes: u64,
    /// Transmit-to-receive latency of the distinct frames with a receive stamp.
    pub latency: LatencyHistogram,
    /// Distinct frames without a receive stamp.
    pub unstamped: u64,
    /// First and last receive stamp.
    pub span: Option<(UnixNanos, UnixNanos)>,
}

impl Reception {
    /// The streams `ids` of `table`, and the test's other streams it saw (strays).
    pub fn of(table: &StreamTable, ids: &[u8], drops: u64) -> Self {
        let received = |id: u8, st: &model::stats::table::StreamRx| ReceivedStream {
            id,
            counters: st.counters(),
            bytes: st.bytes,
            latency: st.latency.clone(),
            unstamped: st.unstamped,
            span: st.span,
        };
        Self {
            streams: ids
                .iter()
                .filter_map(|id| Some(received(*id, table.stream(*id)?)))
                .collect(),
            strays: table.strays().map(|(id, st)| received(id, st)).collect(),
            foreign: table.foreign,
            drops,
        }
    }
}

impl RawTrialReport {
    /// Adds what a receiver counted to this sender's report: each stream settled against
    /// what was sent on it (`sent`: stream id, frames), `lost = sent − received`.
    pub fn add_reception(&mut self, sent: &[(u8, u64)], rx: &Reception) {
        let mut first_last: Option<(UnixNanos, UnixNanos)> = None;
        for st in &rx.streams {
            let Some(&(_, n)) = sent.iter().find(|(id, _)| *id == st.id) else {
                continue;
            };
            let c = st.counters.settle(n);
            self.counters = Counters {
                sent: self.counters.sent,
                ..self.counters.plus(&Counters { sent: 0, ..c })
            };
            self.latency.merge(&st.latency);
            self.unstamped += st.unstamped;
            self.received_bytes += st.bytes;
            if let Some((a, b)) = st.span {
                first_last = Some(first_last.map_or((a, b), |(x, y)| (x.min(a), y.max(b))));
            }
        }
        self.counters.lost = self.counters.sent.saturating_sub(self.counters.received);
        self.rx_span = first_last.map(|(first, last)| last.saturating_sub(first));
        self.foreign = rx.foreign;
        self.rx_drops = rx.drops;
    }
}

/// The receive half of a trial on its own: counts the frames of test `test_id`, streams
/// `ids`, on `rx` until `generating` drops to 0 (the sender, wherever it runs, is done),
/// then until `expected` frames are in (when set, `u64::MAX` until known), nothing
/// arrived for `drain`, or [`crate::multi::MAX_DRAIN`] passed; or until `stop`.
///
/// # Errors
/// The backend fails outright.
pub fn receive_trial(
    rx: &mut dyn FrameRx,
    test_id: u16,
    ids: &[u8],
    drain: Duration,
    generating: &AtomicUsize,
    expected: &AtomicU64,
    stop: &Stop,
) -> io::Result<Reception> {
    let clock = RealClock::new();
    let mut table = StreamTable::new(test_id, ids.to_vec());
    let drops = crate::multi::receive(
        rx,
        &mut table,
        generating,
        Some(expected),
        drain,
        &clock,
        stop,
        None,
    )?;
    Ok(Reception::of(&table, ids, drops))
}

/// The generators' reports as one: frames and errors added up, the longest elapsed time,
/// the offered rate of them all, behind if any was (by the most), the first one's pacing
/// error, their CPU time added up.
fn combine_generators(parts: &[(RawTrialReport, TxSlots)]) -> RawTrialReport {
    let mut out = RawTrialReport::default();
    for (r, _) in parts {
        out.counters.sent += r.counters.sent;
        out.send_errors += r.send_errors;
        out.tx_cpu += r.tx_cpu;
        out.elapsed = out.elapsed.max(r.elapsed);
        out.behind_ratio = out.behind_ratio.max(r.behind_ratio);
        out.generator_limited |= r.generator_limited;
    }
    out.pacing_error = parts.first().and_then(|(r, _)| r.pacing_error);
    out.offered_pps = if out.elapsed.is_zero() {
        0.0
    } else {
        out.counters.sent as f64 / out.elapsed.as_secs_f64()
    };
    out
}

#[allow(clippy::too_many_arguments)]
fn generate(
    tx: &mut dyn FrameTx,
    spec: &RawTrialSpec,
    template: &[u8],
    layout: &FrameLayout,
    stop: &Stop,
    clock: &RealClock,
    live: Option<&LiveCounters>,
    slots: &mut TxSlots,
) -> io::Result<RawTrialReport> {
    let batch_max = tx.batch_max();
    let (schedule, total, duration, target) = match spec.load {
        RawLoad::Rate {
            pps,
            duration,
            count,
        } => (Schedule::per_second(pps), count, duration, Some(pps)),
        RawLoad::Burst { frames, .. } => (
            Schedule::unlimited(),
            Some(frames),
            Duration::from_secs(3600),
            None,
        ),
    };
    let mut pacer = Pacer::new(schedule, batch_max, total);
    let mut report = RawTrialReport::default();
    let mut seq: u64 = 0;
    let len = template.len();
    let mut first_send: Option<Duration> = None;
    let mut last_send = Duration::ZERO;
    let elapsed = pace::drive(clock, clock.mono(), duration, stop, |elapsed| {
        let k = match pacer.poll(elapsed) {
            PaceAction::Send(k) => k,
            wait => return Step::from_wait(wait),
        };
        let now = clock.wall().0;
        let base = seq;
        let mut fill = |i: usize, buf: &mut [u8]| {
            buf[..len].copy_from_slice(template);
            layout.write_seq_ts(&mut buf[..len], base + i as u64, now);
            len
        };
        match tx.send_frames(k, len, &mut fill) {
            Ok(0) | Err(_) => {
                report.send_errors += 1;
                std::thread::yield_now();
            }
            Ok(n) => {
                first_send.get_or_insert(elapsed);
                last_send = elapsed;
                pacer.sent(n, elapsed);
                seq += n as u64;
                slots.record(UnixNanos(now), n as u64);
                if let Some(live) = live {
                    live.publish(&LiveSnapshot {
                        counters: Counters {
                            sent: seq,
                            ..Counters::default()
                        },
                        bytes: seq * len as u64,
                        ..LiveSnapshot::default()
                    });
                }
            }
        }
        Step::Again
    });
    tx.flush()?;
    let span = last_send.saturating_sub(first_send.unwrap_or(last_send));
    report.counters.sent = seq;
    report.elapsed = match spec.load {
        RawLoad::Rate { .. } => elapsed,
        RawLoad::Burst { .. } => span,
    };
    report.offered_pps = if report.elapsed.is_zero() {
        0.0
    } else {
        seq as f64 / report.elapsed.as_secs_f64()
    };
    match (spec.load, target) {
        (RawLoad::Rate { .. }, Some(_)) => {
            report.behind_ratio = pacer.behind_ratio(elapsed);
            report.generator_limited = report.behind_ratio > pacing::GENERATOR_LIMITED_THRESHOLD;
            report.pacing_error = pacer.pacing_error().summary();
        }
        (RawLoad::Burst { target_pps, frames }, _) => {
            // A burst of one batch or less has no measurable rate; a longer one must reach
            // line rate to be back-to-back.
            report.generator_limited = frames > batch_max as u64
                && report.offered_pps < target_pps * (1.0 - pacing::GENERATOR_LIMITED_THRESHOLD);
        }
        _ => {}
    }
    report.tx_cpu = sys::thread_cpu_time();
    Ok(report)
}

#[cfg(test)]
mod test {
    use super::*;

    /// A receiver's reception reports its own streams and, apart, the test's other
    /// streams that reached it (a switch's floods), each with its own counters; another
    /// test's frames are foreign.
    #[test]
    fn a_reception_reports_the_tests_other_streams_apart() {
        let mut table = StreamTable::new(7, [1]);
        let h = |test_id, stream_id, seq| TestHeaderRepr {
            flags: wire::testhdr::TestFlags::empty(),
            test_id,
            stream_id,
            seq,
            tx_ns: 10,
        };
        for seq in 0..5 {
            table.on_frame(Some(&h(7, 1, seq)), 100, Some(UnixNanos(20)));
        }
        for seq in [0, 1, 1, 2] {
            table.on_frame(Some(&h(7, 3, seq)), 60, Some(UnixNanos(30)));
        }
        table.on_frame(Some(&h(8, 1, 0)), 60, None);
        let r = Reception::of(&table, &[1], 2);
        assert_eq!(r.streams.len(), 1);
        assert_eq!(r.streams[0].counters.received, 5);
        assert_eq!(r.strays.len(), 1);
        let stray = &r.strays[0];
        assert_eq!(
            (stray.id, stray.counters.received, stray.counters.duplicates),
            (3, 3, 1)
        );
        assert_eq!((stray.bytes, stray.latency.len()), (180, 3));
        assert_eq!((r.foreign, r.drops), (1, 2));
    }

    #[test]
    fn generators_share_the_load_and_the_shares_add_up() {
        let rate = RawLoad::Rate {
            pps: 90_000.0,
            duration: Duration::from_secs(2),
            count: Some(10),
        };
        let shares: Vec<RawLoad> = (0..3).map(|g| share_load(rate, g, 3)).collect();
        let counts: Vec<u64> = shares
            .iter()
            .map(|l| match l {
                RawLoad::Rate { pps, count, .. } => {
                    assert_eq!(*pps, 30_000.0);
                    count.unwrap_or(0)
                }
                RawLoad::Burst { .. } => panic!("{l:?}"),
            })
            .collect();
        assert_eq!(counts, vec![4, 3, 3]);
        let burst = RawLoad::Burst {
            frames: 5,
            target_pps: 1e6,
        };
        assert_eq!(
            share_load(burst, 1, 2),
            RawLoad::Burst {
                frames: 2,
                target_pps: 5e5
            }
        );
        assert_eq!(share_load(rate, 0, 1), rate);
    }
}

/// What a reflector did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Reflected {
    /// Frames of the test turned around and handed back to the port.
    pub reflected: u64,
    /// Frames of the test the port did not take back (its queue full, a send error).
    pub not_sent: u64,
    /// Other frames (not of the test, or not over IP), left alone.
    pub foreign: u64,
    /// Frames the port's receive buffer dropped before the reflector read them.
    pub rx_drops: u64,
    /// Batches the port's sender refused.
    #[serde(default)]
    pub send_errors: u64,
}

/// A far-end loopback on one port, as hardware testers loop a far end: every frame of
/// test `test_id` that arrives on `rx` is turned around ([`wire::frame::turn_around`])
/// and sent back on `tx` (the same port), until `stop`. Each receive call's frames
/// leave together as soon as it returns: with recvmmsg on both sides (as the controller
/// asks by default) a frame waits for no batch to fill; a ring receiver hands its frames
/// over a block at a time (every 2 ms at the latest). Frames longer than a sender's
/// slot are not sent back, and counted.
///
/// # Errors
/// A backend fails outright.
pub fn reflect(
    rx: &mut dyn FrameRx,
    tx: &mut dyn FrameTx,
    test_id: u16,
    stop: &Stop,
) -> io::Result<Reflected> {
    let mut out = Reflected::default();
    let _ = rx.take_drops();
    let mut frames: Vec<Vec<u8>> = Vec::new();
    while !stop.is_raised() {
        let mut used = 0usize;
        rx.recv_frames(Duration::from_millis(10), &mut |frame, _| {
            if used == frames.len() {
                frames.push(Vec::with_capacity(frame.len()));
            }
            let f = &mut frames[used];
            f.clear();
            f.extend_from_slice(frame);
            match wire::frame::turn_around(f) {
                // Longer than a sender's slot: not sent back, counted.
                Some(h) if h.test_id == test_id && f.len() > crate::frameio::MAX_FRAME => {
                    out.not_sent += 1;
                }
                Some(h) if h.test_id == test_id => used += 1,
                _ => out.foreign += 1,
            }
        })?;
        let mut done = 0;
        while done < used {
            let batch = (used - done).min(tx.batch_max());
            let longest = frames[done..done + batch]
                .iter()
                .map(Vec::len)
                .max()
                .unwrap_or(0);
            let base = done;
            let sent = match tx.send_frames(batch, longest, &mut |i, buf| {
                let f = &frames[base + i];
                let n = f.len().min(buf.len());
                buf[..n].copy_from_slice(&f[..n]);
                n
            }) {
                Ok(n) => n,
                Err(_) => {
                    out.send_errors += 1;
                    0
                }
            };
            if sent == 0 {
                break;
            }
            done += sent;
        }
        out.reflected += done as u64;
        out.not_sent += (used - done) as u64;
    }
    let _ = tx.flush();
    out.rx_drops = rx.take_drops();
    Ok(out)
}
