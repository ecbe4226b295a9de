//! An AF_XDP socket that only sends (Documentation/networking/af_xdp.rst): frames are
//! written into a UMEM of 2 KiB chunks, described on the TX ring, and their chunks come
//! back on the completion ring once the kernel has sent them. Sending needs no XDP
//! program; binding is in copy mode (`XDP_COPY`), which works on every driver, veth
//! included.
//!
//! Ring protocol: the producer index is written with release ordering after the
//! descriptors, the consumer's index read with acquire ordering before slots are reused.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use super::ring::Mapping;
use super::{cvt, setsockopt_int};

/// UMEM chunk size: the largest frame this backend sends is a chunk.
pub const CHUNK: usize = 2048;
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
    fn map(fd: RawFd, off: &libc::xdp_ring_offset, entry: usize, pgoff: u64) -> io::Result<Self> {
        let len = off.desc as usize + RING as usize * entry;
        let map = Mapping::at(fd, len, pgoff as libc::off_t)?;
        Ok(Self {
            map,
            producer: off.producer as usize,
            consumer: off.consumer as usize,
            flags: off.flags as usize,
            desc: off.desc as usize,
            mask: RING - 1,
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

impl XdpTx {
    /// Opens the socket on queue `queue` of interface `ifindex` (in the calling thread's
    /// network namespace).
    ///
    /// # Errors
    /// No AF_XDP in the kernel, no `CAP_NET_RAW`, or the queue is taken.
    pub fn open(ifindex: u32, queue: u32) -> io::Result<Self> {
        // SAFETY: plain syscall; the descriptor is checked before it is owned.
        let raw =
            cvt(unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) })?;
        // SAFETY: `raw` was just returned by socket(2) and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let umem = Mapping::anonymous(CHUNK * CHUNKS)?;
        let reg = libc::xdp_umem_reg {
            addr: umem.base as u64,
            len: (CHUNK * CHUNKS) as u64,
            chunk_size: CHUNK as u32,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        // SAFETY: `reg` lives for the call; the UMEM it names outlives the socket (both
        // are fields of the returned value, the socket dropped first).
        cvt(unsafe {
            libc::setsockopt(
                raw,
                libc::SOL_XDP,
                libc::XDP_UMEM_REG,
                (&reg as *const libc::xdp_umem_reg).cast(),
                std::mem::size_of::<libc::xdp_umem_reg>() as libc::socklen_t,
            )
        })?;
        for opt in [
            libc::XDP_UMEM_FILL_RING,
            libc::XDP_UMEM_COMPLETION_RING,
            libc::XDP_TX_RING,
        ] {
            setsockopt_int(raw, libc::SOL_XDP, opt, RING as i32)?;
        }
        let off = getsockopt_offsets(raw)?;
        let tx = XskRing::map(
            raw,
            &off.tx,
            std::mem::size_of::<libc::xdp_desc>(),
            libc::XDP_PGOFF_TX_RING as u64,
        )?;
        let cq = XskRing::map(raw, &off.cr, 8, libc::XDP_UMEM_PGOFF_COMPLETION_RING)?;
        let fq = XskRing::map(raw, &off.fr, 8, libc::XDP_UMEM_PGOFF_FILL_RING)?;
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
                    raw,
                    (&sa as *const libc::sockaddr_xdp).cast(),
                    std::mem::size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
                )
            };
            match cvt(r) {
                Ok(_) => break,
                // A socket of an earlier run may still hold the queue for a moment.
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && tries < 20 => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(e),
            }
        }
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
        // SAFETY: sendto(2) with no buffer wakes the kernel to process the TX ring.
        let r = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
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
        // Copy mode needs a wake-up for every batch.
        let flags = self.tx.word(self.tx.flags).load(Ordering::Acquire);
        if k > 0 || flags & libc::XDP_RING_NEED_WAKEUP != 0 {
            self.kick()?;
        }
        Ok(k)
    }

    /// Waits (up to `timeout`) until the kernel has sent every queued frame.
    pub fn flush(&mut self, timeout: Duration) -> io::Result<()> {
        let step = Duration::from_micros(50);
        let mut waited = Duration::ZERO;
        while self.outstanding > 0 && waited < timeout {
            self.kick()?;
            std::thread::sleep(step);
            waited += step;
            self.reap();
        }
        Ok(())
    }
}

impl AsRawFd for XdpTx {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
