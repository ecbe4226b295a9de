//! AF_XDP sockets (Documentation/networking/af_xdp.rst), bound in copy mode (`XDP_COPY`),
//! which works on every driver, veth included:
//!
//! - [`XdpTx`] only sends: frames are written into a UMEM of 2 KiB chunks, described on
//!   the TX ring, and their chunks come back on the completion ring once the kernel has
//!   sent them. Sending needs no XDP program.
//! - [`XdpRx`] only receives: the UMEM's 2 KiB chunks wait on the fill ring, the kernel
//!   copies each frame an XDP program redirected to the socket (an XSKMAP entry, loaded by
//!   the caller) into one and describes it on the RX ring; the chunk goes back on the fill
//!   ring once the frame is read.
//!
//! Ring protocol: the producer index is written with release ordering after the
//! descriptors, the consumer's index read with acquire ordering before slots are reused.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::clock::RealClock;
use model::wait::{Poll, Wait};

use super::ring::Mapping;
use super::{cvt, setsockopt_int};

/// UMEM chunk size: the largest frame this backend sends is a chunk.
pub const CHUNK: usize = 2048;
/// The largest frame this backend receives: a chunk less the headroom the kernel keeps in
/// front of every received frame (`XDP_PACKET_HEADROOM`; `xsk_pool_get_rx_frame_size`).
/// Longer frames are dropped by the kernel.
pub const RX_FRAME_MAX: usize = CHUNK - 256;
const CHUNKS: usize = 4096;
const RING: u32 = 2048;

/// One single-producer/single-consumer ring of the socket.
struct XskRing {
    map: Mapping,
    producer: usize,
    consumer: usize,
    flags: usize,
    desc: usize,
    mask: u32,
}

impl XskRing {
    fn map(
        fd: RawFd,
        off: &libc::xdp_ring_offset,
        entry: usize,
        pgoff: u64,
        size: u32,
    ) -> io::Result<Self> {
        let len = off.desc as usize + size as usize * entry;
        let map = Mapping::at(fd, len, pgoff as libc::off_t)?;
        Ok(Self {
            map,
            producer: off.producer as usize,
            consumer: off.consumer as usize,
            flags: off.flags as usize,
            desc: off.desc as usize,
            mask: size - 1,
        })
    }

    fn word(&self, at: usize) -> &AtomicU32 {
        self.map.status(at)
    }
}

/// A send-only AF_XDP socket bound to one queue of an interface.
pub struct XdpTx {
    fd: OwnedFd,
    umem: Mapping,
    tx: XskRing,
    cq: XskRing,
    _fq: XskRing,
    free: Vec<u64>,
    outstanding: usize,
}

fn getsockopt_offsets(fd: RawFd) -> io::Result<libc::xdp_mmap_offsets> {
    // SAFETY: all-zero is a valid xdp_mmap_offsets; the kernel writes at most `len` bytes.
    let mut off: libc::xdp_mmap_offsets = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
    // SAFETY: `off` and `len` live for the call.
    cvt(unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_XDP,
            libc::XDP_MMAP_OFFSETS,
            (&mut off as *mut libc::xdp_mmap_offsets).cast(),
            &mut len,
        )
    })?;
    Ok(off)
}

/// A socket with its UMEM (`chunks` chunks of `chunk` bytes) registered and the rings of
/// `rings` sized to `size` entries, not yet bound.
fn umem_socket(
    chunk: usize,
    chunks: usize,
    rings: &[libc::c_int],
    size: u32,
) -> io::Result<(OwnedFd, Mapping)> {
    // SAFETY: plain syscall; the descriptor is checked before it is owned.
    let raw = cvt(unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `raw` was just returned by socket(2) and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let umem = Mapping::anonymous(chunk * chunks)?;
    let reg = libc::xdp_umem_reg {
        addr: umem.base as u64,
        len: (chunk * chunks) as u64,
        chunk_size: chunk as u32,
        headroom: 0,
        flags: 0,
        tx_metadata_len: 0,
    };
    // SAFETY: `reg` lives for the call; the UMEM it names outlives the socket (both end
    // up as fields of one value, the socket dropped first).
    cvt(unsafe {
        libc::setsockopt(
            raw,
            libc::SOL_XDP,
            libc::XDP_UMEM_REG,
            (&reg as *const libc::xdp_umem_reg).cast(),
            std::mem::size_of::<libc::xdp_umem_reg>() as libc::socklen_t,
        )
    })?;
    for &opt in rings {
        setsockopt_int(raw, libc::SOL_XDP, opt, size as i32)?;
    }
    Ok((fd, umem))
}

/// Binds `fd` to queue `queue` of interface `ifindex` in copy mode, retrying while a
/// socket of an earlier run still holds the queue.
fn bind(fd: RawFd, ifindex: u32, queue: u32) -> io::Result<()> {
    // SAFETY: all-zero is a valid sockaddr_xdp; the fields bind(2) reads are set.
    let mut sa: libc::sockaddr_xdp = unsafe { std::mem::zeroed() };
    sa.sxdp_family = libc::AF_XDP as u16;
    sa.sxdp_flags = libc::XDP_COPY | libc::XDP_USE_NEED_WAKEUP;
    sa.sxdp_ifindex = ifindex;
    sa.sxdp_queue_id = queue;
    let mut tries = 0;
    loop {
        // SAFETY: `sa` lives for the call and the length is its exact size.
        let r = unsafe {
            libc::bind(
                fd,
                (&sa as *const libc::sockaddr_xdp).cast(),
                std::mem::size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
            )
        };
        match cvt(r) {
            Ok(_) => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && tries < 20 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => return Err(e),
        }
    }
}

/// `sendto(2)` with no buffer: wakes the kernel to process the socket's rings. Busy and
/// transient answers are not errors (the next wake-up retries).
fn wake(fd: RawFd) -> io::Result<()> {
    // SAFETY: sendto(2) with no buffer and no address.
    let r = unsafe {
        libc::sendto(
            fd,
            std::ptr::null(),
            0,
            libc::MSG_DONTWAIT,
            std::ptr::null(),
            0,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN | libc::EBUSY | libc::ENOBUFS | libc::EINTR | libc::ENETDOWN) => {
                Ok(())
            }
            _ => Err(e),
        };
    }
    Ok(())
}

impl XdpTx {
    /// Opens the socket on queue `queue` of interface `ifindex` (in the calling thread's
    /// network namespace).
    ///
    /// # Errors
    /// No AF_XDP in the kernel, no `CAP_NET_RAW`, or the queue is taken.
    pub fn open(ifindex: u32, queue: u32) -> io::Result<Self> {
        let rings = [
            libc::XDP_UMEM_FILL_RING,
            libc::XDP_UMEM_COMPLETION_RING,
            libc::XDP_TX_RING,
        ];
        let (fd, umem) = umem_socket(CHUNK, CHUNKS, &rings, RING)?;
        let raw = fd.as_raw_fd();
        let off = getsockopt_offsets(raw)?;
        let tx = XskRing::map(
            raw,
            &off.tx,
            std::mem::size_of::<libc::xdp_desc>(),
            libc::XDP_PGOFF_TX_RING as u64,
            RING,
        )?;
        let cq = XskRing::map(raw, &off.cr, 8, libc::XDP_UMEM_PGOFF_COMPLETION_RING, RING)?;
        let fq = XskRing::map(raw, &off.fr, 8, libc::XDP_UMEM_PGOFF_FILL_RING, RING)?;
        bind(raw, ifindex, queue)?;
        Ok(Self {
            fd,
            free: (0..CHUNKS as u64).rev().map(|i| i * CHUNK as u64).collect(),
            umem,
            tx,
            cq,
            _fq: fq,
            outstanding: 0,
        })
    }

    /// Takes back the chunks of frames the kernel has sent.
    fn reap(&mut self) {
        let cons = self.cq.word(self.cq.consumer).load(Ordering::Relaxed);
        let prod = self.cq.word(self.cq.producer).load(Ordering::Acquire);
        let n = prod.wrapping_sub(cons);
        for i in 0..n {
            let slot = (cons.wrapping_add(i) & self.cq.mask) as usize;
            // SAFETY: slot ≤ mask, so the 8-byte entry is inside the mapped ring; the
            // kernel published it before moving the producer (acquire above).
            let addr = unsafe {
                std::ptr::read_volatile(self.cq.map.base.add(self.cq.desc + slot * 8) as *const u64)
            };
            if (addr as usize) < CHUNK * CHUNKS {
                self.free.push(addr - addr % CHUNK as u64);
            }
        }
        self.cq
            .word(self.cq.consumer)
            .store(prod, Ordering::Release);
        self.outstanding = self.outstanding.saturating_sub(n as usize);
    }

    fn kick(&self) -> io::Result<()> {
        wake(self.fd.as_raw_fd())
    }

    /// Builds up to `n` frames with `fill(i, buf)` (a buffer of `len` ≤ [`CHUNK`] bytes;
    /// it returns the frame's length), puts
    /// them on the TX ring and wakes the kernel; returns how many were queued.
    pub fn send(
        &mut self,
        n: usize,
        len: usize,
        fill: &mut dyn FnMut(usize, &mut [u8]) -> usize,
    ) -> io::Result<usize> {
        if len > CHUNK {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("AF_XDP frames are at most {CHUNK} bytes here; use the packet backend for jumbo frames"),
            ));
        }
        self.reap();
        let prod = self.tx.word(self.tx.producer).load(Ordering::Relaxed);
        let cons = self.tx.word(self.tx.consumer).load(Ordering::Acquire);
        let room = RING - prod.wrapping_sub(cons);
        let k = n.min(room as usize).min(self.free.len());
        for i in 0..k {
            let Some(addr) = self.free.pop() else { break };
            let slot = (prod.wrapping_add(i as u32) & self.tx.mask) as usize;
            // SAFETY: `addr` is a free chunk (offset < UMEM size, CHUNK-aligned) so
            // [addr, addr + len) is inside the UMEM and not in the kernel's hands; `slot`
            // ≤ mask keeps the descriptor inside the mapped ring.
            unsafe {
                let data = std::slice::from_raw_parts_mut(self.umem.base.add(addr as usize), len);
                let used = fill(i, data).min(len);
                let d = self
                    .tx
                    .map
                    .base
                    .add(self.tx.desc + slot * std::mem::size_of::<libc::xdp_desc>())
                    as *mut libc::xdp_desc;
                std::ptr::write_volatile(
                    d,
                    libc::xdp_desc {
                        addr,
                        len: used as u32,
                        options: 0,
                    },
                );
            }
        }
        if k > 0 {
            self.tx
                .word(self.tx.producer)
                .store(prod.wrapping_add(k as u32), Ordering::Release);
            self.outstanding += k;
        }
        // Copy mode needs a wake-up for every batch. It sends a kernel batch (32 frames)
        // per wake-up; waking it until the ring is empty was measured to turn a paced
        // batch into a line-rate burst that overflowed a shaper's queue, so the rest
        // leaves at the next call, spread out.
        let flags = self.tx.word(self.tx.flags).load(Ordering::Acquire);
        if k > 0 || flags & libc::XDP_RING_NEED_WAKEUP != 0 {
            self.kick()?;
        }
        Ok(k)
    }

    /// Waits (up to `timeout`) until the kernel has sent every queued frame.
    pub fn flush(&mut self, timeout: Duration) -> io::Result<()> {
        let step = Duration::from_micros(50);
        let flushed = Wait::on(&RealClock::new()).at_most(timeout).poll(|| {
            self.reap();
            if self.outstanding == 0 {
                return Poll::Ready(Ok(()));
            }
            match self.kick() {
                Ok(()) => Poll::Wait(step),
                Err(e) => Poll::Ready(Err(e)),
            }
        });
        flushed.ready().unwrap_or(Ok(()))
    }
}

impl AsRawFd for XdpTx {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Receive UMEM chunk size: a frame of up to `RX_CHUNK` − 256 bytes (the kernel's XDP
/// headroom) fits; longer ones are dropped by the kernel and counted.
pub const RX_CHUNK: usize = 2048;
/// Entries of the receive and fill rings, and chunks of the receive UMEM (16 MiB): room
/// for bursts while the reader is busy.
const RX_RING: u32 = 8192;
/// The longest frame [`XdpRx`] receives.
pub const RX_MAX_FRAME: usize = RX_CHUNK - 256;

/// A receive-only AF_XDP socket bound to one queue of an interface. Frames reach it only
/// through an XDP program that redirects them to it (an XSKMAP entry for its queue).
pub struct XdpRx {
    fd: OwnedFd,
    umem: Mapping,
    rx: XskRing,
    fq: XskRing,
    _cq: XskRing,
    /// The kernel's drop counters at the last [`XdpRx::take_drops`].
    dropped: u64,
}

impl XdpRx {
    /// Opens the socket on queue `queue` of interface `ifindex` (in the calling thread's
    /// network namespace), every chunk of its UMEM waiting on the fill ring.
    ///
    /// # Errors
    /// No AF_XDP in the kernel, no `CAP_NET_RAW`, the queue is taken, or the interface has
    /// no such queue (`EINVAL`).
    pub fn open(ifindex: u32, queue: u32) -> io::Result<Self> {
        let rings = [
            libc::XDP_UMEM_FILL_RING,
            libc::XDP_UMEM_COMPLETION_RING,
            libc::XDP_RX_RING,
        ];
        let (fd, umem) = umem_socket(RX_CHUNK, RX_RING as usize, &rings, RX_RING)?;
        let raw = fd.as_raw_fd();
        let off = getsockopt_offsets(raw)?;
        let rx = XskRing::map(
            raw,
            &off.rx,
            std::mem::size_of::<libc::xdp_desc>(),
            libc::XDP_PGOFF_RX_RING as u64,
            RX_RING,
        )?;
        let fq = XskRing::map(raw, &off.fr, 8, libc::XDP_UMEM_PGOFF_FILL_RING, RX_RING)?;
        let cq = XskRing::map(
            raw,
            &off.cr,
            8,
            libc::XDP_UMEM_PGOFF_COMPLETION_RING,
            RX_RING,
        )?;
        let mut me = Self {
            fd,
            umem,
            rx,
            fq,
            _cq: cq,
            dropped: 0,
        };
        let chunks: Vec<u64> = (0..u64::from(RX_RING))
            .map(|i| i * RX_CHUNK as u64)
            .collect();
        me.refill(&chunks);
        bind(raw, ifindex, queue)?;
        Ok(me)
    }

    /// Puts `chunks` (chunk addresses, at most the ring's free room) on the fill ring.
    fn refill(&mut self, chunks: &[u64]) {
        let prod = self.fq.word(self.fq.producer).load(Ordering::Relaxed);
        for (i, addr) in chunks.iter().enumerate() {
            let slot = (prod.wrapping_add(i as u32) & self.fq.mask) as usize;
            // SAFETY: slot ≤ mask keeps the 8-byte entry inside the mapped ring; the
            // entry is ours until the producer index below moves past it.
            unsafe {
                std::ptr::write_volatile(
                    self.fq.map.base.add(self.fq.desc + slot * 8) as *mut u64,
                    *addr,
                );
            }
        }
        self.fq
            .word(self.fq.producer)
            .store(prod.wrapping_add(chunks.len() as u32), Ordering::Release);
    }

    /// Hands each frame on the RX ring to `on_frame` with the 8 bytes of XDP metadata
    /// before it (the receive program's arrival time, `None` when zero), waiting up to
    /// `timeout` when there is none yet; returns how many. Each chunk goes back on the fill
    /// ring after its frame.
    ///
    /// # Errors
    /// `poll` failed.
    pub fn recv(
        &mut self,
        timeout: Duration,
        on_frame: &mut dyn FnMut(&[u8], Option<u64>),
    ) -> io::Result<usize> {
        let mut n = self.ready();
        if n == 0 {
            // poll(2) also wakes the kernel when the fill ring asks for it.
            if super::wait_readable(&[self.fd.as_raw_fd()], timeout)? == 0 {
                return Ok(0);
            }
            n = self.ready();
        }
        let cons = self.rx.word(self.rx.consumer).load(Ordering::Relaxed);
        let mut done = Vec::with_capacity(n as usize);
        for i in 0..n {
            let slot = (cons.wrapping_add(i) & self.rx.mask) as usize;
            // SAFETY: slot ≤ mask keeps the descriptor inside the mapped ring; the kernel
            // published it before moving the producer (acquire in `ready`).
            let d = unsafe {
                std::ptr::read_volatile(
                    self.rx
                        .map
                        .base
                        .add(self.rx.desc + slot * std::mem::size_of::<libc::xdp_desc>())
                        as *const libc::xdp_desc,
                )
            };
            let (addr, len) = (d.addr as usize, d.len as usize);
            if addr
                .checked_add(len)
                .is_some_and(|end| end <= self.umem.len)
            {
                // SAFETY: [addr, addr + len) is inside the UMEM (checked) and holds the
                // frame the kernel wrote; it stays ours until its chunk is refilled below.
                let frame = unsafe { std::slice::from_raw_parts(self.umem.base.add(addr), len) };
                // The metadata sits in the same chunk, right before the frame (the chunk
                // has 256 bytes of headroom).
                let meta = (addr % RX_CHUNK >= 8).then(|| {
                    // SAFETY: [addr - 8, addr) is inside the frame's chunk (checked above)
                    // and ours until it is refilled; read unaligned as the kernel placed
                    // it, then cleared, so a later frame without metadata in this chunk
                    // does not find this one's.
                    unsafe {
                        let at = self.umem.base.add(addr - 8) as *mut u64;
                        let t = std::ptr::read_unaligned(at);
                        std::ptr::write_unaligned(at, 0);
                        t
                    }
                });
                on_frame(frame, meta.filter(|&t| t != 0));
            }
            done.push((addr - addr % RX_CHUNK) as u64);
        }
        self.rx
            .word(self.rx.consumer)
            .store(cons.wrapping_add(n), Ordering::Release);
        self.refill(&done);
        Ok(n as usize)
    }

    /// Descriptors waiting on the RX ring.
    fn ready(&self) -> u32 {
        let cons = self.rx.word(self.rx.consumer).load(Ordering::Relaxed);
        let prod = self.rx.word(self.rx.producer).load(Ordering::Acquire);
        prod.wrapping_sub(cons)
    }

    /// Frames the kernel dropped for this socket since the last call: no room on the RX
    /// ring, or no chunk on the fill ring or too long for one (`rx_dropped`).
    pub fn take_drops(&mut self) -> u64 {
        // SAFETY: all-zero is a valid xdp_statistics; the kernel writes at most `len` bytes.
        let mut st: libc::xdp_statistics = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::xdp_statistics>() as libc::socklen_t;
        // SAFETY: `st` and `len` live for the call.
        let r = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_XDP,
                libc::XDP_STATISTICS,
                (&mut st as *mut libc::xdp_statistics).cast(),
                &mut len,
            )
        };
        if r < 0 {
            return 0;
        }
        let total = st.rx_dropped + st.rx_ring_full;
        let new = total.saturating_sub(self.dropped);
        self.dropped = total;
        new
    }
}

impl AsRawFd for XdpRx {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
