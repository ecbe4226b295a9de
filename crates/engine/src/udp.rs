//! UDP data plane: a paced sender and an accounting receiver, each on its own OS thread.
//!
//! The sender follows an absolute schedule (packet n is due at t0 + n/rate), sends due
//! packets in `sendmmsg` batches or as one GSO super-datagram, spins for short gaps and
//! sleeps for long ones, and records how late each packet left. Every datagram carries the
//! wirebench test header (stream, sequence, transmit time). Some datagrams ask the receiver
//! to echo them; the sender reads the echoes and keeps a round-trip histogram.
//!
//! The receiver reads `recvmmsg` batches with kernel receive timestamps, ignores datagrams
//! of other tests, echoes what it is asked to, and feeds everything else into the exact
//! per-stream accounting of [`model::stats`]. It does not decide when a test ends: the
//! caller raises the stop token.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use wire::testhdr::{self, TestFlags, TestHeaderRepr};

use crate::clock::RealClock;
use crate::live::{LiveCounters, LiveSnapshot};
use crate::pace::{self, Step};
use crate::sys::{self, RecvBatch, SendBatch};
use model::clock::{Clock, UnixNanos};
use model::pacing::{self, PaceAction, Pacer, Schedule};
use model::results::XdpFrameCheck;
use model::spec::{Rate, UdpBackend};
use model::stats::buckets::{BucketCounts, LogBuckets};
use model::stats::histogram::{LatencyHistogram, LatencySummary};
use model::stats::receiver::StreamReceiver;
use model::stats::seq::{SeqTracker, DEFAULT_WINDOW};
use model::stats::slots::TxSlots;
use model::stats::Counters;
use model::stop::Stop;
use model::wait::{Poll, Wait};

/// Datagrams per `sendmmsg` / `recvmmsg` call.
pub const BATCH: usize = 64;
/// Most segments in one GSO send (the kernel's UDP_MAX_SEGMENTS is 64 on older kernels).
const GSO_MAX_SEGMENTS: usize = 64;
/// Largest GSO super-datagram payload (the kernel limit is 64 KiB including headers).
const GSO_MAX_BYTES: usize = 65_000;
/// Round-trip probes per second and stream when the clocks are not shared.
const PROBES_PER_SEC: f64 = 1000.0;
/// How long the sender keeps reading echoes after its last packet.
const ECHO_DRAIN: Duration = Duration::from_millis(50);
/// Longest time a stopped receiver keeps draining its socket.
const MAX_DRAIN: Duration = Duration::from_millis(200);
/// Receive timeout: how quickly a receiver notices its stop.
const RECV_TIMEOUT: Duration = Duration::from_millis(20);

/// What a UDP sender does.
#[derive(Debug, Clone)]
pub struct UdpSendConfig {
    /// Test id written into every header.
    pub test_id: u16,
    /// Stream id written into every header.
    pub stream_id: u8,
    /// Payload bytes per datagram (≥ the test header).
    pub payload_len: usize,
    /// Offered load.
    pub rate: Rate,
    /// How long to send.
    pub duration: Duration,
    /// `Sendmmsg` or `Gso` (`Auto` is resolved by the caller).
    pub backend: UdpBackend,
    /// Flag some datagrams for echo to measure round-trip latency.
    pub echo_probes: bool,
    /// The test's secret token (answers to repeated CONTROL datagrams carry it).
    pub token: u64,
    /// Datagrams to send before stopping (`-n`, `-k`); `None` sends for the duration.
    pub packets: Option<u64>,
    /// Count sent datagrams per slot of this many ns of send time (0: do not; see
    /// [`model::stats::slots`]).
    pub slot_ns: u64,
    /// The most payload bytes one send may carry (a GSO batch is cut to fit; `None`: no
    /// limit but GSO's own). A receiver past the UDP stack (AF_XDP) takes a batch that no
    /// device segmented as one frame, and its frames are [`AF_XDP_MAX_SEND`] at most.
    pub max_send_bytes: Option<usize>,
}

/// The most UDP payload one AF_XDP receive frame holds: its largest frame less the
/// Ethernet, IPv6 (the longer) and UDP headers.
pub const AF_XDP_MAX_SEND: usize = sys::xdp::RX_FRAME_MAX - 14 - 40 - 8;

/// What a UDP sender did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpSenderReport {
    /// Stream id.
    pub stream_id: u8,
    /// Datagrams the kernel accepted.
    pub packets: u64,
    /// Payload bytes the kernel accepted.
    pub bytes: u64,
    /// From the first send to the end of sending.
    pub elapsed: Duration,
    /// Scheduled packet rate (`None` = unlimited).
    pub target_pps: Option<f64>,
    /// Share of due packets not sent by the end (0..1).
    pub behind_ratio: f64,
    /// `behind_ratio` above the 1 % threshold.
    pub generator_limited: bool,
    /// How late packets left against their deadlines.
    pub pacing_error: Option<LatencySummary>,
    /// Round-trip time of echoed probes.
    pub rtt: Option<LatencySummary>,
    /// The raw round-trip histogram (base64 HdrHistogram V2 + deflate on the wire).
    pub rtt_histogram: Option<LatencyHistogram>,
    /// Echo replies whose timestamp came from the kernel.
    pub kernel_timestamps: bool,
    /// CPU time of the sending thread.
    pub cpu_time: Duration,
    /// Backend actually used (`udp-sendmmsg`, `udp-gso`).
    pub backend: String,
    /// Send calls that failed (buffer full, peer gone).
    pub send_errors: u64,
    /// Datagrams sent per slot of send time.
    #[serde(default)]
    pub slots: TxSlots,
    /// The send time of the first datagram (this sender's clock).
    #[serde(default)]
    pub first_tx: Option<UnixNanos>,
}

/// What a UDP receiver measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpReceiverReport {
    /// Stream id.
    pub stream_id: u8,
    /// Received, duplicates, reordered, late, and the numbers missing below the highest seen
    /// (`sent` is the sender's to report).
    #[serde(flatten)]
    pub counters: Counters,
    /// Payload bytes of unique packets.
    pub bytes: u64,
    /// RFC 3550 jitter, µs.
    pub jitter_us: f64,
    /// One-way latency (when the clocks are shared or synchronised).
    pub latency: Option<LatencySummary>,
    /// The raw one-way histogram (base64 HdrHistogram V2 + deflate on the wire).
    pub latency_histogram: Option<LatencyHistogram>,
    /// One-way samples dropped because receive time preceded transmit time.
    pub clock_skew_samples: u64,
    /// Inter-arrival gap percentiles.
    pub gaps: Option<LatencySummary>,
    /// First arrival to last arrival.
    pub active: Duration,
    /// Datagrams of other tests or not wirebench at all.
    pub foreign: u64,
    /// Datagrams echoed back.
    pub echoed: u64,
    /// Receive timestamps came from the kernel.
    pub kernel_timestamps: bool,
    /// `spin` (busy-polling) or `blocking`.
    pub mode: String,
    /// CPU time of the receiving thread.
    pub cpu_time: Duration,
    /// How long the receiving thread ran (its CPU use is `cpu_time / wall_time`).
    pub wall_time: Duration,
    /// Unique datagrams received per slot of send time.
    #[serde(default)]
    pub slots: TxSlots,
    /// An AF_XDP receiver's frames as its program, the kernel and it counted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub af_xdp_frames: Option<XdpFrameCheck>,
}

/// Applies the options every data socket gets: buffers, DSCP, receive timestamps.
pub fn prepare_socket(sock: &UdpSocket, window: Option<u32>, dscp: Option<u8>) -> io::Result<bool> {
    let s = socket2::SockRef::from(sock);
    let buf = window.map(|w| w as usize).unwrap_or(4 * 1024 * 1024);
    // The kernel caps these at net.core.[rw]mem_max (often 208 KiB, ~80 ms of a 20 Mbit/s
    // stream); with CAP_NET_ADMIN the cap is lifted. Best effort either way.
    let _ = s.set_send_buffer_size(buf);
    let _ = s.set_recv_buffer_size(buf);
    if s.recv_buffer_size().unwrap_or(0) < buf {
        let _ = sys::force_buffer_size(sock, true, buf);
    }
    if s.send_buffer_size().unwrap_or(0) < buf {
        let _ = sys::force_buffer_size(sock, false, buf);
    }
    if let Some(d) = dscp {
        set_dscp(&s, sock.local_addr()?, d)?;
    }
    Ok(sys::enable_rx_timestamps(sock).is_ok())
}

/// Marks a socket's packets with a DSCP (RFC 2474: the upper six bits of the IPv4 TOS or
/// IPv6 traffic class byte).
pub(crate) fn set_dscp(s: &socket2::SockRef<'_>, local: SocketAddr, dscp: u8) -> io::Result<()> {
    let tos = u32::from(dscp) << 2;
    match local {
        SocketAddr::V4(_) => s.set_tos_v4(tos),
        // An IPv4 peer of a dual-stack socket (`::ffff:a.b.c.d`) gets IPv4 packets, which
        // take IP_TOS, not the traffic class.
        SocketAddr::V6(a) if a.ip().to_ipv4_mapped().is_some() => {
            s.set_tos_v4(tos)?;
            s.set_tclass_v6(tos)
        }
        SocketAddr::V6(_) => s.set_tclass_v6(tos),
    }
}

/// Length of a CONTROL (handshake) datagram: the test header and the test's 8-byte token.
const CONTROL_LEN: usize = testhdr::HEADER_LEN + 8;

/// A handshake datagram: the client's request, or (`answer`) the server's answer, which
/// also carries ECHO_REPLY. Answers are never answered, so no datagram can bounce.
fn control_datagram(test_id: u16, stream_id: u8, token: u64, answer: bool) -> [u8; CONTROL_LEN] {
    let mut buf = [0u8; CONTROL_LEN];
    let flags = if answer {
        TestFlags::CONTROL | TestFlags::ECHO_REPLY
    } else {
        TestFlags::CONTROL
    };
    let hello = TestHeaderRepr {
        flags,
        test_id,
        stream_id,
        seq: 0,
        tx_ns: 0,
    };
    emit_header(&hello, &mut buf);
    buf[testhdr::HEADER_LEN..].copy_from_slice(&token.to_be_bytes());
    buf
}

/// Whether `data` is the handshake request (or, with `answer`, the answer) of this test,
/// stream and token.
fn is_control_for(data: &[u8], test_id: u16, stream_id: u8, token: u64, answer: bool) -> bool {
    let Some(h) = testhdr::parse_fast(data) else {
        return false;
    };
    h.flags.contains(TestFlags::CONTROL)
        && h.flags.contains(TestFlags::ECHO_REPLY) == answer
        && h.test_id == test_id
        && h.stream_id == stream_id
        && data.get(testhdr::HEADER_LEN..CONTROL_LEN) == Some(&token.to_be_bytes()[..])
}

/// Client side of the stream handshake: sends a CONTROL datagram (test id, stream id and
/// the test's secret token) on the connected socket every 200 ms until the server echoes it
/// or `timeout` passes.
pub fn register(
    sock: &UdpSocket,
    test_id: u16,
    stream_id: u8,
    token: u64,
    timeout: Duration,
) -> io::Result<()> {
    let clock = RealClock::new();
    let start = clock.mono();
    let hello = control_datagram(test_id, stream_id, token, false);
    sock.set_read_timeout(Some(Duration::from_millis(200)))?;
    let mut reply = [0u8; 2048];
    while clock.mono().saturating_sub(start) < timeout {
        sock.send(&hello)?;
        let sent_at = clock.mono();
        let slot = Duration::from_millis(200);
        while clock.mono().saturating_sub(sent_at) < slot {
            match sock.recv(&mut reply) {
                Ok(n) if is_control_for(&reply[..n], test_id, stream_id, token, true) => {
                    return Ok(())
                }
                Ok(_) => {}
                Err(e) if is_timeout(&e) => break,
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {
                    // Nobody listens (yet or any more): wait out the slot, do not spin.
                    std::thread::sleep(slot.saturating_sub(clock.mono().saturating_sub(sent_at)));
                    break;
                }
                Err(e) => return Err(e),
            }
        }
    }
    Err(io::Error::new(
        io::ErrorKind::TimedOut,
        "the server did not answer the UDP stream handshake",
    ))
}

/// Server side of the stream handshake, for all streams of a test at once: waits on the
/// unconnected sockets for the client's CONTROL datagrams, accepting only those from
/// `peer_ip` that carry the test's token; connects each socket to its sender and answers.
/// Answers repeated datagrams (a lost answer) until every stream is registered.
pub fn accept_registrations(
    socks: &[(&UdpSocket, u8)],
    test_id: u16,
    token: u64,
    peer_ip: std::net::IpAddr,
    timeout: Duration,
) -> io::Result<()> {
    let clock = RealClock::new();
    let start = clock.mono();
    let mut done = vec![false; socks.len()];
    for (s, _) in socks {
        s.set_nonblocking(true)?;
    }
    let mut buf = [0u8; 2048];
    while done.iter().any(|d| !d) {
        if clock.mono().saturating_sub(start) >= timeout {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no UDP stream handshake from the client",
            ));
        }
        let mut idle = true;
        for (k, (s, id)) in socks.iter().enumerate() {
            match s.recv_from(&mut buf) {
                Ok((n, peer))
                    if peer.ip() == peer_ip
                        && is_control_for(&buf[..n], test_id, *id, token, false) =>
                {
                    idle = false;
                    if !done[k] {
                        s.connect(peer)?;
                        done[k] = true;
                    }
                    let _ = s.send(&control_datagram(test_id, *id, token, true));
                }
                Ok(_) => idle = false,
                Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::ConnectionRefused => {}
                Err(e) => return Err(e),
            }
        }
        if idle {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    // Whatever a stranger sprayed at the ports before they were connected is still queued
    // (connect does not purge it): drop it before any data is counted. The client sends data
    // only after the server's go-ahead, so nothing of the test is lost here.
    for (s, _) in socks {
        while s.recv(&mut buf).is_ok() {}
        s.set_nonblocking(false)?;
    }
    Ok(())
}

pub(crate) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

fn emit_header(h: &TestHeaderRepr, buf: &mut [u8]) {
    // The buffer is always at least HEADER_LEN long (checked by TestSpec::check).
    let mut view = testhdr::TestHeader::new_unchecked(&mut buf[..testhdr::HEADER_LEN]);
    h.emit(&mut view);
}

/// Runs a paced UDP sender on a connected socket until `cfg.duration` has passed or
/// `stop` is raised.
pub fn run_sender(
    sock: &UdpSocket,
    cfg: &UdpSendConfig,
    live: &LiveCounters,
    stop: &Stop,
) -> UdpSenderReport {
    let clock = RealClock::new();
    let len = cfg.payload_len.max(testhdr::HEADER_LEN);
    let target_pps = cfg.rate.packets_per_sec(len);
    let mut backend = cfg.backend.resolve(target_pps);
    let gso_bytes = cfg
        .max_send_bytes
        .map_or(GSO_MAX_BYTES, |m| m.min(GSO_MAX_BYTES));
    let gso_segments = (gso_bytes / len).clamp(1, GSO_MAX_SEGMENTS);
    if backend == UdpBackend::Gso
        && (gso_segments < 2
            || len > u16::MAX as usize
            || sys::set_udp_segment(sock, len as u16).is_err())
    {
        backend = UdpBackend::Sendmmsg;
    }
    let batch_max = if backend == UdpBackend::Gso {
        gso_segments
    } else {
        BATCH
    };
    let schedule = match target_pps {
        Some(pps) => Schedule::per_second(pps),
        None => Schedule::unlimited(),
    };
    let mut pacer = Pacer::new(schedule, batch_max, None);
    let probe_every: u64 = match (cfg.echo_probes, target_pps) {
        (false, _) => 0,
        (true, Some(pps)) => ((pps / PROBES_PER_SEC).round() as u64).max(1),
        (true, None) => 1024,
    };
    let _ = sock.set_write_timeout(Some(Duration::from_millis(50)));

    let template = TestHeaderRepr {
        flags: TestFlags::empty(),
        test_id: cfg.test_id,
        stream_id: cfg.stream_id,
        seq: 0,
        tx_ns: 0,
    };
    let mut mmsg = SendBatch::new(batch_max, len);
    let mut gso_buf = vec![
        0u8;
        if backend == UdpBackend::Gso {
            len * batch_max
        } else {
            0
        }
    ];
    for i in 0..batch_max {
        emit_header(&template, mmsg.slot_mut(i, len));
        if backend == UdpBackend::Gso {
            emit_header(&template, &mut gso_buf[i * len..(i + 1) * len]);
        }
    }
    let mut echo = EchoReader::new(cfg);
    let mut seq: u64 = 0;
    let mut bytes: u64 = 0;
    let mut send_errors: u64 = 0;
    let mut slots = TxSlots::new(cfg.slot_ns);
    let mut first_tx = None;
    let elapsed = pace::drive(&clock, clock.mono(), cfg.duration, stop, |elapsed| {
        let left = cfg.packets.map_or(u64::MAX, |n| n.saturating_sub(seq));
        if left == 0 {
            return Step::Done;
        }
        let k = match pacer.poll(elapsed) {
            PaceAction::Send(k) => k.min(batch_max).min(left as usize),
            wait => {
                echo.poll(sock, &clock, elapsed);
                echo.publish(live);
                return Step::from_wait(wait);
            }
        };
        let now = clock.wall().0;
        let sent = if backend == UdpBackend::Gso {
            for i in 0..k {
                stamp(
                    &mut gso_buf[i * len..(i + 1) * len],
                    seq + i as u64,
                    now,
                    probe_every,
                );
            }
            match sock.send(&gso_buf[..k * len]) {
                Ok(_) => k,
                Err(e) if seq == 0 && gso_unsupported(&e) => {
                    // The route cannot segment: fall back for good, and say so.
                    tracing::info!("UDP GSO refused ({e}); falling back to sendmmsg");
                    let _ = sys::set_udp_segment(sock, 0);
                    backend = UdpBackend::Sendmmsg;
                    0
                }
                Err(_) => 0,
            }
        } else {
            for i in 0..k {
                stamp(mmsg.slot_mut(i, len), seq + i as u64, now, probe_every);
            }
            mmsg.send(sock, k, false).unwrap_or_default()
        };
        if sent == 0 {
            send_errors += 1;
            // Buffer full or peer gone: give the kernel a moment, keep the schedule.
            std::thread::yield_now();
        } else {
            pacer.sent(sent, elapsed);
            slots.record(UnixNanos(now), sent as u64);
            first_tx.get_or_insert(UnixNanos(now));
            seq += sent as u64;
            bytes += (sent * len) as u64;
            live.publish(&LiveSnapshot {
                counters: Counters {
                    sent: seq,
                    ..Counters::default()
                },
                bytes,
                ..Default::default()
            });
        }
        echo.poll(sock, &clock, elapsed);
        echo.publish(live);
        Step::Again
    });
    let behind_ratio = if target_pps.is_some() {
        pacer.behind_ratio(elapsed)
    } else {
        0.0
    };
    if probe_every > 0 {
        Wait::on(&clock).at_most(ECHO_DRAIN).poll(|| {
            echo.poll(sock, &clock, Duration::MAX);
            echo.publish(live);
            Poll::<()>::Wait(Duration::from_millis(1))
        });
    }
    UdpSenderReport {
        stream_id: cfg.stream_id,
        packets: seq,
        bytes,
        elapsed,
        target_pps,
        behind_ratio,
        generator_limited: behind_ratio > pacing::GENERATOR_LIMITED_THRESHOLD,
        pacing_error: pacer.pacing_error().summary(),
        rtt: echo.hist.summary(),
        rtt_histogram: (!echo.hist.is_empty()).then(|| echo.hist.clone()),
        kernel_timestamps: echo.kernel_ts,
        cpu_time: sys::thread_cpu_time(),
        backend: backend.result_name().to_owned(),
        send_errors,
        slots,
        first_tx,
    }
}

/// Errors with which the kernel refuses a GSO send on this socket or route.
fn gso_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EIO | libc::EINVAL | libc::EOPNOTSUPP | libc::EMSGSIZE | libc::ENOPROTOOPT)
    )
}

/// Writes sequence number, transmit time and the echo flag into one datagram's header.
#[inline]
fn stamp(buf: &mut [u8], seq: u64, now_ns: u64, probe_every: u64) {
    testhdr::write_seq_ts(buf, seq, now_ns);
    let echo = probe_every > 0 && seq.is_multiple_of(probe_every);
    let flags = if echo {
        TestFlags::ECHO_REQUEST
    } else {
        TestFlags::empty()
    };
    testhdr::write_flags(buf, flags);
}

/// Reads what comes back on a sender's socket: echoed probes (round-trip times) and
/// repeated CONTROL datagrams of a client whose handshake answer was lost (answered again).
struct EchoReader {
    probes: bool,
    request: [u8; CONTROL_LEN],
    answer: [u8; CONTROL_LEN],
    batch: RecvBatch,
    hist: LatencyHistogram,
    /// The round trips in growing buckets too (latency per interval), and those changed.
    buckets: LogBuckets,
    touched: Vec<usize>,
    kernel_ts: bool,
    last_poll: Duration,
}

impl EchoReader {
    fn new(cfg: &UdpSendConfig) -> Self {
        Self {
            probes: cfg.echo_probes,
            request: control_datagram(cfg.test_id, cfg.stream_id, cfg.token, false),
            answer: control_datagram(cfg.test_id, cfg.stream_id, cfg.token, true),
            batch: RecvBatch::new(16, 2048),
            hist: LatencyHistogram::new(),
            buckets: LogBuckets::default(),
            touched: Vec::new(),
            kernel_ts: false,
            last_poll: Duration::ZERO,
        }
    }

    /// Publishes the round-trip buckets changed since the last call.
    fn publish(&mut self, live: &LiveCounters) {
        if !self.touched.is_empty() {
            live.publish_latency(&self.buckets, &self.touched);
            self.touched.clear();
        }
    }

    /// Reads without blocking, at most every 500 µs of schedule time when probing and
    /// every 10 ms otherwise (`Duration::MAX` forces a read).
    fn poll(&mut self, sock: &UdpSocket, clock: &RealClock, elapsed: Duration) {
        let every = if self.probes {
            Duration::from_micros(500)
        } else {
            Duration::from_millis(10)
        };
        if elapsed != Duration::MAX && elapsed.saturating_sub(self.last_poll) < every {
            return;
        }
        self.last_poll = elapsed;
        while let Ok(n) = self.batch.recv(sock, true) {
            for i in 0..n {
                let Some((data, ts)) = self.batch.get(i) else {
                    continue;
                };
                if data == self.request {
                    let _ = sock.send(&self.answer);
                    continue;
                }
                let Some(h) = testhdr::parse_fast(data) else {
                    continue;
                };
                if !self.probes || !h.flags.contains(TestFlags::ECHO_REPLY) {
                    continue;
                }
                let rx = match ts {
                    Some(t) => {
                        self.kernel_ts = true;
                        t
                    }
                    None => clock.wall(),
                };
                if rx.0 >= h.tx_ns {
                    self.hist.record(Duration::from_nanos(rx.0 - h.tx_ns));
                    let i = self.buckets.record(rx.0 - h.tx_ns);
                    if !self.touched.contains(&i) {
                        self.touched.push(i);
                    }
                }
            }
            if n < 16 {
                break;
            }
        }
    }
}

/// What a UDP receiver does.
#[derive(Debug, Clone)]
pub struct UdpRecvConfig {
    /// Only datagrams of this test are counted.
    pub test_id: u16,
    /// Stream id expected (datagrams of other streams of the same test are foreign here).
    pub stream_id: u8,
    /// Record one-way latency (the clocks are shared or synchronised).
    pub one_way: bool,
    /// Largest datagram expected.
    pub max_len: usize,
    /// Busy-poll the socket instead of sleeping in `recvmmsg` (see [`spin_receiver_for`]).
    pub spin: bool,
    /// The test's secret token (answers to repeated CONTROL datagrams carry it).
    pub token: u64,
    /// Count unique datagrams per slot of this many ns of send time (0: do not).
    pub slot_ns: u64,
}

/// Expected packet rates above this make the receiver busy-poll: at such rates it never
/// idles anyway, and a sleeping receiver makes the sender's CPU pay for every wake-up.
pub const SPIN_RECEIVER_ABOVE_PPS: f64 = 100_000.0;

/// Whether a receiver for a stream of this rate (`None` = unlimited) should busy-poll.
pub fn spin_receiver_for(pps: Option<f64>) -> bool {
    pps.is_none_or(|p| p > SPIN_RECEIVER_ABOVE_PPS)
}

/// What a UDP receiver makes of the datagrams of its stream, wherever they come from (its
/// socket, or AF_XDP): the counters and latency, with the answers its socket sends back
/// (repeated handshake requests, echo probes).
struct Counting<'a> {
    cfg: &'a UdpRecvConfig,
    rx: StreamReceiver,
    /// Bytes of every datagram read, counted or not (what the server meters).
    read_bytes: u64,
    foreign: u64,
    echoed: u64,
    stamped: bool,
}

impl<'a> Counting<'a> {
    fn new(cfg: &'a UdpRecvConfig) -> Self {
        Self {
            cfg,
            rx: StreamReceiver::with_tracker(SeqTracker::with_origin(DEFAULT_WINDOW, 0))
                .with_slots(cfg.slot_ns),
            read_bytes: 0,
            foreign: 0,
            echoed: 0,
            stamped: false,
        }
    }

    /// One datagram's payload `data`, received at `ts` (`None`: not stamped, now).
    fn on_datagram(
        &mut self,
        sock: &UdpSocket,
        data: &[u8],
        ts: Option<UnixNanos>,
        clock: &RealClock,
    ) {
        let cfg = self.cfg;
        self.read_bytes += data.len() as u64;
        let Some(h) = testhdr::parse_fast(data) else {
            self.foreign += 1;
            return;
        };
        if h.test_id != cfg.test_id || h.stream_id != cfg.stream_id {
            self.foreign += 1;
            return;
        }
        if h.flags.contains(TestFlags::CONTROL) {
            // A repeated handshake request (our answer was lost): answer again. Answers are
            // never answered. Neither is data.
            if is_control_for(data, cfg.test_id, cfg.stream_id, cfg.token, false) {
                let _ = sock.send(&control_datagram(
                    cfg.test_id,
                    cfg.stream_id,
                    cfg.token,
                    true,
                ));
            }
            return;
        }
        if h.flags.contains(TestFlags::ECHO_REPLY) {
            return;
        }
        let rx_time = match ts {
            Some(t) => {
                self.stamped = true;
                t
            }
            None => clock.wall(),
        };
        if h.flags.contains(TestFlags::ECHO_REQUEST) {
            // Only the header goes back: the probe's return costs the reverse path 18
            // bytes, not a full datagram.
            let mut echo = [0u8; testhdr::HEADER_LEN];
            echo.copy_from_slice(&data[..testhdr::HEADER_LEN]);
            testhdr::write_flags(&mut echo, TestFlags::ECHO_REPLY);
            if sock.send(&echo).is_ok() {
                self.echoed += 1;
            }
        }
        self.rx
            .on_packet(h.seq, UnixNanos(h.tx_ns), rx_time, data.len(), cfg.one_way);
    }

    fn publish(&mut self, live: &LiveCounters) {
        let s = self.rx.snapshot();
        live.publish(&LiveSnapshot {
            counters: s.counters,
            bytes: s.bytes,
            jitter_ns: (s.jitter_us * 1000.0) as u64,
            ..Default::default()
        });
        live.publish_raw_bytes(self.read_bytes);
        let (buckets, touched) = self.rx.take_latency_changes();
        live.publish_latency(buckets, &touched);
    }

    fn report(self, mode: String, clock: &RealClock, started: Duration) -> UdpReceiverReport {
        let s = self.rx.snapshot();
        let active = match (s.first_rx, s.last_rx) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => Duration::ZERO,
        };
        UdpReceiverReport {
            stream_id: self.cfg.stream_id,
            counters: s.counters,
            bytes: s.bytes,
            jitter_us: s.jitter_us,
            latency: self.rx.latency().summary(),
            latency_histogram: (!self.rx.latency().is_empty()).then(|| self.rx.latency().clone()),
            clock_skew_samples: self.rx.clock_skew_samples(),
            gaps: self.rx.gaps().summary(),
            active,
            foreign: self.foreign,
            echoed: self.echoed,
            kernel_timestamps: self.stamped,
            mode,
            cpu_time: sys::thread_cpu_time(),
            wall_time: clock.mono().saturating_sub(started),
            slots: self.rx.slots().clone(),
            af_xdp_frames: None,
        }
    }
}

/// Runs a receiver on a connected socket until `stop` is raised.
pub fn run_receiver(
    sock: &UdpSocket,
    cfg: &UdpRecvConfig,
    live: &LiveCounters,
    stop: &Stop,
) -> UdpReceiverReport {
    let clock = RealClock::new();
    let _ = sock.set_read_timeout(Some(RECV_TIMEOUT));
    let mut batch = RecvBatch::new(BATCH, cfg.max_len.max(testhdr::HEADER_LEN) + 64);
    let mut counting = Counting::new(cfg);
    let started = clock.mono();
    // Once stopped, the receiver drains what its socket still holds without waiting, for
    // at most MAX_DRAIN (a peer that keeps sending cannot keep it alive).
    let mut drain_until: Option<Duration> = None;
    loop {
        if drain_until.is_none() && stop.is_raised() {
            drain_until = Some(clock.mono() + MAX_DRAIN);
        }
        if drain_until.is_some_and(|d| clock.mono() >= d) {
            break;
        }
        let draining = drain_until.is_some();
        let n = match batch.recv(sock, draining || cfg.spin) {
            Ok(n) => n,
            Err(e) if draining && is_timeout(&e) => break,
            Err(e) if cfg.spin && is_timeout(&e) => {
                std::hint::spin_loop();
                continue;
            }
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::ConnectionRefused => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::warn!("udp receiver stream {}: {e}", cfg.stream_id);
                break;
            }
        };
        for i in 0..n {
            if let Some((data, ts)) = batch.get(i) {
                counting.on_datagram(sock, data, ts, &clock);
            }
        }
        counting.publish(live);
    }
    let mode = if cfg.spin { "spin" } else { "blocking" };
    counting.report(mode.to_owned(), &clock, started)
}

/// Rounds of reading what is left once an AF_XDP receiver stops, while its program's count
/// still moves (a peer that keeps sending cannot hold it).
const MAX_COUNT_ROUNDS: usize = 8;

/// Runs a receiver whose datagrams arrive through AF_XDP (`xdp`, filtered on the socket's
/// port) until `stop` is raised: only datagrams from the socket's peer count, as on the
/// connected socket, which still sends the answers. Each is stamped by the XDP program on
/// arrival; the kernel's UDP stack never sees them.
pub fn run_receiver_xdp(
    sock: &UdpSocket,
    xdp: &mut dyn crate::frameio::FrameRx,
    cfg: &UdpRecvConfig,
    live: &LiveCounters,
    stop: &Stop,
) -> UdpReceiverReport {
    let clock = RealClock::new();
    let mut counting = Counting::new(cfg);
    let started = clock.mono();
    // A dual-stack socket names an IPv4 peer as ::ffff:a.b.c.d; frames carry a.b.c.d.
    // Address and port are compared, not an IPv6 scope id, which a frame does not carry.
    let peer = sock
        .peer_addr()
        .ok()
        .map(|a| (a.ip().to_canonical(), a.port()));
    let port = sock.local_addr().map(|a| a.port()).unwrap_or(0);
    let mut drain_until: Option<Duration> = None;
    let mut not_udp = 0u64;
    let mut frames = 0u64;
    let mut read =
        |xdp: &mut dyn crate::frameio::FrameRx, counting: &mut Counting, timeout: Duration| {
            xdp.recv_frames(timeout, &mut |frame, ts| {
                frames += 1;
                match udp_of(frame) {
                    Some((from, to, payload))
                        if to == port && Some((from.ip(), from.port())) == peer =>
                    {
                        for datagram in gso_segments(payload, cfg.max_len) {
                            counting.on_datagram(sock, datagram, ts, &clock);
                        }
                    }
                    Some(_) => counting.foreign += 1,
                    None => not_udp += 1,
                }
            })
        };
    let mut failed = false;
    loop {
        if drain_until.is_none() && stop.is_raised() {
            drain_until = Some(clock.mono() + MAX_DRAIN);
        }
        if drain_until.is_some_and(|d| clock.mono() >= d) {
            break;
        }
        match read(xdp, &mut counting, RECV_TIMEOUT) {
            Ok(0) if drain_until.is_some() => break,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!("udp receiver stream {} (AF_XDP): {e}", cfg.stream_id);
                failed = true;
                break;
            }
        }
        counting.publish(live);
    }
    // The program's count, then what is still on the rings, until the count stands still
    // (a frame redirected after the count was read is read here, and counted next round).
    let mut redirected = xdp.redirected();
    let rounds = if failed { 0 } else { MAX_COUNT_ROUNDS };
    for _ in 0..rounds {
        while matches!(read(xdp, &mut counting, Duration::ZERO), Ok(n) if n > 0) {}
        let now = xdp.redirected();
        if now == redirected {
            break;
        }
        redirected = now;
    }
    let dropped = xdp.take_drops();
    if dropped > 0 {
        tracing::warn!(
            "udp receiver stream {} (AF_XDP): the kernel dropped {dropped} frames before they were read",
            cfg.stream_id
        );
    }
    // Frames the program took that are no whole UDP datagram are foreign too: not of this
    // stream.
    counting.foreign += not_udp;
    let mut r = counting.report("af_xdp".to_owned(), &clock, started);
    r.af_xdp_frames = redirected.map(|redirected| XdpFrameCheck {
        redirected,
        read: frames,
        dropped,
    });
    if let Some(c) = r.af_xdp_frames.filter(|c| !c.agrees()) {
        tracing::warn!(
            "udp receiver stream {} (AF_XDP): the program redirected {} frames, the receiver read {} and the kernel dropped {}",
            cfg.stream_id, c.redirected, c.read, c.dropped
        );
    }
    r
}

/// The datagrams of a UDP payload that may be a whole GSO batch: a sender with
/// `UDP_SEGMENT` hands the kernel one buffer of many datagrams, and where no device on the
/// way segments it (veth passes the batch on whole) the receiver's UDP stack cuts it into
/// datagrams of the segment size, the last one possibly shorter (`udp_rcv_segment`). An
/// AF_XDP receiver sees the batch before that stack and cuts it the same way, by the test's
/// datagram length, which is the sender's segment size. A payload no longer than that is
/// one datagram.
fn gso_segments(payload: &[u8], datagram_len: usize) -> impl Iterator<Item = &[u8]> {
    // `chunks` gives nothing for an empty payload, which is still one (foreign) datagram.
    let empty = payload.is_empty().then_some(payload);
    empty
        .into_iter()
        .chain(payload.chunks(datagram_len.max(testhdr::HEADER_LEN)))
}

/// The source, destination port and payload of a UDP datagram in an untagged Ethernet
/// frame (`None`: not one, or its length fields do not fit the frame). The checksum is not
/// checked: a datagram sent on this host (veth) carries a partial one for the offload to
/// finish, and the kernel's own UDP stack trusts those too.
fn udp_of(frame: &[u8]) -> Option<(SocketAddr, u16, &[u8])> {
    use wire::{ethernet, ipv4, ipv6, udp, EtherType, IpProtocol};
    let eth = ethernet::Frame::new_checked(frame).ok()?;
    let (src, l4): (std::net::IpAddr, &[u8]) = match eth.ethertype() {
        EtherType::IPV4 => {
            let ip = ipv4::Packet::new_checked(eth.payload()).ok()?;
            if ip.protocol() != IpProtocol::UDP || ip.more_frags() || ip.frag_offset() != 0 {
                return None;
            }
            (std::net::Ipv4Addr::from(ip.src_addr()).into(), ip.payload())
        }
        EtherType::IPV6 => {
            let ip = ipv6::Packet::new_checked(eth.payload()).ok()?;
            if ip.next_header() != IpProtocol::UDP {
                return None;
            }
            (std::net::Ipv6Addr::from(ip.src_addr()).into(), ip.payload())
        }
        _ => return None,
    };
    let u = udp::Packet::new_checked(l4).ok()?;
    Some((
        SocketAddr::new(src, u.src_port()),
        u.dst_port(),
        u.payload(),
    ))
}

/// How an echo session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EchoEnd {
    /// Messages echoed.
    pub echoed: u64,
    /// Nothing came for the idle time (the client fell silent).
    pub went_idle: bool,
    /// Busy-polling was stopped because the spin budget was used up.
    pub spin_refused: bool,
}

/// Echoes test messages from `peer_ip` back to their sender (flagged as replies) until
/// `stop` is raised, or until nothing came for `idle` (the client fell silent). Datagrams
/// that are already answers, or come from anyone else, are dropped, so two echo sockets
/// cannot be made to bounce a datagram between them.
///
/// With `spin` it busy-polls for the lowest latency, but only while messages come: after
/// [`SPIN_IDLE`] without one it sleeps in `recv` again, so a session that sends nothing
/// does not hold a core. Spin time is reported to `spin` every [`SPIN_CHARGE`]; when it
/// answers `false` the session sleeps in `recv` from then on.
pub fn run_echo(
    sock: &UdpSocket,
    peer_ip: std::net::IpAddr,
    max_len: usize,
    mut spin: Option<&mut dyn FnMut(Duration) -> bool>,
    idle: Duration,
    stop: &Stop,
) -> EchoEnd {
    let _ = sock.set_read_timeout(Some(RECV_TIMEOUT));
    let mut spinning = spin.is_some();
    let _ = sock.set_nonblocking(spinning);
    let mut buf = vec![0u8; max_len.clamp(testhdr::HEADER_LEN, 65_536)];
    let mut end = EchoEnd {
        echoed: 0,
        went_idle: false,
        spin_refused: false,
    };
    let clock = RealClock::new();
    let mut last = clock.mono();
    let mut charged = last;
    while !stop.is_raised() {
        if spinning {
            let now = clock.mono();
            let spent = now.saturating_sub(charged);
            if spent >= SPIN_CHARGE {
                charged = now;
                pay_spin(&mut spin, spent, &mut end);
                if spin.is_none() {
                    spinning = sock.set_nonblocking(false).is_err();
                }
            }
        }
        match sock.recv_from(&mut buf) {
            Ok((n, peer)) => {
                let ok = peer.ip() == peer_ip
                    && testhdr::parse_fast(&buf[..n])
                        .is_some_and(|h| !h.flags.contains(TestFlags::ECHO_REPLY));
                if !ok {
                    continue;
                }
                last = clock.mono();
                if spin.is_some() && !spinning {
                    spinning = sock.set_nonblocking(true).is_ok();
                    charged = last;
                }
                testhdr::write_flags(&mut buf[..n], TestFlags::ECHO_REPLY);
                if sock.send_to(&buf[..n], peer).is_ok() {
                    end.echoed += 1;
                }
            }
            Err(e) if is_timeout(&e) => {
                let now = clock.mono();
                let quiet = now.saturating_sub(last);
                if quiet >= idle {
                    end.went_idle = true;
                    return end;
                }
                if spinning && quiet >= SPIN_IDLE {
                    // The spin since the last charge is paid before sleeping.
                    pay_spin(&mut spin, now.saturating_sub(charged), &mut end);
                    spinning = sock.set_nonblocking(false).is_err();
                } else if spinning {
                    std::hint::spin_loop();
                }
            }
            Err(_) => {}
        }
    }
    if spinning {
        if let Some(charge) = spin.as_mut() {
            charge(clock.mono().saturating_sub(charged));
        }
    }
    end
}

/// Pays `spent` of busy-polling; a refusal ends busy-polling for the session.
fn pay_spin(
    spin: &mut Option<&mut dyn FnMut(Duration) -> bool>,
    spent: Duration,
    end: &mut EchoEnd,
) {
    if let Some(charge) = spin.as_mut() {
        if !charge(spent) {
            *spin = None;
            end.spin_refused = true;
        }
    }
}

/// A spinning echo goes back to sleeping in `recv` after this long without a message.
pub const SPIN_IDLE: Duration = Duration::from_millis(200);

/// A spinning echo reports its spin time this often.
pub const SPIN_CHARGE: Duration = Duration::from_millis(10);

/// What one ping-pong run measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PingPongReport {
    /// Message payload bytes.
    pub size: usize,
    /// Messages sent.
    pub sent: u64,
    /// Answers received.
    pub received: u64,
    /// Round-trip times.
    pub rtt: Option<LatencySummary>,
    /// The raw round-trip histogram.
    pub rtt_histogram: Option<LatencyHistogram>,
    /// `spin` (busy-polling) or `blocking`.
    pub mode: String,
    /// Answers were stamped by the kernel on arrival.
    pub kernel_timestamps: bool,
    /// Totals at the end of each interval (with an interval): its end from the start of
    /// this size, messages sent, answers, round trips so far.
    #[serde(default)]
    pub ticks: Vec<(Duration, u64, u64, BucketCounts)>,
}

/// A `size`-byte ping (at least the test header) asking to be echoed; its sequence number
/// and time are written per message.
pub(crate) fn ping_buffer(size: usize) -> Vec<u8> {
    let mut buf = vec![0u8; size.max(testhdr::HEADER_LEN)];
    let head = TestHeaderRepr {
        flags: TestFlags::ECHO_REQUEST,
        test_id: 0,
        stream_id: 0,
        seq: 0,
        tx_ns: 0,
    };
    emit_header(&head, &mut buf);
    buf
}

/// How long ping-pong waits for an answer before counting the message lost.
const PING_TIMEOUT: Duration = Duration::from_millis(100);

/// Sends one message at a time on a connected socket to an echo server and waits for its
/// answer, for `duration`. The round trip is the answer's receive time (kernel stamp when
/// available) minus the transmit time written into the message just before `send`.
pub fn run_ping_pong(
    sock: &UdpSocket,
    size: usize,
    duration: Duration,
    spin: bool,
    kernel_ts: bool,
    interval: Option<Duration>,
) -> io::Result<PingPongReport> {
    let clock = RealClock::new();
    let size = size.max(testhdr::HEADER_LEN);
    sock.set_nonblocking(spin)?;
    sock.set_read_timeout(Some(PING_TIMEOUT))?;
    let mut buf = ping_buffer(size);
    let mut batch = RecvBatch::new(1, size.max(2048));
    let mut hist = LatencyHistogram::new();
    let mut kernel_seen = false;
    let (mut sent, mut received) = (0u64, 0u64);
    let mut buckets = LogBuckets::default();
    let mut ticks = Vec::new();
    let every = interval.map(|i| i.max(Duration::from_millis(10)));
    let t0 = clock.mono();
    while clock.mono().saturating_sub(t0) < duration {
        if let Some(e) = every {
            let now = clock.mono().saturating_sub(t0);
            while now >= e * (ticks.len() as u32 + 1) {
                ticks.push((
                    e * (ticks.len() as u32 + 1),
                    sent,
                    received,
                    buckets.reading(),
                ));
            }
        }
        let seq = sent;
        let tx = clock.wall().0;
        testhdr::write_seq_ts(&mut buf, seq, tx);
        sock.send(&buf)?;
        sent += 1;
        let wait_start = clock.mono();
        'wait: loop {
            // One deadline per message, whatever else arrives meanwhile.
            if clock.mono().saturating_sub(wait_start) >= PING_TIMEOUT {
                break 'wait;
            }
            match batch.recv(sock, spin) {
                Ok(_) => {
                    let Some((data, ts)) = batch.get(0) else {
                        continue;
                    };
                    let Some(h) = testhdr::parse_fast(data) else {
                        continue;
                    };
                    if h.seq != seq || !h.flags.contains(TestFlags::ECHO_REPLY) {
                        continue; // a late answer to an earlier message, or junk
                    }
                    let rx = match ts.filter(|_| kernel_ts) {
                        Some(t) => {
                            kernel_seen = true;
                            t
                        }
                        None => clock.wall(),
                    };
                    hist.record(Duration::from_nanos(rx.0.saturating_sub(tx)));
                    buckets.record(rx.0.saturating_sub(tx));
                    received += 1;
                    break 'wait;
                }
                Err(e) if is_timeout(&e) => std::hint::spin_loop(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
    sock.set_nonblocking(false)?;
    if every.is_some() {
        // The last, partial interval.
        let end = clock.mono().saturating_sub(t0).min(duration);
        let last = ticks.last().map_or(Duration::ZERO, |t| t.0);
        if let Some(e) = every {
            if !ticks.is_empty() && end.saturating_sub(last) < e / 10 {
                // A sliver after the last tick joins the last interval.
                ticks.pop();
            }
        }
        ticks.push((end.max(last), sent, received, buckets.reading()));
    }
    Ok(PingPongReport {
        size,
        sent,
        received,
        rtt: hist.summary(),
        rtt_histogram: (!hist.is_empty()).then_some(hist),
        mode: if spin { "spin" } else { "blocking" }.to_owned(),
        kernel_timestamps: kernel_seen,
        ticks,
    })
}

/// One answered ping of [`run_paced_pings`]: when it was sent (this host's clock) and its
/// round trip.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PingSample {
    /// Send time.
    pub tx: UnixNanos,
    /// Round-trip time, ns.
    pub rtt_ns: u64,
}

/// What [`run_paced_pings`] measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PacedPings {
    /// Pings sent.
    pub sent: u64,
    /// Every answer, in arrival order (an answer later than `wait` after the last ping is
    /// not waited for: that ping counts as lost).
    pub samples: Vec<PingSample>,
    /// Answers were stamped by the kernel on arrival.
    pub kernel_timestamps: bool,
}

/// Sends a `size`-byte ping every `every` for `duration` (or until `stop` or `end` is raised)
/// on a connected socket to an echo server, without waiting for answers between pings, so
/// a queue that holds the answers for seconds (bufferbloat) delays them rather than losing
/// them; then waits up to `wait` for the last answers. Each answer carries its ping's
/// transmit time, so the round trip needs no matching table. Only the first answer to each
/// ping counts; an answer to a ping never sent is ignored.
pub fn run_paced_pings(
    sock: &UdpSocket,
    size: usize,
    every: Duration,
    duration: Duration,
    wait: Duration,
    stop: &Stop,
    end: &Stop,
) -> io::Result<PacedPings> {
    let clock = RealClock::new();
    let size = size.max(testhdr::HEADER_LEN);
    let every = every.max(Duration::from_micros(100));
    sock.set_read_timeout(Some(Duration::from_millis(1)))?;
    let mut buf = ping_buffer(size);
    let mut batch = RecvBatch::new(16, size.max(2048));
    let mut out = PacedPings::default();
    let mut seen = SeqTracker::with_origin(DEFAULT_WINDOW, 0);
    let t0 = clock.mono();
    let mut next = Duration::ZERO;
    // Set when sending ends: until when the last answers are waited for.
    let mut last_answers: Option<Duration> = None;
    loop {
        let now = clock.mono().saturating_sub(t0);
        let over = now >= duration || stop.is_raised() || end.is_raised();
        if over && last_answers.is_none() {
            last_answers = Some(now + wait);
        }
        if let Some(until) = last_answers {
            if now >= until || out.samples.len() as u64 >= out.sent {
                break;
            }
        } else if now >= next {
            testhdr::write_seq_ts(&mut buf, out.sent, clock.wall().0);
            // A full send buffer loses this ping, as a network would.
            let _ = sock.send(&buf);
            out.sent += 1;
            next += every;
        }
        match batch.recv(sock, false) {
            Ok(n) => {
                for i in 0..n {
                    let Some((data, ts)) = batch.get(i) else {
                        continue;
                    };
                    let Some(h) = testhdr::parse_fast(data) else {
                        continue;
                    };
                    if !h.flags.contains(TestFlags::ECHO_REPLY)
                        || h.seq >= out.sent
                        || !seen.on_packet(h.seq).is_accepted()
                    {
                        continue;
                    }
                    let rx = match ts {
                        Some(t) => {
                            out.kernel_timestamps = true;
                            t
                        }
                        None => clock.wall(),
                    };
                    out.samples.push(PingSample {
                        tx: UnixNanos(h.tx_ns),
                        rtt_ns: rx.0.saturating_sub(h.tx_ns),
                    });
                }
            }
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod test {
    use super::*;
    use std::net::Ipv4Addr;
    use std::sync::Arc;

    #[test]
    fn a_gso_batch_is_cut_into_the_tests_datagrams_and_a_datagram_stays_whole() {
        let batch: Vec<u8> = (0..100u8).collect();
        let cut: Vec<&[u8]> = gso_segments(&batch, 32).collect();
        assert_eq!(cut.len(), 4, "three whole datagrams and a shorter last one");
        assert_eq!(cut[0], &batch[..32]);
        assert_eq!(cut[3], &batch[96..]);
        assert_eq!(gso_segments(&batch, 1472).count(), 1);
        assert_eq!(gso_segments(&batch[..32], 32).count(), 1);
        // An empty payload is still one (foreign) datagram, as a socket would read it.
        assert_eq!(
            gso_segments(&[], 32).collect::<Vec<_>>(),
            vec![&[] as &[u8]]
        );
        // A length below the test header is never used to cut.
        assert_eq!(gso_segments(&batch, 1).count(), 6);
    }

    const TOKEN: u64 = 0x0123_4567_89ab_cdef;

    fn pair() -> (UdpSocket, UdpSocket) {
        let server = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let client = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        client.connect(server.local_addr().unwrap()).unwrap();
        (server, client)
    }

    fn data(test_id: u16, stream_id: u8, seq: u64) -> [u8; testhdr::HEADER_LEN] {
        let h = TestHeaderRepr {
            flags: TestFlags::empty(),
            test_id,
            stream_id,
            seq,
            tx_ns: 1,
        };
        h.to_bytes()
    }

    /// A receiver for stream 1 of test 7 on its own thread: (stop, counters, handle).
    fn spawn_receiver(
        sock: UdpSocket,
    ) -> (
        Stop,
        Arc<LiveCounters>,
        std::thread::JoinHandle<UdpReceiverReport>,
    ) {
        let stop = Stop::new();
        let live = Arc::new(LiveCounters::default());
        let (s2, l2) = (stop.clone(), live.clone());
        let rx = std::thread::spawn(move || run_receiver(&sock, &recv_cfg(1), &l2, &s2));
        (stop, live, rx)
    }

    fn recv_cfg(stream_id: u8) -> UdpRecvConfig {
        UdpRecvConfig {
            test_id: 7,
            stream_id,
            one_way: true,
            max_len: 64,
            spin: false,
            token: TOKEN,
            slot_ns: 1_000_000,
        }
    }

    /// What the server meters (`raw_bytes`) is every byte its stream's socket read:
    /// another stream's datagrams, garbage and duplicates too, not only the datagrams it
    /// counts (a client could otherwise exceed --max-rate with datagrams that are not
    /// counted).
    #[test]
    fn every_datagram_read_is_metered_counted_or_not() {
        let (server, client) = pair();
        let (stop, live, rx) = spawn_receiver(server);
        for seq in 0..10 {
            client.send(&data(7, 1, seq)).unwrap();
            client.send(&data(7, 1, seq)).unwrap(); // a duplicate
            client.send(&data(7, 2, seq)).unwrap(); // another stream's
            client.send(&data(9, 1, seq)).unwrap(); // another test's
            client.send(&[0xee; 40]).unwrap(); // not a test datagram
        }
        let clock = RealClock::new();
        let all = 10 * (4 * testhdr::HEADER_LEN as u64 + 40);
        let got = Wait::on(&clock)
            .at_most(Duration::from_secs(5))
            .poll_every(Duration::from_millis(10), || {
                (live.raw_bytes() >= all).then_some(())
            });
        assert!(
            got.ready().is_some(),
            "metered {} of {all} bytes",
            live.raw_bytes()
        );
        stop.raise();
        let r = rx.join().unwrap();
        assert_eq!(r.counters.received, 10, "only the stream's own are counted");
    }

    #[test]
    fn handshake_pairs_up_and_drops_what_strangers_queued_before() {
        let (server, client) = pair();
        // A stranger (here: another socket) sprays data at the server port before the
        // client registers; it must not be counted later.
        let stranger = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        for seq in 0..5 {
            stranger
                .send_to(&data(7, 1, seq), server.local_addr().unwrap())
                .unwrap();
        }
        let t = std::thread::spawn(move || {
            accept_registrations(
                &[(&server, 1)],
                7,
                TOKEN,
                Ipv4Addr::LOCALHOST.into(),
                Duration::from_secs(5),
            )
            .map(|()| server)
        });
        register(&client, 7, 1, TOKEN, Duration::from_secs(5)).unwrap();
        let server = t.join().unwrap().unwrap();
        assert_eq!(
            server.peer_addr().unwrap(),
            client.local_addr().unwrap(),
            "connected to the client"
        );
        // Now three real packets; the receiver counts exactly those.
        let (stop, live, rx) = spawn_receiver(server);
        for seq in 0..3 {
            client.send(&data(7, 1, seq)).unwrap();
        }
        Wait::on(&RealClock::new()).poll(|| {
            if live.snapshot().counters.received < 3 {
                Poll::Wait(Duration::from_millis(5))
            } else {
                Poll::Ready(())
            }
        });
        stop.raise();
        let r = rx.join().unwrap();
        assert_eq!(
            (r.counters.received, r.counters.duplicates, r.counters.lost),
            (3, 0, 0),
            "{r:?}"
        );
    }

    #[test]
    fn a_wrong_token_is_not_accepted() {
        let (server, client) = pair();
        let t = std::thread::spawn(move || {
            accept_registrations(
                &[(&server, 1)],
                7,
                TOKEN,
                Ipv4Addr::LOCALHOST.into(),
                Duration::from_millis(600),
            )
        });
        let err = register(&client, 7, 1, TOKEN ^ 1, Duration::from_millis(600)).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(
            t.join().unwrap().unwrap_err().kind(),
            io::ErrorKind::TimedOut
        );
    }

    #[test]
    fn requests_are_answered_once_and_answers_never() {
        // A receiver answers a repeated handshake request with a marked answer, and does
        // not answer that answer: a duplicated datagram cannot start a ping-pong.
        let (server, client) = pair();
        server.connect(client.local_addr().unwrap()).unwrap();
        let (stop, _live, rx) = spawn_receiver(server);
        client
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        client.send(&control_datagram(7, 1, TOKEN, false)).unwrap();
        let mut buf = [0u8; 64];
        let n = client.recv(&mut buf).unwrap();
        assert!(
            is_control_for(&buf[..n], 7, 1, TOKEN, true),
            "a marked answer"
        );
        client.send(&control_datagram(7, 1, TOKEN, true)).unwrap();
        let e = client.recv(&mut buf).unwrap_err();
        assert!(is_timeout(&e), "an answer is not answered: {e}");
        stop.raise();
        let r = rx.join().unwrap();
        assert_eq!(r.counters.received, 0, "handshakes are not data");
    }

    #[test]
    fn receiver_counts_loss_duplicates_reordering_and_foreign() {
        let (server, client) = pair();
        server.connect(client.local_addr().unwrap()).unwrap();
        let (stop, live, rx) = spawn_receiver(server);
        // 0 1 3 2 2 5, then a packet of another test and a non-wirebench datagram.
        for seq in [0, 1, 3, 2, 2, 5] {
            client.send(&data(7, 1, seq)).unwrap();
        }
        client.send(&data(8, 1, 6)).unwrap();
        client.send(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        Wait::on(&RealClock::new()).poll(|| {
            if live.snapshot().counters.received < 5 {
                Poll::Wait(Duration::from_millis(5))
            } else {
                Poll::Ready(())
            }
        });
        stop.raise();
        let r = rx.join().unwrap();
        assert_eq!(r.counters.received, 5, "{r:?}");
        assert_eq!(r.counters.duplicates, 1);
        assert_eq!(r.counters.reordered, 1);
        assert_eq!(r.counters.lost, 1, "seq 4 is missing");
        assert_eq!(r.foreign, 2);
    }

    #[test]
    fn paced_pings_keep_their_schedule_and_time_each_answer() {
        let (echo, client) = pair();
        let stop = Stop::new();
        let peer = client.local_addr().unwrap().ip();
        let s2 = stop.clone();
        let echoer = std::thread::spawn(move || {
            run_echo(&echo, peer, 64, None, Duration::from_secs(60), &s2).echoed
        });
        let never = Stop::new();
        let out = run_paced_pings(
            &client,
            64,
            Duration::from_millis(10),
            Duration::from_millis(300),
            Duration::from_millis(500),
            &never,
            &never,
        )
        .unwrap();
        stop.raise();
        let echoed = echoer.join().unwrap();
        // 30 pings at 100 Hz (the schedule catches up after a stall), each answered once.
        assert!((25..=31).contains(&out.sent), "{}", out.sent);
        assert_eq!(out.samples.len() as u64, out.sent);
        assert_eq!(echoed, out.sent);
        // Each answer carries its own ping's send time.
        assert!(out.samples.windows(2).all(|w| w[0].tx < w[1].tx), "{out:?}");
        assert!(out.samples.iter().all(|p| p.rtt_ns > 0), "{out:?}");
    }

    #[test]
    fn a_spinning_echo_whose_budget_runs_out_sleeps_and_still_answers() {
        let (echo, client) = pair();
        let stop = Stop::new();
        let peer = client.local_addr().unwrap().ip();
        let s2 = stop.clone();
        let charged = Arc::new(std::sync::Mutex::new(Vec::new()));
        let c2 = charged.clone();
        let echoer = std::thread::spawn(move || {
            // 50 ms of spinning allowed.
            let mut total = Duration::ZERO;
            let mut charge = |d: Duration| {
                c2.lock().unwrap().push(d);
                total += d;
                total < Duration::from_millis(50)
            };
            run_echo(
                &echo,
                peer,
                64,
                Some(&mut charge),
                Duration::from_secs(60),
                &s2,
            )
        });
        let never = Stop::new();
        let out = run_paced_pings(
            &client,
            64,
            Duration::from_millis(5),
            Duration::from_millis(300),
            Duration::from_millis(500),
            &never,
            &never,
        )
        .unwrap();
        stop.raise();
        let end = echoer.join().unwrap();
        assert!(end.spin_refused, "{end:?}");
        assert!(!end.went_idle);
        assert_eq!(end.echoed, out.sent, "every ping answered, spinning or not");
        // Charged as it went, and never again once refused.
        let charged = charged.lock().unwrap();
        let mut total = Duration::ZERO;
        let refused_at = charged.iter().position(|d| {
            total += *d;
            total >= Duration::from_millis(50)
        });
        assert_eq!(refused_at, Some(charged.len() - 1), "{charged:?}");
    }
}
