//! Whole Ethernet frames in and out of an interface, behind two small traits so that the
//! generator and the receiver do not care which kernel interface moves the frames:
//!
//! - [`FrameTx`] / [`FrameRx`]: send a batch of frames built in place; receive frames with
//!   their kernel receive timestamp.
//! - `packet` backends: an `AF_PACKET` raw socket with `sendmmsg` / `recvmmsg` batches.
//! - `ring` backends ([`RingTx`], [`RingRx`] over `sys::ring`): `PACKET_MMAP` TX ring
//!   (TPACKET_V2) and RX ring (TPACKET_V3).
//! - `xdp` backends ([`XdpFrameTx`], [`XdpFrameRx`] over `sys::xdp`): AF_XDP in copy
//!   mode; the receiver attaches `bpf/xsk.c` to its interface, which takes every frame but
//!   ARP and neighbour discovery from the host's stack while it runs (a sink port, as a
//!   tester's is).
//! - [`Backend`] picks one by name; every result records the one used.
//!
//! [`Endpoint`] names an interface, optionally inside a network namespace (a lab node), and
//! opens sockets there. This module does not build or parse frames (that is `wire`).

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

use crate::sys::{self, RecvBatch, SendBatch};
use model::clock::UnixNanos;

/// An `AF_PACKET` socket bound to one interface, seeing every frame that arrives on it
/// (every EtherType), but not the frames this host sends out of it.
pub struct PacketSocket {
    fd: OwnedFd,
    /// Interface name.
    pub name: String,
    /// Interface index.
    pub index: u32,
}

impl PacketSocket {
    /// Opens the socket on interface `name` of the current network namespace; with
    /// `promisc` the interface also hands up frames addressed to other MACs (a bridge port).
    ///
    /// # Errors
    /// The interface does not exist, or the caller lacks `CAP_NET_RAW`.
    pub fn open(name: &str, promisc: bool) -> io::Result<Self> {
        Self::open_for(name, promisc, libc::ETH_P_ALL as u16)
    }

    /// As [`open`](Self::open) for one EtherType; 0 gives a send-only socket.
    pub fn open_for(name: &str, promisc: bool, protocol: u16) -> io::Result<Self> {
        let index = sys::interface_index(name)
            .map_err(|e| io::Error::new(e.kind(), format!("interface {name}: {e}")))?;
        let fd = sys::packet_socket_for(index, promisc, protocol)
            .map_err(|e| io::Error::new(e.kind(), format!("AF_PACKET on {name}: {e}")))?;
        Ok(Self {
            fd,
            name: name.to_owned(),
            index,
        })
    }

    /// Frames received and frames the kernel dropped for lack of buffer, since the last call.
    pub fn take_statistics(&self) -> io::Result<(u32, u32)> {
        sys::packet_statistics(self)
    }

    /// Sets the receive buffer size (bytes), beyond `rmem_max` as root.
    pub fn set_receive_buffer(&self, bytes: usize) -> io::Result<()> {
        sys::force_buffer_size(self, true, bytes)
    }
}

impl AsRawFd for PacketSocket {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// An interface, on this host or inside a named network namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Network namespace name (`/run/netns/NAME`), `None` for the caller's own.
    pub netns: Option<String>,
    /// Interface name.
    pub iface: String,
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.netns {
            Some(ns) => write!(f, "{} in netns {ns}", self.iface),
            None => f.write_str(&self.iface),
        }
    }
}

impl Endpoint {
    /// Runs `f` on a thread that has entered this endpoint's namespace, so the sockets it
    /// opens live there (setns affects only that thread, which ends right after).
    pub fn within<T: Send>(&self, f: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
        in_netns(self.netns.as_deref(), f)?
    }
}

/// Runs `f` on a thread that has entered network namespace `ns` (`/run/netns/NS`), or on
/// this thread when `ns` is `None`. Sockets `f` opens live in that namespace, and so do
/// threads it starts, which may outlive the call (a server it spawns serves there);
/// setns affects only the new thread, which ends when `f` returns.
///
/// # Errors
/// The namespace cannot be entered, or the thread panicked.
pub fn in_netns<T: Send>(ns: Option<&str>, f: impl FnOnce() -> T + Send) -> io::Result<T> {
    let Some(ns) = ns else { return Ok(f()) };
    let path = format!("/run/netns/{ns}");
    std::thread::scope(|s| {
        s.spawn(|| {
            let file = std::fs::File::open(&path)
                .map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
            sys::enter_netns(&file)?;
            Ok(f())
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("namespace thread panicked")))
    })
}

/// Sends whole frames.
pub trait FrameTx: Send {
    /// The backend's name, recorded in results (`af_packet`, `af_packet_tx_ring`, ...).
    fn name(&self) -> &'static str;
    /// Largest batch one call takes.
    fn batch_max(&self) -> usize;
    /// Builds `n` frames with `fill(i, buf)`, which writes frame `i` (no FCS) into a buffer
    /// of `len` bytes and returns its length (≤ `len`), and hands them to the kernel;
    /// returns how many it took (frames it did not take are not sent).
    fn send_frames(
        &mut self,
        n: usize,
        len: usize,
        fill: &mut dyn FnMut(usize, &mut [u8]) -> usize,
    ) -> io::Result<usize>;
    /// Waits until every queued frame has left (ring backends queue).
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Receives whole frames.
pub trait FrameRx: Send {
    /// The backend's name.
    fn name(&self) -> &'static str;
    /// Waits up to `timeout` for frames and hands each to `on_frame(frame, rx_stamp)`;
    /// returns how many.
    fn recv_frames(
        &mut self,
        timeout: Duration,
        on_frame: &mut dyn FnMut(&[u8], Option<UnixNanos>),
    ) -> io::Result<usize>;
    /// Frames the kernel dropped for lack of room since the last call.
    fn take_drops(&mut self) -> u64;
    /// Frames an XDP program has handed to this receiver since it was attached, where a
    /// program counts them (`None` for the other backends).
    fn redirected(&self) -> Option<u64> {
        None
    }
}

/// Largest frame the packet backends carry (jumbo 9000 MTU and headers).
pub const MAX_FRAME: usize = 9216;
const BATCH: usize = 64;

/// `AF_PACKET` send with `sendmmsg` batches, qdisc bypassed.
pub struct PacketTx {
    sock: PacketSocket,
    batch: SendBatch,
}

impl PacketTx {
    /// A send-only socket on `ep`.
    pub fn open(ep: &Endpoint) -> io::Result<Self> {
        let sock = ep.within(|| PacketSocket::open_for(&ep.iface, false, 0))?;
        // Fewer copies of each frame; not fatal where unsupported.
        let _ = sys::packet_qdisc_bypass(&sock);
        // A sent frame stays charged to this socket while a device under test on the same
        // host queues it; a small send buffer would let that queue push back on the
        // generator, which a tester's port never feels.
        let _ = sys::force_buffer_size(&sock, false, 64 << 20);
        Ok(Self {
            sock,
            batch: SendBatch::new(BATCH, MAX_FRAME),
        })
    }
}

impl FrameTx for PacketTx {
    fn name(&self) -> &'static str {
        "af_packet"
    }

    fn batch_max(&self) -> usize {
        BATCH
    }

    fn send_frames(
        &mut self,
        n: usize,
        len: usize,
        fill: &mut dyn FnMut(usize, &mut [u8]) -> usize,
    ) -> io::Result<usize> {
        let n = n.min(BATCH);
        let len = len.min(MAX_FRAME);
        for i in 0..n {
            let used = fill(i, self.batch.slot_mut(i, len)).min(len);
            self.batch.slot_mut(i, used);
        }
        let mut sent = 0;
        while sent < n {
            match self.batch.send_from(&self.sock, sent, n, false) {
                Ok(0) => break,
                Ok(k) => sent += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if sent > 0 && e.raw_os_error() == Some(libc::ENOBUFS) => break,
                Err(e) => return if sent > 0 { Ok(sent) } else { Err(e) },
            }
        }
        Ok(sent)
    }
}

/// `AF_PACKET` receive with `recvmmsg` batches and kernel software receive timestamps.
pub struct PacketRx {
    sock: PacketSocket,
    batch: RecvBatch,
    drops: u64,
}

impl PacketRx {
    /// A receiving socket on `ep` (every EtherType, frames to other MACs too).
    pub fn open(ep: &Endpoint) -> io::Result<Self> {
        let sock = ep.within(|| PacketSocket::open(&ep.iface, true))?;
        let _ = sock.set_receive_buffer(32 << 20);
        let _ = sys::enable_rx_timestamps(&sock);
        // The kernel turns receive timestamping on for the whole stack from a work queue
        // (net_enable_timestamp), so frames of the first moments may arrive unstamped.
        std::thread::sleep(Duration::from_millis(20));
        // Start from an empty statistics counter.
        let _ = sock.take_statistics();
        Ok(Self {
            sock,
            batch: RecvBatch::frames(BATCH, MAX_FRAME),
            drops: 0,
        })
    }
}

impl FrameRx for PacketRx {
    fn name(&self) -> &'static str {
        "af_packet"
    }

    fn recv_frames(
        &mut self,
        timeout: Duration,
        on_frame: &mut dyn FnMut(&[u8], Option<UnixNanos>),
    ) -> io::Result<usize> {
        let n = match self.batch.recv(&self.sock, true) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if sys::wait_readable(&[self.sock.as_raw_fd()], timeout)? == 0 {
                    return Ok(0);
                }
                match self.batch.recv(&self.sock, true) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(0),
                    Err(e) => return Err(e),
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(0),
            Err(e) => return Err(e),
        };
        for i in 0..n {
            if let Some((data, ts)) = self.batch.get(i) {
                on_frame(data, ts);
            }
        }
        Ok(n)
    }

    fn take_drops(&mut self) -> u64 {
        if let Ok((_, d)) = self.sock.take_statistics() {
            self.drops += u64::from(d);
        }
        std::mem::take(&mut self.drops)
    }
}

/// Which kernel interface moves raw frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `AF_PACKET` with `sendmmsg` / `recvmmsg` (fastest of the two on veth, where the
    /// receive path runs on the sender's CPU).
    Packet,
    /// `PACKET_MMAP`: TPACKET_V2 TX ring, TPACKET_V3 RX ring (fewer system calls; faster on
    /// real NICs).
    Ring,
    /// AF_XDP (copy mode): sending needs no program; receiving attaches an XDP program
    /// that redirects every frame but ARP and neighbour discovery to the sockets (one per receive queue), so the
    /// host's stack does not see them while the receiver runs. Frames up to
    /// [`sys::xdp::RX_MAX_FRAME`] bytes, stamped by the program when they arrive.
    Xdp,
}

impl Backend {
    /// The senders `auto` tries, fastest first.
    pub const AUTO_TX: [Backend; 3] = [Backend::Xdp, Backend::Ring, Backend::Packet];
    /// The receivers `auto` tries: the ring, then recvmmsg (AF_XDP only when asked: on veth
    /// under load it lost frames a shaper had passed, and it takes the port's frames from
    /// the host's stack).
    pub const AUTO_RX: [Backend; 2] = [Backend::Ring, Backend::Packet];

    /// The backend named `packet`, `ring` or `xdp`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "packet" => Some(Backend::Packet),
            "ring" => Some(Backend::Ring),
            "xdp" => Some(Backend::Xdp),
            _ => None,
        }
    }

    /// Its name, as [`Backend::from_name`] takes it.
    pub fn label(self) -> &'static str {
        match self {
            Backend::Packet => "packet",
            Backend::Ring => "ring",
            Backend::Xdp => "xdp",
        }
    }

    /// The first sender of `order` that opens on `ep` for frames of up to `max_len`
    /// bytes, with the reasons the others did not.
    pub fn open_tx_first(
        order: &[Backend],
        ep: &Endpoint,
        max_len: usize,
    ) -> io::Result<(Box<dyn FrameTx>, Vec<String>)> {
        let mut why = Vec::new();
        for b in order {
            if *b == Backend::Xdp && max_len > sys::xdp::CHUNK {
                why.push(format!("af_xdp: frames above {} bytes", sys::xdp::CHUNK));
                continue;
            }
            match b.open_tx(ep) {
                Ok(tx) => return Ok((tx, why)),
                Err(e) => why.push(format!("{b:?}: {e}")),
            }
        }
        Err(io::Error::other(format!(
            "no frame backend opens on {ep}: {}",
            why.join("; ")
        )))
    }

    /// Opens a sender on `ep`.
    pub fn open_tx(self, ep: &Endpoint) -> io::Result<Box<dyn FrameTx>> {
        self.open_tx_queue(ep, 0)
    }

    /// Opens a sender on `ep` for generator thread `queue`: AF_XDP binds that transmit
    /// queue (one socket per queue); the packet backends open a socket of their own.
    pub fn open_tx_queue(self, ep: &Endpoint, queue: u32) -> io::Result<Box<dyn FrameTx>> {
        Ok(match self {
            Backend::Packet => Box::new(PacketTx::open(ep)?),
            Backend::Ring => Box::new(RingTx::open(ep)?),
            Backend::Xdp => Box::new(XdpFrameTx::open_queue(ep, queue)?),
        })
    }

    /// Opens a receiver on `ep`.
    pub fn open_rx(self, ep: &Endpoint) -> io::Result<Box<dyn FrameRx>> {
        Ok(match self {
            Backend::Packet => Box::new(PacketRx::open(ep)?),
            Backend::Ring => Box::new(RingRx::open(ep)?),
            Backend::Xdp => Box::new(XdpFrameRx::open(ep)?),
        })
    }

    /// The first receiver of `order` that opens on `ep`, with the reasons the others did
    /// not.
    pub fn open_rx_first(
        order: &[Backend],
        ep: &Endpoint,
    ) -> io::Result<(Box<dyn FrameRx>, Vec<String>)> {
        let mut why = Vec::new();
        for b in order {
            match b.open_rx(ep) {
                Ok(rx) => return Ok((rx, why)),
                Err(e) => why.push(format!("{b:?}: {e}")),
            }
        }
        Err(io::Error::other(format!(
            "no frame receiver opens on {ep}: {}",
            why.join("; ")
        )))
    }
}

/// `PACKET_MMAP` TPACKET_V2 TX ring: frames are written into shared slots and one
/// `send()` kicks a whole batch.
pub struct RingTx {
    ring: sys::ring::TxRing,
}

/// Slots of the TX ring (each 2 KiB, or 16 KiB for jumbo frames).
const TX_RING_SLOTS: usize = 2048;

impl RingTx {
    /// A TX ring on `ep`, sized for frames up to [`MAX_FRAME`].
    pub fn open(ep: &Endpoint) -> io::Result<Self> {
        let ring = ep.within(|| {
            let sock = PacketSocket::open_for(&ep.iface, false, 0)?;
            let _ = sys::packet_qdisc_bypass(&sock);
            let _ = sys::force_buffer_size(&sock, false, 64 << 20);
            sys::ring::TxRing::new(sock.fd, 16 << 10, TX_RING_SLOTS / 4)
        })?;
        Ok(Self { ring })
    }
}

impl FrameTx for RingTx {
    fn name(&self) -> &'static str {
        "af_packet_tx_ring"
    }

    fn batch_max(&self) -> usize {
        // Small kicks keep frames from waiting in the ring (latency, DEPENDENCIES.md §2a).
        BATCH
    }

    fn send_frames(
        &mut self,
        n: usize,
        len: usize,
        fill: &mut dyn FnMut(usize, &mut [u8]) -> usize,
    ) -> io::Result<usize> {
        self.ring.send(n.min(BATCH), len, fill)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.ring.flush(Duration::from_secs(1))
    }
}

/// `PACKET_MMAP` TPACKET_V3 RX ring: the kernel fills blocks of frames, each with its
/// receive timestamp.
pub struct RingRx {
    ring: sys::ring::RxRing,
    drops: u64,
}

impl RingRx {
    /// An RX ring on `ep` (every EtherType, frames to other MACs too): 64 blocks of 1 MiB,
    /// retired after 2 ms.
    pub fn open(ep: &Endpoint) -> io::Result<Self> {
        let ring = ep.within(|| {
            let sock = PacketSocket::open(&ep.iface, true)?;
            let _ = sock.take_statistics();
            sys::ring::RxRing::new(sock.fd, 1 << 20, 64, Duration::from_millis(2))
        })?;
        Ok(Self { ring, drops: 0 })
    }
}

impl FrameRx for RingRx {
    fn name(&self) -> &'static str {
        "af_packet_rx_ring"
    }

    fn recv_frames(
        &mut self,
        timeout: Duration,
        on_frame: &mut dyn FnMut(&[u8], Option<UnixNanos>),
    ) -> io::Result<usize> {
        self.ring.recv(timeout, on_frame)
    }

    fn take_drops(&mut self) -> u64 {
        if let Ok((_, d)) = sys::packet_statistics(&self.ring) {
            self.drops += u64::from(d);
        }
        std::mem::take(&mut self.drops)
    }
}

/// Frames per AF_XDP batch (one wake-up each).
const XDP_BATCH: usize = 256;

/// AF_XDP transmit (copy mode) on queue 0 of the interface.
pub struct XdpFrameTx {
    xsk: sys::xdp::XdpTx,
}

impl XdpFrameTx {
    /// An AF_XDP sender on queue 0 of `ep`.
    pub fn open(ep: &Endpoint) -> io::Result<Self> {
        Self::open_queue(ep, 0)
    }

    /// An AF_XDP sender on queue `queue` of `ep`.
    ///
    /// # Errors
    /// As [`sys::xdp::XdpTx::open`]; a queue the interface does not have is `EINVAL`.
    pub fn open_queue(ep: &Endpoint, queue: u32) -> io::Result<Self> {
        let xsk = ep.within(|| {
            let index = sys::interface_index(&ep.iface)
                .map_err(|e| io::Error::new(e.kind(), format!("interface {}: {e}", ep.iface)))?;
            sys::xdp::XdpTx::open(index, queue).map_err(|e| {
                let e = if e.raw_os_error() == Some(libc::EINVAL) {
                    format!("no such queue (give the interface more queues, or use fewer --threads): {e}")
                } else {
                    e.to_string()
                };
                io::Error::other(format!("AF_XDP on {} queue {queue}: {e}", ep.iface))
            })
        })?;
        Ok(Self { xsk })
    }
}

impl FrameTx for XdpFrameTx {
    fn name(&self) -> &'static str {
        "af_xdp"
    }

    fn batch_max(&self) -> usize {
        XDP_BATCH
    }

    fn send_frames(
        &mut self,
        n: usize,
        len: usize,
        fill: &mut dyn FnMut(usize, &mut [u8]) -> usize,
    ) -> io::Result<usize> {
        self.xsk.send(n.min(XDP_BATCH), len, fill)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.xsk.flush(Duration::from_secs(1))
    }
}

/// The XDP program of the `xdp` receiver, built from `bpf/xsk.c` by `bpf/build.sh`.
static XSK_OBJECT: &[u8] = aya::include_bytes_aligned!("../../../bpf/xsk.o");

/// A read of fewer frames than this waits [`XDP_RX_GATHER`] before the next.
const XDP_RX_ENOUGH: usize = 256;
/// How long frames gather after a short read.
const XDP_RX_GATHER: Duration = Duration::from_micros(500);

/// Receive queues an `xdp` receiver serves at most (one socket and 16 MiB of UMEM each).
pub const XDP_MAX_QUEUES: u32 = 8;

/// AF_XDP receive (copy mode): `bpf/xsk.c` on the interface redirects every frame but ARP
/// to one socket per receive queue. The program is attached through a BPF link, which
/// the kernel removes with this value or with the process, however it ends.
pub struct XdpFrameRx {
    /// Keeps the program attached; dropped (detached) first, before the sockets close.
    _link: aya::programs::links::FdLink,
    ebpf: aya::Ebpf,
    socks: Vec<sys::xdp::XdpRx>,
    drops: u64,
    clock: crate::clock::RealClock,
    gather: bool,
}

/// Which frames an AF_XDP receiver takes from the interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum XdpFilter {
    /// Every frame but ARP and IPv6 neighbour discovery (a sink port).
    AllButArp,
    /// UDP datagrams (IPv4 unfragmented, IPv6 without extension headers) to these
    /// destination ports; everything else stays with the host's stack.
    UdpPorts(Vec<u16>),
}

impl XdpFrameRx {
    /// An AF_XDP receiver on `ep` taking every frame but ARP and neighbour discovery: the
    /// program loaded and attached, a socket on every receive queue (up to
    /// [`XDP_MAX_QUEUES`]).
    ///
    /// # Errors
    /// No BPF or AF_XDP (older kernel, no privileges), the interface's MTU is above what a
    /// chunk holds, or it has more queues than [`XDP_MAX_QUEUES`].
    pub fn open(ep: &Endpoint) -> io::Result<Self> {
        Self::open_with(ep, &XdpFilter::AllButArp)
    }

    /// As [`XdpFrameRx::open`], taking the frames `filter` names.
    ///
    /// # Errors
    /// As [`XdpFrameRx::open`]; more than 64 ports.
    pub fn open_with(ep: &Endpoint, filter: &XdpFilter) -> io::Result<Self> {
        ep.within(|| {
            let iface = &ep.iface;
            let fail = |what: &str, e: &dyn std::fmt::Display| {
                io::Error::other(format!("AF_XDP receive on {iface}: {what}: {e}"))
            };
            let index = sys::interface_index(iface)
                .map_err(|e| io::Error::new(e.kind(), format!("interface {iface}: {e}")))?;
            let mtu = crate::nic::mtu(iface)?;
            if mtu as usize + 18 > sys::xdp::RX_MAX_FRAME {
                return Err(io::Error::other(format!(
                    "AF_XDP receive on {iface}: its MTU {mtu} is above the {} bytes a receive chunk holds",
                    sys::xdp::RX_MAX_FRAME - 18
                )));
            }
            let mut socks = Vec::new();
            for q in 0..=XDP_MAX_QUEUES {
                match sys::xdp::XdpRx::open(index, q) {
                    Ok(s) => socks.push(s),
                    // EINVAL: no such queue; the interface has `q` of them.
                    Err(e) if q > 0 && e.raw_os_error() == Some(libc::EINVAL) => break,
                    Err(e) => return Err(fail(&format!("queue {q}"), &e)),
                }
            }
            if socks.len() > XDP_MAX_QUEUES as usize {
                return Err(io::Error::other(format!(
                    "AF_XDP receive on {iface}: more than {XDP_MAX_QUEUES} receive queues"
                )));
            }
            let mut ebpf = aya::EbpfLoader::new()
                .load(XSK_OBJECT)
                .map_err(|e| fail("loading bpf/xsk.o", &e))?;
            if let XdpFilter::UdpPorts(ports) = filter {
                if ports.len() > 64 {
                    return Err(fail("udp_ports", &"more than 64 ports"));
                }
                let map = ebpf
                    .map_mut("filter")
                    .ok_or_else(|| fail("bpf/xsk.o", &"no map filter"))?;
                let mut mode: aya::maps::Array<_, u32> =
                    aya::maps::Array::try_from(map).map_err(|e| fail("filter", &e))?;
                mode.set(0, 1, 0).map_err(|e| fail("filter", &e))?;
                let map = ebpf
                    .map_mut("udp_ports")
                    .ok_or_else(|| fail("bpf/xsk.o", &"no map udp_ports"))?;
                let mut set: aya::maps::HashMap<_, u16, u8> =
                    aya::maps::HashMap::try_from(map).map_err(|e| fail("udp_ports", &e))?;
                for p in ports {
                    // The program compares the port as it is on the wire.
                    set.insert(p.to_be(), 1, 0)
                        .map_err(|e| fail("udp_ports", &e))?;
                }
            }
            {
                let map = ebpf
                    .map_mut("xsks")
                    .ok_or_else(|| fail("bpf/xsk.o", &"no map xsks"))?;
                let mut xsks = aya::maps::XskMap::try_from(map).map_err(|e| fail("xsks", &e))?;
                for (q, s) in socks.iter().enumerate() {
                    xsks.set(q as u32, s.as_raw_fd(), 0)
                        .map_err(|e| fail("xsks", &e))?;
                }
            }
            let prog: &mut aya::programs::Xdp = ebpf
                .program_mut("xsk_rx")
                .ok_or_else(|| fail("bpf/xsk.o", &"no program xsk_rx"))?
                .try_into()
                .map_err(|e| fail("xsk_rx", &e))?;
            prog.load().map_err(|e| fail("loading xsk_rx", &e))?;
            // Before 5.9 aya attaches XDP through netlink, which would outlive a killed
            // process (and which it would not detach here): refused up front.
            let kernel = aya::util::KernelVersion::current()
                .map_err(|e| fail("the kernel's version", &e))?;
            if kernel < aya::util::KernelVersion::new(5, 9, 0) {
                return Err(fail("XDP links", &"need Linux 5.9 or later"));
            }
            // veth in driver mode queues arriving frames on a 256-entry ring for its
            // NAPI poll and drops beyond it, a loss the test would count; generic mode
            // keeps the kernel's backlog. Other drivers: the kernel's choice.
            let veth = sys::ethtool::control_socket()
                .and_then(|s| sys::ethtool::driver(&s, iface))
                .is_ok_and(|d| d == "veth");
            let mode = if veth {
                aya::programs::XdpMode::Skb
            } else {
                aya::programs::XdpMode::Default
            };
            let id = prog
                .attach_to_if_index(index, mode)
                .map_err(|e| fail("attaching xsk_rx", &e))?;
            let link = prog.take_link(id).map_err(|e| fail("xsk_rx link", &e))?;
            // Only a BPF link goes with the process (a netlink attachment is ruled out
            // above).
            let link = aya::programs::links::FdLink::try_from(link)
                .map_err(|e| fail("a BPF link for XDP (Linux 5.9 or later)", &e))?;
            Ok(Self {
                _link: link,
                ebpf,
                socks,
                drops: 0,
                clock: crate::clock::RealClock::new(),
                gather: true,
            })
        })
    }

    /// Reads every frame as soon as it is there instead of letting short batches gather:
    /// for a receiver that answers frames (echo probes), whose answers must not wait.
    pub fn without_gathering(mut self) -> Self {
        self.gather = false;
        self
    }
}

impl FrameRx for XdpFrameRx {
    fn name(&self) -> &'static str {
        "af_xdp"
    }

    fn recv_frames(
        &mut self,
        timeout: Duration,
        on_frame: &mut dyn FnMut(&[u8], Option<UnixNanos>),
    ) -> io::Result<usize> {
        let clock = &self.clock;
        let mut take = |socks: &mut [sys::xdp::XdpRx]| -> io::Result<usize> {
            let mut n = 0;
            for s in socks {
                // The program's arrival times are CLOCK_MONOTONIC: moved to realtime by
                // the clocks' difference now. A frame without one is stamped now.
                let mono = sys::monotonic_now().as_nanos() as u64;
                let now = model::clock::Clock::wall(clock);
                let offset = now.0.wrapping_sub(mono);
                n += s.recv(Duration::ZERO, &mut |f, arrived| {
                    let at = arrived.map_or(now, |t| UnixNanos(t.wrapping_add(offset)));
                    on_frame(f, Some(at));
                })?;
            }
            Ok(n)
        };
        let mut n = take(&mut self.socks)?;
        if n == 0 {
            let fds: Vec<RawFd> = self.socks.iter().map(AsRawFd::as_raw_fd).collect();
            if sys::wait_readable(&fds, timeout)? == 0 {
                return Ok(0);
            }
            n = take(&mut self.socks)?;
        }
        // A short batch: let frames gather before the next read (as the V3 ring's block
        // timeout does) instead of waking for every frame. The arrival times come from
        // the program, so reading later changes no arrival time; the rings hold 4 ms of
        // frames at 2 Mframe/s. A receiver that answers what it reads (echoes) does not
        // gather: its answers would wait.
        if self.gather && n < XDP_RX_ENOUGH {
            std::thread::sleep(XDP_RX_GATHER);
        }
        Ok(n)
    }

    fn take_drops(&mut self) -> u64 {
        for s in &mut self.socks {
            self.drops += s.take_drops();
        }
        std::mem::take(&mut self.drops)
    }

    /// The program's count of frames it redirected (`counters[0]`, summed over CPUs).
    fn redirected(&self) -> Option<u64> {
        let map = self.ebpf.map("counters")?;
        let counters: aya::maps::PerCpuArray<_, u64> = aya::maps::PerCpuArray::try_from(map)
            .map_err(|e| tracing::warn!("bpf/xsk.o counters: {e}"))
            .ok()?;
        let per_cpu = counters
            .get(&0, 0)
            .map_err(|e| tracing::warn!("bpf/xsk.o counters: {e}"))
            .ok()?;
        Some(per_cpu.iter().sum())
    }
}
