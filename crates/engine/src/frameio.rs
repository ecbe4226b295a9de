//! Whole Ethernet frames in and out of an interface: an `AF_PACKET` raw socket with
//! batched receive (`recvmmsg`) and send (`sendmmsg`).
//!
//! This is the plain `send`/`recv` backend; the lab's impairment stage forwards frames
//! with it. It does not build or parse frames (that is `wire`), and has no rings yet.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};

use crate::sys;

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
        let index = sys::interface_index(name)
            .map_err(|e| io::Error::new(e.kind(), format!("interface {name}: {e}")))?;
        let fd = sys::packet_socket(index, promisc)
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
