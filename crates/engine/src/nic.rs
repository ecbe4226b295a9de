//! What an interface's driver says about it, and its offload switches, through the kernel's
//! ethtool interface (no `ethtool` program): the driver's name, the link speed, which
//! checksum, segmentation and receive offloads are on, and turning some off.
//!
//! Everything acts in the calling thread's network namespace; run it inside
//! [`crate::frameio::in_netns`] for a lab's node.

use std::io;

use crate::sys::ethtool;

/// What `ethtool -i` and `ethtool -k` would say, as far as a report needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Driver name (`veth`, `r8169`), when the driver gives one.
    pub driver: Option<String>,
    /// Link speed in Mbit/s, when the driver knows it.
    pub speed_mbps: Option<u64>,
    /// The offloads that are on, by their `ethtool -k` names.
    pub offloads_on: Vec<String>,
}

/// The facts of interface `ifname`; a fact the driver does not answer is left out.
///
/// # Errors
/// No such interface (`ENODEV`), or no socket to ask with.
pub fn facts(ifname: &str) -> io::Result<Facts> {
    let s = ethtool::control_socket()?;
    let driver = match ethtool::driver(&s, ifname) {
        Ok(d) => Some(d).filter(|d| !d.is_empty()),
        Err(e) if e.raw_os_error() == Some(libc::ENODEV) => return Err(e),
        Err(_) => None,
    };
    let speed_mbps = ethtool::speed_mbps(&s, ifname)
        .ok()
        .flatten()
        .map(u64::from);
    let mut offloads_on: Vec<String> = ethtool::SWITCHES
        .iter()
        .filter(|(_, get, _)| ethtool::value(&s, ifname, *get, 0).is_ok_and(|v| v != 0))
        .map(|(name, _, _)| (*name).to_owned())
        .collect();
    let flags = ethtool::value(&s, ifname, ethtool::GFLAGS, 0).unwrap_or(0);
    if flags & ethtool::FLAG_LRO != 0 {
        offloads_on.push("large-receive-offload".into());
    }
    Ok(Facts {
        driver,
        speed_mbps,
        offloads_on,
    })
}

/// The offloads a user-space stage on the path needs off: transmit checksums, TCP and
/// generic segmentation (`ethtool -K IFACE tx off tso off gso off`), so frames leave whole
/// and with their checksums filled in.
pub const STAGE_OFFLOADS: [&str; 3] = [
    "tx-checksumming",
    "tcp-segmentation-offload",
    "generic-segmentation-offload",
];

/// Turns the offloads `names` (their `ethtool -k` names) off on `ifname`.
///
/// # Errors
/// An unknown name, no such interface, or the driver refuses (`EOPNOTSUPP`, `EPERM`).
pub fn offloads_off(ifname: &str, names: &[&str]) -> io::Result<()> {
    let s = ethtool::control_socket()?;
    for name in names {
        let Some((_, _, set)) = ethtool::SWITCHES.iter().find(|(n, _, _)| n == name) else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("no offload named '{name}'"),
            ));
        };
        ethtool::value(&s, ifname, *set, 0)
            .map_err(|e| io::Error::new(e.kind(), format!("{ifname}: {name} off: {e}")))?;
    }
    Ok(())
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn loopback_has_facts_and_unknown_names_are_errors() {
        let f = facts("lo").unwrap();
        assert!(
            f.offloads_on.iter().any(|o| o == "tx-checksumming"),
            "{f:?}"
        );
        assert!(facts("no-such-if0").is_err());
        let e = offloads_off("lo", &["warp-drive"]).unwrap_err();
        assert!(e.to_string().contains("warp-drive"), "{e}");
    }
}
