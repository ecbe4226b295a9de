//! The one error type of the crate.

use core::fmt;

/// Why bytes could not be parsed, or a value could not be emitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Error {
    /// The buffer is shorter than the fixed header, or than a length field in the
    /// header says it should be.
    Truncated,
    /// A field holds a value the format forbids: a wrong version nibble or magic byte, a
    /// header length below the minimum, a length field smaller than its own header.
    Malformed,
    /// A checksum does not match the data.
    Checksum,
    /// Well-formed, but not something this crate handles: an unknown test-header version, an
    /// IPv4 fragment, an ICMP message that is not an echo, mixed address families.
    Unsupported,
    /// A value handed to a checked builder does not fit its wire field (a VLAN ID above 4095,
    /// a test sequence number above [`SEQ_MAX`](crate::testhdr::SEQ_MAX), a frame larger than
    /// an IP length field can describe).
    OutOfRange,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::Truncated => "truncated packet",
            Error::Malformed => "malformed packet",
            Error::Checksum => "checksum mismatch",
            Error::Unsupported => "unsupported packet",
            Error::OutOfRange => "value out of range for its wire field",
        })
    }
}

impl std::error::Error for Error {}

/// `Result` with this crate's [`Error`].
pub type Result<T> = core::result::Result<T, Error>;
