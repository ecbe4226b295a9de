//! UDP streams in iperf3's format (`wire::iperf3`): a paced sender that stamps each
//! datagram with the send time and a count from 1, and a receiver that runs wirebench's own
//! accounting on what arrives (exact loss, duplicates, reordering per RFC 4737, RFC 3550
//! jitter; one-way latency when the caller says the clocks are shared).
//!
//! Each stream has a connected socket of its own (iperf3 tells streams apart by socket, not
//! by header). The iperf3 handshake (`control::iperf3`) happens before these run.

use std::io;
use std::net::UdpSocket;
use std::time::Duration;

use model::clock::Clock;
use model::pacing::{PaceAction, Pacer, Schedule};
use model::spec::Rate;
use model::stats::receiver::{RxSnapshot, StreamReceiver};
use model::stats::seq::SeqTracker;
use model::stop::Stop;
use wire::iperf3::Iperf3Header;

use crate::clock::RealClock;
use crate::live::{LiveCounters, LiveSnapshot};
use crate::pace::{self, Step};

/// How long a receiver waits for stragglers after its duration.
const DRAIN: Duration = Duration::from_millis(300);
/// Reordering window of the sequence accounting.
const WINDOW: u64 = 65_536;

/// What an iperf3-format UDP sender does.
#[derive(Debug, Clone)]
pub struct Iperf3SendConfig {
    /// Payload bytes per datagram (at least the header).
    pub len: usize,
    /// Offered load.
    pub rate: Rate,
    /// How long to send.
    pub duration: Duration,
    /// 64-bit packet counters.
    pub counters_64bit: bool,
    /// Datagrams to send before stopping (`-n`, `-k`); `None` sends for the duration.
    pub packets: Option<u64>,
}

/// What a sender did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Iperf3SendReport {
    /// Datagrams sent.
    pub packets: u64,
    /// Payload bytes sent.
    pub bytes: u64,
    /// First send to the end.
    pub elapsed: Duration,
    /// Send errors (datagrams the kernel refused).
    pub errors: u64,
    /// Sending stopped because the receiver's port is closed: the kernel reported a port
    /// unreachable for an earlier datagram (`ECONNREFUSED` on the connected socket).
    pub receiver_gone: bool,
    /// CPU time of the sending thread.
    pub cpu_time: Duration,
}

/// Sends paced datagrams until the duration has passed or `stop` is raised.
pub fn run_sender(
    sock: &UdpSocket,
    cfg: &Iperf3SendConfig,
    live: &LiveCounters,
    stop: &Stop,
) -> Iperf3SendReport {
    let clock = RealClock::new();
    let len = cfg.len.max(Iperf3Header::len(cfg.counters_64bit));
    let schedule = match cfg.rate.packets_per_sec(len) {
        Some(pps) => Schedule::per_second(pps),
        None => Schedule::unlimited(),
    };
    let mut pacer = Pacer::new(schedule, 1, None);
    let mut buf = vec![0u8; len];
    let mut r = Iperf3SendReport::default();
    let _ = sock.set_write_timeout(Some(Duration::from_millis(50)));
    r.elapsed = pace::drive(&clock, clock.mono(), cfg.duration, stop, |elapsed| {
        if cfg.packets.is_some_and(|n| r.packets >= n) {
            return Step::Done;
        }
        match pacer.poll(elapsed) {
            PaceAction::Send(_) => {}
            other => return Step::from_wait(other),
        }
        let now = clock.wall().as_nanos();
        let h = Iperf3Header {
            sec: (now / 1_000_000_000) as u32,
            usec: ((now % 1_000_000_000) / 1_000) as u32,
            count: r.packets + 1,
        };
        h.emit(&mut buf, cfg.counters_64bit);
        match sock.send(&buf) {
            Ok(n) => {
                r.packets += 1;
                r.bytes += n as u64;
                pacer.sent(1, elapsed);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            // Nothing listens at the receiver's port any more: sending on would send to a
            // closed port (or to whoever binds it next) for the rest of the test.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                r.errors += 1;
                r.receiver_gone = true;
                return Step::Done;
            }
            // A full buffer: counted, the schedule goes on.
            Err(_) => {
                r.errors += 1;
                pacer.sent(1, elapsed);
            }
        }
        live.publish(&LiveSnapshot {
            counters: model::stats::Counters {
                sent: r.packets,
                ..Default::default()
            },
            bytes: r.bytes,
            ..Default::default()
        });
        Step::Again
    });
    r.cpu_time = crate::sys::thread_cpu_time();
    r
}

/// What a receiver measured.
#[derive(Debug, Clone)]
pub struct Iperf3RecvReport {
    /// Counters, bytes, jitter, first and last arrival.
    pub snapshot: RxSnapshot,
    /// The highest count seen: what the sender had sent by its last arriving datagram.
    pub highest: Option<u64>,
    /// One-way latency, when asked for.
    pub latency: Option<model::stats::LatencyHistogram>,
    /// CPU time of the receiving thread.
    pub cpu_time: Duration,
    /// How long the receiving thread ran.
    pub wall_time: Duration,
}

/// Receives until `duration` plus a drain has passed or `stop` is raised. `same_host`: the
/// sender is an iperf3 on this host, whose stamps are this host's `CLOCK_MONOTONIC` (iperf3
/// stamps with it): arrivals are taken on that clock too and one-way latency is recorded.
pub fn run_receiver(
    sock: &UdpSocket,
    max_len: usize,
    counters_64bit: bool,
    duration: Duration,
    same_host: bool,
    live: &LiveCounters,
    stop: &Stop,
) -> Iperf3RecvReport {
    let clock = RealClock::new();
    let mut rx = StreamReceiver::with_tracker(SeqTracker::with_origin(WINDOW, 1));
    let mut buf = vec![0u8; max_len.clamp(64, 65_536)];
    let _ = sock.set_read_timeout(Some(Duration::from_millis(20)));
    let end = duration + DRAIN;
    while !stop.is_raised() && clock.mono() < end {
        let Ok(n) = sock.recv(&mut buf) else { continue };
        let Some(h) = Iperf3Header::parse(&buf[..n], counters_64bit) else {
            continue;
        };
        let tx = model::clock::UnixNanos(h.unix_nanos());
        // Jitter needs one clock on each side (their offset cancels); latency needs the
        // sender's.
        let at = if same_host {
            model::clock::UnixNanos(crate::sys::monotonic_now().as_nanos() as u64)
        } else {
            clock.wall()
        };
        rx.on_packet(h.count, tx, at, n, same_host);
        let s = rx.snapshot();
        live.publish(&LiveSnapshot {
            counters: s.counters,
            bytes: s.bytes,
            jitter_ns: (s.jitter_us * 1000.0) as u64,
            ..Default::default()
        });
    }
    Iperf3RecvReport {
        snapshot: rx.snapshot(),
        highest: rx.seq().highest(),
        latency: same_host.then(|| rx.latency().clone()),
        cpu_time: crate::sys::thread_cpu_time(),
        wall_time: clock.mono(),
    }
}
