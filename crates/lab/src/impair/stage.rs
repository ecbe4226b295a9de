//! The impairment stage as a process: forwards frames between two interfaces of a lab
//! node, through the kernel fast path ([`super::fast`]) when it can, otherwise over
//! `AF_PACKET` through one [`Impairer`] per direction, and publishes its
//! counters to a state file (JSON, replaced atomically every 200 ms) that `wirebench lab
//! status` reads.
//!
//! Two modes:
//! - **bridge**: every frame is forwarded unchanged (both sockets promiscuous), like a
//!   two-port bridge or a WAN emulator inserted in a cable;
//! - **router**: the node is the next hop of both ends. IPv4 frames sent to this
//!   interface's MAC and not to the node's own addresses are forwarded to the static next
//!   hop on the other side: destination MAC = that neighbour, source MAC = the outgoing
//!   interface, TTL − 1 with the header checksum recomputed (RFC 1812 §5.3.1; a frame whose
//!   TTL would reach 0 is dropped and counted, without ICMP). Everything else (ARP, traffic
//!   for the node itself) is left to the node's kernel, whose own IP forwarding is off.
//!
//! The loop is single-threaded: `ppoll` on both sockets with the next due time as timeout,
//! drain what arrived, send what is due. It stops when asked, or by itself when its
//! network namespace is removed (so a lab torn down by hand leaves no process behind).

use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Duration;

use engine::clock::RealClock;
use engine::frameio::PacketSocket;
use engine::sys::{wait_readable, RecvBatch, SendBatch};
use model::clock::Clock;
use model::stop::Stop;
use model::wait::{Poll, Wait};
use serde::{Deserialize, Serialize};

use super::fast::{self, FastStage};
use super::model::{Counters, Impairer};
use super::spec::ImpairSpec;
use crate::managed::send_all;
use crate::wait::Every;

/// Largest frame forwarded (jumbo 9000 MTU plus headers); longer ones are counted.
const MAX_FRAME: usize = 9216;
const BATCH: usize = 64;
const PUBLISH_EVERY: Duration = Duration::from_millis(200);

/// One side of a router-mode stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouterSide {
    /// This interface's MAC.
    pub mac: [u8; 6],
    /// The next hop reached through this interface.
    pub neighbour: [u8; 6],
    /// The node's own address on this interface (traffic to it is not forwarded).
    pub local: std::net::Ipv4Addr,
}

/// How frames are forwarded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Every frame, unchanged.
    Bridge,
    /// IPv4 frames addressed to this node's MACs, to static next hops.
    Router {
        /// Interface a.
        a: RouterSide,
        /// Interface b.
        b: RouterSide,
    },
}

/// Everything a stage process needs, passed to it as one JSON argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StageConfig {
    /// Interface a (toward the talker): `forward` applies to frames from a to b.
    pub a: String,
    /// Interface b (toward the listener).
    pub b: String,
    /// Bridge or router.
    pub mode: Mode,
    /// The impairment per direction.
    pub spec: ImpairSpec,
}

/// What the stage publishes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StageState {
    /// Process id.
    pub pid: u32,
    /// False once the stage has stopped.
    pub running: bool,
    /// The configuration it runs.
    pub config: Option<StageConfig>,
    /// a -> b.
    pub forward: Counters,
    /// b -> a.
    pub reverse: Counters,
    /// Frames left to the node's kernel (router mode: ARP, traffic for the node).
    pub not_forwarded: u64,
    /// Frames dropped because their TTL ran out (router mode).
    pub ttl_expired: u64,
    /// Frames longer than the stage's buffer, dropped.
    pub too_long: u64,
    /// Frames the kernel dropped before the stage could read them (socket buffer full).
    pub kernel_drops: u64,
    /// Frames the stage could not send (the first error is in the log), e.g. while the
    /// outgoing link is down.
    pub send_errors: u64,
    /// Times a receiving interface reported that its link went down.
    pub link_down_events: u64,
    /// Why it stopped, once it has.
    pub stopped: Option<String>,
    /// `kernel` when the fast path ([`super::fast`]) forwards, otherwise `userspace`
    /// (with the reason when the fast path was asked for and not used).
    #[serde(default)]
    pub data_path: String,
    /// Seconds the kernel has run the fast path's program since the stage started;
    /// absent with the userspace data path or when the kernel does not count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_cpu_s: Option<f64>,
}

impl StageState {
    /// Reads a state file.
    pub fn read(path: &Path) -> io::Result<Self> {
        crate::managed::read_json(path)
    }

    fn write(&self, path: &Path) -> io::Result<()> {
        crate::managed::write_json_atomic(path, self)
    }

    /// The state of a stage starting on `cfg`, written to `state_file` when given.
    fn starting(
        cfg: &StageConfig,
        data_path: String,
        state_file: Option<&Path>,
    ) -> io::Result<Self> {
        let state = Self {
            pid: std::process::id(),
            running: true,
            config: Some(cfg.clone()),
            data_path,
            ..Self::default()
        };
        if let Some(p) = state_file {
            if let Some(dir) = p.parent() {
                std::fs::create_dir_all(dir)?;
            }
            state.write(p)?;
        }
        Ok(state)
    }
}

/// What to do with a frame that arrived on one side.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Rewritten for the next hop: send it out of the other side.
    Forward,
    /// Not for forwarding here (not IPv4, not to this MAC, or to the node itself): the
    /// kernel has it. The frame is unchanged.
    LeaveToKernel,
    /// Its TTL ran out: dropped (and counted). The frame is unchanged.
    TtlExpired,
}

/// Router-mode rewrite of a frame going from `inside` to `outside`: an IPv4 frame to
/// `inside`'s MAC and not to the node itself leaves with `outside`'s MACs, one TTL less
/// and its header checksum filled again (RFC 1812 5.3.1); anything else is not touched.
pub fn route(frame: &mut [u8], inside: &RouterSide, outside: &RouterSide) -> Verdict {
    use wire::ipv4::Packet;
    if frame.len() < 14 + 20 || frame[0..6] != inside.mac || frame[12..14] != [0x08, 0x00] {
        return Verdict::LeaveToKernel;
    }
    let Ok(mut ip) = Packet::new_checked(&mut frame[14..]) else {
        return Verdict::LeaveToKernel;
    };
    let dst = std::net::Ipv4Addr::from(ip.dst_addr().0);
    if ip.version() != 4 || dst == inside.local || dst == outside.local {
        return Verdict::LeaveToKernel;
    }
    let ttl = ip.ttl();
    if ttl <= 1 {
        return Verdict::TtlExpired;
    }
    ip.set_ttl(ttl - 1);
    ip.fill_checksum();
    frame[0..6].copy_from_slice(&outside.neighbour);
    frame[6..12].copy_from_slice(&outside.mac);
    Verdict::Forward
}

struct Side {
    sock: PacketSocket,
    /// Frames going out of this side.
    out: Impairer<Vec<u8>>,
}

/// Runs the stage until `stop` is raised, or the namespace file `netns` (e.g.
/// `/run/netns/wb-lab-dut`) disappears; publishes to `state_file` when given. The kernel
/// fast path forwards when the settings ask for it (`fast`, the default) and allow it (no
/// delay, jitter or reorder) and the kernel takes it; otherwise this process does, and the
/// state says why.
///
/// # Errors
/// An interface is missing, or the sockets cannot be opened (needs `CAP_NET_RAW`).
pub fn run(
    cfg: &StageConfig,
    state_file: Option<&Path>,
    netns: Option<&Path>,
    stop: &Stop,
) -> io::Result<StageState> {
    fast::remove_stale_rate_queues(cfg);
    let data_path = if cfg.spec.fast {
        match fast::start(cfg) {
            Ok(f) => return run_fast(f, cfg, state_file, netns, stop),
            Err(e) => crate::bpf::userspace_because("impairment", &e),
        }
    } else {
        "userspace".to_owned()
    };
    let promisc = cfg.mode == Mode::Bridge;
    let open = |name: &str| -> io::Result<PacketSocket> {
        let s = PacketSocket::open(name, promisc)?;
        // Room for bursts while the loop is busy with the other side.
        let _ = s.set_receive_buffer(8 << 20);
        Ok(s)
    };
    let seed = cfg.spec.seed;
    // sides[0] = a (its `out` holds b -> a frames), sides[1] = b (a -> b frames).
    let mut sides = [
        Side {
            sock: open(&cfg.a)?,
            out: Impairer::new(cfg.spec.reverse, seed.wrapping_add(1)),
        },
        Side {
            sock: open(&cfg.b)?,
            out: Impairer::new(cfg.spec.forward, seed),
        },
    ];
    let clock = RealClock::new();
    let now_ns = || clock.mono().as_nanos() as u64;
    let mut state = StageState::starting(cfg, data_path, state_file)?;
    let mut rx = RecvBatch::frames(BATCH, MAX_FRAME + 1);
    let mut tx = SendBatch::new(BATCH, MAX_FRAME);
    let mut pool: Vec<Vec<u8>> = Vec::new();
    let mut publish_every = Every::new(PUBLISH_EVERY, clock.mono());
    let fds = [sides[0].sock.as_raw_fd(), sides[1].sock.as_raw_fd()];
    let mut logged_send_error = false;
    let stopped = loop {
        if stop.is_raised() {
            break "stopped".to_owned();
        }
        let now = now_ns();
        let due = sides.iter().filter_map(|s| s.out.next_due()).min();
        let wait = match due {
            Some(d) if d <= now => Duration::ZERO,
            Some(d) => Duration::from_nanos(d - now).min(PUBLISH_EVERY),
            None => PUBLISH_EVERY,
        };
        let ready = if wait.is_zero() {
            0b11
        } else {
            wait_readable(&fds, wait)?
        };
        for from in 0..2 {
            if ready & (1 << from) == 0 {
                continue;
            }
            let to = 1 - from;
            // Drain a bounded number of batches, then go on to send what is due.
            for _ in 0..16 {
                let n = match rx.recv(&sides[from].sock, true) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    // A link set down (a path cut mid-test) is not the end of the stage:
                    // the kernel reports it once, and frames flow again once it is up.
                    Err(e) if e.kind() == io::ErrorKind::NetworkDown => {
                        state.link_down_events += 1;
                        break;
                    }
                    Err(e) => return Err(e),
                };
                let now = now_ns();
                for i in 0..n {
                    let Some((data, _)) = rx.get(i) else { break };
                    if data.len() > MAX_FRAME {
                        state.too_long += 1;
                        continue;
                    }
                    let mut buf = pool.pop().unwrap_or_default();
                    buf.clear();
                    buf.extend_from_slice(data);
                    if let Mode::Router { a, b } = &cfg.mode {
                        let (inside, outside) = if from == 0 { (a, b) } else { (b, a) };
                        match route(&mut buf, inside, outside) {
                            Verdict::Forward => {}
                            Verdict::LeaveToKernel => {
                                state.not_forwarded += 1;
                                pool.push(buf);
                                continue;
                            }
                            Verdict::TtlExpired => {
                                state.ttl_expired += 1;
                                pool.push(buf);
                                continue;
                            }
                        }
                    }
                    let len = buf.len();
                    sides[to].out.push(now, buf, len);
                }
                if n < BATCH {
                    break;
                }
            }
        }
        let now = now_ns();
        for side in &mut sides {
            loop {
                let mut n = 0;
                while n < tx.capacity() {
                    let Some(f) = side.out.poll(now) else { break };
                    tx.slot_mut(n, f.len()).copy_from_slice(&f);
                    n += 1;
                    pool.push(f);
                }
                if n == 0 {
                    break;
                }
                // A frame the interface refuses is counted, never fatal.
                if let Some(e) = send_all(&side.sock, &mut tx, n, &mut state.send_errors) {
                    if !logged_send_error {
                        eprintln!("send on {}: {e}", side.sock.name);
                        logged_send_error = true;
                    }
                }
                if n < tx.capacity() {
                    break;
                }
            }
        }
        pool.truncate(4 * BATCH);
        if publish_every.due(Duration::from_nanos(now)) {
            for s in &sides {
                if let Ok((_, drops)) = s.sock.take_statistics() {
                    state.kernel_drops += u64::from(drops);
                }
            }
            state.reverse = sides[0].out.counters();
            state.forward = sides[1].out.counters();
            if let Some(p) = state_file {
                state.write(p)?;
            }
            if netns.is_some_and(|n| !n.exists()) {
                break "its network namespace was removed".to_owned();
            }
        }
    };
    state.reverse = sides[0].out.counters();
    state.forward = sides[1].out.counters();
    state.running = false;
    state.stopped = Some(stopped);
    if let Some(p) = state_file {
        state.write(p)?;
    }
    Ok(state)
}

/// The stage with the kernel fast path forwarding: this process only reads the counters
/// (and the rate queues' drops) and publishes them; it removes the rate queues when it
/// stops. The program leaves the interfaces with the process, however it ends.
fn run_fast(
    mut fast: FastStage,
    cfg: &StageConfig,
    state_file: Option<&Path>,
    netns: Option<&Path>,
    stop: &Stop,
) -> io::Result<StageState> {
    let stats = crate::bpf::RunTimeStats::enable();
    let mut state = StageState::starting(cfg, "kernel".to_owned(), state_file)?;
    let publish = |state: &mut StageState, fast: &mut FastStage| -> io::Result<()> {
        if stats.counting() {
            state.kernel_cpu_s = fast.run_time().map(|t| t.as_secs_f64());
        }
        let c = fast
            .counters()
            .map_err(|e| io::Error::other(e.to_string()))?;
        state.forward = c.forward;
        state.reverse = c.reverse;
        state.not_forwarded = c.not_forwarded;
        state.ttl_expired = c.ttl_expired;
        state.too_long = c.too_long;
        state.send_errors = c.send_errors;
        match state_file {
            Some(p) => state.write(p),
            None => Ok(()),
        }
    };
    publish(&mut state, &mut fast)?;
    let clock = RealClock::new();
    let mut publish_every = Every::new(PUBLISH_EVERY, clock.mono());
    let ran = Wait::on(&clock).or_stop(stop).poll(|| {
        if publish_every.due(clock.mono()) {
            if let Err(e) = publish(&mut state, &mut fast) {
                return Poll::Ready(Err(e));
            }
            if netns.is_some_and(|n| !n.exists()) {
                return Poll::Ready(Ok("its network namespace was removed".to_owned()));
            }
        }
        Poll::Wait(PUBLISH_EVERY / 4)
    });
    let stopped = ran
        .ready()
        .transpose()?
        .unwrap_or_else(|| "stopped".to_owned());
    state.running = false;
    state.stopped = Some(stopped);
    publish(&mut state, &mut fast)?;
    Ok(state)
}

#[cfg(test)]
pub(super) mod test {
    use super::*;

    /// A router-mode stage's two sides, for tests here and in [`super::super::fast`].
    pub(in crate::impair) fn sides() -> (RouterSide, RouterSide) {
        (
            RouterSide {
                mac: [2, 0x77, 0x62, 0, 1, 2],
                neighbour: [2, 0x77, 0x62, 0, 1, 1],
                local: [198, 18, 1, 254].into(),
            },
            RouterSide {
                mac: [2, 0x77, 0x62, 0, 2, 1],
                neighbour: [2, 0x77, 0x62, 0, 2, 2],
                local: [198, 18, 2, 254].into(),
            },
        )
    }

    fn ipv4_frame(dst_mac: [u8; 6], dst: [u8; 4], ttl: u8) -> Vec<u8> {
        let mut f = Vec::new();
        etherparse::PacketBuilder::ethernet2([2, 0x77, 0x62, 0, 1, 1], dst_mac)
            .ipv4([198, 18, 1, 1], dst, ttl)
            .udp(5000, 5001)
            .write(&mut f, &[0u8; 18])
            .unwrap();
        f
    }

    #[test]
    fn router_mode_rewrites_macs_and_ttl_with_a_valid_checksum() {
        let (a, b) = sides();
        let mut f = ipv4_frame(a.mac, [198, 18, 2, 1], 64);
        assert_eq!(route(&mut f, &a, &b), Verdict::Forward);
        let p = etherparse::SlicedPacket::from_ethernet(&f).unwrap();
        let Some(etherparse::LinkSlice::Ethernet2(eth)) = p.link else {
            panic!()
        };
        assert_eq!(eth.destination(), b.neighbour);
        assert_eq!(eth.source(), b.mac);
        let Some(etherparse::NetSlice::Ipv4(ip)) = p.net else {
            panic!()
        };
        assert_eq!(ip.header().ttl(), 63);
        let h = ip.header().to_header();
        assert_eq!(h.header_checksum, h.calc_header_checksum());
    }

    #[test]
    fn router_mode_leaves_the_rest_to_the_kernel() {
        let (a, b) = sides();
        // For another MAC, for the node itself, ARP, runt frames.
        let mut other = ipv4_frame([2, 0, 0, 0, 0, 9], [198, 18, 2, 1], 64);
        let mut mine = ipv4_frame(a.mac, [198, 18, 1, 254], 64);
        let mut far_side = ipv4_frame(a.mac, [198, 18, 2, 254], 64);
        let mut arp = ipv4_frame(a.mac, [198, 18, 2, 1], 64);
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        let mut runt = vec![0u8; 20];
        for f in [&mut other, &mut mine, &mut far_side, &mut arp, &mut runt] {
            assert_eq!(route(f, &a, &b), Verdict::LeaveToKernel);
        }
        let mut dying = ipv4_frame(a.mac, [198, 18, 2, 1], 1);
        assert_eq!(route(&mut dying, &a, &b), Verdict::TtlExpired);
    }

    #[test]
    fn config_round_trips_as_json() {
        let (a, b) = sides();
        let c = StageConfig {
            a: "eth0".into(),
            b: "eth1".into(),
            mode: Mode::Router { a, b },
            spec: ImpairSpec::parse_inline("loss=1%,forward.delay=5ms").unwrap(),
        };
        let j = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<StageConfig>(&j).unwrap(), c);
        assert!(serde_json::from_str::<StageConfig>("{\"a\":1}").is_err());
    }
}
