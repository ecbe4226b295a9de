//! Many streams at once (a SmartBits-style profile): one generator thread per sending
//! interface interleaves its streams, each on its own absolute schedule and between its own
//! start and stop offsets; one receiver thread per receiving interface counts every
//! stream apart ([`StreamTable`]).
//!
//! A stream cycles through its frame templates (a fixed size, a list of sizes, or IMIX),
//! each a complete frame whose sequence number and transmit time are patched in.

use std::io;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use wire::frame::FrameLayout;

use crate::clock::RealClock;
use crate::frameio::{FrameRx, FrameTx};
use crate::live::{LiveCounters, LiveSnapshot};
use crate::pace::{self, Step};
use model::clock::{Clock, UnixNanos};
use model::pacing::{self, PaceAction, Pacer, Schedule};
use model::stats::intervals::{StreamTotals, Tick};
use model::stats::slots::TxSlots;
use model::stats::table::StreamTable;
use model::stats::Counters;
use model::stop::{RaiseOnDrop, Stop};
use model::wait::{Poll, Wait};

/// The longest a receiver waits for residual frames after the generators finished (RFC
/// 2544 §23 waits 2 s).
pub const MAX_DRAIN: Duration = Duration::from_secs(2);

/// Where to patch sequence number and transmit time into a template.
#[derive(Debug, Clone, Copy)]
pub enum Patch {
    /// An IP frame: the test header after the L4 header, L4 checksum updated.
    L4(FrameLayout),
    /// A raw EtherType frame: the test header at this offset, no checksum.
    L2(usize),
}

impl Patch {
    /// A raw EtherType test frame of `len` bytes (FCS included) from `eth`, behind
    /// `vlan`'s 802.1Q tag when given, its test header `hdr` right after the EtherType
    /// ([`wire::frame::build_l2`]), and where a sender patches it.
    ///
    /// # Errors
    /// As [`wire::frame::build_l2`]: a length too short for the headers, a bad tag.
    pub fn l2_frame(
        eth: &wire::ethernet::EthernetRepr,
        vlan: Option<&wire::vlan::VlanRepr>,
        len: usize,
        hdr: &wire::testhdr::TestHeaderRepr,
    ) -> wire::Result<(Vec<u8>, Self)> {
        let mut buf = vec![0u8; len];
        let n = wire::frame::build_l2(eth, vlan, len, hdr, &mut buf)?;
        buf.truncate(n);
        let at = wire::ethernet::HEADER_LEN + vlan.map_or(0, |_| wire::vlan::HEADER_LEN);
        Ok((buf, Self::L2(at)))
    }

    fn apply(&self, frame: &mut [u8], seq: u64, tx_ns: u64) {
        match self {
            Patch::L4(l) => l.write_seq_ts(frame, seq, tx_ns),
            Patch::L2(off) => wire::testhdr::write_seq_ts(&mut frame[*off..], seq, tx_ns),
        }
    }
}

/// One stream to send.
pub struct StreamTx {
    /// Stream id in the test header (unique in the run).
    pub stream_id: u8,
    /// Frame templates and where to patch them, built with this stream's id.
    pub templates: Vec<(Vec<u8>, Patch)>,
    /// Template index of frame n is `pattern[n % len]`.
    pub pattern: Vec<usize>,
    /// Frames per second.
    pub pps: f64,
    /// When it starts, after the run's start.
    pub start: Duration,
    /// When it stops.
    pub stop: Duration,
    /// It stops after this many frames, if it gets there before its stop.
    pub count: Option<u64>,
    /// What it sent so far, for the interval ticks.
    pub live: Arc<LiveCounters>,
    /// Count frames per slot of this many ns of send time (0: do not).
    pub slot_ns: u64,
}

/// What one stream sent.
#[derive(Debug, Clone, Default)]
pub struct StreamSent {
    /// Stream id.
    pub stream_id: u8,
    /// Frames sent.
    pub sent: u64,
    /// Their bytes (no FCS).
    pub bytes: u64,
    /// Time from its start to its stop (or to when the run was stopped).
    pub active: Duration,
    /// Share of its schedule it was behind at the end.
    pub behind_ratio: f64,
    /// It fell behind its schedule.
    pub generator_limited: bool,
    /// Frames per slot of send time.
    pub slots: TxSlots,
}

/// Sends `streams` on `tx` until each has reached its stop offset (or `stop` is raised).
pub fn generate(
    tx: &mut dyn FrameTx,
    streams: &[StreamTx],
    clock: &RealClock,
    t0: Duration,
    stop: &Stop,
) -> io::Result<Vec<StreamSent>> {
    let batch = tx.batch_max();
    let mut pacers: Vec<Pacer> = streams
        .iter()
        .map(|s| Pacer::new(Schedule::per_second(s.pps), batch, s.count))
        .collect();
    let mut out: Vec<StreamSent> = streams
        .iter()
        .map(|s| StreamSent {
            stream_id: s.stream_id,
            slots: TxSlots::new(s.slot_ns),
            ..StreamSent::default()
        })
        .collect();
    let max_len = streams
        .iter()
        .flat_map(|s| s.templates.iter().map(|t| t.0.len()))
        .max()
        .unwrap_or(64);
    let end = streams.iter().map(|s| s.stop).max().unwrap_or_default();
    pace::drive(clock, t0, end, stop, |elapsed| {
        // The earliest time any stream wants to run again.
        let mut next: Option<Duration> = None;
        let mut soonest = |at: Duration| next = Some(next.map_or(at, |w| w.min(at)));
        for (i, s) in streams.iter().enumerate() {
            if elapsed < s.start {
                soonest(s.start);
                continue;
            }
            if elapsed >= s.stop {
                continue;
            }
            let local = elapsed - s.start;
            match pacers[i].poll(local) {
                PaceAction::Send(k) => {
                    let now = clock.wall().0;
                    let base = out[i].sent;
                    let template =
                        |n: u64| &s.templates[s.pattern[(n % s.pattern.len() as u64) as usize]];
                    let mut fill = |j: usize, buf: &mut [u8]| {
                        let n = base + j as u64;
                        let (t, patch) = template(n);
                        buf[..t.len()].copy_from_slice(t);
                        patch.apply(&mut buf[..t.len()], n, now);
                        t.len()
                    };
                    if let Ok(n) = tx.send_frames(k, max_len, &mut fill) {
                        if n > 0 {
                            pacers[i].sent(n, local);
                            out[i].sent += n as u64;
                            out[i].bytes += (base..base + n as u64)
                                .map(|f| template(f).0.len() as u64)
                                .sum::<u64>();
                            out[i].slots.record(UnixNanos(now), n as u64);
                            s.live.publish(&LiveSnapshot {
                                counters: Counters {
                                    sent: out[i].sent,
                                    ..Counters::default()
                                },
                                bytes: out[i].bytes,
                                ..LiveSnapshot::default()
                            });
                        }
                    }
                    soonest(elapsed);
                }
                PaceAction::Wait(until) => soonest(s.start + until),
                PaceAction::Done => {}
            }
        }
        match next {
            Some(at) if at <= elapsed => Step::Again,
            Some(at) => Step::WaitUntil(at),
            None => Step::Done,
        }
    });
    tx.flush()?;
    let elapsed = clock.mono().saturating_sub(t0);
    for (i, s) in streams.iter().enumerate() {
        let active = elapsed.min(s.stop).saturating_sub(s.start);
        out[i].active = active;
        out[i].behind_ratio = pacers[i].behind_ratio(active);
        out[i].generator_limited = out[i].behind_ratio > pacing::GENERATOR_LIMITED_THRESHOLD;
    }
    Ok(out)
}

/// The test header of a frame: after the L4 header of an IP frame, or right after the
/// EtherType (and an 802.1Q tag) of a raw frame of any other EtherType. A frame that
/// still carries an IEEE 802.1CB R-TAG is read behind the tag.
pub fn test_header(frame: &[u8]) -> Option<wire::testhdr::TestHeaderRepr> {
    test_header_and_rtag(frame).0
}

/// [`test_header`], and whether the frame carries an R-TAG (decoded once for both).
fn test_header_and_rtag(frame: &[u8]) -> (Option<wire::testhdr::TestHeaderRepr>, bool) {
    match frer::rtag::decode(frame) {
        // Drop the tag without copying: start the view LEN octets later, so the EtherType
        // behind the tag sits where an untagged frame has its own (the MACs the view then
        // shows are meaningless, and the test header does not need them).
        Some((_, at)) => (
            (at + frer::rtag::LEN)
                .checked_sub(12)
                .and_then(|start| frame.get(start..))
                .and_then(test_header_untagged),
            true,
        ),
        None => (test_header_untagged(frame), false),
    }
}

fn test_header_untagged(frame: &[u8]) -> Option<wire::testhdr::TestHeaderRepr> {
    if let Some(h) = wire::frame::parse_frame(frame).ok().and_then(|p| p.test) {
        return Some(h);
    }
    let ethertype = u16::from_be_bytes([*frame.get(12)?, *frame.get(13)?]);
    let off = if ethertype == 0x8100 { 18 } else { 14 };
    let inner = u16::from_be_bytes([*frame.get(off - 2)?, *frame.get(off - 1)?]);
    if inner == 0x0800 || inner == 0x86DD {
        return None;
    }
    wire::testhdr::parse_fast(frame.get(off..)?)
}

/// Takes every stream's totals at the end of each interval of a run: the generators'
/// from their live counters, the receiver's from its table.
///
/// A tick's `end` is when its totals were read, not when it was due: a receive loop held up
/// on a busy machine reads late, and the totals it reads then (sent and received alike)
/// belong to the interval that ends when they were read. Due ends stay on the `every` grid;
/// a loop late by more than an interval takes one tick for the intervals it missed.
pub struct Ticker {
    every: Duration,
    /// The next due end, from the start.
    next: Duration,
    /// The run's start on the receiver's monotonic clock, ns (`u64::MAX` until known).
    t0_ns: Arc<AtomicU64>,
    sent: Vec<(u8, Arc<LiveCounters>)>,
    done: bool,
    /// The ticks taken.
    pub ticks: Vec<Tick>,
}

impl Ticker {
    /// Ticks every `every` from the start the generator stores in `t0_ns` (monotonic ns
    /// of the shared clock), reading what the streams `sent` sent.
    pub fn new(every: Duration, t0_ns: Arc<AtomicU64>, sent: Vec<(u8, Arc<LiveCounters>)>) -> Self {
        let every = every.max(Duration::from_millis(10));
        Ticker {
            every,
            next: every,
            t0_ns,
            sent,
            done: false,
            ticks: Vec::new(),
        }
    }

    fn t0(&self) -> Option<Duration> {
        match self.t0_ns.load(Ordering::Acquire) {
            u64::MAX => None,
            ns => Some(Duration::from_nanos(ns)),
        }
    }

    fn take(&mut self, end: Duration, table: &StreamTable) {
        let streams = table
            .streams()
            .map(|(id, rx)| {
                let tx = self
                    .sent
                    .iter()
                    .find(|(i, _)| *i == id)
                    .map(|(_, l)| l.snapshot())
                    .unwrap_or_default();
                StreamTotals {
                    id,
                    sent: tx.counters.sent,
                    sent_bytes: tx.bytes,
                    received: rx.counters(),
                    received_bytes: rx.bytes,
                    latency: rx.buckets.reading(),
                }
            })
            .collect();
        self.ticks.push(Tick { end, streams });
    }

    /// Takes the tick due by `now` (monotonic), ending now.
    fn poll(&mut self, now: Duration, table: &StreamTable) {
        let Some(t0) = self.t0().filter(|_| !self.done) else {
            return;
        };
        let at = now.saturating_sub(t0);
        if at < self.next {
            return;
        }
        self.take(at, table);
        while self.next <= at {
            self.next += self.every;
        }
    }

    /// The generators are done at `now`: the last, partial interval ends here (what still
    /// arrives is in the totals only); less than a tenth of an interval joins the one before.
    fn finish(&mut self, now: Duration, table: &StreamTable) {
        self.poll(now, table);
        if let Some(t0) = self.t0().filter(|_| !self.done) {
            let end = now.saturating_sub(t0);
            let last = self.ticks.last().map_or(Duration::ZERO, |t| t.end);
            if !self.ticks.is_empty() && end.saturating_sub(last) < self.every / 10 {
                // A sliver after the last tick (the generators' last batch) joins the last
                // interval, which then ends when they did.
                self.ticks.pop();
            }
            self.take(end.max(last), table);
        }
        self.done = true;
    }
}

/// Counts frames on `rx` into `table` until every generator is done and the traffic has
/// drained: every frame of `expected` (the total sent, once known) is counted, or none
/// arrived for `drain`, or [`MAX_DRAIN`] passed. Returns the kernel's receive drops.
#[allow(clippy::too_many_arguments)]
pub fn receive(
    rx: &mut dyn FrameRx,
    table: &mut StreamTable,
    generators_left: &AtomicUsize,
    expected: Option<&AtomicU64>,
    drain: Duration,
    clock: &RealClock,
    stop: &Stop,
    mut ticker: Option<&mut Ticker>,
) -> io::Result<u64> {
    let _ = rx.take_drops();
    let mut done_at: Option<Duration> = None;
    let mut last = clock.mono();
    loop {
        let now = clock.mono();
        if let Some(t) = ticker.as_deref_mut() {
            t.poll(now, table);
        }
        if done_at.is_none() && generators_left.load(Ordering::Acquire) == 0 {
            done_at = Some(now);
            if let Some(t) = ticker.as_deref_mut() {
                t.finish(now, table);
            }
        }
        if let Some(d) = done_at {
            let all_in =
                expected.is_some_and(|e| table.total_settled() >= e.load(Ordering::Acquire));
            if all_in
                || now.saturating_sub(last.max(d)) >= drain
                || now.saturating_sub(d) >= MAX_DRAIN
            {
                break;
            }
        }
        if stop.is_raised() {
            break;
        }
        let before = table.total_received();
        let mut on_frame = |frame: &[u8], ts| {
            table.on_frame(test_header(frame).as_ref(), frame.len(), ts);
        };
        rx.recv_frames(Duration::from_millis(10), &mut on_frame)?;
        if table.total_received() != before {
            last = clock.mono();
        }
    }
    Ok(rx.take_drops())
}

/// What one receiver of [`capture`] saw.
pub struct Capture {
    /// Test frames, in arrival order, with `path` = the receiver's index.
    pub arrivals: Vec<model::stats::paths::Arrival>,
    /// Frames without a test header, or handshake datagrams.
    pub foreign: u64,
    /// Frames the kernel dropped before they were read.
    pub kernel_drops: u64,
    /// The capture stopped keeping arrivals at its limit.
    pub truncated: bool,
}

/// Captures test frames on every receiver (one thread each) for `duration` or until
/// `stop`, keeping at most `limit` arrivals per receiver, for [`model::stats::paths`].
///
/// # Errors
/// A receiver fails.
pub fn capture(
    receivers: Vec<&mut dyn FrameRx>,
    duration: Duration,
    limit: usize,
    stop: &Stop,
) -> io::Result<Vec<Capture>> {
    let clock = RealClock::new();
    let end = clock.mono() + duration;
    std::thread::scope(|s| {
        let handles: Vec<_> = receivers
            .into_iter()
            .enumerate()
            .map(|(path, rx)| {
                let clock = &clock;
                s.spawn(move || {
                    let _ = rx.take_drops();
                    let mut c = Capture {
                        arrivals: Vec::new(),
                        foreign: 0,
                        kernel_drops: 0,
                        truncated: false,
                    };
                    while clock.mono() < end && !stop.is_raised() {
                        rx.recv_frames(Duration::from_millis(10), &mut |frame, ts| {
                            // Handshake datagrams (CONTROL) carry a test header too, with
                            // sequence number 0: they are not part of the stream.
                            let (h, rtag) = test_header_and_rtag(frame);
                            let Some(h) =
                                h.filter(|h| !h.flags.contains(wire::testhdr::TestFlags::CONTROL))
                            else {
                                c.foreign += 1;
                                return;
                            };
                            if c.arrivals.len() >= limit {
                                c.truncated = true;
                                return;
                            }
                            c.arrivals.push(model::stats::paths::Arrival {
                                path: path as u8,
                                test_id: h.test_id,
                                stream_id: h.stream_id,
                                seq: h.seq,
                                rx_ns: ts.map(|t| t.0),
                                rtag,
                            });
                        })?;
                    }
                    c.kernel_drops = rx.take_drops();
                    Ok::<_, io::Error>(c)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| io::Error::other("capture thread panicked"))?
            })
            .collect()
    })
}

/// Everything a run measured.
pub struct MultiReport {
    /// Per sending interface, what each of its streams sent.
    pub sent: Vec<Vec<StreamSent>>,
    /// Per receiving interface, its table and the kernel's drops.
    pub received: Vec<(StreamTable, u64)>,
    /// Per receiving interface, its streams' totals at each interval's end (none without
    /// an interval).
    pub ticks: Vec<Vec<Tick>>,
    /// The wall clock at the run's start (the generators' t0).
    pub t0_wall: UnixNanos,
}

/// Runs `groups` (a sender and its streams) and `receivers` (a receiver and its table)
/// together; streams start at the same t0. The backends are borrowed, so a caller can run
/// one trial after another on the same sockets.
pub fn run(
    groups: Vec<(&mut dyn FrameTx, Vec<StreamTx>)>,
    receivers: Vec<(&mut dyn FrameRx, StreamTable)>,
    drain: Duration,
    interval: Option<Duration>,
    stop: &Stop,
) -> io::Result<MultiReport> {
    run_with_remote(groups, Vec::new(), receivers, drain, interval, stop)
}

/// A sender elsewhere (a server's lent port): runs its streams when called, and returns
/// what each sent. It starts when its server has the request: up to a round trip and the
/// time to build its frames after the local t0.
/// It is given the run's halt: raised when the user stops the run or another sender
/// failed, it should stop (and fail with [`io::ErrorKind::Interrupted`]).
pub type RemoteSender<'a> = Box<dyn FnOnce(&Stop) -> io::Result<Vec<StreamSent>> + Send + 'a>;

/// Counts a sender out of `left` when dropped: however it ends (a panic too), the
/// receivers stop waiting for it.
struct Leaving<'a>(&'a AtomicUsize);

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// [`run`] with senders elsewhere besides the local `groups`: the receivers count until
/// every sender, local or remote, is done. `sent` lists the local groups first, then the
/// remote ones in order. A sender or receiver that fails stops the others when there are
/// remote senders (its error is the run's), as `stop` does.
pub fn run_with_remote(
    groups: Vec<(&mut dyn FrameTx, Vec<StreamTx>)>,
    remote: Vec<RemoteSender<'_>>,
    receivers: Vec<(&mut dyn FrameRx, StreamTable)>,
    drain: Duration,
    interval: Option<Duration>,
    stop: &Stop,
) -> io::Result<MultiReport> {
    let clock = RealClock::new();
    let left = AtomicUsize::new(groups.len() + remote.len());
    // Every generator starts at the same t0, once the receivers listen.
    let t0 = clock.mono() + Duration::from_millis(20);
    let t0_wall = UnixNanos(clock.wall().0 + 20_000_000);
    let t0_ns = Arc::new(AtomicU64::new(
        u64::try_from(t0.as_nanos()).unwrap_or(u64::MAX),
    ));
    let lives: Vec<(u8, Arc<LiveCounters>)> = groups
        .iter()
        .flat_map(|(_, streams)| streams.iter().map(|s| (s.stream_id, Arc::clone(&s.live))))
        .collect();
    // With remote senders, the local ones stop on `stop` or on a remote failure.
    let (halt, ended) = (Stop::new(), Stop::new());
    let has_remote = !remote.is_empty();
    let user_stop = stop;
    let stop: &Stop = if has_remote { &halt } else { user_stop };
    std::thread::scope(|s| {
        // The watcher below ends with the scope (a panic too).
        let _ended = RaiseOnDrop::new(&ended);
        if has_remote {
            let (halt, ended, outer, clock) = (&halt, &ended, user_stop, &clock);
            s.spawn(move || {
                Wait::on(clock).or_stop(ended).poll(|| {
                    if outer.is_raised() {
                        halt.raise();
                        Poll::Ready(())
                    } else {
                        Poll::Wait(Duration::from_millis(5))
                    }
                })
            });
        }
        let rx_handles: Vec<_> = receivers
            .into_iter()
            .map(|(rx, mut table)| {
                let (left, clock, halt) = (&left, &clock, &halt);
                let mut ticker =
                    interval.map(|i| Ticker::new(i, Arc::clone(&t0_ns), lives.clone()));
                s.spawn(move || {
                    // With remote senders, a local sender or receiver that fails or panics
                    // halts the others too, as a failing remote sender does (without them
                    // nothing reads `halt`).
                    let mut failing = RaiseOnDrop::new(halt);
                    let drops = receive(
                        rx,
                        &mut table,
                        left,
                        None,
                        drain,
                        clock,
                        stop,
                        ticker.as_mut(),
                    )?;
                    failing.disarm();
                    let ticks = ticker.map(|t| t.ticks).unwrap_or_default();
                    Ok::<_, io::Error>((table, drops, ticks))
                })
            })
            .collect();
        let tx_handles: Vec<_> = groups
            .into_iter()
            .map(|(tx, streams)| {
                let (left, clock, halt) = (&left, &clock, &halt);
                s.spawn(move || {
                    let _leaving = Leaving(left);
                    let mut failing = RaiseOnDrop::new(halt);
                    let r = generate(tx, &streams, clock, t0, stop);
                    if r.is_ok() {
                        failing.disarm();
                    }
                    r
                })
            })
            .collect();
        let remote_handles: Vec<_> = remote
            .into_iter()
            .map(|send| {
                let (left, halt) = (&left, &halt);
                s.spawn(move || {
                    let _leaving = Leaving(left);
                    let mut failing = RaiseOnDrop::new(halt);
                    let r = send(halt);
                    if r.is_ok() {
                        failing.disarm();
                    }
                    r
                })
            })
            .collect();
        let mut sent = Vec::new();
        let mut failed: Option<io::Error> = None;
        // The cause, not a sender it stopped: an error that is not an interruption wins.
        let keep = |e: io::Error, failed: &mut Option<io::Error>| match failed {
            Some(f) if f.kind() != io::ErrorKind::Interrupted => {}
            _ => *failed = Some(e),
        };
        for h in tx_handles.into_iter().chain(remote_handles) {
            match h.join() {
                Ok(Ok(x)) => sent.push(x),
                Ok(Err(e)) => keep(e, &mut failed),
                Err(_) => keep(io::Error::other("generator thread panicked"), &mut failed),
            }
        }
        let mut received = Vec::new();
        let mut ticks = Vec::new();
        for h in rx_handles {
            match h.join() {
                Ok(Ok((table, drops, t))) => {
                    received.push((table, drops));
                    ticks.push(t);
                }
                Ok(Err(e)) => keep(e, &mut failed),
                Err(_) => keep(io::Error::other("receiver thread panicked"), &mut failed),
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(MultiReport {
            sent,
            received,
            ticks,
            t0_wall,
        })
    })
}

#[cfg(test)]
mod test {
    use super::*;
    use model::wait::Polled;

    /// A port that fails its first receive (a link gone down).
    struct Broken;

    impl FrameRx for Broken {
        fn name(&self) -> &'static str {
            "broken"
        }
        fn recv_frames(
            &mut self,
            _timeout: Duration,
            _on_frame: &mut dyn FnMut(&[u8], Option<UnixNanos>),
        ) -> io::Result<usize> {
            Err(io::Error::other("link down"))
        }
        fn take_drops(&mut self) -> u64 {
            0
        }
    }

    /// A remote sender that runs until the run's halt is raised (bounded: 10 s), and
    /// records whether it was.
    fn until_halted(halted: &Stop) -> RemoteSender<'_> {
        Box::new(move |halt: &Stop| {
            let waited = Wait::on(&RealClock::new())
                .at_most(Duration::from_secs(10))
                .or_stop(halt)
                .poll(|| Poll::<()>::Wait(Duration::from_millis(1)));
            if waited == Polled::Stopped {
                halted.raise();
                return Err(io::Error::new(io::ErrorKind::Interrupted, "halted"));
            }
            Ok(Vec::new())
        })
    }

    /// Runs `remote` and `receivers` (no local senders) until they fail: the run's error,
    /// and whether the sender from [`until_halted`] was halted.
    fn failure(
        fails: Option<RemoteSender<'_>>,
        receivers: Vec<(&mut dyn FrameRx, StreamTable)>,
        user_stop: bool,
    ) -> (io::Error, bool) {
        let (stop, halted) = (Stop::new(), Stop::new());
        if user_stop {
            stop.raise();
        }
        let mut remote = vec![until_halted(&halted)];
        remote.extend(fails);
        let e = run_with_remote(Vec::new(), remote, receivers, Duration::ZERO, None, &stop)
            .err()
            .expect("the run fails");
        (e, halted.is_raised())
    }

    #[test]
    fn a_failing_remote_sender_halts_the_others_and_is_the_runs_error() {
        let fails: RemoteSender<'_> = Box::new(|_| Err(io::Error::other("server gone")));
        let (e, halted) = failure(Some(fails), Vec::new(), false);
        assert_eq!(e.to_string(), "server gone");
        assert!(halted);
    }

    #[test]
    fn a_failing_local_port_halts_the_remote_senders() {
        let mut port = Broken;
        let rx = vec![(&mut port as &mut dyn FrameRx, StreamTable::new(1, [1]))];
        let (e, halted) = failure(None, rx, false);
        assert_eq!(e.to_string(), "link down");
        assert!(halted);
    }

    #[test]
    fn a_user_stop_halts_the_remote_senders() {
        let (e, halted) = failure(None, Vec::new(), true);
        assert_eq!(e.kind(), io::ErrorKind::Interrupted);
        assert!(halted);
    }
}
