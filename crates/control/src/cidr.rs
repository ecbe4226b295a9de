//! Address blocks (`ADDR/LEN`), as the server's flags give them (`--third-party-peers`,
//! `--raw-destinations`): parsed ([`parse_cidr`]) and matched against an address.
//!
//! Pure: it decides nothing about who may send where; [`crate::third_party`] and
//! [`crate::rawport`] do.

use std::net::IpAddr;

/// A block (`--third-party-peers`, `--raw-destinations`) that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CidrError {
    /// Not an address, or a length beyond the family's (the text as given).
    #[error("'{0}' is not ADDR/LEN or an address (e.g. 198.18.0.0/15, fd00::/8)")]
    Invalid(String),
}

/// An address block, `ADDR/LEN` or one address.
///
/// # Errors
/// Not an address, or a length beyond the family's.
pub fn parse_cidr(s: &str) -> Result<(IpAddr, u8), CidrError> {
    let bad = || CidrError::Invalid(s.to_owned());
    let (addr, len) = match s.split_once('/') {
        Some((a, l)) => (a, Some(l.parse::<u8>().map_err(|_| bad())?)),
        None => (s, None),
    };
    let ip: IpAddr = addr.trim().parse().map_err(|_| bad())?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let len = len.unwrap_or(max);
    if len > max {
        return Err(bad());
    }
    Ok((ip, len))
}

/// Whether `ip` is in block `(net, len)`.
pub(crate) fn in_block(ip: IpAddr, (net, len): (IpAddr, u8)) -> bool {
    let (a, b, bits) = match (ip.to_canonical(), net) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (u128::from(u32::from(a)), u128::from(u32::from(b)), 32),
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), 128),
        _ => return false,
    };
    let shift = bits - u32::from(len.min(bits as u8));
    shift >= bits || (a >> shift) == (b >> shift)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn blocks_parse_and_contain() {
        let b = parse_cidr("198.18.0.0/15").unwrap();
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(in_block(ip("198.19.255.1"), b));
        assert!(!in_block(ip("198.20.0.1"), b));
        assert!(!in_block(ip("fd00::1"), b));
        assert!(in_block(ip("fd00::1"), parse_cidr("fd00::/8").unwrap()));
        assert!(in_block(ip("10.1.2.3"), parse_cidr("0.0.0.0/0").unwrap()));
        assert_eq!(parse_cidr("10.0.0.1"), Ok((ip("10.0.0.1"), 32)));
        for bad in ["10.0.0.0/33", "x/8", "fd00::/129", ""] {
            assert_eq!(
                parse_cidr(bad),
                Err(CidrError::Invalid(bad.into())),
                "{bad}"
            );
        }
        assert_eq!(
            parse_cidr("x/8").unwrap_err().to_string(),
            "'x/8' is not ADDR/LEN or an address (e.g. 198.18.0.0/15, fd00::/8)"
        );
    }
}
