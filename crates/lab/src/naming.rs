//! Names of what a lab creates: namespaces are `wb-<lab>-<node>`, so that everything of a
//! lab, and of all labs, can be found again by prefix.

use crate::LabError;

/// Prefix of every namespace a lab creates.
pub const PREFIX: &str = "wb-";

/// Checks a lab or node name: 1..=8 characters of `a-z`, `0-9`, `-` (namespace names stay
/// short and unambiguous when split on the last '-').
pub fn check(name: &str) -> Result<(), LabError> {
    let ok = (1..=8).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(LabError::BadName(name.to_owned()))
    }
}

/// The namespace of `node` in `lab`.
pub fn namespace(lab: &str, node: &str) -> String {
    format!("{PREFIX}{lab}-{node}")
}

/// Splits a lab namespace name into (lab, node); `None` for anything not made by a lab.
/// Node names have no '-', so the node is what follows the last one.
pub fn parse(ns: &str) -> Option<(&str, &str)> {
    let rest = ns.strip_prefix(PREFIX)?;
    let (lab, node) = rest.rsplit_once('-')?;
    (!lab.is_empty() && !node.is_empty()).then_some((lab, node))
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn names_round_trip_and_reject() {
        assert_eq!(namespace("t1", "talker"), "wb-t1-talker");
        assert_eq!(parse("wb-t1-talker"), Some(("t1", "talker")));
        assert_eq!(parse("wb-my-lab-dut"), Some(("my-lab", "dut")));
        assert_eq!(parse("other-ns"), None);
        assert_eq!(parse("wb-"), None);
        assert!(check("lab-1").is_ok());
        for bad in ["", "UPPER", "toolongname", "-x", "x-", "a b", "a/b"] {
            assert!(check(bad).is_err(), "{bad}");
        }
    }
}
