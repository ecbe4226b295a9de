//! Every `unsafe` call of wirebench lives here: batch syscalls (`sendmmsg`, `recvmmsg`),
//! control messages (`SCM_TIMESTAMPING`), socket options that socket2 does not cover
//! (`SO_TIMESTAMPING`, `UDP_SEGMENT`, `TCP_INFO`), per-thread and process CPU time, timer
//! slack, zero-copy sends (`memfd_create`, `sendfile`),
//! `AF_PACKET` sockets and their statistics, `setns`, `ppoll`, the `PACKET_MMAP` rings
//! ([`ring`]), AF_XDP ([`xdp`]), the ethtool ioctl ([`ethtool`]) and the BPF maps' plain
//! data ([`bpf`]).
//!
//! Each function wraps exactly one kernel interface, checks its return value and turns it
//! into `io::Result`. Nothing here keeps state beyond the buffers it owns.
#![allow(unsafe_code)]

pub mod bpf;
pub mod ethtool;
pub mod ring;
pub mod xdp;

use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use model::clock::UnixNanos;

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn setsockopt_int(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `value` lives for the call; the length passed is exactly its size.
    let ret = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    cvt(ret).map(drop)
}

/// Asks the kernel for software receive timestamps (`SO_TIMESTAMPING` with
/// `SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE`). The stamps arrive as
/// `SCM_TIMESTAMPING` control messages and are read by [`RecvBatch`].
pub fn enable_rx_timestamps(sock: &impl AsRawFd) -> io::Result<()> {
    let flags = libc::SOF_TIMESTAMPING_RX_SOFTWARE | libc::SOF_TIMESTAMPING_SOFTWARE;
    setsockopt_int(
        sock.as_raw_fd(),
        libc::SOL_SOCKET,
        libc::SO_TIMESTAMPING,
        flags as libc::c_int,
    )
}

/// Sets a socket buffer beyond `net.core.[rw]mem_max` with `SO_RCVBUFFORCE` /
/// `SO_SNDBUFFORCE` (needs CAP_NET_ADMIN; fails with EPERM otherwise).
pub fn force_buffer_size(sock: &impl AsRawFd, receive: bool, bytes: usize) -> io::Result<()> {
    let name = if receive {
        libc::SO_RCVBUFFORCE
    } else {
        libc::SO_SNDBUFFORCE
    };
    let bytes = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    setsockopt_int(sock.as_raw_fd(), libc::SOL_SOCKET, name, bytes)
}

/// Sets `SO_RCVLOWAT`: a read (and `poll` for reading) waits until `bytes` are queued, the
/// stream ends, or (TCP, Linux 5.10+) the receive buffer is nearly full.
pub fn set_recv_lowat(sock: &impl AsRawFd, bytes: usize) -> io::Result<()> {
    let bytes = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    setsockopt_int(sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVLOWAT, bytes)
}

/// Sends a socket's datagrams with the don't-fragment bit set and at any size up to the
/// interface's MTU, whatever path MTU the kernel has cached (`IP_PMTUDISC_PROBE` /
/// `IPV6_PMTUDISC_PROBE`): the probes of a packetization-layer path MTU search (RFC 4821).
pub fn set_pmtu_probe(sock: &impl AsRawFd, ipv6: bool) -> io::Result<()> {
    let (level, name, value) = if ipv6 {
        (
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_PROBE,
        )
    } else {
        (
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_PROBE,
        )
    };
    setsockopt_int(sock.as_raw_fd(), level, name, value)
}

/// The MTU a connected socket's route has (`IP_MTU` / `IPV6_MTU`), bytes: the outgoing
/// interface's, or a smaller path MTU the kernel learnt.
pub fn route_mtu(sock: &impl AsRawFd, ipv6: bool) -> io::Result<u32> {
    let (level, name) = if ipv6 {
        (libc::IPPROTO_IPV6, libc::IPV6_MTU)
    } else {
        (libc::IPPROTO_IP, libc::IP_MTU)
    };
    let mut value: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` and `len` live for the call; `len` is exactly `value`'s size.
    let ret = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            level,
            name,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    cvt(ret)?;
    u32::try_from(value).map_err(|_| io::Error::other(format!("route MTU {value}")))
}

/// Sets `UDP_SEGMENT` (UDP GSO, Linux 4.18+): every `send` of a buffer larger than
/// `segment` bytes leaves as separate datagrams of `segment` bytes each.
pub fn set_udp_segment(sock: &impl AsRawFd, segment: u16) -> io::Result<()> {
    setsockopt_int(
        sock.as_raw_fd(),
        libc::SOL_UDP,
        libc::UDP_SEGMENT,
        libc::c_int::from(segment),
    )
}

/// Whether this process runs as root (effective uid 0): it may build labs, open raw
/// sockets and change interfaces.
pub fn is_root() -> bool {
    // SAFETY: geteuid takes no arguments, touches no memory and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Sets this thread's timer slack to 1 ns so that short sleeps wake on time
/// (the default 50 µs slack makes sleeps overshoot).
pub fn set_timer_slack_1ns() {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long by value; no memory is touched.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Pins the calling thread to one CPU (`sched_setaffinity`).
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} is out of range"),
        ));
    }
    // SAFETY: cpu_set_t is plain data; CPU_SET writes inside it (index checked above);
    // sched_setaffinity reads `size_of::<cpu_set_t>()` bytes of it.
    let ret = unsafe {
        let mut set: libc::cpu_set_t = zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set)
    };
    cvt(ret).map(drop)
}

/// CPU time consumed by the calling thread (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu_time() -> Duration {
    // SAFETY: `ts` is a valid out-parameter for clock_gettime.
    let mut ts: libc::timespec = unsafe { zeroed() };
    let ret = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if ret != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// This host's `CLOCK_MONOTONIC` now (shared by every process and network namespace of
/// the host, not by other hosts).
pub fn monotonic_now() -> Duration {
    // SAFETY: `ts` is a valid out-parameter for clock_gettime.
    let mut ts: libc::timespec = unsafe { zeroed() };
    if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// CPU time of the whole process so far: (user, system), from `getrusage(RUSAGE_SELF)`.
pub fn process_cpu_time() -> (Duration, Duration) {
    // SAFETY: `ru` is a valid out-parameter for getrusage.
    let mut ru: libc::rusage = unsafe { zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (Duration::ZERO, Duration::ZERO);
    }
    let d = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    (d(ru.ru_utime), d(ru.ru_stime))
}

/// One block of data in an anonymous in-memory file (`memfd_create`), sent with
/// `sendfile(2)`: the kernel takes its pages without a copy from user space (iperf3's -Z).
#[derive(Debug)]
pub struct MemBlock {
    file: std::fs::File,
}

impl MemBlock {
    /// A file holding `data`.
    pub fn new(data: &[u8]) -> io::Result<MemBlock> {
        use std::io::Write as _;
        use std::os::fd::FromRawFd as _;
        // SAFETY: the name is a NUL-terminated string that outlives the call.
        let fd =
            cvt(unsafe { libc::memfd_create(c"wirebench-block".as_ptr(), libc::MFD_CLOEXEC) })?;
        // SAFETY: `fd` was just returned by memfd_create and is owned by nothing else.
        let mut file = unsafe { std::fs::File::from_raw_fd(fd) };
        file.write_all(data)?;
        Ok(MemBlock { file })
    }

    /// Sends up to `len` bytes of the block from `offset` to `sock`; the bytes sent.
    pub fn send_to(&self, sock: &impl AsRawFd, offset: usize, len: usize) -> io::Result<usize> {
        let mut off = libc::off_t::try_from(offset).map_err(|_| io::Error::other("offset"))?;
        // SAFETY: both descriptors are open for the call; `off` is a valid in/out parameter.
        let n = unsafe { libc::sendfile(sock.as_raw_fd(), self.file.as_raw_fd(), &mut off, len) };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(n as usize)
        }
    }
}

/// The fields of `struct tcp_info` that results use.
#[derive(Debug, Clone, Copy, Default)]
pub struct TcpInfo {
    /// Segments retransmitted over the connection's life (`tcpi_total_retrans`).
    pub total_retrans: u32,
    /// Smoothed round-trip time in microseconds (`tcpi_rtt`).
    pub rtt_us: u32,
    /// Round-trip time variation in microseconds (`tcpi_rttvar`).
    pub rttvar_us: u32,
    /// Congestion window in segments (`tcpi_snd_cwnd`).
    pub snd_cwnd: u32,
    /// Maximum segment size the sender uses (`tcpi_snd_mss`).
    pub snd_mss: u32,
    /// Path MTU (`tcpi_pmtu`).
    pub pmtu: u32,
    /// The peer's advertised receive window, bytes (`tcpi_snd_wnd`; 0 before Linux 5.4).
    pub snd_wnd: u32,
    /// Payload bytes sent, retransmissions included (`tcpi_bytes_sent`; 0 before Linux
    /// 4.19).
    pub bytes_sent: u64,
    /// Payload bytes retransmitted (`tcpi_bytes_retrans`; 0 before Linux 4.19).
    pub bytes_retrans: u64,
}

/// Reads `TCP_INFO` from a connected TCP socket.
pub fn tcp_info(sock: &impl AsRawFd) -> io::Result<TcpInfo> {
    // SAFETY: `info` is a plain-old-data struct; the kernel fills at most `len` bytes.
    let mut info: libc::tcp_info = unsafe { zeroed() };
    let mut len = size_of::<libc::tcp_info>() as libc::socklen_t;
    let ret = unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    cvt(ret)?;
    Ok(TcpInfo {
        total_retrans: info.tcpi_total_retrans,
        rtt_us: info.tcpi_rtt,
        rttvar_us: info.tcpi_rttvar,
        snd_cwnd: info.tcpi_snd_cwnd,
        snd_mss: info.tcpi_snd_mss,
        pmtu: info.tcpi_pmtu,
        snd_wnd: info.tcpi_snd_wnd,
        bytes_sent: info.tcpi_bytes_sent,
        bytes_retrans: info.tcpi_bytes_retrans,
    })
}

/// Space for one `SCM_TIMESTAMPING` control message (three `timespec`s, 64 bytes) and one
/// `PACKET_AUXDATA` (40 bytes) plus slack, in bytes; a multiple of 8 so that every slot
/// stays aligned for `cmsghdr`.
const CMSG_SPACE: usize = 128;

/// A reusable batch of receive buffers for `recvmmsg(2)`, with room for a kernel receive
/// timestamp per datagram.
///
/// A batch made with [`RecvBatch::frames`] reads from packet sockets and gives each frame
/// back its VLAN tag: the kernel takes the outer tag of a received frame out of the bytes
/// (into `skb->vlan_tci`, as a NIC's VLAN offload does, and veth does so for every
/// tagged frame) and reports it in a `PACKET_AUXDATA` message, as libpcap reads it.
pub struct RecvBatch {
    bufs: Vec<u8>,
    buf_len: usize,
    /// Bytes kept free before each buffer for a VLAN tag to be put back (0 or 4).
    head: usize,
    /// Per datagram of the last batch: where it starts in its slot and how long it is.
    spans: Vec<(usize, usize)>,
    /// Control-message space, as u64 words so that each slot is aligned for `cmsghdr`.
    cmsgs: Vec<u64>,
    iovecs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
    received: usize,
}

// SAFETY: the raw pointers inside `iovecs`/`hdrs` only ever point into `bufs`/`cmsgs`,
// which the struct owns; they are rebuilt before every syscall.
unsafe impl Send for RecvBatch {}

impl RecvBatch {
    /// `count` buffers of `buf_len` bytes each.
    pub fn new(count: usize, buf_len: usize) -> Self {
        Self::with_head(count, buf_len, 0)
    }

    /// `count` buffers for frames of up to `buf_len` bytes from a packet socket, each
    /// with its VLAN tag put back where the kernel took it out (see the type's doc).
    pub fn frames(count: usize, buf_len: usize) -> Self {
        Self::with_head(count, buf_len, 4)
    }

    fn with_head(count: usize, buf_len: usize, head: usize) -> Self {
        let count = count.max(1);
        Self {
            bufs: vec![0; count * (buf_len + head)],
            buf_len,
            head,
            spans: vec![(0, 0); count],
            cmsgs: vec![0; count * CMSG_SPACE / 8],
            // SAFETY: iovec and mmsghdr are plain C structs for which all-zero is valid.
            iovecs: (0..count).map(|_| unsafe { zeroed() }).collect(),
            hdrs: (0..count).map(|_| unsafe { zeroed() }).collect(),
            received: 0,
        }
    }

    /// Receives up to the batch size of datagrams with one `recvmmsg` call. `nonblocking`
    /// adds `MSG_DONTWAIT`; otherwise the socket's own receive timeout applies.
    /// Returns how many datagrams arrived (0 is never returned: a timeout is an error of
    /// kind `WouldBlock`).
    pub fn recv(&mut self, sock: &impl AsRawFd, nonblocking: bool) -> io::Result<usize> {
        let count = self.hdrs.len();
        let bufs = self.bufs.as_mut_ptr();
        let cmsgs = self.cmsgs.as_mut_ptr().cast::<u8>();
        let iovecs = self.iovecs.as_mut_ptr();
        for i in 0..count {
            // SAFETY: i < count, so all offsets stay inside the owned allocations; the
            // pointers are derived once from each Vec and not invalidated before the call.
            unsafe {
                let iov = iovecs.add(i);
                *iov = libc::iovec {
                    iov_base: bufs.add(i * (self.buf_len + self.head) + self.head).cast(),
                    iov_len: self.buf_len,
                };
                let hdr = &mut self.hdrs[i];
                hdr.msg_hdr.msg_name = std::ptr::null_mut();
                hdr.msg_hdr.msg_namelen = 0;
                hdr.msg_hdr.msg_iov = iov;
                hdr.msg_hdr.msg_iovlen = 1;
                hdr.msg_hdr.msg_control = cmsgs.add(i * CMSG_SPACE).cast();
                hdr.msg_hdr.msg_controllen = CMSG_SPACE as _;
                hdr.msg_hdr.msg_flags = 0;
                hdr.msg_len = 0;
            }
        }
        // Blocking: return as soon as one datagram is there (MSG_WAITFORONE); without it the
        // kernel would wait for the whole batch, up to the receive timeout per slot.
        let flags = if nonblocking {
            libc::MSG_DONTWAIT
        } else {
            libc::MSG_WAITFORONE
        };
        // SAFETY: every header points at buffers owned by `self` that outlive the call.
        let ret = unsafe {
            libc::recvmmsg(
                sock.as_raw_fd(),
                self.hdrs.as_mut_ptr(),
                count as libc::c_uint,
                flags,
                std::ptr::null_mut(),
            )
        };
        let n = cvt(ret)? as usize;
        self.received = n;
        let stride = self.buf_len + self.head;
        for i in 0..n {
            let len = (self.hdrs[i].msg_len as usize).min(self.buf_len);
            let slot = i * stride;
            self.spans[i] = (slot + self.head, len);
            if self.head < 4 || len < 12 {
                continue;
            }
            if let Some((tpid, tci)) = self.vlan_tag(i) {
                // The MACs move 4 bytes forward and the tag goes after them (802.1Q 9.3).
                self.bufs.copy_within(slot + 4..slot + 16, slot);
                self.bufs[slot + 12..slot + 14].copy_from_slice(&tpid.to_be_bytes());
                self.bufs[slot + 14..slot + 16].copy_from_slice(&tci.to_be_bytes());
                self.spans[i] = (slot, (len + 4).min(self.buf_len));
            }
        }
        Ok(n)
    }

    /// Datagram `i` of the last batch (payload bytes, truncated to the buffer size) and its
    /// kernel software receive timestamp, when the kernel supplied one.
    pub fn get(&self, i: usize) -> Option<(&[u8], Option<UnixNanos>)> {
        if i >= self.received {
            return None;
        }
        let (start, len) = self.spans[i];
        Some((&self.bufs[start..start + len], self.timestamp(i)))
    }

    /// The VLAN tag (TPID, TCI) the kernel took out of frame `i`, from its
    /// `PACKET_AUXDATA` message (packet(7)); `None` when it carried none.
    fn vlan_tag(&self, i: usize) -> Option<(u16, u16)> {
        let hdr = &self.hdrs[i].msg_hdr;
        let need = unsafe { libc::CMSG_LEN(size_of::<libc::tpacket_auxdata>() as u32) } as usize;
        // SAFETY: as in `timestamp`: the walk stays inside the control buffer the kernel
        // filled, and the auxdata is read only from a message long enough to hold it.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(hdr);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == libc::SOL_PACKET
                    && (*cmsg).cmsg_type == libc::PACKET_AUXDATA
                    && (*cmsg).cmsg_len as usize >= need
                {
                    let aux = std::ptr::read_unaligned(
                        libc::CMSG_DATA(cmsg) as *const libc::tpacket_auxdata
                    );
                    if aux.tp_status & libc::TP_STATUS_VLAN_VALID == 0 && aux.tp_vlan_tci == 0 {
                        return None;
                    }
                    let tpid = if aux.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                        aux.tp_vlan_tpid
                    } else {
                        0x8100
                    };
                    return Some((tpid, aux.tp_vlan_tci));
                }
                cmsg = libc::CMSG_NXTHDR(hdr, cmsg);
            }
        }
        None
    }

    fn timestamp(&self, i: usize) -> Option<UnixNanos> {
        let hdr = &self.hdrs[i].msg_hdr;
        if hdr.msg_flags & libc::MSG_CTRUNC != 0 {
            return None;
        }
        let need = unsafe { libc::CMSG_LEN(size_of::<libc::timespec>() as u32) } as usize;
        // SAFETY: the kernel wrote `msg_controllen` bytes of well-formed cmsgs into our
        // aligned buffer; the CMSG_* macros only walk inside [msg_control, +controllen), and
        // the timespec is read only when the message is long enough to hold it.
        unsafe {
            let mut cmsg = libc::CMSG_FIRSTHDR(hdr);
            while !cmsg.is_null() {
                if (*cmsg).cmsg_level == libc::SOL_SOCKET
                    && (*cmsg).cmsg_type == libc::SCM_TIMESTAMPING
                    && (*cmsg).cmsg_len as usize >= need
                {
                    let data = libc::CMSG_DATA(cmsg) as *const libc::timespec;
                    // ts[0] is the software stamp (ts[2] would be hardware).
                    let ts = std::ptr::read_unaligned(data);
                    if ts.tv_sec <= 0 && ts.tv_nsec <= 0 {
                        return None;
                    }
                    return Some(UnixNanos(
                        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64,
                    ));
                }
                cmsg = libc::CMSG_NXTHDR(hdr, cmsg);
            }
        }
        None
    }
}

/// A reusable batch of send buffers for `sendmmsg(2)` on a connected socket.
pub struct SendBatch {
    bufs: Vec<u8>,
    buf_len: usize,
    lens: Vec<usize>,
    iovecs: Vec<libc::iovec>,
    hdrs: Vec<libc::mmsghdr>,
}

// SAFETY: as for RecvBatch, the raw pointers only point into owned buffers and are
// rebuilt before each syscall.
unsafe impl Send for SendBatch {}

impl SendBatch {
    /// `count` buffers of `buf_len` bytes each.
    pub fn new(count: usize, buf_len: usize) -> Self {
        let count = count.max(1);
        Self {
            bufs: vec![0; count * buf_len],
            buf_len,
            lens: vec![buf_len; count],
            // SAFETY: all-zero is a valid iovec / mmsghdr.
            iovecs: (0..count).map(|_| unsafe { zeroed() }).collect(),
            hdrs: (0..count).map(|_| unsafe { zeroed() }).collect(),
        }
    }

    /// Number of slots.
    pub fn capacity(&self) -> usize {
        self.hdrs.len()
    }

    /// Mutable access to slot `i`'s buffer; `len` bytes of it are sent.
    pub fn slot_mut(&mut self, i: usize, len: usize) -> &mut [u8] {
        let len = len.min(self.buf_len);
        self.lens[i] = len;
        &mut self.bufs[i * self.buf_len..i * self.buf_len + len]
    }

    /// Sends slots `0..n` with one `sendmmsg` call; returns how many the kernel took.
    pub fn send(&mut self, sock: &impl AsRawFd, n: usize, nonblocking: bool) -> io::Result<usize> {
        self.send_from(sock, 0, n, nonblocking)
    }

    /// Sends slots `start..n` with one `sendmmsg` call (to go on after a partial send);
    /// returns how many the kernel took.
    pub fn send_from(
        &mut self,
        sock: &impl AsRawFd,
        start: usize,
        n: usize,
        nonblocking: bool,
    ) -> io::Result<usize> {
        let n = n.min(self.hdrs.len());
        if start >= n {
            return Ok(0);
        }
        let bufs = self.bufs.as_mut_ptr();
        let iovecs = self.iovecs.as_mut_ptr();
        for i in start..n {
            // SAFETY: i < count keeps every offset inside the owned Vecs; pointers are derived
            // once per call and stay valid until the syscall returns.
            unsafe {
                let iov = iovecs.add(i);
                *iov = libc::iovec {
                    iov_base: bufs.add(i * self.buf_len).cast(),
                    iov_len: self.lens[i],
                };
                let hdr = &mut self.hdrs[i].msg_hdr;
                hdr.msg_name = std::ptr::null_mut();
                hdr.msg_namelen = 0;
                hdr.msg_iov = iov;
                hdr.msg_iovlen = 1;
                hdr.msg_control = std::ptr::null_mut();
                hdr.msg_controllen = 0;
                hdr.msg_flags = 0;
            }
        }
        let flags = if nonblocking { libc::MSG_DONTWAIT } else { 0 };
        // SAFETY: headers point at owned buffers valid for the duration of the call.
        let ret = unsafe {
            libc::sendmmsg(
                sock.as_raw_fd(),
                self.hdrs.as_mut_ptr().add(start),
                (n - start) as libc::c_uint,
                flags,
            )
        };
        Ok(cvt(ret)? as usize)
    }
}

/// Opens an `AF_PACKET`/`SOCK_RAW` socket bound to interface `ifindex` for every EtherType
/// (`ETH_P_ALL`), with frames this host sends on it left out (`PACKET_IGNORE_OUTGOING`,
/// Linux 4.20) and, with `promisc`, the interface in promiscuous mode for as long as the
/// socket lives (`PACKET_ADD_MEMBERSHIP`/`PACKET_MR_PROMISC`, packet(7)).
pub fn packet_socket(ifindex: u32, promisc: bool) -> io::Result<std::os::fd::OwnedFd> {
    packet_socket_for(ifindex, promisc, libc::ETH_P_ALL as u16)
}

/// As [`packet_socket`], for frames of EtherType `protocol` only; protocol 0 receives
/// nothing (a send-only socket, which costs the receive path nothing).
pub fn packet_socket_for(
    ifindex: u32,
    promisc: bool,
    protocol: u16,
) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let proto = protocol.to_be();
    // SAFETY: plain syscall; the returned descriptor is checked before it is owned.
    let fd = cvt(unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::c_int::from(proto),
        )
    })?;
    // SAFETY: `fd` was just returned by socket(2) and is owned by nobody else.
    let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    setsockopt_int(fd, libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, 1)?;
    if protocol != 0 {
        // The VLAN tag the kernel takes out of a received frame ([`RecvBatch::frames`]).
        setsockopt_int(fd, libc::SOL_PACKET, libc::PACKET_AUXDATA, 1)?;
    }
    // SAFETY: all-zero is a valid sockaddr_ll; the fields set are the ones bind(2) reads.
    let mut addr: libc::sockaddr_ll = unsafe { zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_protocol = proto;
    addr.sll_ifindex = ifindex as i32;
    // SAFETY: `addr` lives for the call and the length is its exact size.
    cvt(unsafe {
        libc::bind(
            fd,
            (&addr as *const libc::sockaddr_ll).cast(),
            size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })?;
    if promisc {
        // SAFETY: all-zero is a valid packet_mreq.
        let mut mr: libc::packet_mreq = unsafe { zeroed() };
        mr.mr_ifindex = ifindex as i32;
        mr.mr_type = libc::PACKET_MR_PROMISC as u16;
        // SAFETY: `mr` lives for the call and the length is its exact size.
        cvt(unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_PACKET,
                libc::PACKET_ADD_MEMBERSHIP,
                (&mr as *const libc::packet_mreq).cast(),
                size_of::<libc::packet_mreq>() as libc::socklen_t,
            )
        })?;
    }
    Ok(owned)
}

/// Moves the calling thread into the network namespace behind `ns` (a `/run/netns/NAME`
/// file), `setns(2)`. Sockets the thread opens afterwards belong to that namespace and
/// stay in it; other threads are not affected.
pub fn enter_netns(ns: &impl AsRawFd) -> io::Result<()> {
    // SAFETY: plain syscall on a descriptor the caller keeps open for the call.
    cvt(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) }).map(drop)
}

/// `PACKET_QDISC_BYPASS`: frames sent on this socket skip the interface's qdisc.
pub fn packet_qdisc_bypass(sock: &impl AsRawFd) -> io::Result<()> {
    setsockopt_int(
        sock.as_raw_fd(),
        libc::SOL_PACKET,
        libc::PACKET_QDISC_BYPASS,
        1,
    )
}

/// The index of interface `name` in this network namespace (`if_nametoindex(3)`).
pub fn interface_index(name: &str) -> io::Result<u32> {
    let c = std::ffi::CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name has a NUL"))?;
    // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(i)
    }
}

/// The name of the interface that holds address `ip` in this network namespace
/// (`getifaddrs(3)`); `None` when none does.
pub fn interface_with_address(ip: std::net::IpAddr) -> io::Result<Option<String>> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head we free below with freeifaddrs.
    cvt(unsafe { libc::getifaddrs(&mut list) })?;
    let mut found = None;
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list getifaddrs gave, alive until freeifaddrs.
        let ifa = unsafe { &*cur };
        cur = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_addr points to a sockaddr whose family says its real type.
        let addr = unsafe {
            match i32::from((*ifa.ifa_addr).sa_family) {
                libc::AF_INET => {
                    let a = &*ifa.ifa_addr.cast::<libc::sockaddr_in>();
                    Some(std::net::IpAddr::from(
                        u32::from_be(a.sin_addr.s_addr).to_be_bytes(),
                    ))
                }
                libc::AF_INET6 => {
                    let a = &*ifa.ifa_addr.cast::<libc::sockaddr_in6>();
                    Some(std::net::IpAddr::from(a.sin6_addr.s6_addr))
                }
                _ => None,
            }
        };
        if addr == Some(ip) {
            // SAFETY: ifa_name is a NUL-terminated string of the list.
            let name = unsafe { std::ffi::CStr::from_ptr(ifa.ifa_name) };
            found = Some(name.to_string_lossy().into_owned());
            break;
        }
    }
    // SAFETY: `list` came from getifaddrs and is freed once.
    unsafe { libc::freeifaddrs(list) };
    Ok(found)
}

/// The `PACKET_STATISTICS` of an `AF_PACKET` socket: (frames received, frames the kernel
/// dropped because the socket's buffer was full) since the previous call (the kernel
/// resets them on read).
pub fn packet_statistics(sock: &impl AsRawFd) -> io::Result<(u32, u32)> {
    // SAFETY: all-zero is a valid tpacket_stats.
    let mut st: libc::tpacket_stats = unsafe { zeroed() };
    let mut len = size_of::<libc::tpacket_stats>() as libc::socklen_t;
    // SAFETY: `st` and `len` live for the call; the kernel writes at most `len` bytes.
    cvt(unsafe {
        libc::getsockopt(
            sock.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            (&mut st as *mut libc::tpacket_stats).cast(),
            &mut len,
        )
    })?;
    Ok((st.tp_packets, st.tp_drops))
}

/// Waits until one of `fds` is readable or `timeout` passed (`ppoll(2)`, nanosecond
/// timeout). Returns a bit per descriptor (bit i set: `fds[i]` is readable, or has an
/// error or hang-up to report). `EINTR` counts as a timeout.
pub fn wait_readable(fds: &[RawFd], timeout: Duration) -> io::Result<u64> {
    wait_ready(fds, libc::POLLIN, timeout)
}

/// Waits until one of `fds` has room to write or `timeout` passed; as [`wait_readable`].
pub fn wait_writable(fds: &[RawFd], timeout: Duration) -> io::Result<u64> {
    wait_ready(fds, libc::POLLOUT, timeout)
}

fn wait_ready(fds: &[RawFd], events: libc::c_short, timeout: Duration) -> io::Result<u64> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .take(64)
        .map(|&fd| libc::pollfd {
            fd,
            events,
            revents: 0,
        })
        .collect();
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `pfds` and `ts` live for the call; the count is the Vec's length.
    let ret = unsafe {
        libc::ppoll(
            pfds.as_mut_ptr(),
            pfds.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
    if ret < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(0)
        } else {
            Err(e)
        };
    }
    Ok(pfds
        .iter()
        .enumerate()
        .filter(|(_, p)| p.revents != 0)
        .fold(0, |m, (i, _)| m | (1 << i)))
}

/// Sends one rtnetlink request `msg` (a complete `nlmsghdr` message) to the kernel on a
/// `NETLINK_ROUTE` socket of this network namespace (rtnetlink(7)) and returns the
/// kernel's answers as they arrive, until `ends` says a datagram holds the message that
/// ends them (the caller reads the answers: `bridge` does).
pub fn netlink_route(msg: &[u8], ends: &dyn Fn(&[u8]) -> bool) -> io::Result<Vec<u8>> {
    use std::os::fd::FromRawFd;
    // SAFETY: plain syscall; the returned descriptor is checked before it is owned.
    let fd = cvt(unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_ROUTE,
        )
    })?;
    // SAFETY: `fd` was just returned by socket(2) and is owned by nobody else.
    let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    // SAFETY: all-zero is a valid sockaddr_nl: the kernel (pid 0), no groups.
    let mut kernel: libc::sockaddr_nl = unsafe { zeroed() };
    kernel.nl_family = libc::AF_NETLINK as u16;
    // SAFETY: `msg` and `kernel` live for the call; the lengths are their exact sizes.
    let sent = unsafe {
        libc::sendto(
            owned.as_raw_fd(),
            msg.as_ptr().cast(),
            msg.len(),
            0,
            (&kernel as *const libc::sockaddr_nl).cast(),
            size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut answers = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    // A request asking for an acknowledgement (NLM_F_ACK) always gets one, so this loop
    // ends, or the socket fails.
    loop {
        // SAFETY: `buf` is valid for writes of its length for the call.
        let n = unsafe { libc::recv(owned.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let got = &buf[..n as usize];
        answers.extend_from_slice(got);
        if ends(got) || n == 0 {
            return Ok(answers);
        }
    }
}
