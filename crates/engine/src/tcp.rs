//! TCP data plane: a sender that writes fixed-size blocks (optionally paced) and a receiver
//! that counts bytes, each on its own OS thread.
//!
//! Tx and Rx are measured separately: the sender counts what the kernel accepted, the
//! receiver what it read. The sender reads `TCP_INFO` for retransmits and RTT. Neither
//! decides the test's length beyond its own deadline; the receiver stops at end of stream
//! or when its stop flag is set.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::RealClock;
use crate::live::{LiveCounters, LiveSnapshot, TcpNow};
use crate::pace::{self, Step};
use crate::sys;
use model::clock::Clock;
use model::pacing::{self, PaceAction, Pacer, Schedule};
use model::spec::Rate;

/// How often the sender refreshes its retransmit counter from TCP_INFO.
const TCP_INFO_EVERY: Duration = Duration::from_millis(100);

/// What a TCP sender does.
#[derive(Debug, Clone)]
pub struct TcpSendConfig {
    /// Stream id (for reports).
    pub stream_id: u8,
    /// Bytes per write.
    pub block_len: usize,
    /// Offered load (blocks per second when limited).
    pub rate: Rate,
    /// How long to send.
    pub duration: Duration,
}

/// What a TCP sender did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpSenderReport {
    /// Stream id.
    pub stream_id: u8,
    /// Bytes the kernel accepted.
    pub bytes: u64,
    /// First write to the end of sending.
    pub elapsed: Duration,
    /// Retransmitted segments (TCP_INFO).
    pub retransmits: Option<u64>,
    /// Smoothed RTT at the end, µs.
    pub rtt_us: Option<u32>,
    /// Share of scheduled blocks not written (paced tests only).
    pub behind_ratio: f64,
    /// Behind by more than 1 %.
    pub generator_limited: bool,
    /// CPU time of the sending thread.
    pub cpu_time: Duration,
}

/// What a TCP receiver measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TcpReceiverReport {
    /// Stream id.
    pub stream_id: u8,
    /// Bytes read.
    pub bytes: u64,
    /// Bytes the first read returned (not timed; excluded from the rate).
    pub first_read_bytes: u64,
    /// From the end of the first read to the end of the last (end of stream).
    pub elapsed: Duration,
    /// CPU time of the receiving thread.
    pub cpu_time: Duration,
}

/// Applies buffer size and DSCP to a data connection. Nagle stays on, as in iperf3: bulk
/// writes gain nothing from TCP_NODELAY.
pub fn prepare_stream(stream: &TcpStream, window: Option<u32>, dscp: Option<u8>) -> io::Result<()> {
    let s = socket2::SockRef::from(stream);
    if let Some(w) = window {
        s.set_send_buffer_size(w as usize)?;
        s.set_recv_buffer_size(w as usize)?;
    }
    if let Some(d) = dscp {
        crate::udp::set_dscp(&s, stream.local_addr()?, d)?;
    }
    Ok(())
}

/// Writes blocks until the duration has passed or `stop` is set, then shuts the write side.
pub fn run_sender(
    mut stream: &TcpStream,
    cfg: &TcpSendConfig,
    live: &LiveCounters,
    stop: &AtomicBool,
) -> TcpSenderReport {
    let clock = RealClock::new();
    let block = vec![0x5au8; cfg.block_len.max(1)];
    let _ = stream.set_write_timeout(Some(Duration::from_millis(50)));
    let pps = cfg.rate.packets_per_sec(block.len());
    let mut pacer = pps.map(|p| Pacer::new(Schedule::per_second(p), 1, None));
    let mut bytes = 0u64;
    let mut offset = 0usize; // bytes of the current block already written
    let mut retransmits = None;
    let mut tcp_now = TcpNow::default();
    let mut last_info = Duration::ZERO;
    let elapsed = pace::drive(&clock, clock.mono(), cfg.duration, stop, |elapsed| {
        if offset == 0 {
            if let Some(p) = pacer.as_mut() {
                let due = p.poll(elapsed);
                if !matches!(due, PaceAction::Send(_)) {
                    return Step::from_wait(due);
                }
            }
        }
        match stream.write(&block[offset..]) {
            Ok(n) => {
                bytes += n as u64;
                offset += n;
                if offset == block.len() {
                    offset = 0;
                    if let Some(p) = pacer.as_mut() {
                        p.sent(1, elapsed);
                    }
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(_) => return Step::Done,
        }
        if elapsed.saturating_sub(last_info) >= TCP_INFO_EVERY {
            last_info = elapsed;
            if let Ok(i) = sys::tcp_info(stream) {
                retransmits = Some(u64::from(i.total_retrans));
                tcp_now = TcpNow {
                    cwnd_bytes: u64::from(i.snd_cwnd) * u64::from(i.snd_mss),
                    snd_wnd: u64::from(i.snd_wnd),
                    rtt_us: u64::from(i.rtt_us),
                    rttvar_us: u64::from(i.rttvar_us),
                    pmtu: u64::from(i.pmtu),
                };
            }
        }
        live.publish(&LiveSnapshot {
            bytes,
            retransmits: retransmits.unwrap_or(0),
            tcp: tcp_now,
            ..Default::default()
        });
        Step::Again
    });
    let info = sys::tcp_info(stream).ok();
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Write);
    let behind_ratio = pacer
        .as_ref()
        .map(|p| p.behind_ratio(elapsed))
        .unwrap_or(0.0);
    TcpSenderReport {
        stream_id: cfg.stream_id,
        bytes,
        elapsed,
        retransmits: info.map(|i| u64::from(i.total_retrans)),
        rtt_us: info.map(|i| i.rtt_us),
        behind_ratio,
        generator_limited: behind_ratio > pacing::GENERATOR_LIMITED_THRESHOLD,
        cpu_time: sys::thread_cpu_time(),
    }
}

/// Reads until end of stream, an error, or `stop`.
pub fn run_receiver(
    mut stream: &TcpStream,
    stream_id: u8,
    live: &LiveCounters,
    stop: &AtomicBool,
) -> TcpReceiverReport {
    let clock = RealClock::new();
    let _ = stream.set_read_timeout(Some(Duration::from_millis(50)));
    let mut buf = vec![0u8; 256 * 1024];
    let mut bytes = 0u64;
    // The rate is timed from the end of the first read to the end of the last, over the
    // bytes after the first read: what the first read returns may have queued up before
    // this thread looked, and its time is unknown.
    let mut first: Option<(Duration, u64)> = None;
    let mut last = Duration::ZERO;
    while !stop.load(Ordering::Relaxed) {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                bytes += n as u64;
                last = clock.mono();
                first.get_or_insert((last, bytes));
                live.publish(&LiveSnapshot {
                    bytes,
                    ..Default::default()
                });
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(_) => break,
        }
    }
    let (t_first, first_bytes) = first.unwrap_or((last, bytes));
    TcpReceiverReport {
        stream_id,
        bytes,
        first_read_bytes: first_bytes,
        elapsed: last.saturating_sub(t_first),
        cpu_time: sys::thread_cpu_time(),
    }
}
