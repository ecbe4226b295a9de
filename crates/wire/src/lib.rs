//! Zero-copy views and builders for the packet formats wirebench sends and receives.
//!
//! This crate is the bottom layer of wirebench (`wire` → `io` → `engine` → `report` → `cli`):
//! it knows how bytes are laid out on the wire and nothing else. It covers Ethernet II,
//! IEEE 802.1Q VLAN tags, IPv4, IPv6 (fixed header), UDP, TCP (fixed header), ICMP echo
//! and the wirebench test header, plus [`frame`] helpers that build and walk whole frames.
//!
//! # Design: views and `Repr`s (after smoltcp)
//!
//! Every format comes in two halves:
//!
//! * a **view** such as [`udp::Packet<T>`] (or [`ethernet::Frame<T>`]) that wraps any
//!   `T: AsRef<[u8]>` and reads fields straight out of the buffer (big-endian). Setters exist
//!   only when `T: AsMut<[u8]>` as well. Nothing is copied and nothing is allocated.
//! * a **`Repr`** such as [`udp::UdpRepr`]: a small `Copy` struct holding the meaning of a
//!   header, with `parse(&view) -> Result<Repr>`, `emit(&self, &mut view, ..)`,
//!   `header_len()` and `buffer_len(..)`. `Display` prints it in tcpdump style.
//!
//! Protocol numbers ([`EtherType`], [`IpProtocol`], [`tcp::TcpFlags`], [`testhdr::TestFlags`], ..)
//! are *open* newtypes over the wire integer with named constants, so a value this crate does
//! not know survives a parse/emit round-trip and still prints (as hex).
//!
//! # The no-panic contract
//!
//! * Data from the network goes through `new_checked` (or `check_len` on a view made with
//!   `new_unchecked`). Once that returned `Ok`, **no getter and no `payload()` panics**, whatever
//!   the bytes are; `Repr::parse` re-checks lengths itself and never panics either.
//!   Setters that change a length field (IPv4 header/total length, UDP length, TCP data
//!   offset) can make a later `payload()` panic; call `check_len` again after using them.
//! * `new_unchecked` is for **emission** into a buffer the caller sized with
//!   `Repr::buffer_len`; writing into a too-short buffer panics (a caller bug, not bad input).
//!   `new_checked` would be wrong there, because the length fields are not written yet.
//! * [`frame::parse_frame`] never panics on any input and [`frame::FrameSpec::build`] returns
//!   [`Error::Truncated`] rather than panicking when the buffer or the frame size is too small.
//!
//! Checksums are verified in `Repr::parse`; under `cfg(fuzzing)` every checksum verifies, so
//! fuzzers reach the code behind it (as in smoltcp).
//!
//! # Example
//!
//! Build a 64-byte IPv4/UDP test frame, bump its sequence number in place, and walk it:
//!
//! ```
//! use wire::ethernet::EthernetRepr;
//! use wire::frame::{parse_frame, FrameSpec, L4Spec};
//! use wire::ipv4::Ipv4Repr;
//! use wire::testhdr::{TestFlags, TestHeaderRepr};
//! use wire::{EtherType, EthernetAddress, IpProtocol, IpRepr, Ipv4Address};
//!
//! let spec = FrameSpec {
//!     eth: EthernetRepr {
//!         src_addr: EthernetAddress([0x02, 0, 0, 0, 0, 1]),
//!         dst_addr: EthernetAddress([0x02, 0, 0, 0, 0, 2]),
//!         ethertype: EtherType::IPV4, // derived by build()
//!     },
//!     vlan: None,
//!     ip: IpRepr::V4(Ipv4Repr {
//!         src_addr: Ipv4Address::new(198, 18, 0, 1),
//!         dst_addr: Ipv4Address::new(198, 18, 0, 2),
//!         protocol: IpProtocol::UDP, // derived by build()
//!         payload_len: 0,            // derived by build()
//!         ttl: 64,
//!         dscp: 0,
//!         ecn: 0,
//!         dont_frag: true,
//!         ident: 0,
//!     }),
//!     l4: L4Spec::Udp { src_port: 49152, dst_port: 5201 },
//! };
//! let hdr = TestHeaderRepr { flags: TestFlags::empty(), test_id: 1, stream_id: 0, seq: 0, tx_ns: 0 };
//! let mut buf = [0u8; 1518];
//! let len = spec.build(64, &hdr, &mut buf)?; // 60 bytes: the NIC appends the FCS
//! assert_eq!(len, 60);
//! spec.layout(64)?.write_seq_ts(&mut buf, 1, 1_700_000_000_000_000_000);
//! let parsed = parse_frame(&buf[..len])?; // checks every checksum
//! assert_eq!(parsed.test.map(|t| t.seq), Some(1));
//! # Ok::<(), wire::Error>(())
//! ```
//!
//! # What this crate does not do
//!
//! No I/O, no clock (timestamps are passed in), no allocation in parse/emit, no `unsafe`.
//! It does not reassemble IPv4 fragments (fragments are reported as [`Error::Unsupported`]),
//! does not walk IPv6 extension headers (it reports the first next-header value), does not
//! interpret IPv4 or TCP options (they are skipped on parse and never emitted), and does
//! not handle ARP, stacked VLAN tags (QinQ) or 802.1CB R-TAGs beyond naming their EtherTypes.
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

/// Declares an open protocol-number newtype with named constants.
///
/// `Debug` prints `Name::CONST` (or `Name(0x..)`) and `Display` the short name (or hex).
macro_rules! open_enum {
    (
        $(#[$meta:meta])*
        $name:ident($ty:ty) {
            $( $(#[$cmeta:meta])* $konst:ident = $value:expr => $text:expr, )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub struct $name(pub $ty);

        impl $name {
            $( $(#[$cmeta])* pub const $konst: Self = Self($value); )*

            /// The short name of a known value, `None` for a value without a constant here.
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $( v if v == $value => Some($text), )*
                    _ => None,
                }
            }

            fn const_name(self) -> Option<&'static str> {
                match self.0 {
                    $( v if v == $value => Some(stringify!($konst)), )*
                    _ => None,
                }
            }
        }

        impl From<$ty> for $name {
            fn from(value: $ty) -> Self {
                Self(value)
            }
        }

        impl From<$name> for $ty {
            fn from(value: $name) -> Self {
                value.0
            }
        }

        impl core::fmt::Debug for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self.const_name() {
                    Some(c) => write!(f, "{}::{}", stringify!($name), c),
                    None => write!(
                        f,
                        "{}({:#0w$x})",
                        stringify!($name),
                        self.0,
                        w = 2 + 2 * core::mem::size_of::<$ty>()
                    ),
                }
            }
        }

        impl core::fmt::Display for $name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self.name() {
                    Some(n) => f.write_str(n),
                    None => write!(f, "{:#0w$x}", self.0, w = 2 + 2 * core::mem::size_of::<$ty>()),
                }
            }
        }
    };
}

pub mod checksum;
mod error;
pub mod ethernet;
pub mod frame;
pub mod icmp;
pub mod ip;
pub mod iperf3;
pub mod ipv4;
pub mod ipv6;
pub mod linerate;
pub mod tcp;
pub mod testhdr;
pub mod udp;
pub mod vlan;

pub use error::{Error, Result};
pub use ethernet::{EtherType, EthernetAddress};
pub use ip::{IpAddress, IpProtocol, IpRepr};
pub use ipv4::Ipv4Address;
pub use ipv6::Ipv6Address;

/// A byte range of a header field, as used by the private `field` modules.
type Field = core::ops::Range<usize>;

#[inline]
fn read_u16(data: &[u8], field: Field) -> u16 {
    let mut b = [0; 2];
    b.copy_from_slice(&data[field]);
    u16::from_be_bytes(b)
}

#[inline]
fn read_u32(data: &[u8], field: Field) -> u32 {
    let mut b = [0; 4];
    b.copy_from_slice(&data[field]);
    u32::from_be_bytes(b)
}

#[inline]
fn write_u16(data: &mut [u8], field: Field, value: u16) {
    data[field].copy_from_slice(&value.to_be_bytes());
}

#[inline]
fn write_u32(data: &mut [u8], field: Field, value: u32) {
    data[field].copy_from_slice(&value.to_be_bytes());
}

/// Shared helpers for the unit tests.
#[cfg(test)]
mod test_util {
    use crate::{IpAddress, Ipv4Address, Ipv6Address};
    use proptest::prelude::*;

    pub(crate) fn any_ipv4() -> impl Strategy<Value = Ipv4Address> {
        any::<[u8; 4]>().prop_map(Ipv4Address)
    }

    pub(crate) fn any_ipv6() -> impl Strategy<Value = Ipv6Address> {
        any::<[u8; 16]>().prop_map(Ipv6Address)
    }

    /// A source/destination pair of one family.
    pub(crate) fn any_ip_pair() -> impl Strategy<Value = (IpAddress, IpAddress)> {
        prop_oneof![
            (any_ipv4(), any_ipv4()).prop_map(|(s, d)| (IpAddress::V4(s), IpAddress::V4(d))),
            (any_ipv6(), any_ipv6()).prop_map(|(s, d)| (IpAddress::V6(s), IpAddress::V6(d))),
        ]
    }
}
