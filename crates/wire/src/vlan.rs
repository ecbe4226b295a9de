//! IEEE 802.1Q VLAN tags (IEEE 802.1Q-2022 §9.6).
//!
//! The view covers the 4 bytes that follow an outer EtherType of
//! [`EtherType::VLAN`](crate::EtherType::VLAN): the tag control information (PCP 3 bits,
//! DEI 1 bit, VID 12 bits) and the inner EtherType.

use core::fmt;

use crate::{read_u16, write_u16, Error, EtherType, Result};

mod field {
    use crate::Field;

    pub(crate) const TCI: Field = 0..2;
    pub(crate) const ETHERTYPE: Field = 2..4;
    pub(crate) const PAYLOAD: usize = 4;
}

/// Length of a VLAN tag after the outer EtherType.
pub const HEADER_LEN: usize = field::PAYLOAD;

/// Largest VLAN identifier (0xFFF is reserved but accepted).
pub const VID_MAX: u16 = 0x0fff;

/// A read/write view of an 802.1Q tag and what follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length (for emission into a sized buffer).
    pub const fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// Wraps a buffer and checks that accessors cannot panic.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is shorter than [`HEADER_LEN`].
    pub fn new_checked(buffer: T) -> Result<Self> {
        let packet = Self::new_unchecked(buffer);
        packet.check_len()?;
        Ok(packet)
    }

    /// Checks that the buffer holds the whole tag.
    ///
    /// # Errors
    /// [`Error::Truncated`] if it does not.
    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < HEADER_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    /// Gives the buffer back.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The raw tag control information.
    pub fn tci(&self) -> u16 {
        read_u16(self.buffer.as_ref(), field::TCI)
    }

    /// Priority code point (0..=7).
    pub fn pcp(&self) -> u8 {
        (self.tci() >> 13) as u8
    }

    /// Drop eligible indicator.
    pub fn dei(&self) -> bool {
        self.tci() & 0x1000 != 0
    }

    /// VLAN identifier (0..=4095).
    pub fn vid(&self) -> u16 {
        self.tci() & VID_MAX
    }

    /// The EtherType of the tagged payload.
    pub fn inner_ethertype(&self) -> EtherType {
        EtherType(read_u16(self.buffer.as_ref(), field::ETHERTYPE))
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Packet<&'a T> {
    /// Everything after the tag.
    pub fn payload(&self) -> &'a [u8] {
        &self.buffer.as_ref()[field::PAYLOAD..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Packet<T> {
    /// Sets the raw tag control information.
    pub fn set_tci(&mut self, tci: u16) {
        write_u16(self.buffer.as_mut(), field::TCI, tci);
    }

    /// Sets the priority code point (masked to 3 bits).
    pub fn set_pcp(&mut self, pcp: u8) {
        let tci = self.tci() & 0x1fff | u16::from(pcp & 0x07) << 13;
        self.set_tci(tci);
    }

    /// Sets the drop eligible indicator.
    pub fn set_dei(&mut self, dei: bool) {
        let tci = self.tci() & !0x1000 | if dei { 0x1000 } else { 0 };
        self.set_tci(tci);
    }

    /// Sets the VLAN identifier (masked to 12 bits).
    pub fn set_vid(&mut self, vid: u16) {
        let tci = self.tci() & !VID_MAX | vid & VID_MAX;
        self.set_tci(tci);
    }

    /// Sets the inner EtherType.
    pub fn set_inner_ethertype(&mut self, ethertype: EtherType) {
        write_u16(self.buffer.as_mut(), field::ETHERTYPE, ethertype.0);
    }

    /// Everything after the tag, writable.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD..]
    }
}

/// The meaning of an 802.1Q tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VlanRepr {
    /// Priority code point, 0..=7.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier, 0..=4095.
    pub vid: u16,
    /// EtherType of the tagged payload.
    pub inner_ethertype: EtherType,
}

impl VlanRepr {
    /// Reads a tag.
    ///
    /// # Errors
    /// [`Error::Truncated`] if the buffer is shorter than the tag.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Packet<&T>) -> Result<Self> {
        packet.check_len()?;
        Ok(Self {
            pcp: packet.pcp(),
            dei: packet.dei(),
            vid: packet.vid(),
            inner_ethertype: packet.inner_ethertype(),
        })
    }

    /// True when `pcp` and `vid` fit their bit fields.
    pub const fn is_valid(&self) -> bool {
        self.pcp <= 7 && self.vid <= VID_MAX
    }

    /// Length of the emitted tag.
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Length of a tag plus `payload_len` bytes.
    pub const fn buffer_len(&self, payload_len: usize) -> usize {
        HEADER_LEN + payload_len
    }

    /// Writes the tag. Out-of-range `pcp`/`vid` are masked (and assert in debug builds);
    /// [`frame::FrameSpec::build`](crate::frame::FrameSpec::build) rejects them instead.
    ///
    /// # Panics
    /// If the buffer is shorter than [`HEADER_LEN`].
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Packet<&mut T>) {
        debug_assert!(self.is_valid(), "VLAN pcp/vid out of range: {self:?}");
        let tci = u16::from(self.pcp & 0x07) << 13
            | if self.dei { 0x1000 } else { 0 }
            | self.vid & VID_MAX;
        packet.set_tci(tci);
        packet.set_inner_ethertype(self.inner_ethertype);
    }
}

impl fmt::Display for VlanRepr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "vlan {}, p {}", self.vid, self.pcp)?;
        if self.dei {
            f.write_str(", DEI")?;
        }
        write!(f, ", ethertype {}", self.inner_ethertype)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use proptest::prelude::*;

    // PCP 5, DEI 1, VID 100 (0x064) -> TCI 0xb064; inner IPv6; 2 payload bytes.
    static PACKET_BYTES: [u8; 6] = [0xb0, 0x64, 0x86, 0xdd, 0x60, 0x00];

    fn repr() -> VlanRepr {
        VlanRepr {
            pcp: 5,
            dei: true,
            vid: 100,
            inner_ethertype: EtherType::IPV6,
        }
    }

    #[test]
    fn test_deconstruct() {
        let p = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(p.tci(), 0xb064);
        assert_eq!(p.pcp(), 5);
        assert!(p.dei());
        assert_eq!(p.vid(), 100);
        assert_eq!(p.inner_ethertype(), EtherType::IPV6);
        assert_eq!(p.payload(), &[0x60, 0x00]);
    }

    #[test]
    fn test_construct() {
        let mut bytes = [0xffu8; 6];
        let mut p = Packet::new_unchecked(&mut bytes[..]);
        p.set_pcp(5);
        p.set_dei(true);
        p.set_vid(100);
        p.set_inner_ethertype(EtherType::IPV6);
        p.payload_mut().copy_from_slice(&[0x60, 0x00]);
        assert_eq!(bytes, PACKET_BYTES);
    }

    #[test]
    fn test_impossible_len() {
        assert_eq!(
            Packet::new_checked(&PACKET_BYTES[..3]).err(),
            Some(Error::Truncated)
        );
    }

    #[test]
    fn test_parse() {
        let p = Packet::new_checked(&PACKET_BYTES[..]).unwrap();
        assert_eq!(VlanRepr::parse(&p), Ok(repr()));
    }

    #[test]
    fn test_emit() {
        let mut bytes = [0u8; 6];
        repr().emit(&mut Packet::new_unchecked(&mut bytes[..]));
        bytes[4..].copy_from_slice(&[0x60, 0x00]);
        assert_eq!(bytes, PACKET_BYTES);
    }

    #[test]
    fn test_display() {
        assert_eq!(repr().to_string(), "vlan 100, p 5, DEI, ethertype IPv6");
    }

    proptest! {
        #[test]
        fn roundtrip(pcp in 0u8..8, dei in any::<bool>(), vid in 0u16..4096, et in any::<u16>()) {
            let r = VlanRepr { pcp, dei, vid, inner_ethertype: EtherType(et) };
            let mut bytes = [0u8; HEADER_LEN];
            r.emit(&mut Packet::new_unchecked(&mut bytes[..]));
            prop_assert_eq!(VlanRepr::parse(&Packet::new_checked(&bytes[..]).unwrap()), Ok(r));
        }

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..8)) {
            let p = Packet::new_unchecked(&bytes[..]);
            if VlanRepr::parse(&p).is_ok() {
                let _ = p.payload();
            }
        }
    }
}
