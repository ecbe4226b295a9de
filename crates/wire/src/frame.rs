//! Whole test frames: build one from a [`FrameSpec`], patch sequence and timestamp in place
//! with [`FrameLayout::write_seq_ts`], and walk a received one with [`parse_frame`].
//!
//! Frame sizes follow RFC 2544 §9: they **include the 4-byte FCS**, which the NIC appends, so
//! a 64-byte frame is 60 bytes in the buffer. The test header ([`crate::testhdr`]) follows the
//! L4 header and zero padding fills the L4 payload up to the requested size, so that IP and
//! UDP lengths describe the whole frame (no Ethernet padding). Sizes below 64 bytes are built
//! as asked; the NIC or the kernel may pad them on the wire.

use core::ops::Range;

use crate::ethernet::{self, EthernetRepr};
use crate::icmp::{self, IcmpEchoRepr};
use crate::ipv4::{self, Ipv4Repr};
use crate::ipv6::{self, Ipv6Repr};
use crate::tcp::{self, TcpRepr};
use crate::testhdr::{self, TestHeader, TestHeaderRepr, SEQ_MAX};
use crate::udp::{self, UdpRepr};
use crate::vlan::{self, VlanRepr};
use crate::{checksum, Error, EtherType, IpProtocol, IpRepr, Result};

/// Length of the Ethernet frame check sequence, counted in RFC 2544 frame sizes.
pub const FCS_LEN: usize = 4;

/// The transport header of a test frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum L4Spec {
    /// UDP with these ports.
    Udp {
        /// Source port.
        src_port: u16,
        /// Destination port.
        dst_port: u16,
    },
    /// TCP without options.
    Tcp(TcpRepr),
    /// ICMP echo (ICMPv4 over IPv4, ICMPv6 over IPv6).
    IcmpEcho(IcmpEchoRepr),
}

impl L4Spec {
    /// Length of the emitted L4 header.
    pub const fn header_len(&self) -> usize {
        match self {
            L4Spec::Udp { .. } => udp::HEADER_LEN,
            L4Spec::Tcp(_) => tcp::HEADER_LEN,
            L4Spec::IcmpEcho(_) => icmp::HEADER_LEN,
        }
    }

    /// The IP protocol number announcing this header over IPv4 (`v4`) or IPv6.
    pub const fn protocol(&self, v4: bool) -> IpProtocol {
        match self {
            L4Spec::Udp { .. } => IpProtocol::UDP,
            L4Spec::Tcp(_) => IpProtocol::TCP,
            L4Spec::IcmpEcho(_) if v4 => IpProtocol::ICMP,
            L4Spec::IcmpEcho(_) => IpProtocol::ICMPV6,
        }
    }
}

/// Everything needed to build a test frame except its size and test header.
///
/// [`build`](Self::build) derives the fields that depend on the rest: the EtherTypes
/// (`eth.ethertype`, `vlan.inner_ethertype`), the IP protocol / next header and the IP
/// payload length are overwritten, whatever the spec holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameSpec {
    /// Ethernet header.
    pub eth: EthernetRepr,
    /// Optional 802.1Q tag.
    pub vlan: Option<VlanRepr>,
    /// IPv4 or IPv6 header.
    pub ip: IpRepr,
    /// Transport header.
    pub l4: L4Spec,
}

/// Where the parts of a built frame are, for patching it on the hot path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FrameLayout {
    /// Frame length in the buffer (without FCS).
    pub len: usize,
    /// Offset of the IP header.
    pub l3_offset: usize,
    /// Offset of the L4 header.
    pub l4_offset: usize,
    /// Offset of the test header.
    pub test_offset: usize,
    /// Offset of the L4 checksum field.
    checksum_offset: usize,
    /// UDP sends a computed zero checksum as `0xffff`.
    zero_is_ffff: bool,
}

impl FrameLayout {
    /// Rewrites sequence number and timestamp in a frame built by [`FrameSpec::build`] with
    /// this layout and patches the L4 checksum incrementally (RFC 1624), without summing the
    /// frame again.
    ///
    /// `seq` above [`SEQ_MAX`] is treated as in [`testhdr::write_seq_ts`].
    ///
    /// # Panics
    /// If `frame` is shorter than the layout says.
    pub fn write_seq_ts(&self, frame: &mut [u8], seq: u64, tx_ns: u64) {
        // Bytes 4..18 of the test header: an even length at an even offset into the L4
        // message (L4 headers are 8 or 20 bytes), so they are whole 16-bit words of the sum.
        let words = self.test_offset + 4..self.test_offset + testhdr::HEADER_LEN;
        let old = checksum::data(&frame[words.clone()]);
        testhdr::write_seq_ts(&mut frame[self.test_offset..], seq, tx_ns);
        let new = checksum::data(&frame[words]);
        let at = self.checksum_offset..self.checksum_offset + 2;
        let stored = u16::from_be_bytes([frame[at.start], frame[at.start + 1]]);
        // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m').
        let mut sum = !checksum::combine(&[!stored, !old, new]);
        if sum == 0 && self.zero_is_ffff {
            sum = 0xffff;
        }
        frame[at].copy_from_slice(&sum.to_be_bytes());
    }
}

impl FrameSpec {
    /// Length of the L2 header(s): 14, or 18 with a VLAN tag.
    pub const fn l2_len(&self) -> usize {
        ethernet::HEADER_LEN
            + if self.vlan.is_some() {
                vlan::HEADER_LEN
            } else {
                0
            }
    }

    /// Length of all headers before the test header.
    pub fn headers_len(&self) -> usize {
        self.l2_len() + self.ip.header_len() + self.l4.header_len()
    }

    /// The smallest frame size (FCS included) that holds every header and the test header.
    pub fn min_frame_len(&self) -> usize {
        self.headers_len() + testhdr::HEADER_LEN + FCS_LEN
    }

    /// Where the parts of a frame of `frame_len_with_fcs` bytes would be.
    ///
    /// # Errors
    /// See [`build`](Self::build) (everything but the buffer length).
    pub fn layout(&self, frame_len_with_fcs: usize) -> Result<FrameLayout> {
        if frame_len_with_fcs < self.min_frame_len() {
            return Err(Error::Truncated);
        }
        let len = frame_len_with_fcs - FCS_LEN;
        let l3_offset = self.l2_len();
        let l4_offset = l3_offset + self.ip.header_len();
        let ip_payload_len = len - l4_offset;
        let fits = match self.ip {
            IpRepr::V4(_) => ip_payload_len <= Ipv4Repr::MAX_PAYLOAD_LEN,
            IpRepr::V6(_) => ip_payload_len <= Ipv6Repr::MAX_PAYLOAD_LEN,
        };
        if !fits {
            return Err(Error::OutOfRange);
        }
        let (checksum_in_l4, zero_is_ffff) = match self.l4 {
            L4Spec::Udp { .. } => (6, true),
            L4Spec::Tcp(_) => (16, false),
            L4Spec::IcmpEcho(_) => (2, false),
        };
        Ok(FrameLayout {
            len,
            l3_offset,
            l4_offset,
            test_offset: l4_offset + self.l4.header_len(),
            checksum_offset: l4_offset + checksum_in_l4,
            zero_is_ffff,
        })
    }

    /// Builds a complete Ethernet frame of `frame_len_with_fcs - 4` bytes at the start of
    /// `buf`: headers, the test header `hdr`, zero padding; all lengths and checksums right.
    /// Returns the number of bytes written.
    ///
    /// # Errors
    /// [`Error::Truncated`] if `frame_len_with_fcs` is below [`min_frame_len`](Self::min_frame_len)
    /// or `buf` is shorter than the frame; [`Error::OutOfRange`] if a field does not fit (VLAN
    /// PCP/VID, IPv4 DSCP/ECN, IPv6 flow label, `hdr.seq` above [`SEQ_MAX`], a frame too
    /// large for the IP length field).
    pub fn build(
        &self,
        frame_len_with_fcs: usize,
        hdr: &TestHeaderRepr,
        buf: &mut [u8],
    ) -> Result<usize> {
        let layout = self.layout(frame_len_with_fcs)?;
        let buf = buf.get_mut(..layout.len).ok_or(Error::Truncated)?;
        let ip_ok = match &self.ip {
            IpRepr::V4(r) => r.dscp <= 63 && r.ecn <= 3,
            IpRepr::V6(r) => r.flow_label <= ipv6::FLOW_LABEL_MAX,
        };
        if !ip_ok || hdr.seq > SEQ_MAX || !self.vlan.is_none_or(|v| v.is_valid()) {
            return Err(Error::OutOfRange);
        }

        let ip_ethertype = self.ip.ethertype();
        let eth = EthernetRepr {
            ethertype: if self.vlan.is_some() {
                EtherType::VLAN
            } else {
                ip_ethertype
            },
            ..self.eth
        };
        eth.emit(&mut ethernet::Frame::new_unchecked(&mut buf[..]));
        if let Some(v) = self.vlan {
            let tag = VlanRepr {
                inner_ethertype: ip_ethertype,
                ..v
            };
            tag.emit(&mut vlan::Packet::new_unchecked(
                &mut buf[ethernet::HEADER_LEN..],
            ));
        }

        let (l3, l4) = buf[layout.l3_offset..].split_at_mut(layout.l4_offset - layout.l3_offset);
        let ip_payload_len = l4.len();
        let (src, dst) = (self.ip.src_addr(), self.ip.dst_addr());
        match self.ip {
            IpRepr::V4(r) => Ipv4Repr {
                protocol: self.l4.protocol(true),
                payload_len: ip_payload_len,
                ..r
            }
            .emit(&mut ipv4::Packet::new_unchecked(l3)),
            IpRepr::V6(r) => Ipv6Repr {
                next_header: self.l4.protocol(false),
                payload_len: ip_payload_len,
                ..r
            }
            .emit(&mut ipv6::Packet::new_unchecked(l3)),
        }

        let payload_len = ip_payload_len - self.l4.header_len();
        let fill = |p: &mut [u8]| {
            hdr.emit(&mut TestHeader::new_unchecked(&mut p[..]));
            p[testhdr::HEADER_LEN..].fill(0);
        };
        match self.l4 {
            L4Spec::Udp { src_port, dst_port } => UdpRepr { src_port, dst_port }.emit(
                &mut udp::Packet::new_unchecked(l4),
                &src,
                &dst,
                payload_len,
                fill,
            ),
            L4Spec::Tcp(r) => r.emit(
                &mut tcp::Packet::new_unchecked(l4),
                &src,
                &dst,
                payload_len,
                fill,
            ),
            L4Spec::IcmpEcho(r) => r.emit(
                &mut icmp::Packet::new_unchecked(l4),
                &src,
                &dst,
                payload_len,
                fill,
            ),
        }
        Ok(layout.len)
    }
}

/// Builds a raw L2 test frame: Ethernet (and optional VLAN tag), then the test header right
/// after the EtherType, then zero padding. The payload EtherType is `eth.ethertype` (without
/// tag) or `vlan.inner_ethertype` (with tag; the outer one is then set to 802.1Q); use
/// [`EtherType::EXPERIMENTAL`] for [`parse_frame`] to find the test header.
///
/// # Errors
/// [`Error::Truncated`] if the size cannot hold the headers or `buf` is too short;
/// [`Error::OutOfRange`] for an invalid VLAN tag or `hdr.seq` above [`SEQ_MAX`].
pub fn build_l2(
    eth: &EthernetRepr,
    vlan: Option<&VlanRepr>,
    frame_len_with_fcs: usize,
    hdr: &TestHeaderRepr,
    buf: &mut [u8],
) -> Result<usize> {
    let l2_len = ethernet::HEADER_LEN + if vlan.is_some() { vlan::HEADER_LEN } else { 0 };
    if frame_len_with_fcs < l2_len + testhdr::HEADER_LEN + FCS_LEN {
        return Err(Error::Truncated);
    }
    let len = frame_len_with_fcs - FCS_LEN;
    let buf = buf.get_mut(..len).ok_or(Error::Truncated)?;
    if hdr.seq > SEQ_MAX || !vlan.is_none_or(|v| v.is_valid()) {
        return Err(Error::OutOfRange);
    }
    let mut eth = *eth;
    if let Some(v) = vlan {
        eth.ethertype = EtherType::VLAN;
        v.emit(&mut vlan::Packet::new_unchecked(
            &mut buf[ethernet::HEADER_LEN..],
        ));
    }
    eth.emit(&mut ethernet::Frame::new_unchecked(&mut buf[..]));
    hdr.emit(&mut TestHeader::new_unchecked(&mut buf[l2_len..]));
    buf[l2_len + testhdr::HEADER_LEN..].fill(0);
    Ok(len)
}

/// A parsed transport header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum L4Repr {
    /// UDP.
    Udp(UdpRepr),
    /// TCP.
    Tcp(TcpRepr),
    /// ICMP or ICMPv6 echo.
    IcmpEcho(IcmpEchoRepr),
}

/// What [`parse_frame`] found, with offsets into the frame.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ParsedFrame {
    /// Ethernet header.
    pub eth: EthernetRepr,
    /// 802.1Q tag, if the outer EtherType was 0x8100.
    pub vlan: Option<VlanRepr>,
    /// IP header, if the (inner) EtherType was IPv4 or IPv6.
    pub ip: Option<IpRepr>,
    /// Transport header, if the protocol was UDP, TCP or an ICMP echo of the IP family.
    pub l4: Option<L4Repr>,
    /// Test header at the start of `payload`, if one was there (a payload that does not hold a
    /// valid v1 test header is ordinary traffic, not an error).
    pub test: Option<TestHeaderRepr>,
    /// Offset of what follows the L2 header(s).
    pub l3_offset: usize,
    /// Offset of the transport header, if there is an IP header.
    pub l4_offset: Option<usize>,
    /// The innermost payload: after the last header recognised, up to the end given by the
    /// IP/UDP length fields (Ethernet padding excluded) or the end of the frame.
    pub payload: Range<usize>,
}

impl ParsedFrame {
    /// The spec that builds frames with these headers (the fields [`FrameSpec::build`]
    /// derives are taken as they are; it derives them again), so that a frame can describe
    /// a stream to a port elsewhere; `None` without an IP and a transport header.
    pub fn spec(&self) -> Option<FrameSpec> {
        let l4 = match self.l4? {
            L4Repr::Udp(u) => L4Spec::Udp {
                src_port: u.src_port,
                dst_port: u.dst_port,
            },
            L4Repr::Tcp(t) => L4Spec::Tcp(t),
            L4Repr::IcmpEcho(e) => L4Spec::IcmpEcho(e),
        };
        Some(FrameSpec {
            eth: self.eth,
            vlan: self.vlan,
            ip: self.ip?,
            l4,
        })
    }
}

/// Turns a test frame around, as a tester's far-end loopback does: Ethernet, IP and
/// transport source and destination exchanged (every checksum covers both of a pair, so
/// none changes), the rest as it was. Returns its test header; `None` (the frame
/// untouched) when it is not a test frame over IP.
pub fn turn_around(frame: &mut [u8]) -> Option<TestHeaderRepr> {
    let p = parse_frame(frame).ok()?;
    let test = p.test?;
    let l3 = p.l3_offset;
    let swap = |f: &mut [u8], a: usize, b: usize, n: usize| {
        let (x, y) = f.split_at_mut(b);
        x[a..a + n].swap_with_slice(&mut y[..n]);
    };
    match p.ip? {
        IpRepr::V4(_) => swap(frame, l3 + 12, l3 + 16, 4),
        IpRepr::V6(_) => swap(frame, l3 + 8, l3 + 24, 16),
    }
    if let (Some(l4), Some(L4Repr::Udp(_) | L4Repr::Tcp(_))) = (p.l4_offset, p.l4) {
        swap(frame, l4, l4 + 2, 2);
    }
    swap(frame, 0, 6, 6);
    Some(test)
}

/// Walks Ethernet → optional 802.1Q → IPv4/IPv6 → UDP/TCP/ICMP echo → test header, or
/// Ethernet → optional 802.1Q → test header for [`EtherType::EXPERIMENTAL`]. `frame` has no
/// FCS. Walking stops without error at an EtherType or protocol it does not know. Never
/// panics.
///
/// # Errors
/// Any error of the `Repr::parse` of a layer it knows (truncation, malformed length fields,
/// wrong IP version, bad checksums, IPv4 fragments).
pub fn parse_frame(frame: &[u8]) -> Result<ParsedFrame> {
    let eth = EthernetRepr::parse(&ethernet::Frame::new_checked(frame)?)?;
    let mut parsed = ParsedFrame {
        eth,
        vlan: None,
        ip: None,
        l4: None,
        test: None,
        l3_offset: ethernet::HEADER_LEN,
        l4_offset: None,
        payload: ethernet::HEADER_LEN..frame.len(),
    };
    let mut ethertype = eth.ethertype;
    if ethertype == EtherType::VLAN {
        let tag = VlanRepr::parse(&vlan::Packet::new_checked(&frame[ethernet::HEADER_LEN..])?)?;
        parsed.vlan = Some(tag);
        parsed.l3_offset += vlan::HEADER_LEN;
        parsed.payload.start = parsed.l3_offset;
        ethertype = tag.inner_ethertype;
    }
    let l3 = parsed.l3_offset;
    let (ip, ip_payload) = match ethertype {
        EtherType::IPV4 => {
            let p = ipv4::Packet::new_checked(&frame[l3..])?;
            let r = Ipv4Repr::parse(&p)?;
            let start = l3 + usize::from(p.header_len());
            (IpRepr::V4(r), start..start + r.payload_len)
        }
        EtherType::IPV6 => {
            let r = Ipv6Repr::parse(&ipv6::Packet::new_checked(&frame[l3..])?)?;
            let start = l3 + ipv6::HEADER_LEN;
            (IpRepr::V6(r), start..start + r.payload_len)
        }
        EtherType::EXPERIMENTAL => {
            parsed.test = testhdr::parse_fast(&frame[l3..]);
            return Ok(parsed);
        }
        _ => return Ok(parsed),
    };
    parsed.ip = Some(ip);
    parsed.l4_offset = Some(ip_payload.start);
    parsed.payload = ip_payload.clone();

    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    let seg = &frame[ip_payload.clone()];
    let l4_start = ip_payload.start;
    let is_v4 = matches!(ip, IpRepr::V4(_));
    let (l4, payload) = match ip.protocol() {
        IpProtocol::UDP => {
            let p = udp::Packet::new_checked(seg)?;
            let r = UdpRepr::parse(&p, &src, &dst)?;
            let end = l4_start + usize::from(p.len());
            (L4Repr::Udp(r), l4_start + udp::HEADER_LEN..end)
        }
        IpProtocol::TCP => {
            let p = tcp::Packet::new_checked(seg)?;
            let r = TcpRepr::parse(&p, &src, &dst)?;
            let start = l4_start + usize::from(p.header_len());
            (L4Repr::Tcp(r), start..ip_payload.end)
        }
        IpProtocol::ICMP | IpProtocol::ICMPV6 if (ip.protocol() == IpProtocol::ICMP) == is_v4 => {
            let p = icmp::Packet::new_checked(seg)?;
            match IcmpEchoRepr::parse(&p, &src, &dst) {
                Ok(r) => (
                    L4Repr::IcmpEcho(r),
                    l4_start + icmp::HEADER_LEN..ip_payload.end,
                ),
                // Not an echo (an error message, say): ordinary traffic, stop here.
                Err(Error::Unsupported) => return Ok(parsed),
                Err(e) => return Err(e),
            }
        }
        _ => return Ok(parsed),
    };
    parsed.l4 = Some(l4);
    parsed.test = testhdr::parse_fast(&frame[payload.clone()]);
    parsed.payload = payload;
    Ok(parsed)
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::icmp::EchoKind;
    use crate::tcp::TcpFlags;
    use crate::test_util::{any_ipv4, any_ipv6};
    use crate::testhdr::TestFlags;
    use crate::{EthernetAddress, Ipv4Address};
    use proptest::prelude::*;

    // A 64-byte frame (60 + FCS): 02:00:00:00:00:01 > 02:00:00:00:00:02, IPv4 10.0.0.1 >
    // 10.0.0.2 (ttl 64, id 0, DF), UDP 40000 > 5201, test header (test 7, stream 1, seq 42,
    // tx 1.7e18 ns), no padding. Checksums computed independently (Python, RFC 1071).
    static FRAME_BYTES: [u8; 60] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00, //
        0x45, 0x00, 0x00, 0x2e, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x26, 0xbd, 0x0a, 0x00, //
        0x00, 0x01, 0x0a, 0x00, 0x00, 0x02, 0x9c, 0x40, 0x14, 0x51, 0x00, 0x1a, 0xf8, 0x24, //
        0x57, 0x10, 0x00, 0x07, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2a, 0x17, 0x97, 0x9c, 0xfe, //
        0x36, 0x2a, 0x00, 0x00,
    ];

    fn spec() -> FrameSpec {
        FrameSpec {
            eth: EthernetRepr {
                src_addr: EthernetAddress([2, 0, 0, 0, 0, 1]),
                dst_addr: EthernetAddress([2, 0, 0, 0, 0, 2]),
                ethertype: EtherType(0), // derived by build
            },
            vlan: None,
            ip: IpRepr::V4(Ipv4Repr {
                src_addr: Ipv4Address::new(10, 0, 0, 1),
                dst_addr: Ipv4Address::new(10, 0, 0, 2),
                protocol: IpProtocol(0), // derived
                payload_len: 0,          // derived
                ttl: 64,
                dscp: 0,
                ecn: 0,
                dont_frag: true,
                ident: 0,
            }),
            l4: L4Spec::Udp {
                src_port: 40000,
                dst_port: 5201,
            },
        }
    }

    fn hdr() -> TestHeaderRepr {
        TestHeaderRepr {
            flags: TestFlags::empty(),
            test_id: 7,
            stream_id: 1,
            seq: 42,
            tx_ns: 1_700_000_000_000_000_000,
        }
    }

    /// `spec` as `parse_frame` should return it from a frame of `len` bytes (no FCS).
    fn expected(spec: &FrameSpec, len: usize) -> (EthernetRepr, Option<VlanRepr>, IpRepr) {
        let ip_ethertype = spec.ip.ethertype();
        let eth = EthernetRepr {
            ethertype: if spec.vlan.is_some() {
                EtherType::VLAN
            } else {
                ip_ethertype
            },
            ..spec.eth
        };
        let vlan = spec.vlan.map(|v| VlanRepr {
            inner_ethertype: ip_ethertype,
            ..v
        });
        let ip_payload_len = len - spec.l2_len() - spec.ip.header_len();
        let ip = match spec.ip {
            IpRepr::V4(r) => IpRepr::V4(Ipv4Repr {
                protocol: spec.l4.protocol(true),
                payload_len: ip_payload_len,
                ..r
            }),
            IpRepr::V6(r) => IpRepr::V6(Ipv6Repr {
                next_header: spec.l4.protocol(false),
                payload_len: ip_payload_len,
                ..r
            }),
        };
        (eth, vlan, ip)
    }

    #[test]
    fn test_build() {
        let mut buf = [0xa5u8; 100];
        assert_eq!(spec().build(64, &hdr(), &mut buf), Ok(60));
        assert_eq!(&buf[..60], &FRAME_BYTES[..]);
        assert_eq!(buf[60], 0xa5); // nothing written past the frame
    }

    #[test]
    fn test_parse_frame() {
        let p = parse_frame(&FRAME_BYTES).unwrap();
        let (eth, vlan, ip) = expected(&spec(), 60);
        assert_eq!((p.eth, p.vlan, p.ip), (eth, vlan, Some(ip)));
        let udp = UdpRepr {
            src_port: 40000,
            dst_port: 5201,
        };
        assert_eq!(p.l4, Some(L4Repr::Udp(udp)));
        assert_eq!(p.test, Some(hdr()));
        assert_eq!(
            (p.l3_offset, p.l4_offset, p.payload),
            (14, Some(34), 42..60)
        );
        assert_eq!(
            format!("{} | {} | {}", p.eth, ip, udp),
            "02:00:00:00:00:01 > 02:00:00:00:00:02, ethertype IPv4 (0x0800) | \
             IP 10.0.0.1 > 10.0.0.2: UDP, tos 0x00, ttl 64, id 0, length 46, DF | UDP 40000 > 5201"
        );
    }

    #[test]
    fn test_min_frame_len() {
        let mut s = spec();
        assert_eq!(s.min_frame_len(), 64);
        s.vlan = Some(VlanRepr {
            pcp: 0,
            dei: false,
            vid: 1,
            inner_ethertype: EtherType(0),
        });
        assert_eq!(s.min_frame_len(), 68);
        s.vlan = None;
        s.l4 = L4Spec::Tcp(TcpRepr {
            src_port: 1,
            dst_port: 2,
            seq: 0,
            ack: 0,
            flags: TcpFlags::ACK,
            window: 0,
        });
        assert_eq!(s.min_frame_len(), 76);
        s.ip = IpRepr::V6(Ipv6Repr {
            src_addr: crate::Ipv6Address::UNSPECIFIED,
            dst_addr: crate::Ipv6Address::UNSPECIFIED,
            next_header: IpProtocol(0),
            payload_len: 0,
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0,
        });
        s.l4 = L4Spec::Udp {
            src_port: 1,
            dst_port: 2,
        };
        assert_eq!(s.min_frame_len(), 84);
    }

    #[test]
    fn test_build_errors() {
        let mut buf = [0u8; 128];
        assert_eq!(spec().build(63, &hdr(), &mut buf), Err(Error::Truncated));
        assert_eq!(spec().build(0, &hdr(), &mut buf), Err(Error::Truncated));
        assert_eq!(
            spec().build(64, &hdr(), &mut buf[..59]),
            Err(Error::Truncated)
        );
        assert_eq!(spec().build(133, &hdr(), &mut buf), Err(Error::Truncated));
        let big_seq = TestHeaderRepr {
            seq: SEQ_MAX + 1,
            ..hdr()
        };
        assert_eq!(spec().build(64, &big_seq, &mut buf), Err(Error::OutOfRange));
        let mut s = spec();
        s.vlan = Some(VlanRepr {
            pcp: 0,
            dei: false,
            vid: 4096,
            inner_ethertype: EtherType(0),
        });
        assert_eq!(s.build(68, &hdr(), &mut buf), Err(Error::OutOfRange));
        let mut huge = vec![0u8; 70_000];
        assert_eq!(
            spec().build(65_556, &hdr(), &mut huge),
            Err(Error::OutOfRange)
        );
        assert_eq!(spec().build(65_553, &hdr(), &mut huge), Ok(65_549));
        assert_eq!(parse_frame(&huge[..65_549]).unwrap().test, Some(hdr()));
    }

    #[test]
    fn test_jumbo_and_padding() {
        let mut buf = vec![0xffu8; 9018];
        assert_eq!(spec().build(9018, &hdr(), &mut buf), Ok(9014));
        let p = parse_frame(&buf[..9014]).unwrap();
        assert_eq!(p.payload, 42..9014);
        assert!(buf[60..9014].iter().all(|&b| b == 0));
        // Ethernet padding after the IP packet is not payload.
        let mut padded = FRAME_BYTES.to_vec();
        padded.extend_from_slice(&[0xee; 6]);
        assert_eq!(parse_frame(&padded).unwrap().payload, 42..60);
    }

    #[test]
    fn test_parse_frame_l2() {
        let eth = EthernetRepr {
            ethertype: EtherType::EXPERIMENTAL,
            ..spec().eth
        };
        let mut buf = [0u8; 60];
        assert_eq!(build_l2(&eth, None, 64, &hdr(), &mut buf), Ok(60));
        let p = parse_frame(&buf).unwrap();
        assert_eq!((p.eth, p.vlan, p.ip, p.l4), (eth, None, None, None));
        assert_eq!((p.test, p.l3_offset, p.payload), (Some(hdr()), 14, 14..60));
        let tag = VlanRepr {
            pcp: 7,
            dei: false,
            vid: 42,
            inner_ethertype: EtherType::EXPERIMENTAL,
        };
        assert_eq!(build_l2(&eth, Some(&tag), 64, &hdr(), &mut buf), Ok(60));
        let p = parse_frame(&buf).unwrap();
        assert_eq!(
            (p.eth.ethertype, p.vlan, p.test),
            (EtherType::VLAN, Some(tag), Some(hdr()))
        );
        assert_eq!(
            build_l2(&eth, Some(&tag), 39, &hdr(), &mut buf),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn test_parse_frame_stops() {
        // Unknown EtherType: only Ethernet.
        let mut bytes = FRAME_BYTES;
        bytes[12..14].copy_from_slice(&EtherType::ARP.0.to_be_bytes());
        let p = parse_frame(&bytes).unwrap();
        assert_eq!((p.ip, p.l4, p.test, p.payload), (None, None, None, 14..60));
        // Unknown IP protocol: stops after IP.
        let mut bytes = FRAME_BYTES;
        let mut ip = ipv4::Packet::new_unchecked(&mut bytes[14..]);
        ip.set_protocol(IpProtocol(253));
        ip.fill_checksum();
        let p = parse_frame(&bytes).unwrap();
        assert!(p.ip.is_some());
        assert_eq!((p.l4, p.test, p.payload), (None, None, 34..60));
        // A UDP datagram that is not a test packet.
        let mut bytes = FRAME_BYTES;
        bytes[42] = b'X';
        let mut udp = udp::Packet::new_unchecked(&mut bytes[34..]);
        udp.fill_checksum(&spec().ip.src_addr(), &spec().ip.dst_addr());
        let p = parse_frame(&bytes).unwrap();
        assert!(p.l4.is_some() && p.test.is_none());
        // ICMP that is not an echo.
        let mut s = spec();
        s.l4 = L4Spec::IcmpEcho(IcmpEchoRepr {
            kind: EchoKind::Request,
            ident: 1,
            seq: 1,
        });
        let mut bytes = [0u8; 60];
        s.build(64, &hdr(), &mut bytes).unwrap();
        let (src, dst) = (s.ip.src_addr(), s.ip.dst_addr());
        let mut icmp = icmp::Packet::new_unchecked(&mut bytes[34..]);
        icmp.set_msg_type(crate::icmp::Icmpv4Type::TIME_EXCEEDED.0);
        icmp.fill_checksum(&src, &dst);
        let p = parse_frame(&bytes).unwrap();
        assert_eq!((p.l4, p.test, p.l4_offset), (None, None, Some(34)));
    }

    #[test]
    fn test_parse_frame_errors() {
        assert_eq!(parse_frame(&FRAME_BYTES[..13]), Err(Error::Truncated));
        assert_eq!(parse_frame(&FRAME_BYTES[..50]), Err(Error::Truncated));
        let mut bytes = FRAME_BYTES;
        bytes[59] ^= 0xff; // payload byte: UDP checksum fails
        assert_eq!(parse_frame(&bytes), Err(Error::Checksum));
        let mut bytes = FRAME_BYTES;
        bytes[22] = 1; // TTL: IPv4 header checksum fails
        assert_eq!(parse_frame(&bytes), Err(Error::Checksum));
    }

    #[test]
    fn test_layout_write_seq_ts() {
        let mut buf = [0u8; 60];
        spec().build(64, &hdr(), &mut buf).unwrap();
        let layout = spec().layout(64).unwrap();
        assert_eq!(
            (
                layout.len,
                layout.l3_offset,
                layout.l4_offset,
                layout.test_offset
            ),
            (60, 14, 34, 42)
        );
        layout.write_seq_ts(&mut buf, 43, 1_700_000_000_000_000_001);
        let mut fresh = [0u8; 60];
        let next = TestHeaderRepr {
            seq: 43,
            tx_ns: 1_700_000_000_000_000_001,
            ..hdr()
        };
        spec().build(64, &next, &mut fresh).unwrap();
        assert_eq!(buf, fresh);
    }

    // ---- property tests --------------------------------------------------------------

    fn any_eth() -> impl Strategy<Value = EthernetRepr> {
        (any::<[u8; 6]>(), any::<[u8; 6]>()).prop_map(|(s, d)| EthernetRepr {
            src_addr: EthernetAddress(s),
            dst_addr: EthernetAddress(d),
            ethertype: EtherType(0),
        })
    }

    fn any_vlan() -> impl Strategy<Value = Option<VlanRepr>> {
        proptest::option::of(
            (0u8..8, any::<bool>(), 0u16..4096).prop_map(|(pcp, dei, vid)| VlanRepr {
                pcp,
                dei,
                vid,
                inner_ethertype: EtherType(0),
            }),
        )
    }

    fn any_ip() -> impl Strategy<Value = IpRepr> {
        let v4 = (
            any_ipv4(),
            any_ipv4(),
            any::<u8>(),
            0u8..64,
            0u8..4,
            any::<bool>(),
            any::<u16>(),
        )
            .prop_map(|(src_addr, dst_addr, ttl, dscp, ecn, dont_frag, ident)| {
                IpRepr::V4(Ipv4Repr {
                    src_addr,
                    dst_addr,
                    protocol: IpProtocol(0),
                    payload_len: 0,
                    ttl,
                    dscp,
                    ecn,
                    dont_frag,
                    ident,
                })
            });
        let v6 = (
            any_ipv6(),
            any_ipv6(),
            any::<u8>(),
            any::<u8>(),
            0..=ipv6::FLOW_LABEL_MAX,
        )
            .prop_map(
                |(src_addr, dst_addr, hop_limit, traffic_class, flow_label)| {
                    IpRepr::V6(Ipv6Repr {
                        src_addr,
                        dst_addr,
                        next_header: IpProtocol(0),
                        payload_len: 0,
                        hop_limit,
                        traffic_class,
                        flow_label,
                    })
                },
            );
        prop_oneof![v4, v6]
    }

    fn any_l4() -> impl Strategy<Value = L4Spec> {
        prop_oneof![
            (any::<u16>(), any::<u16>())
                .prop_map(|(src_port, dst_port)| L4Spec::Udp { src_port, dst_port }),
            (
                any::<u16>(),
                any::<u16>(),
                any::<u32>(),
                any::<u32>(),
                0u16..0x200,
                any::<u16>()
            )
                .prop_map(|(src_port, dst_port, seq, ack, flags, window)| {
                    L4Spec::Tcp(TcpRepr {
                        src_port,
                        dst_port,
                        seq,
                        ack,
                        flags: TcpFlags(flags),
                        window,
                    })
                }),
            (any::<bool>(), any::<u16>(), any::<u16>()).prop_map(|(reply, ident, seq)| {
                L4Spec::IcmpEcho(IcmpEchoRepr {
                    kind: if reply {
                        EchoKind::Reply
                    } else {
                        EchoKind::Request
                    },
                    ident,
                    seq,
                })
            }),
        ]
    }

    fn any_spec() -> impl Strategy<Value = FrameSpec> {
        (any_eth(), any_vlan(), any_ip(), any_l4()).prop_map(|(eth, vlan, ip, l4)| FrameSpec {
            eth,
            vlan,
            ip,
            l4,
        })
    }

    fn any_hdr() -> impl Strategy<Value = TestHeaderRepr> {
        (0u8..8, any::<u16>(), any::<u8>(), 0..=SEQ_MAX, any::<u64>()).prop_map(
            |(flags, test_id, stream_id, seq, tx_ns)| TestHeaderRepr {
                flags: TestFlags(flags),
                test_id,
                stream_id,
                seq,
                tx_ns,
            },
        )
    }

    proptest! {
        /// A frame read back into a spec builds the same frame.
        #[test]
        fn a_parsed_frame_gives_back_its_spec((spec, hdr, size) in any_frame()) {
            let bytes = build_vec(&spec, &hdr, size);
            let back = parse_frame(&bytes).unwrap().spec().unwrap();
            prop_assert_eq!(build_vec(&back, &hdr, size), bytes);
        }
    }

    proptest! {
        /// A frame turned around is valid (its checksums still hold), goes back where it
        /// came from, and turned around twice is itself again.
        #[test]
        fn a_frame_turned_around_goes_back_with_its_checksums((spec, hdr, size) in any_frame()) {
            let bytes = build_vec(&spec, &hdr, size);
            let mut f = bytes.clone();
            prop_assert_eq!(turn_around(&mut f), Some(hdr));
            let p = parse_frame(&f).unwrap();
            prop_assert_eq!(p.eth.src_addr, spec.eth.dst_addr);
            prop_assert_eq!(p.eth.dst_addr, spec.eth.src_addr);
            let ip = p.ip.unwrap();
            prop_assert_eq!(ip.src_addr(), spec.ip.dst_addr());
            prop_assert_eq!(ip.dst_addr(), spec.ip.src_addr());
            match (p.l4.unwrap(), spec.l4) {
                (L4Repr::Udp(u), L4Spec::Udp { src_port, dst_port }) => {
                    prop_assert_eq!((u.src_port, u.dst_port), (dst_port, src_port));
                }
                (L4Repr::Tcp(t), L4Spec::Tcp(s)) => {
                    prop_assert_eq!((t.src_port, t.dst_port), (s.dst_port, s.src_port));
                }
                (L4Repr::IcmpEcho(_), L4Spec::IcmpEcho(_)) => {}
                (got, want) => prop_assert!(false, "{got:?} from {want:?}"),
            }
            prop_assert_eq!(turn_around(&mut f), Some(hdr));
            prop_assert_eq!(f, bytes);
        }
    }

    #[test]
    fn only_test_frames_are_turned_around() {
        let mut f = FRAME_BYTES;
        f[42] ^= 0xff; // the test header's magic
        let before = f;
        assert_eq!(turn_around(&mut f), None);
        assert_eq!(f, before);
        let mut short = [0u8; 10];
        assert_eq!(turn_around(&mut short), None);
    }

    /// A spec, a test header and a frame size (FCS included) that fits the spec.
    fn any_frame() -> impl Strategy<Value = (FrameSpec, TestHeaderRepr, usize)> {
        (any_spec(), any_hdr(), 0usize..300)
            .prop_map(|(spec, hdr, extra)| (spec, hdr, spec.min_frame_len() + extra))
    }

    fn build_vec(spec: &FrameSpec, hdr: &TestHeaderRepr, size: usize) -> Vec<u8> {
        let mut buf = vec![0u8; size];
        let len = spec.build(size, hdr, &mut buf).unwrap();
        buf.truncate(len);
        buf
    }

    /// The same frame built by etherparse's `PacketBuilder` with `payload` after the L4
    /// header: lengths and all checksums come from etherparse.
    fn etherparse_build(spec: &FrameSpec, payload: &[u8]) -> Vec<u8> {
        use etherparse as ep;
        let builder = ep::PacketBuilder::ethernet2(spec.eth.src_addr.0, spec.eth.dst_addr.0);
        let ip_headers = match spec.ip {
            IpRepr::V4(r) => {
                let mut h =
                    ep::Ipv4Header::new(0, r.ttl, ep::IpNumber(0), r.src_addr.0, r.dst_addr.0)
                        .unwrap();
                h.dscp = ep::IpDscp::try_new(r.dscp).unwrap();
                h.ecn = ep::IpEcn::try_new(r.ecn).unwrap();
                h.identification = r.ident;
                h.dont_fragment = r.dont_frag;
                ep::IpHeaders::Ipv4(h, Default::default())
            }
            IpRepr::V6(r) => ep::IpHeaders::Ipv6(
                ep::Ipv6Header {
                    traffic_class: r.traffic_class,
                    flow_label: ep::Ipv6FlowLabel::try_new(r.flow_label).unwrap(),
                    payload_length: 0,
                    next_header: ep::IpNumber(0),
                    hop_limit: r.hop_limit,
                    source: r.src_addr.0,
                    destination: r.dst_addr.0,
                },
                Default::default(),
            ),
        };
        let ip = match spec.vlan {
            Some(v) => builder
                .vlan(ep::VlanHeader::Single(ep::SingleVlanHeader {
                    pcp: ep::VlanPcp::try_new(v.pcp).unwrap(),
                    drop_eligible_indicator: v.dei,
                    vlan_id: ep::VlanId::try_new(v.vid).unwrap(),
                    ether_type: ep::EtherType(0),
                }))
                .ip(ip_headers),
            None => builder.ip(ip_headers),
        };
        let mut out = Vec::new();
        let v4 = matches!(spec.ip, IpRepr::V4(_));
        match spec.l4 {
            L4Spec::Udp { src_port, dst_port } => {
                ip.udp(src_port, dst_port).write(&mut out, payload)
            }
            L4Spec::Tcp(t) => {
                let mut h = ep::TcpHeader::new(t.src_port, t.dst_port, t.seq, t.window);
                h.acknowledgment_number = t.ack;
                let f = |flag| t.flags.contains(flag);
                (h.fin, h.syn, h.rst, h.psh) = (
                    f(TcpFlags::FIN),
                    f(TcpFlags::SYN),
                    f(TcpFlags::RST),
                    f(TcpFlags::PSH),
                );
                (h.ack, h.urg, h.ece, h.cwr) = (
                    f(TcpFlags::ACK),
                    f(TcpFlags::URG),
                    f(TcpFlags::ECE),
                    f(TcpFlags::CWR),
                );
                h.ns = f(TcpFlags::AE);
                ip.tcp_header(h).write(&mut out, payload)
            }
            L4Spec::IcmpEcho(e) => match (v4, e.kind) {
                (true, EchoKind::Request) => ip
                    .icmpv4_echo_request(e.ident, e.seq)
                    .write(&mut out, payload),
                (true, EchoKind::Reply) => ip
                    .icmpv4_echo_reply(e.ident, e.seq)
                    .write(&mut out, payload),
                (false, EchoKind::Request) => ip
                    .icmpv6_echo_request(e.ident, e.seq)
                    .write(&mut out, payload),
                (false, EchoKind::Reply) => ip
                    .icmpv6_echo_reply(e.ident, e.seq)
                    .write(&mut out, payload),
            },
        }
        .unwrap();
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn build_then_parse((spec, hdr, size) in any_frame()) {
            let frame = build_vec(&spec, &hdr, size);
            prop_assert_eq!(frame.len(), size - FCS_LEN);
            let p = parse_frame(&frame).unwrap();
            let (eth, vlan, ip) = expected(&spec, frame.len());
            prop_assert_eq!(p.eth, eth);
            prop_assert_eq!(p.vlan, vlan);
            prop_assert_eq!(p.ip, Some(ip));
            let l4 = match spec.l4 {
                L4Spec::Udp { src_port, dst_port } => L4Repr::Udp(UdpRepr { src_port, dst_port }),
                L4Spec::Tcp(r) => L4Repr::Tcp(r),
                L4Spec::IcmpEcho(r) => L4Repr::IcmpEcho(r),
            };
            prop_assert_eq!(p.l4, Some(l4));
            prop_assert_eq!(p.test, Some(hdr));
            prop_assert_eq!(p.payload, spec.headers_len()..frame.len());
            prop_assert!(frame[spec.headers_len() + testhdr::HEADER_LEN..].iter().all(|&b| b == 0));
        }

        #[test]
        fn etherparse_builds_the_same_bytes((spec, hdr, size) in any_frame()) {
            let frame = build_vec(&spec, &hdr, size);
            let theirs = etherparse_build(&spec, &frame[spec.headers_len()..]);
            prop_assert_eq!(theirs, frame);
        }

        #[test]
        fn etherparse_parses_our_frames((spec, hdr, size) in any_frame()) {
            use etherparse as ep;
            let frame = build_vec(&spec, &hdr, size);
            let sliced = ep::SlicedPacket::from_ethernet(&frame).unwrap();
            let Some(ep::LinkSlice::Ethernet2(eth)) = &sliced.link else { panic!("no Ethernet") };
            prop_assert_eq!(eth.source(), spec.eth.src_addr.0);
            prop_assert_eq!(eth.destination(), spec.eth.dst_addr.0);
            match (spec.vlan, sliced.link_exts.first()) {
                (None, None) => {}
                (Some(v), Some(ep::LinkExtSlice::Vlan(s))) => {
                    prop_assert_eq!(s.priority_code_point().value(), v.pcp);
                    prop_assert_eq!(s.drop_eligible_indicator(), v.dei);
                    prop_assert_eq!(s.vlan_identifier().value(), v.vid);
                }
                other => prop_assert!(false, "VLAN mismatch: {:?}", other),
            }
            let ip_payload_len = frame.len() - spec.l2_len() - spec.ip.header_len();
            match (spec.ip, &sliced.net) {
                (IpRepr::V4(r), Some(ep::NetSlice::Ipv4(s))) => {
                    let h = s.header().to_header();
                    prop_assert_eq!(h.source, r.src_addr.0);
                    prop_assert_eq!(h.destination, r.dst_addr.0);
                    prop_assert_eq!(h.time_to_live, r.ttl);
                    prop_assert_eq!(h.dscp.value(), r.dscp);
                    prop_assert_eq!(h.ecn.value(), r.ecn);
                    prop_assert_eq!(h.identification, r.ident);
                    prop_assert_eq!(h.dont_fragment, r.dont_frag);
                    prop_assert_eq!(usize::from(h.total_len), 20 + ip_payload_len);
                    prop_assert_eq!(h.header_checksum, h.calc_header_checksum());
                    prop_assert_eq!(h.protocol.0, spec.l4.protocol(true).0);
                }
                (IpRepr::V6(r), Some(ep::NetSlice::Ipv6(s))) => {
                    let h = s.header().to_header();
                    prop_assert_eq!(h.source, r.src_addr.0);
                    prop_assert_eq!(h.destination, r.dst_addr.0);
                    prop_assert_eq!(h.hop_limit, r.hop_limit);
                    prop_assert_eq!(h.traffic_class, r.traffic_class);
                    prop_assert_eq!(h.flow_label.value(), r.flow_label);
                    prop_assert_eq!(usize::from(h.payload_length), ip_payload_len);
                    prop_assert_eq!(h.next_header.0, spec.l4.protocol(false).0);
                }
                other => prop_assert!(false, "IP mismatch: {:?}", other),
            }
            let payload = match (spec.l4, &sliced.transport) {
                (L4Spec::Udp { src_port, dst_port }, Some(ep::TransportSlice::Udp(s))) => {
                    prop_assert_eq!((s.source_port(), s.destination_port()), (src_port, dst_port));
                    prop_assert_eq!(usize::from(s.length()), ip_payload_len);
                    s.payload()
                }
                (L4Spec::Tcp(t), Some(ep::TransportSlice::Tcp(s))) => {
                    prop_assert_eq!((s.source_port(), s.destination_port()), (t.src_port, t.dst_port));
                    prop_assert_eq!((s.sequence_number(), s.acknowledgment_number()), (t.seq, t.ack));
                    prop_assert_eq!((s.syn(), s.ack(), s.fin()), (t.flags.contains(TcpFlags::SYN), t.flags.contains(TcpFlags::ACK), t.flags.contains(TcpFlags::FIN)));
                    prop_assert_eq!(s.window_size(), t.window);
                    s.payload()
                }
                (L4Spec::IcmpEcho(_), Some(ep::TransportSlice::Icmpv4(s))) => s.payload(),
                (L4Spec::IcmpEcho(_), Some(ep::TransportSlice::Icmpv6(s))) => s.payload(),
                other => return Err(TestCaseError::fail(format!("L4 mismatch: {other:?}"))),
            };
            prop_assert_eq!(testhdr::parse_fast(payload), Some(hdr));
        }

        #[test]
        fn layout_patch_equals_rebuild((spec, hdr, size) in any_frame(), seq in 0..=SEQ_MAX, tx_ns in any::<u64>()) {
            let mut frame = build_vec(&spec, &hdr, size);
            spec.layout(size).unwrap().write_seq_ts(&mut frame, seq, tx_ns);
            let fresh = build_vec(&spec, &TestHeaderRepr { seq, tx_ns, ..hdr }, size);
            prop_assert_eq!(frame, fresh);
        }

        #[test]
        fn parse_frame_never_panics_on_noise(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse_frame(&bytes);
        }

        #[test]
        fn parse_frame_never_panics_on_damaged_frames(
            (spec, hdr, size) in any_frame(),
            edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
            cut in any::<prop::sample::Index>(),
        ) {
            let mut frame = build_vec(&spec, &hdr, size);
            for (at, value) in edits {
                let i = at.index(frame.len());
                frame[i] = value;
            }
            let keep = cut.index(frame.len() + 1);
            if let Ok(p) = parse_frame(&frame[..keep]) {
                prop_assert!(p.payload.start <= p.payload.end && p.payload.end <= keep);
            }
        }
    }
}
