//! TCP data plane: a sender that writes fixed-size blocks (optionally paced) and a receiver
//! that counts bytes, each on its own OS thread; unpaced senders pinned to one CPU may
//! share one ([`run_senders`]), and so may receivers ([`run_receivers`]).
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
use model::results::TcpBytes;
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
    if peer_is_loopback(stream) {
        64 * 1024
    } else {
        256 * 1024
    }
}

/// Whether a connection's peer is on loopback, where the sending CPU runs the whole
/// receive path: the receivers' read size, low-water mark and thread differ there.
fn peer_is_loopback(stream: &TcpStream) -> bool {
    matches!(stream.peer_addr(), Ok(a) if a.ip().to_canonical().is_loopback())
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
    /// What the connection put on the wire and retransmitted (TCP_INFO; `None` before
    /// Linux 4.19, which does not count bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_bytes: Option<TcpBytes>,
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

/// One TCP sender between writes: what [`run_sender`] and [`run_senders`] step.
struct Sending<'a> {
    stream: &'a TcpStream,
    cfg: &'a TcpSendConfig,
    live: &'a LiveCounters,
    block: Vec<u8>,
    pacer: Option<Pacer>,
    bytes: u64,
    /// Bytes of the current block already written.
    offset: usize,
    retransmits: Option<u64>,
    tcp_now: TcpNow,
    last_info: Duration,
    /// `-Z`: the block sits in a memfd and goes out by sendfile.
    zerocopy: Option<sys::MemBlock>,
    /// Bytes sent before the warm-up ended (known once it has).
    omitted: Option<u64>,
    /// The last write found no room in the socket (a non-blocking one).
    blocked: bool,
}

impl<'a> Sending<'a> {
    fn new(stream: &'a TcpStream, cfg: &'a TcpSendConfig, live: &'a LiveCounters) -> Self {
        let block = vec![0x5au8; cfg.block_len.max(1)];
        let pps = cfg.rate.packets_per_sec(block.len());
        // -Z: plain writes if the memfd cannot be made.
        let zerocopy = cfg
            .zerocopy
            .then(|| sys::MemBlock::new(&block))
            .and_then(|m| {
                m.map_err(|e| tracing::warn!("zero copy unavailable ({e}): sending with write"))
                    .ok()
            });
        Sending {
            stream,
            cfg,
            live,
            pacer: pps.map(|p| Pacer::new(Schedule::per_second(p), 1, None)),
            block,
            bytes: 0,
            offset: 0,
            retransmits: None,
            tcp_now: TcpNow::default(),
            last_info: Duration::ZERO,
            zerocopy,
            omitted: cfg.omit.is_zero().then_some(0),
            blocked: false,
        }
    }

    /// The warm-up and the duration.
    fn total(&self) -> Duration {
        self.cfg.omit + self.cfg.duration
    }

    /// Writes (the rest of) one block if one is due, and publishes the counters.
    fn step(&mut self, elapsed: Duration) -> Step {
        let cfg = self.cfg;
        if self.omitted.is_none() && elapsed >= cfg.omit {
            self.omitted = Some(self.bytes);
        }
        let warm = self.omitted.unwrap_or(self.bytes);
        let left = cfg
            .bytes
            .map_or(u64::MAX, |b| b.saturating_sub(self.bytes - warm));
        if left == 0 {
            return Step::Done;
        }
        if self.offset == 0 {
            if let Some(p) = self.pacer.as_mut() {
                let due = p.poll(elapsed);
                if !matches!(due, PaceAction::Send(_)) {
                    return Step::from_wait(due);
                }
            }
        }
        let want =
            (self.block.len() - self.offset).min(usize::try_from(left).unwrap_or(usize::MAX));
        let mut stream = self.stream;
        let written = match &self.zerocopy {
            Some(m) => m.send_to(stream, self.offset, want),
            None => stream.write(&self.block[self.offset..self.offset + want]),
        };
        self.blocked = false;
        match written {
            Ok(n) => {
                self.bytes += n as u64;
                self.offset += n;
                if self.offset == self.block.len() {
                    self.offset = 0;
                    if let Some(p) = self.pacer.as_mut() {
                        p.sent(1, elapsed);
                    }
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                self.blocked = true;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Step::Done,
        }
        if elapsed.saturating_sub(self.last_info) >= TCP_INFO_EVERY {
            self.last_info = elapsed;
            if let Ok(i) = sys::tcp_info(self.stream) {
                self.retransmits = Some(u64::from(i.total_retrans));
                self.tcp_now = TcpNow {
                    cwnd_bytes: u64::from(i.snd_cwnd) * u64::from(i.snd_mss),
                    snd_wnd: u64::from(i.snd_wnd),
                    rtt_us: u64::from(i.rtt_us),
                    rttvar_us: u64::from(i.rttvar_us),
                    pmtu: u64::from(i.pmtu),
                };
            }
        }
        self.live.publish_raw_bytes(self.bytes);
        self.live.publish(&LiveSnapshot {
            bytes: self.omitted.map_or(0, |w| self.bytes - w),
            retransmits: self.retransmits.unwrap_or(0),
            tcp: self.tcp_now,
            ..Default::default()
        });
        Step::Again
    }

    /// Shuts the write side and reports; `elapsed` is when this sender stopped, `cpu_time`
    /// its share of the thread's CPU time.
    fn finish(self, elapsed: Duration, cpu_time: Duration) -> TcpSenderReport {
        let mut stream = self.stream;
        let info = sys::tcp_info(stream).ok();
        let _ = stream.flush();
        let _ = stream.shutdown(Shutdown::Write);
        let behind_ratio = self
            .pacer
            .as_ref()
            .map(|p| p.behind_ratio(elapsed))
            .unwrap_or(0.0);
        // Stopped within the warm-up: all of it was warm-up.
        let omitted_bytes = self.omitted.unwrap_or(self.bytes);
        TcpSenderReport {
            stream_id: self.cfg.stream_id,
            bytes: self.bytes - omitted_bytes,
            elapsed: elapsed.saturating_sub(self.cfg.omit),
            omitted_bytes,
            retransmits: info.map(|i| u64::from(i.total_retrans)),
            rtt_us: info.map(|i| i.rtt_us),
            behind_ratio,
            generator_limited: behind_ratio > pacing::GENERATOR_LIMITED_THRESHOLD,
            cpu_time,
            sendfile: self.zerocopy.is_some(),
            // A kernel that counts no bytes reports 0 after a connection that sent some.
            tcp_bytes: info
                .filter(|i| i.bytes_sent > 0 || self.bytes == 0)
                .map(|i| TcpBytes {
                    sent: i.bytes_sent,
                    retransmitted: i.bytes_retrans,
                }),
        }
    }
}

/// Writes blocks for the warm-up (`-O`, not counted) and then the duration, until the amount
/// (`-n`) is sent or `stop` is raised; then shuts the write side.
pub fn run_sender(
    stream: &TcpStream,
    cfg: &TcpSendConfig,
    live: &LiveCounters,
    stop: &Stop,
) -> TcpSenderReport {
    let clock = RealClock::new();
    let _ = stream.set_write_timeout(Some(Duration::from_millis(50)));
    let mut sending = Sending::new(stream, cfg, live);
    let total = sending.total();
    let elapsed = pace::drive(&clock, clock.mono(), total, stop, |elapsed| {
        sending.step(elapsed)
    });
    sending.finish(elapsed, sys::thread_cpu_time())
}

/// One of `n` equal shares of this thread's CPU time so far: what each stream of a shared
/// thread reports.
fn cpu_share(n: usize) -> Duration {
    sys::thread_cpu_time() / u32::try_from(n).unwrap_or(u32::MAX).max(1)
}

/// Whether [`run_senders`] can serve this sender: an unpaced one (paced senders keep a
/// thread each, whose waits are their own).
pub fn can_share_a_thread(cfg: &TcpSendConfig) -> bool {
    cfg.rate.packets_per_sec(cfg.block_len.max(1)).is_none()
}

/// Several unpaced senders on one thread, as [`run_sender`] each: a block to every socket
/// with room in turn, and a wait in `poll` when none has. For streams pinned to one CPU:
/// a thread each there preempt one another while holding their socket's lock, and the
/// acknowledgements that arrive meanwhile wait in the socket's backlog (with four streams
/// on veth, `__release_sock` took 19.6 % of the sending CPU against 5.7 % in one thread).
/// Each report carries an equal share of the thread's CPU time.
pub fn run_senders(
    streams: &[(&TcpStream, &TcpSendConfig, &LiveCounters)],
    stop: &Stop,
) -> Vec<TcpSenderReport> {
    let clock = RealClock::new();
    sys::set_timer_slack_1ns();
    let t0 = clock.mono();
    let mut all: Vec<(Sending, Option<Duration>)> = streams
        .iter()
        .map(|(s, cfg, live)| {
            let _ = s.set_nonblocking(true);
            (Sending::new(s, cfg, live), None)
        })
        .collect();
    loop {
        let elapsed = clock.mono().saturating_sub(t0);
        let mut wrote = false;
        let mut open = 0;
        for (s, ended) in all.iter_mut().filter(|(_, e)| e.is_none()) {
            let step = if stop.is_raised() || elapsed >= s.total() {
                Step::Done
            } else {
                s.step(elapsed)
            };
            match step {
                Step::Done => *ended = Some(elapsed),
                _ => {
                    open += 1;
                    wrote |= !s.blocked;
                }
            }
        }
        if open == 0 {
            break;
        }
        if !wrote {
            // Every open socket is full: wait for room in one, never past the first end.
            let end = all
                .iter()
                .filter(|(_, e)| e.is_none())
                .map(|(s, _)| s.total())
                .min()
                .unwrap_or_default();
            let wait = pace::MAX_SLEEP.min(end.saturating_sub(elapsed));
            let fds: Vec<_> = all
                .iter()
                .filter(|(s, e)| e.is_none() && s.blocked)
                .map(|(s, _)| std::os::fd::AsRawFd::as_raw_fd(s.stream))
                .collect();
            let _ = sys::wait_writable(&fds, wait);
        }
    }
    let cpu = cpu_share(all.len());
    all.into_iter()
        .map(|(s, ended)| {
            let _ = s.stream.set_nonblocking(false);
            s.finish(ended.unwrap_or_default(), cpu)
        })
        .collect()
}

/// One TCP receiver between reads: what [`run_receiver`] and [`run_receivers`] step.
struct Receiving<'a> {
    stream: &'a TcpStream,
    stream_id: u8,
    omit: Duration,
    live: &'a LiveCounters,
    buf: Vec<u8>,
    bytes: u64,
    /// When this side's warm-up (`-O`) ends, from the first byte.
    warm_until: Option<Duration>,
    omitted: u64,
    /// The end of the first timed read and the bytes up to it.
    first: Option<(Duration, u64)>,
    last: Duration,
    /// Reads since the low-water mark was last looked at: it is looked at again after
    /// [`LOWAT_EVERY`] of them or [`LOWAT_EVERY_TIME`], whichever comes first.
    reads: u64,
    /// When it was last looked at, and the bytes read by then.
    lowat_looked: (Duration, u64),
    /// The socket's `SO_RCVLOWAT` as set (`None`: left at the kernel's 1 byte).
    lowat: Option<usize>,
}

/// The most a receiver asks the kernel to gather before it wakes the reader
/// (`SO_RCVLOWAT`). A reader asleep in `read` is woken in the softirq that queued the
/// bytes, and where that runs on the sending CPU (veth, loopback) every wake-up is taken
/// from the sender: about 30,000 a second at 20 Gbit/s on veth with the kernel's 1 byte.
/// Measured with `-A 0,1`, one stream, veth, three rounds of 3-s runs (2026-12-05): 16.6–20.2
/// Gbit/s with 1 byte, 22.5–23.4 with 64 KiB, 25.6–26.4 with 128 KiB. Both ways the
/// sender counts many retransmits on veth, spurious ones (DSACK): veth queues a segment
/// on the CPU that sends it, and with larger reads more acknowledgements, and so more
/// segments, go out from the receiver's CPU, out of order with the sender's.
const LOWAT: usize = 128 * 1024;
/// A receiver's low-water mark is at most this share (1/n) of its receive buffer, so that
/// a small window (`-w`, which fixes the buffer) still wakes it long before the buffer,
/// and with it the window advertised to the sender, is full.
const LOWAT_SHARE: usize = 4;
/// A receiver's low-water mark is at most what arrives in this time at the rate since it
/// last looked, so that on a slow stream a byte waits about this long to be counted, not
/// the read's 50-ms timeout (which would move bytes between interval rows).
const LOWAT_HORIZON: Duration = Duration::from_millis(1);
/// Reads, and time, between two looks at the rate and the receive buffer's size
/// (autotuning grows it).
const LOWAT_EVERY: u64 = 256;
const LOWAT_EVERY_TIME: Duration = Duration::from_millis(100);

/// What one read did.
enum ReadOutcome {
    /// Bytes arrived.
    Got,
    /// Nothing there now (a non-blocking socket, or the read timed out).
    Nothing,
    /// End of stream, or the connection failed.
    Ended,
}

impl<'a> Receiving<'a> {
    fn new(stream: &'a TcpStream, stream_id: u8, omit: Duration, live: &'a LiveCounters) -> Self {
        Self {
            stream,
            stream_id,
            omit,
            live,
            buf: vec![0u8; read_len(stream)],
            bytes: 0,
            warm_until: None,
            omitted: 0,
            first: None,
            last: Duration::ZERO,
            reads: 0,
            lowat_looked: (Duration::ZERO, 0),
            lowat: None,
        }
    }

    /// Sets the socket's low-water mark at `now` to the least of [`LOWAT`], a
    /// [`LOWAT_SHARE`] of its receive buffer and what [`LOWAT_HORIZON`] brings at the rate
    /// since the last look; looks again after [`LOWAT_EVERY`] reads or
    /// [`LOWAT_EVERY_TIME`]. The first look only starts the clock (no rate yet).
    fn adjust_lowat(&mut self, now: Duration) {
        self.reads += 1;
        let (at, bytes) = self.lowat_looked;
        let since = now.saturating_sub(at);
        if self.reads < LOWAT_EVERY && since < LOWAT_EVERY_TIME {
            return;
        }
        self.reads = 0;
        self.lowat_looked = (now, self.bytes);
        if at.is_zero() || since.is_zero() {
            return;
        }
        let Some((_, rcvbuf)) = buffer_sizes(self.stream) else {
            return;
        };
        let per_horizon =
            (self.bytes - bytes) as f64 * LOWAT_HORIZON.as_secs_f64() / since.as_secs_f64();
        let want = (per_horizon as usize)
            .min(LOWAT)
            .min(rcvbuf as usize / LOWAT_SHARE)
            .max(1);
        if self.lowat != Some(want) && sys::set_recv_lowat(self.stream, want).is_ok() {
            self.lowat = Some(want);
        }
    }

    /// One read, counted at `now()` when it returns bytes.
    fn read(&mut self, now: impl FnOnce() -> Duration) -> ReadOutcome {
        let mut stream = self.stream;
        match stream.read(&mut self.buf) {
            Ok(0) => ReadOutcome::Ended,
            Ok(n) => {
                self.bytes += n as u64;
                self.last = now();
                // With a warm-up (`-O`), the rate is timed from its end, on this side's
                // clock from the first byte (the sender's warm-up starts with its first
                // write).
                if self.last < *self.warm_until.get_or_insert(self.last + self.omit) {
                    self.omitted = self.bytes;
                } else {
                    self.first.get_or_insert((self.last, self.bytes));
                }
                self.live.publish(&LiveSnapshot {
                    bytes: self.bytes - self.omitted,
                    ..Default::default()
                });
                self.live.publish_raw_bytes(self.bytes);
                ReadOutcome::Got
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                ReadOutcome::Nothing
            }
            Err(_) => ReadOutcome::Ended,
        }
    }

    /// The report; `cpu_time` is this receiver's share of its thread's CPU time.
    fn finish(self, cpu_time: Duration) -> TcpReceiverReport {
        // The rate is timed from the end of the first read to the end of the last, over
        // the bytes after the first read: what the first read returns may have queued up
        // before this thread looked, and its time is unknown.
        let (t_first, first_bytes) = self.first.unwrap_or((self.last, self.bytes));
        TcpReceiverReport {
            stream_id: self.stream_id,
            bytes: self.bytes,
            first_read_bytes: first_bytes,
            elapsed: self.last.saturating_sub(t_first),
            cpu_time,
            omitted_bytes: self.omitted,
        }
    }
}

/// Whether a receiver sets a low-water mark ([`LOWAT`]), given how many streams its side
/// receives at once: yes unless they are several and come over loopback. Measured with
/// 3-s runs in turn, low-water mark against none (2026-12-05, Gbit/s, three rounds):
/// loopback one stream 38–41 against 30–33 (`-A 0,1`) and 31–37 against 26–28; loopback
/// `-P 4` 25–29 against 30–40 (`-A 0,1`) and 57–62 against 69–77; veth `-P 4` 43 against
/// 38–39, one stream 24 against 18–19.
pub fn use_lowat(stream: &TcpStream, side_streams: usize) -> bool {
    side_streams <= 1 || can_share_receiving(stream)
}

/// Reads until end of stream, an error, or `stop`. `side_streams`: how many streams this
/// side receives at once ([`use_lowat`]).
pub fn run_receiver(
    stream: &TcpStream,
    stream_id: u8,
    omit: Duration,
    side_streams: usize,
    live: &LiveCounters,
    stop: &Stop,
) -> TcpReceiverReport {
    let clock = RealClock::new();
    let _ = stream.set_read_timeout(Some(RECV_WAIT));
    let lowat = use_lowat(stream, side_streams);
    let mut r = Receiving::new(stream, stream_id, omit, live);
    while !stop.is_raised() {
        if lowat {
            r.adjust_lowat(clock.mono());
        }
        if matches!(r.read(|| clock.mono()), ReadOutcome::Ended) {
            break;
        }
    }
    r.finish(sys::thread_cpu_time())
}

/// The longest a receiver waits for bytes before it looks at its stop again.
const RECV_WAIT: Duration = Duration::from_millis(50);

/// Whether [`run_receivers`] should serve this connection's receiver when its side is
/// pinned to one CPU: yes unless its peer is on loopback. Measured with `-P 4 -A 0,1`,
/// 3-s runs in turn (2026-12-05): on veth, a thread per receiver held the server to
/// 47–52 Gbit/s with iperf3's client and 44–54 with wirebench's, one thread for all took
/// 67–71 (iperf3 against its own server 61–68 in the same rounds); on loopback, where the
/// sending CPU runs the whole receive path and the receivers only copy, one thread took
/// 30–36 Gbit/s and a thread each 44–46.
pub fn can_share_receiving(stream: &TcpStream) -> bool {
    !peer_is_loopback(stream)
}

/// Several receivers on one thread, as [`run_receiver`] each: a read from every socket
/// with bytes in turn, and a wait in `poll` when none has, as iperf3's one thread serves
/// them (see [`can_share_receiving`]). No low-water mark here: with one of 128 KiB on
/// each socket, `-P 4` on veth fell from 69–71 to 52–54 Gbit/s. Each report carries an
/// equal share of the thread's CPU time.
pub fn run_receivers(
    streams: &[(&TcpStream, u8, Duration, &LiveCounters)],
    stop: &Stop,
) -> Vec<TcpReceiverReport> {
    let clock = RealClock::new();
    let mut all: Vec<(Receiving, bool)> = streams
        .iter()
        .map(|&(s, id, omit, live)| {
            let _ = s.set_nonblocking(true);
            (Receiving::new(s, id, omit, live), false)
        })
        .collect();
    while !stop.is_raised() {
        let mut got = false;
        let mut open = 0;
        for (r, ended) in all.iter_mut().filter(|(_, e)| !*e) {
            match r.read(|| clock.mono()) {
                ReadOutcome::Got => {
                    got = true;
                    open += 1;
                }
                ReadOutcome::Nothing => open += 1,
                ReadOutcome::Ended => *ended = true,
            }
        }
        if open == 0 {
            break;
        }
        if !got {
            let fds: Vec<_> = all
                .iter()
                .filter(|(_, e)| !*e)
                .map(|(r, _)| std::os::fd::AsRawFd::as_raw_fd(r.stream))
                .collect();
            let _ = sys::wait_readable(&fds, RECV_WAIT);
        }
    }
    let cpu = cpu_share(all.len());
    all.into_iter()
        .map(|(r, _)| {
            let _ = r.stream.set_nonblocking(false);
            r.finish(cpu)
        })
        .collect()
}

#[cfg(test)]
mod test {
    use super::*;

    fn config(stream_id: u8, bytes: u64, zerocopy: bool) -> TcpSendConfig {
        TcpSendConfig {
            stream_id,
            block_len: 128 * 1024,
            rate: Rate::Unlimited,
            duration: Duration::from_secs(20),
            bytes: Some(bytes),
            zerocopy,
            omit: Duration::ZERO,
        }
    }

    /// Streams sharing one thread each deliver exactly their amount (`-n`, not a multiple
    /// of the block), through full sockets, and each report counts its own stream.
    #[test]
    fn senders_sharing_a_thread_each_deliver_their_own_amount() {
        let listener = listen(SocketAddr::from(([127, 0, 0, 1], 0)), None).expect("listen");
        let addr = listener.local_addr().expect("address");
        let amounts = [3_000_000u64, 5_000_000, 7_000_001];
        let readers = std::thread::spawn(move || {
            (0..amounts.len())
                .map(|_| {
                    let (mut s, _) = listener.accept().expect("accept");
                    std::thread::spawn(move || {
                        let (mut n, mut buf) = (0u64, vec![0u8; 65_536]);
                        // Slow at first, so that the sockets fill and the sender waits.
                        std::thread::sleep(Duration::from_millis(100));
                        while let Ok(k @ 1..) = s.read(&mut buf) {
                            n += k as u64;
                        }
                        n
                    })
                })
                .collect::<Vec<_>>()
        });
        let conns: Vec<TcpStream> = amounts
            .iter()
            .map(|_| TcpStream::connect(addr).expect("connect"))
            .collect();
        let cfgs: Vec<TcpSendConfig> = amounts
            .iter()
            .enumerate()
            .map(|(i, &b)| config(i as u8 + 1, b, i == 1))
            .collect();
        let lives: Vec<LiveCounters> = amounts.iter().map(|_| LiveCounters::default()).collect();
        let args: Vec<_> = conns
            .iter()
            .zip(&cfgs)
            .zip(&lives)
            .map(|((s, c), l)| (s, c, l))
            .collect();
        let reports = run_senders(&args, &Stop::new());
        let sent: Vec<u64> = reports.iter().map(|r| r.bytes).collect();
        assert_eq!(sent, amounts, "each report counts its own stream");
        assert!(reports[1].sendfile && !reports[0].sendfile);
        assert!(reports.iter().all(|r| r.elapsed < Duration::from_secs(20)));
        let mut read: Vec<u64> = readers
            .join()
            .expect("readers")
            .into_iter()
            .map(|h| h.join().expect("reader"))
            .collect();
        read.sort_unstable();
        assert_eq!(read, amounts, "every byte arrived, and no more");
        for (l, want) in lives.iter().zip(amounts) {
            assert_eq!(
                l.snapshot().bytes,
                want,
                "the live counters end at the amount"
            );
        }
    }

    #[test]
    fn receivers_sharing_a_thread_each_count_their_own_bytes() {
        let listener = listen(SocketAddr::from(([127, 0, 0, 1], 0)), None).expect("listen");
        let addr = listener.local_addr().expect("address");
        // Amounts that are no whole reads; the writers start at different times, so the
        // receiver waits in poll with some streams ended and some not yet begun.
        let amounts = [3_000_001u64, 0, 9_000_000];
        let writers: Vec<_> = amounts
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                std::thread::spawn(move || {
                    let mut s = TcpStream::connect(addr).expect("connect");
                    std::thread::sleep(Duration::from_millis(60 * i as u64));
                    let block = vec![7u8; 100_000];
                    let mut left = n;
                    while left > 0 {
                        let k = left.min(block.len() as u64) as usize;
                        s.write_all(&block[..k]).expect("write");
                        left -= k as u64;
                    }
                })
            })
            .collect();
        let conns: Vec<TcpStream> = amounts
            .iter()
            .map(|_| listener.accept().expect("accept").0)
            .collect();
        let lives: Vec<LiveCounters> = amounts.iter().map(|_| LiveCounters::default()).collect();
        let args: Vec<_> = conns
            .iter()
            .zip(&lives)
            .enumerate()
            .map(|(i, (s, l))| (s, i as u8 + 1, Duration::ZERO, l))
            .collect();
        // No stop: it returns when every stream has ended.
        let reports = run_receivers(&args, &Stop::new());
        for w in writers {
            w.join().expect("writer");
        }
        // Accepted in the order they connected, which need not be the writers' order.
        let mut got: Vec<u64> = reports.iter().map(|r| r.bytes).collect();
        got.sort_unstable();
        let mut want = amounts.to_vec();
        want.sort_unstable();
        assert_eq!(got, want, "each report counts its own stream");
        for (r, l) in reports.iter().zip(&lives) {
            assert_eq!(
                l.snapshot().bytes,
                r.bytes,
                "the live counters end at the count"
            );
            assert!(r.first_read_bytes <= r.bytes);
        }
        assert_eq!(
            reports.iter().map(|r| r.stream_id).collect::<Vec<_>>(),
            [1, 2, 3]
        );
    }

    #[test]
    fn receivers_sharing_a_thread_end_at_the_stop_with_a_silent_peer() {
        let listener = listen(SocketAddr::from(([127, 0, 0, 1], 0)), None).expect("listen");
        let addr = listener.local_addr().expect("address");
        let quiet = TcpStream::connect(addr).expect("connect");
        let mut talker = TcpStream::connect(addr).expect("connect");
        talker.write_all(&[1u8; 1000]).expect("write");
        let conns: Vec<TcpStream> = (0..2)
            .map(|_| listener.accept().expect("accept").0)
            .collect();
        let lives = [LiveCounters::default(), LiveCounters::default()];
        let args: Vec<_> = conns
            .iter()
            .zip(&lives)
            .map(|(s, l)| (s, 1, Duration::ZERO, l))
            .collect();
        let stop = Stop::new();
        let raise = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                stop.raise();
            })
        };
        let reports = run_receivers(&args, &stop);
        raise.join().expect("stop");
        assert_eq!(reports.iter().map(|r| r.bytes).sum::<u64>(), 1000);
        drop(quiet);
    }

    /// A connected pair over loopback: (the accepted end, the connecting end).
    fn pair() -> (TcpStream, TcpStream) {
        let listener = listen(SocketAddr::from(([127, 0, 0, 1], 0)), None).expect("listen");
        let c = TcpStream::connect(listener.local_addr().expect("address")).expect("connect");
        (listener.accept().expect("accept").0, c)
    }

    #[test]
    fn a_low_water_mark_still_hands_over_a_tail_shorter_than_it() {
        // 1000 bytes, far below a mark of 64 KiB, and the peer stays open: the read's
        // timeout (50 ms) hands them over, and the stop (at 80 ms, before the receiver
        // looks at its mark again) ends the receiver.
        let (rx, mut tx) = pair();
        sys::set_recv_lowat(&rx, 65_536).expect("SO_RCVLOWAT");
        tx.write_all(&[3u8; 1000]).expect("write");
        let stop = Stop::new();
        let raise = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(80));
                stop.raise();
            })
        };
        let live = LiveCounters::default();
        let r = run_receiver(&rx, 1, Duration::ZERO, 1, &live, &stop);
        raise.join().expect("stop");
        assert_eq!(r.bytes, 1000);
        assert_eq!(live.snapshot().bytes, 1000);
    }

    /// The low-water mark a receiver on a socket with a receive buffer of `rcvbuf` (as
    /// asked; the kernel doubles it) sets after reading at `bytes_per_sec` for 100 ms.
    fn lowat_after(rcvbuf: usize, bytes_per_sec: u64) -> (Option<usize>, u32) {
        let (rx, _tx) = pair();
        socket2::SockRef::from(&rx)
            .set_recv_buffer_size(rcvbuf)
            .expect("buffer");
        let (_, kernel_rcvbuf) = buffer_sizes(&rx).expect("sizes");
        let live = LiveCounters::default();
        let mut r = Receiving::new(&rx, 1, Duration::ZERO, &live);
        let t0 = Duration::from_secs(7);
        r.adjust_lowat(t0);
        assert_eq!(r.lowat, None, "no rate yet");
        r.bytes += bytes_per_sec / 10;
        r.adjust_lowat(t0 + Duration::from_millis(50));
        assert_eq!(r.lowat, None, "not looked at again before 100 ms");
        r.adjust_lowat(t0 + LOWAT_EVERY_TIME);
        (r.lowat, kernel_rcvbuf)
    }

    #[test]
    fn the_low_water_mark_keeps_to_the_rate_and_a_share_of_the_receive_buffer() {
        // Fast, with a large buffer: the full mark.
        assert_eq!(lowat_after(4 << 20, 2_500_000_000).0, Some(LOWAT));
        // Fast, with a fixed small buffer (`-w 16K`): a quarter of it.
        let (lowat, rcvbuf) = lowat_after(16 * 1024, 2_500_000_000);
        assert_eq!(lowat, Some(rcvbuf as usize / LOWAT_SHARE));
        // Slow (1 MB/s): what 1 ms brings, so a byte waits about 1 ms to be counted.
        assert_eq!(lowat_after(4 << 20, 1_000_000).0, Some(1000));
    }

    #[test]
    fn several_loopback_streams_go_without_a_low_water_mark() {
        let (rx, _tx) = pair();
        assert!(use_lowat(&rx, 1));
        assert!(
            !use_lowat(&rx, 4),
            "measured slower on loopback with several"
        );
        assert!(!can_share_receiving(&rx));
    }

    #[test]
    fn only_unpaced_senders_share_a_thread() {
        assert!(can_share_a_thread(&config(1, 1, false)));
        let paced = TcpSendConfig {
            rate: Rate::BitsPerSec(1e6),
            ..config(1, 1, false)
        };
        assert!(!can_share_a_thread(&paced));
    }
}
