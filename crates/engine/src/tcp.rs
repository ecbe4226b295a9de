//! TCP data plane: a sender that writes fixed-size blocks (optionally paced) and a receiver
//! that counts bytes, each on its own OS thread.
//!
//! Tx and Rx are measured separately: the sender counts what the kernel accepted, the
//! receiver what it read. The sender reads `TCP_INFO` for retransmits, window and RTT.
//! Neither decides the test's length beyond its own deadline (warm-up and duration) or
//! amount; the receiver stops at end of stream or when its stop is raised.

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::RealClock;
use crate::live::{LiveCounters, LiveSnapshot, TcpNow};
use crate::pace::{self, Step};
use crate::sys;
use model::clock::Clock;
use model::pacing::{self, PaceAction, Pacer, Schedule};
use model::spec::{Rate, TcpOptions};
use model::stop::Stop;

/// How often the sender refreshes its retransmit counter from TCP_INFO.
const TCP_INFO_EVERY: Duration = Duration::from_millis(100);

/// Bytes a receiver asks for per read, by where its peer is. Measured with interleaved
/// pairs of wirebench against itself, one stream, `-A 0,1`, 3-s runs (2026-12-05):
/// - loopback: 64 KiB moved 1.17–1.39x what 256 KiB reads did (six pairs); the receiving
///   thread works more (its CPU 26 % → 57 % busy) and the sending CPU, which on loopback
///   also runs the receive path's softirq, moves more bytes in the same full CPU;
/// - veth (and so, untested, NICs): 256 KiB moved 0.96–1.09x, median 1.07x, what 64 KiB
///   did, and 128 KiB 0.99–1.09x.
fn read_len(stream: &TcpStream) -> usize {
    match stream.peer_addr() {
        Ok(a) if a.ip().to_canonical().is_loopback() => 64 * 1024,
        _ => 256 * 1024,
    }
}

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
    /// Bytes to send before stopping (`-n`, `-k`); `None` sends for the duration.
    pub bytes: Option<u64>,
    /// Send with `sendfile(2)` from an in-memory file holding one block (`-Z`): the kernel
    /// takes the pages without copying them from user space.
    pub zerocopy: bool,
    /// A warm-up before the measured time (`-O`): sent, not counted; the duration follows.
    pub omit: Duration,
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
    /// Sent with `sendfile` (zero copy, `-Z`).
    #[serde(default)]
    pub sendfile: bool,
    /// Bytes sent in the warm-up (`-O`), not in `bytes`: the receiver's count of the
    /// measured part is what it read beyond them.
    #[serde(default)]
    pub omitted_bytes: u64,
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
    /// Bytes read before this side's warm-up (`-O`) ended, included in `bytes`.
    #[serde(default)]
    pub omitted_bytes: u64,
}

/// Applies buffer size, DSCP, congestion control and `TCP_NODELAY` to a data connection.
/// Nagle stays on unless asked (`-N`), as in iperf3: bulk writes gain nothing from it.
pub fn prepare_stream(
    stream: &TcpStream,
    window: Option<u32>,
    dscp: Option<u8>,
    opts: &TcpOptions,
) -> io::Result<()> {
    let s = socket2::SockRef::from(stream);
    if let Some(w) = window {
        s.set_send_buffer_size(w as usize)?;
        s.set_recv_buffer_size(w as usize)?;
    }
    if let Some(d) = dscp {
        crate::udp::set_dscp(&s, stream.local_addr()?, d)?;
    }
    if let Some(c) = &opts.congestion {
        s.set_tcp_congestion(c.as_bytes()).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("congestion control '{c}': {e} (see /proc/sys/net/ipv4/tcp_available_congestion_control)"),
            )
        })?;
    }
    if opts.nodelay {
        s.set_tcp_nodelay(true)?;
    }
    Ok(())
}

/// A socket's buffer sizes as the kernel set them: (send, receive), bytes.
pub fn buffer_sizes(sock: &impl std::os::fd::AsFd) -> Option<(u32, u32)> {
    let s = socket2::SockRef::from(sock);
    let snd = s.send_buffer_size().ok()?;
    let rcv = s.recv_buffer_size().ok()?;
    Some((snd as u32, rcv as u32))
}

/// A connection's congestion control algorithm.
pub fn congestion(stream: &TcpStream) -> Option<String> {
    let name = socket2::SockRef::from(stream).tcp_congestion().ok()?;
    let name = name.split(|b| *b == 0).next().unwrap_or_default();
    Some(String::from_utf8_lossy(name).into_owned())
}

/// A connection's maximum segment size (`TCP_MAXSEG`), bytes.
pub fn mss(stream: &TcpStream) -> Option<u32> {
    socket2::SockRef::from(stream).tcp_mss().ok()
}

/// A TCP socket for `addr`'s family with the MSS set before any handshake, so that both
/// ends agree on it (`-M`).
fn socket_for(addr: &SocketAddr, mss: Option<u32>) -> io::Result<socket2::Socket> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(*addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    if let Some(m) = mss {
        s.set_tcp_mss(m)?;
    }
    Ok(s)
}

/// Connects a data or control connection: from `bind` when given (`-B`, `--cport`), with
/// the MSS set before the handshake.
pub fn connect(
    addr: SocketAddr,
    bind: Option<SocketAddr>,
    mss: Option<u32>,
    timeout: Duration,
) -> io::Result<TcpStream> {
    let s = socket_for(&addr, mss)?;
    if let Some(b) = bind {
        s.set_reuse_address(true)?;
        s.bind(&b.into())
            .map_err(|e| io::Error::new(e.kind(), format!("cannot bind to {b}: {e}")))?;
    }
    s.connect_timeout(&addr.into(), timeout)?;
    Ok(s.into())
}

/// A listener whose accepted connections get `mss` (it is set before their handshake). On
/// IPv6's any address (`::`) it takes IPv4 clients too (as mapped addresses).
pub fn listen(addr: SocketAddr, mss: Option<u32>) -> io::Result<TcpListener> {
    let s = socket_for(&addr, mss)?;
    if addr.is_ipv6() && addr.ip().is_unspecified() {
        s.set_only_v6(false)?;
    }
    s.set_reuse_address(true)?;
    s.bind(&addr.into())?;
    s.listen(128)?;
    Ok(s.into())
}

/// Writes blocks for the warm-up (`-O`, not counted) and then the duration, until the amount
/// (`-n`) is sent or `stop` is raised; then shuts the write side.
pub fn run_sender(
    mut stream: &TcpStream,
    cfg: &TcpSendConfig,
    live: &LiveCounters,
    stop: &Stop,
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
    // -Z: the block sits in a memfd and goes out by sendfile; plain writes if that fails.
    let zerocopy = cfg
        .zerocopy
        .then(|| sys::MemBlock::new(&block))
        .and_then(|m| {
            m.map_err(|e| tracing::warn!("zero copy unavailable ({e}): sending with write"))
                .ok()
        });
    // Bytes sent before the warm-up ended (known once it has).
    let mut omitted: Option<u64> = cfg.omit.is_zero().then_some(0);
    let total = cfg.omit + cfg.duration;
    let elapsed = pace::drive(&clock, clock.mono(), total, stop, |elapsed| {
        if omitted.is_none() && elapsed >= cfg.omit {
            omitted = Some(bytes);
        }
        let warm = omitted.unwrap_or(bytes);
        let left = cfg
            .bytes
            .map_or(u64::MAX, |b| b.saturating_sub(bytes - warm));
        if left == 0 {
            return Step::Done;
        }
        if offset == 0 {
            if let Some(p) = pacer.as_mut() {
                let due = p.poll(elapsed);
                if !matches!(due, PaceAction::Send(_)) {
                    return Step::from_wait(due);
                }
            }
        }
        let want = (block.len() - offset).min(usize::try_from(left).unwrap_or(usize::MAX));
        let written = match &zerocopy {
            Some(m) => m.send_to(stream, offset, want),
            None => stream.write(&block[offset..offset + want]),
        };
        match written {
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
        live.publish_raw_bytes(bytes);
        live.publish(&LiveSnapshot {
            bytes: omitted.map_or(0, |w| bytes - w),
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
    // Stopped within the warm-up: all of it was warm-up.
    let omitted_bytes = omitted.unwrap_or(bytes);
    TcpSenderReport {
        stream_id: cfg.stream_id,
        bytes: bytes - omitted_bytes,
        elapsed: elapsed.saturating_sub(cfg.omit),
        omitted_bytes,
        retransmits: info.map(|i| u64::from(i.total_retrans)),
        rtt_us: info.map(|i| i.rtt_us),
        behind_ratio,
        generator_limited: behind_ratio > pacing::GENERATOR_LIMITED_THRESHOLD,
        cpu_time: sys::thread_cpu_time(),
        sendfile: zerocopy.is_some(),
    }
}

/// Reads until end of stream, an error, or `stop`.
pub fn run_receiver(
    mut stream: &TcpStream,
    stream_id: u8,
    omit: Duration,
    live: &LiveCounters,
    stop: &Stop,
) -> TcpReceiverReport {
    let clock = RealClock::new();
    // With a warm-up (`-O`), the rate is timed from its end, on this side's clock from the
    // first byte (the sender's warm-up starts with its first write).
    let mut warm_until: Option<Duration> = None;
    let mut omitted = 0u64;
    let _ = stream.set_read_timeout(Some(Duration::from_millis(50)));
    let mut buf = vec![0u8; read_len(stream)];
    let mut bytes = 0u64;
    // The rate is timed from the end of the first read to the end of the last, over the
    // bytes after the first read: what the first read returns may have queued up before
    // this thread looked, and its time is unknown.
    let mut first: Option<(Duration, u64)> = None;
    let mut last = Duration::ZERO;
    while !stop.is_raised() {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                bytes += n as u64;
                last = clock.mono();
                if last < *warm_until.get_or_insert(last + omit) {
                    omitted = bytes;
                } else {
                    first.get_or_insert((last, bytes));
                }
                live.publish(&LiveSnapshot {
                    bytes: bytes - omitted,
                    ..Default::default()
                });
                live.publish_raw_bytes(bytes);
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
        omitted_bytes: omitted,
    }
}
