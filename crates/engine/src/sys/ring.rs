//! `PACKET_MMAP` rings (packet(7), Documentation/networking/packet_mmap.rst): a TPACKET_V2
//! TX ring and a TPACKET_V3 RX ring, shared with the kernel through `mmap`.
//!
//! Protocol with the kernel, per slot (TX) or block (RX): read the status word with
//! acquire ordering; the side that owns the slot writes its data, then hands the slot over
//! by writing the status with release ordering. Every offset the kernel writes into the
//! RX ring is checked against the block before it is followed.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{fence, AtomicU32, Ordering};
use std::time::Duration;

use crate::clock::RealClock;
use model::clock::UnixNanos;
use model::wait::{Poll, Wait};

use super::{cvt, setsockopt_int};

/// Data offset in a TPACKET_V2 TX slot: `TPACKET_ALIGN(sizeof(struct tpacket2_hdr))`
/// (without `PACKET_TX_HAS_OFF`).
const TX_DATA_OFFSET: usize = 32;

/// `enum tpacket_versions` of linux/if_packet.h.
const TPACKET_V2: libc::c_int = 1;
const TPACKET_V3: libc::c_int = 2;

fn set_ring<T>(fd: RawFd, opt: libc::c_int, req: &T) -> io::Result<()> {
    // SAFETY: `req` lives for the call and the length is its exact size.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_PACKET,
            opt,
            (req as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// A shared mapping (a ring, or anonymous memory), unmapped on drop.
pub(super) struct Mapping {
    pub(super) base: *mut u8,
    pub(super) len: usize,
}

// SAFETY: the mapping is plain shared memory owned by this value; the owning ring is used
// from one thread at a time (`&mut self` methods).
unsafe impl Send for Mapping {}

impl Mapping {
    /// `len` bytes of the object behind `fd` at `offset` (an AF_XDP ring), shared.
    pub(super) fn at(fd: RawFd, len: usize, offset: libc::off_t) -> io::Result<Self> {
        // SAFETY: a fresh shared mapping; the result is checked against MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                offset,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Self {
            base: p.cast(),
            len,
        })
    }

    /// `len` bytes of fresh anonymous memory (an AF_XDP UMEM).
    pub(super) fn anonymous(len: usize) -> io::Result<Self> {
        // SAFETY: a fresh private anonymous mapping; checked against MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Self {
            base: p.cast(),
            len,
        })
    }

    fn new(fd: RawFd, len: usize) -> io::Result<Self> {
        // SAFETY: a fresh shared mapping of the socket's ring, as packet(7) prescribes;
        // the result is checked against MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_LOCKED,
                fd,
                0,
            )
        };
        let p = if p == libc::MAP_FAILED {
            // MAP_LOCKED can fail on a low RLIMIT_MEMLOCK; the ring works without it.
            // SAFETY: as above, without MAP_LOCKED.
            let q = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fd,
                    0,
                )
            };
            if q == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            q
        } else {
            p
        };
        Ok(Self {
            base: p.cast(),
            len,
        })
    }

    /// The 32-bit word at byte `offset` (4-byte aligned, inside the mapping), shared
    /// with the kernel.
    pub(super) fn status(&self, offset: usize) -> &AtomicU32 {
        debug_assert!(offset + 4 <= self.len && offset.is_multiple_of(4));
        // SAFETY: offset is inside the mapping and 4-aligned (slot and block starts are
        // page or 16-byte aligned); the kernel and we access it atomically.
        unsafe { &*(self.base.add(offset) as *const AtomicU32) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the region mapped in `new`.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
        }
    }
}

/// A TPACKET_V2 transmit ring on a bound `AF_PACKET` socket.
pub struct TxRing {
    fd: OwnedFd,
    map: Mapping,
    frame_size: usize,
    frames: usize,
    next: usize,
}

impl TxRing {
    /// Sets up a TX ring of `frames` slots of `frame_size` bytes (a power of two ≥ the
    /// largest frame + 32) on `fd`, a bound `AF_PACKET` socket that has not sent yet.
    pub fn new(fd: OwnedFd, frame_size: usize, frames: usize) -> io::Result<Self> {
        let raw = fd.as_raw_fd();
        setsockopt_int(raw, libc::SOL_PACKET, libc::PACKET_VERSION, TPACKET_V2)?;
        let block_size = frame_size.max(1 << 16);
        let per_block = block_size / frame_size;
        let blocks = frames.div_ceil(per_block).max(1);
        let req = libc::tpacket_req {
            tp_block_size: block_size as u32,
            tp_block_nr: blocks as u32,
            tp_frame_size: frame_size as u32,
            tp_frame_nr: (blocks * per_block) as u32,
        };
        set_ring(raw, libc::PACKET_TX_RING, &req)?;
        let map = Mapping::new(raw, block_size * blocks)?;
        Ok(Self {
            fd,
            map,
            frame_size,
            frames: blocks * per_block,
            next: 0,
        })
    }

    /// Largest frame a slot holds.
    pub fn max_frame(&self) -> usize {
        self.frame_size - TX_DATA_OFFSET
    }

    /// Slots in the ring.
    pub fn slots(&self) -> usize {
        self.frames
    }

    /// Fills up to `n` free slots with frames built by `fill(i, buf)` (a buffer of `len`
    /// bytes; it returns the frame's length),
    /// hands them to the kernel and kicks it without waiting; returns how many were
    /// queued (fewer when the ring is full).
    ///
    /// # Errors
    /// A slot came back `TP_STATUS_WRONG_FORMAT` (the kernel refused a frame), or the kick
    /// failed other than for a full queue.
    pub fn send(
        &mut self,
        n: usize,
        len: usize,
        fill: &mut dyn FnMut(usize, &mut [u8]) -> usize,
    ) -> io::Result<usize> {
        let len = len.min(self.max_frame());
        let mut queued = 0;
        while queued < n {
            let off = self.next * self.frame_size;
            let status = self.map.status(off).load(Ordering::Acquire);
            if status & libc::TP_STATUS_WRONG_FORMAT != 0 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the kernel refused a frame in the TX ring (TP_STATUS_WRONG_FORMAT)",
                ));
            }
            if status != libc::TP_STATUS_AVAILABLE {
                break; // ring full: the kernel still owns this slot
            }
            // SAFETY: the slot [off, off + frame_size) is inside the mapping and owned by
            // us (status AVAILABLE); data goes at offset 32, `len` ≤ frame_size − 32.
            unsafe {
                let hdr = self.map.base.add(off) as *mut libc::tpacket2_hdr;
                (*hdr).tp_len = len as u32;
                let data =
                    std::slice::from_raw_parts_mut(self.map.base.add(off + TX_DATA_OFFSET), len);
                fill(queued, data);
            }
            self.map
                .status(off)
                .store(libc::TP_STATUS_SEND_REQUEST, Ordering::Release);
            self.next = (self.next + 1) % self.frames;
            queued += 1;
        }
        if queued > 0 {
            self.kick(false)?;
        }
        Ok(queued)
    }

    fn kick(&self, wait: bool) -> io::Result<()> {
        let flags = if wait { 0 } else { libc::MSG_DONTWAIT };
        // SAFETY: send(2) with no buffer asks the kernel to transmit the ring's queued
        // slots (packet_mmap.rst).
        let r = unsafe { libc::send(self.fd.as_raw_fd(), std::ptr::null(), 0, flags) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::ENOBUFS) | Some(libc::EINTR) => Ok(()),
                _ => Err(e),
            };
        }
        Ok(())
    }

    /// Sends everything queued and waits (up to `timeout`) until the kernel released every
    /// slot.
    pub fn flush(&mut self, timeout: Duration) -> io::Result<()> {
        self.kick(true)?;
        let step = Duration::from_micros(100);
        let flushed = Wait::on(&RealClock::new()).at_most(timeout).poll(|| {
            let busy = (0..self.frames).any(|i| {
                self.map.status(i * self.frame_size).load(Ordering::Acquire)
                    & (libc::TP_STATUS_SEND_REQUEST | libc::TP_STATUS_SENDING)
                    != 0
            });
            if !busy {
                return Poll::Ready(Ok(()));
            }
            match self.kick(false) {
                Ok(()) => Poll::Wait(step),
                Err(e) => Poll::Ready(Err(e)),
            }
        });
        flushed.ready().unwrap_or(Ok(()))
    }
}

impl AsRawFd for TxRing {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// A TPACKET_V3 receive ring on a bound `AF_PACKET` socket: the kernel fills blocks of
/// frames and retires a block when it is full or `retire` has passed.
pub struct RxRing {
    fd: OwnedFd,
    map: Mapping,
    block_size: usize,
    blocks: usize,
    next: usize,
}

impl RxRing {
    /// Sets up an RX ring of `blocks` blocks of `block_size` bytes on `fd`.
    pub fn new(
        fd: OwnedFd,
        block_size: usize,
        blocks: usize,
        retire: Duration,
    ) -> io::Result<Self> {
        let raw = fd.as_raw_fd();
        setsockopt_int(raw, libc::SOL_PACKET, libc::PACKET_VERSION, TPACKET_V3)?;
        let frame_size = 2048usize;
        let req = libc::tpacket_req3 {
            tp_block_size: block_size as u32,
            tp_block_nr: blocks as u32,
            tp_frame_size: frame_size as u32,
            tp_frame_nr: (block_size / frame_size * blocks) as u32,
            tp_retire_blk_tov: retire.as_millis().clamp(1, 1000) as u32,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        set_ring(raw, libc::PACKET_RX_RING, &req)?;
        let map = Mapping::new(raw, block_size * blocks)?;
        Ok(Self {
            fd,
            map,
            block_size,
            blocks,
            next: 0,
        })
    }

    /// Hands every frame of the retired blocks to `on_frame(frame, stamp)`, waiting up to
    /// `timeout` for the first block; returns how many frames.
    pub fn recv(
        &mut self,
        timeout: Duration,
        on_frame: &mut dyn FnMut(&[u8], Option<UnixNanos>),
    ) -> io::Result<usize> {
        let mut total = 0;
        for round in 0..self.blocks {
            let off = self.next * self.block_size;
            // block_status is the first word of the v1 header, after version and
            // offset_to_priv (two u32).
            let status = self.map.status(off + 8);
            if status.load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
                if round > 0 || total > 0 {
                    break;
                }
                if super::wait_readable(&[self.fd.as_raw_fd()], timeout)? == 0
                    || status.load(Ordering::Acquire) & libc::TP_STATUS_USER == 0
                {
                    break;
                }
            }
            total += self.walk_block(off, on_frame);
            fence(Ordering::Release);
            status.store(libc::TP_STATUS_KERNEL, Ordering::Release);
            self.next = (self.next + 1) % self.blocks;
        }
        Ok(total)
    }

    fn walk_block(&self, off: usize, on_frame: &mut dyn FnMut(&[u8], Option<UnixNanos>)) -> usize {
        let end = off + self.block_size;
        // SAFETY: the block [off, end) is inside the mapping and owned by us
        // (TP_STATUS_USER); every offset read from the kernel is bounds-checked against
        // the block before it is dereferenced or sliced.
        unsafe {
            let desc = self.map.base.add(off) as *const libc::tpacket_block_desc;
            let bh = &(*desc).hdr.bh1;
            let n = bh.num_pkts as usize;
            let mut p = off + bh.offset_to_first_pkt as usize;
            let hdr_len = std::mem::size_of::<libc::tpacket3_hdr>();
            let mut seen = 0;
            // A frame whose VLAN tag the kernel took out (802.1Q 9.3), with it put back.
            let mut tagged: Vec<u8> = Vec::new();
            while seen < n && p + hdr_len <= end {
                let h = self.map.base.add(p) as *const libc::tpacket3_hdr;
                let data = p + (*h).tp_mac as usize;
                let snap = (*h).tp_snaplen as usize;
                if data + snap > end {
                    break;
                }
                let frame = std::slice::from_raw_parts(self.map.base.add(data), snap);
                let ts = ((*h).tp_sec != 0 || (*h).tp_nsec != 0).then(|| {
                    UnixNanos(u64::from((*h).tp_sec) * 1_000_000_000 + u64::from((*h).tp_nsec))
                });
                let status = (*h).tp_status;
                if status & libc::TP_STATUS_VLAN_VALID != 0 && frame.len() >= 12 {
                    let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
                        (*h).hv1.tp_vlan_tpid
                    } else {
                        0x8100
                    };
                    let tci = (*h).hv1.tp_vlan_tci as u16;
                    tagged.clear();
                    tagged.extend_from_slice(&frame[..12]);
                    tagged.extend_from_slice(&tpid.to_be_bytes());
                    tagged.extend_from_slice(&tci.to_be_bytes());
                    tagged.extend_from_slice(&frame[12..]);
                    on_frame(&tagged, ts);
                } else {
                    on_frame(frame, ts);
                }
                seen += 1;
                let next = (*h).tp_next_offset as usize;
                if next == 0 {
                    break;
                }
                p += next;
            }
            seen
        }
    }
}

impl AsRawFd for RxRing {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
