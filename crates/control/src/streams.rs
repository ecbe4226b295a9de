//! The data streams one side of a test runs: which side sends which stream, the TCP data
//! greeting, the stream configurations both sides derive from a request ([`TestKey`] and
//! the sender and receiver configs), the local address of a client's stream, and a runner
//! that owns the data-plane threads of one side.
//!
//! It does not speak the control protocol: the server and the client set streams up with
//! these and report what they give.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use engine::live::{LiveCounters, LiveSnapshot};
use engine::{tcp, udp};
use model::clock::Clock;
use model::spec::{Direction, TestSpec};
use model::stop::Stop;

use crate::messages::StreamReport;
use engine::clock::RealPauses;
use model::wait::{Poll, Wait};

/// Who sends a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sender {
    Client,
    Server,
}

/// Stream ids and their senders: forward `1..=P` from the client, reverse `1..=P` from the
/// server, bidir `1..=P` from the client and `P+1..=2P` from the server.
pub(crate) fn plan(spec: &TestSpec) -> Vec<(u8, Sender)> {
    let p = spec.streams;
    match spec.direction {
        Direction::Forward => (1..=p).map(|i| (i, Sender::Client)).collect(),
        Direction::Reverse => (1..=p).map(|i| (i, Sender::Server)).collect(),
        Direction::Bidir => (1..=p)
            .map(|i| (i, Sender::Client))
            .chain((1..=p).map(|i| (p.saturating_add(i), Sender::Server)))
            .collect(),
    }
}

/// Total streams of a test (both directions).
pub(crate) fn total_streams(spec: &TestSpec) -> u16 {
    let p = u16::from(spec.streams);
    if spec.direction == Direction::Bidir {
        2 * p
    } else {
        p
    }
}

/// Length of the greeting that opens every TCP data connection.
pub(crate) const GREETING_LEN: usize = 15;
const GREETING_MAGIC: &[u8; 4] = b"WBTD";

/// `WBTD`, test id (u16 BE), stream id (u8), token (u64 BE).
pub(crate) fn write_greeting(
    s: &mut TcpStream,
    test_id: u16,
    stream_id: u8,
    token: u64,
) -> std::io::Result<()> {
    let mut g = [0u8; GREETING_LEN];
    g[..4].copy_from_slice(GREETING_MAGIC);
    g[4..6].copy_from_slice(&test_id.to_be_bytes());
    g[6] = stream_id;
    g[7..15].copy_from_slice(&token.to_be_bytes());
    s.write_all(&g)
}

/// Reads and checks a greeting; returns the stream id.
pub(crate) fn read_greeting(
    s: &mut TcpStream,
    test_id: u16,
    token: u64,
    timeout: Duration,
) -> Result<u8, String> {
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    let mut g = [0u8; GREETING_LEN];
    s.read_exact(&mut g)
        .map_err(|e| format!("no data-connection greeting: {e}"))?;
    if &g[..4] != GREETING_MAGIC {
        return Err("data connection did not start with the wirebench greeting".into());
    }
    let tid = u16::from_be_bytes([g[4], g[5]]);
    let tok = u64::from_be_bytes([g[7], g[8], g[9], g[10], g[11], g[12], g[13], g[14]]);
    if tid != test_id || tok != token {
        return Err("data connection carries another test's id or token".into());
    }
    Ok(g[6])
}

/// What identifies a test on its data sockets, and how its latency is measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TestKey {
    /// In every data packet's header.
    pub(crate) test_id: u16,
    /// Secret of the test: in CONTROL datagrams and TCP greetings.
    pub(crate) token: u64,
    /// Receivers record one-way latency; otherwise senders send echo probes.
    pub(crate) one_way: bool,
    /// Both sides count UDP datagrams per slot of this many ns of send time.
    pub(crate) slot_ns: u64,
}

impl TestKey {
    /// The key of a test reporting every `interval_ms` (0: no intervals, no slots).
    pub(crate) fn new(
        spec: &TestSpec,
        test_id: u16,
        token: u64,
        one_way: bool,
        interval_ms: u32,
    ) -> TestKey {
        let slot_ns = match interval_ms {
            0 => 0,
            ms => model::stats::slots::slot_width(
                u64::from(ms) * 1_000_000,
                u64::try_from(spec.total_duration().as_nanos()).unwrap_or(u64::MAX),
            ),
        };
        TestKey {
            test_id,
            token,
            one_way,
            slot_ns,
        }
    }
}

/// The receiver configuration both sides derive from a request.
pub(crate) fn udp_recv_config(spec: &TestSpec, key: TestKey, stream_id: u8) -> udp::UdpRecvConfig {
    udp::UdpRecvConfig {
        test_id: key.test_id,
        stream_id,
        one_way: key.one_way,
        max_len: spec.len,
        spin: udp::spin_receiver_for(spec.rate.packets_per_sec(spec.len)),
        token: key.token,
        slot_ns: key.slot_ns,
    }
}

/// The sender configuration both sides derive from a request.
pub(crate) fn udp_send_config(spec: &TestSpec, key: TestKey, stream_id: u8) -> udp::UdpSendConfig {
    udp::UdpSendConfig {
        test_id: key.test_id,
        stream_id,
        payload_len: spec.len,
        rate: spec.rate,
        duration: spec.duration,
        backend: spec.udp_backend,
        echo_probes: !key.one_way,
        token: key.token,
        packets: spec
            .bytes_per_stream
            .map(|b| b.div_ceil(spec.len.max(1) as u64)),
        slot_ns: key.slot_ns,
        max_send_bytes: None,
    }
}

/// TCP sender configuration derived from a request.
pub(crate) fn tcp_send_config(spec: &TestSpec, stream_id: u8) -> tcp::TcpSendConfig {
    tcp::TcpSendConfig {
        stream_id,
        block_len: spec.len,
        rate: spec.rate,
        duration: spec.duration,
        bytes: spec.bytes_per_stream,
        zerocopy: spec.tcp.zerocopy,
        omit: spec.omit.unwrap_or_default(),
    }
}

/// The local address of data stream `i` (from 0) to `server`: `bind` (`-B`, or any address
/// of the server's family) and `cport + i` (`--cport`, or any port).
pub(crate) fn stream_local(
    server: SocketAddr,
    bind: Option<std::net::IpAddr>,
    cport: Option<u16>,
    i: usize,
) -> SocketAddr {
    let ip = bind.unwrap_or(if server.is_ipv4() {
        std::net::Ipv4Addr::UNSPECIFIED.into()
    } else {
        std::net::Ipv6Addr::UNSPECIFIED.into()
    });
    let port = cport.map_or(0, |p| {
        p.saturating_add(u16::try_from(i).unwrap_or(u16::MAX))
    });
    SocketAddr::new(ip, port)
}

struct Running {
    id: u8,
    live: Arc<LiveCounters>,
    /// The thread's reports: one stream's, or every stream's of a shared sender thread.
    handle: JoinHandle<Vec<StreamReport>>,
}

/// A sender set up but not yet started (the client starts its senders at `Ready`).
enum Pending {
    Udp(UdpSocket, udp::UdpSendConfig),
    Tcp(TcpStream, tcp::TcpSendConfig),
}

/// The data-plane threads of one side of one test.
pub(crate) struct SideRun {
    sender_stop: Stop,
    receiver_stop: Stop,
    senders: Vec<Running>,
    receivers: Vec<Running>,
    pending: Vec<Pending>,
    kept: Vec<StreamReport>,
    cpu: Option<usize>,
    /// Every stream's counters, kept after its thread is joined so samples stay complete.
    lives: Vec<(u8, Arc<LiveCounters>)>,
}

impl SideRun {
    /// A side whose data-plane threads pin themselves to `cpu`, if given.
    pub(crate) fn new(cpu: Option<usize>) -> Self {
        Self {
            sender_stop: Stop::new(),
            receiver_stop: Stop::new(),
            senders: Vec::new(),
            receivers: Vec::new(),
            pending: Vec::new(),
            kept: Vec::new(),
            cpu,
            lives: Vec::new(),
        }
    }

    /// Queues a UDP sender for [`SideRun::start`].
    pub(crate) fn udp_sender_pending(&mut self, sock: UdpSocket, cfg: udp::UdpSendConfig) {
        self.pending.push(Pending::Udp(sock, cfg));
    }

    /// Queues a TCP sender for [`SideRun::start`].
    pub(crate) fn tcp_sender_pending(&mut self, s: TcpStream, cfg: tcp::TcpSendConfig) {
        self.pending.push(Pending::Tcp(s, cfg));
    }

    /// Starts the queued senders. Unpaced TCP senders pinned to one CPU (`-A`) share one
    /// thread there, as iperf3's do ([`tcp::run_senders`]).
    pub(crate) fn start(&mut self) -> std::io::Result<()> {
        let mut shared = Vec::new();
        let mut own = Vec::new();
        for p in std::mem::take(&mut self.pending) {
            match p {
                Pending::Tcp(s, c) if tcp::can_share_a_thread(&c) => shared.push((s, c)),
                p => own.push(p),
            }
        }
        if self.cpu.is_some() && shared.len() > 1 {
            self.tcp_senders(shared)?;
        } else {
            own.extend(shared.into_iter().map(|(s, c)| Pending::Tcp(s, c)));
        }
        for p in own {
            match p {
                Pending::Udp(s, c) => self.udp_sender(s, c)?,
                Pending::Tcp(s, c) => self.tcp_sender(s, c)?,
            }
        }
        Ok(())
    }

    /// Keeps reports already collected (the client's sender reports) for the outcome.
    pub(crate) fn keep(&mut self, reports: Vec<StreamReport>) {
        self.kept.extend(reports);
    }

    /// The kept reports.
    pub(crate) fn take_kept(&mut self) -> Vec<StreamReport> {
        std::mem::take(&mut self.kept)
    }

    fn spawn(
        &mut self,
        id: u8,
        is_sender: bool,
        name: &str,
        f: impl FnOnce(&LiveCounters, &Stop) -> StreamReport + Send + 'static,
    ) -> std::io::Result<()> {
        self.spawn_shared(&[id], is_sender, name, move |lives, stop| {
            // One id, so one counter.
            lives.first().map(|l| f(l, stop)).into_iter().collect()
        })
    }

    /// Starts one data-plane thread (pinned to the side's CPU, if any) serving the streams
    /// `ids`: each gets its own counters, listed for the side's samples, which `f` gets in
    /// the same order. The thread is named after the first.
    fn spawn_shared(
        &mut self,
        ids: &[u8],
        is_sender: bool,
        name: &str,
        f: impl FnOnce(&[Arc<LiveCounters>], &Stop) -> Vec<StreamReport> + Send + 'static,
    ) -> std::io::Result<()> {
        let lives: Vec<Arc<LiveCounters>> = ids.iter().map(|_| Arc::default()).collect();
        let (Some(&id), Some(live)) = (ids.first(), lives.first().cloned()) else {
            return Ok(());
        };
        for (i, l) in ids.iter().zip(&lives) {
            self.lives.push((*i, l.clone()));
        }
        let stop = if is_sender {
            self.sender_stop.clone()
        } else {
            self.receiver_stop.clone()
        };
        let cpu = self.cpu;
        let handle = std::thread::Builder::new()
            .name(format!("wb-{name}-{id}"))
            .spawn(move || {
                if let Some(c) = cpu {
                    if let Err(e) = engine::sys::pin_current_thread(c) {
                        tracing::warn!("cannot pin to CPU {c}: {e}");
                    }
                }
                f(&lives, &stop)
            })?;
        let r = Running { id, live, handle };
        if is_sender {
            self.senders.push(r);
        } else {
            self.receivers.push(r);
        }
        Ok(())
    }

    pub(crate) fn udp_sender(
        &mut self,
        sock: UdpSocket,
        cfg: udp::UdpSendConfig,
    ) -> std::io::Result<()> {
        self.spawn(cfg.stream_id, true, "udp-tx", move |live, stop| {
            StreamReport::UdpTx(udp::run_sender(&sock, &cfg, live, stop).into())
        })
    }

    /// A UDP receiver on its socket; `not_xdp` says why AF_XDP, asked for, is not used
    /// (in the report's mode).
    pub(crate) fn udp_receiver(
        &mut self,
        sock: UdpSocket,
        cfg: udp::UdpRecvConfig,
        not_xdp: Option<String>,
    ) -> std::io::Result<()> {
        self.spawn(cfg.stream_id, false, "udp-rx", move |live, stop| {
            let mut r = udp::run_receiver(&sock, &cfg, live, stop);
            if let Some(why) = not_xdp {
                r.mode = format!("{} (af_xdp not used: {why})", r.mode);
            }
            StreamReport::UdpRx(r.into())
        })
    }

    /// A UDP receiver whose datagrams come through AF_XDP (`rx`), the socket sending the
    /// answers; `claim` (the test's hold on the interface) is given back when it ends.
    pub(crate) fn udp_receiver_xdp(
        &mut self,
        sock: UdpSocket,
        mut rx: Box<dyn engine::frameio::FrameRx>,
        claim: impl Send + 'static,
        cfg: udp::UdpRecvConfig,
    ) -> std::io::Result<()> {
        self.spawn(cfg.stream_id, false, "udp-rx", move |live, stop| {
            let r = udp::run_receiver_xdp(&sock, rx.as_mut(), &cfg, live, stop);
            // The program leaves the interface before the next test may claim it.
            drop(rx);
            drop(claim);
            StreamReport::UdpRx(r.into())
        })
    }

    pub(crate) fn tcp_sender(
        &mut self,
        s: TcpStream,
        cfg: tcp::TcpSendConfig,
    ) -> std::io::Result<()> {
        self.spawn(cfg.stream_id, true, "tcp-tx", move |live, stop| {
            StreamReport::TcpTx(tcp::run_sender(&s, &cfg, live, stop).into())
        })
    }

    /// Several TCP senders on one thread ([`tcp::run_senders`]).
    fn tcp_senders(
        &mut self,
        streams: Vec<(TcpStream, tcp::TcpSendConfig)>,
    ) -> std::io::Result<()> {
        let ids: Vec<u8> = streams.iter().map(|(_, c)| c.stream_id).collect();
        self.spawn_shared(&ids, true, "tcp-tx", move |lives, stop| {
            let args: Vec<_> = streams
                .iter()
                .zip(lives)
                .map(|((s, c), l)| (s, c, &**l))
                .collect();
            tcp::run_senders(&args, stop)
                .into_iter()
                .map(|r| StreamReport::TcpTx(r.into()))
                .collect()
        })
    }

    /// TCP receivers, one per (connection, stream id), each with the warm-up `omit`: on
    /// one thread when pinned to one CPU (`-A`), more than one and not from loopback
    /// ([`tcp::run_receivers`], [`tcp::can_share_receiving`]), else a thread each.
    pub(crate) fn tcp_receivers(
        &mut self,
        streams: Vec<(TcpStream, u8)>,
        omit: Duration,
    ) -> std::io::Result<()> {
        let share = self.cpu.is_some()
            && streams.len() > 1
            && streams.iter().all(|(s, _)| tcp::can_share_receiving(s));
        if !share {
            let n = streams.len();
            for (s, id) in streams {
                self.spawn(id, false, "tcp-rx", move |live, stop| {
                    StreamReport::TcpRx(tcp::run_receiver(&s, id, omit, n, live, stop).into())
                })?;
            }
            return Ok(());
        }
        let ids: Vec<u8> = streams.iter().map(|(_, id)| *id).collect();
        self.spawn_shared(&ids, false, "tcp-rx", move |lives, stop| {
            let args: Vec<_> = streams
                .iter()
                .zip(lives)
                .map(|((s, i), l)| (s, *i, omit, &**l))
                .collect();
            tcp::run_receivers(&args, stop)
                .into_iter()
                .map(|r| StreamReport::TcpRx(r.into()))
                .collect()
        })
    }

    /// Every stream's live counters.
    pub(crate) fn lives(&self) -> Vec<(u8, Arc<LiveCounters>)> {
        self.lives.clone()
    }

    /// Current totals of every stream of this side.
    pub(crate) fn sample(&self) -> Vec<(u8, LiveSnapshot)> {
        self.lives
            .iter()
            .map(|(id, l)| (*id, l.snapshot()))
            .collect()
    }

    /// Ends the senders now, before their deadline (an early finish); receivers go on.
    pub(crate) fn stop_senders(&self) {
        self.sender_stop.raise();
    }

    pub(crate) fn senders_done(&self) -> bool {
        self.senders.iter().all(|r| r.handle.is_finished())
    }

    /// Waits for the senders (they stop at their own deadline) and returns their reports.
    /// A sender thread that panicked has no report; the caller notices the missing stream.
    pub(crate) fn join_senders(&mut self) -> Vec<StreamReport> {
        self.senders
            .drain(..)
            .filter_map(|r| r.handle.join().ok())
            .flatten()
            .collect()
    }

    /// Lets receivers finish what is still in flight, then stops them (each drains what
    /// its socket still holds) and returns their reports. Waiting ends as soon as every
    /// receiver has ended by itself (TCP end of stream), or has counted the packets its
    /// sender reported sending (`expected`: stream id → packets), or nothing has arrived
    /// for `quiet`; and at the latest after `cap` (both on `clock`).
    pub(crate) fn finish_receivers(
        &mut self,
        expected: &[(u8, u64)],
        quiet: Duration,
        cap: Duration,
        clock: &dyn Clock,
    ) -> Vec<StreamReport> {
        let mut last = self.receiver_totals();
        let mut last_change = clock.mono();
        let _ = Wait::on(&RealPauses(clock)).at_most(cap).poll(|| {
            if self.receivers.iter().all(|r| r.handle.is_finished()) {
                return Poll::Ready(());
            }
            let all_in = !expected.is_empty()
                && self.receivers.iter().all(|r| {
                    let want = expected.iter().find(|(i, _)| *i == r.id).map(|(_, n)| *n);
                    want.is_some_and(|n| r.live.snapshot().counters.received >= n)
                });
            if all_in {
                return Poll::Ready(());
            }
            let now = self.receiver_totals();
            if now != last {
                last = now;
                last_change = clock.mono();
            } else if clock.mono().saturating_sub(last_change) >= quiet {
                return Poll::Ready(());
            }
            Poll::Wait(Duration::from_millis(2))
        });
        self.receiver_stop.raise();
        self.receivers
            .drain(..)
            .filter_map(|r| r.handle.join().ok())
            .flatten()
            .collect()
    }

    fn receiver_totals(&self) -> (u64, u64) {
        self.receivers
            .iter()
            .map(|r| r.live.snapshot())
            .fold((0, 0), |(p, b), s| (p + s.counters.received, b + s.bytes))
    }

    /// Stops everything now and waits for the threads.
    pub(crate) fn abort(&mut self) {
        self.sender_stop.raise();
        self.receiver_stop.raise();
        for r in self.senders.drain(..).chain(self.receivers.drain(..)) {
            let _ = r.handle.join();
        }
    }
}

impl Drop for SideRun {
    fn drop(&mut self) {
        self.abort();
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use model::spec::{Protocol, Rate, UdpBackend};

    fn spec(direction: Direction, streams: u8) -> TestSpec {
        TestSpec {
            protocol: Protocol::Udp,
            duration: Duration::from_secs(1),
            rate: Rate::Unlimited,
            len: 100,
            streams,
            direction,
            udp_backend: UdpBackend::Auto,
            synced_clocks: false,
            dscp: None,
            window: None,
            server_cpu: None,
            tcp: Default::default(),
            bytes_per_stream: None,
            omit: None,
        }
    }

    #[test]
    fn stream_plans() {
        assert_eq!(
            plan(&spec(Direction::Forward, 2)),
            vec![(1, Sender::Client), (2, Sender::Client)]
        );
        assert_eq!(
            plan(&spec(Direction::Reverse, 1)),
            vec![(1, Sender::Server)]
        );
        assert_eq!(
            plan(&spec(Direction::Bidir, 2)),
            vec![
                (1, Sender::Client),
                (2, Sender::Client),
                (3, Sender::Server),
                (4, Sender::Server)
            ]
        );
        assert_eq!(total_streams(&spec(Direction::Bidir, 3)), 6);
    }

    #[test]
    fn greeting_round_trip_and_rejects() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let t = std::thread::spawn(move || {
            let mut c = TcpStream::connect(addr).unwrap();
            write_greeting(&mut c, 7, 3, 0xdead_beef).unwrap();
            let mut c2 = TcpStream::connect(addr).unwrap();
            write_greeting(&mut c2, 7, 3, 1).unwrap();
            let mut c3 = TcpStream::connect(addr).unwrap();
            c3.write_all(b"GET / HTTP/1.1\r\n").unwrap();
        });
        let (mut a, _) = l.accept().unwrap();
        assert_eq!(
            read_greeting(&mut a, 7, 0xdead_beef, Duration::from_secs(2)),
            Ok(3)
        );
        let (mut b, _) = l.accept().unwrap();
        assert!(
            read_greeting(&mut b, 7, 0xdead_beef, Duration::from_secs(2))
                .unwrap_err()
                .contains("token")
        );
        let (mut c, _) = l.accept().unwrap();
        assert!(
            read_greeting(&mut c, 7, 0xdead_beef, Duration::from_secs(2))
                .unwrap_err()
                .contains("greeting")
        );
        t.join().unwrap();
    }
}
