//! The hosts of a plan: `[[host]]` entries (name, address, key file), or
//! `hosts_from = "dns:NAME[:PORT]"`, every address a name resolves to when the run starts
//! (a Kubernetes headless Service has one A record per ready agent). Hosts found by DNS
//! are named by their addresses, in address order.
//!
//! This module reads and resolves; it does not talk to the hosts.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

/// Why a plan's hosts do not read or resolve. The message names the value as written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// A host name with a character tables and command lines cannot take, or empty.
    #[error("host name '{0}': letters, digits and . - _ : [ ] only, not starting with -")]
    BadName(String),
    /// An address that is not `HOST[:PORT]` or `[IPV6]:PORT`.
    #[error("'{0}' is not HOST[:PORT] (IPv6: [ADDR]:PORT)")]
    BadAddress(String),
    /// A `hosts_from` of another scheme than `dns:`.
    #[error("hosts_from = '{0}': give dns:NAME[:PORT] (e.g. the DNS name of a Kubernetes headless Service)")]
    NotDns(String),
    /// A `hosts_from = "dns:..."` whose name and port do not read (the text after `dns:`).
    #[error("hosts_from: '{0}' is not HOST[:PORT] (IPv6: [ADDR]:PORT)")]
    BadDnsAddress(String),
    /// The name of `hosts_from` does not resolve when the run starts.
    #[error("hosts_from dns:{name}: {error}")]
    Resolve {
        /// The DNS name.
        name: String,
        /// What the resolver said.
        error: std::io::Error,
    },
    /// The name of `hosts_from` resolves to no address.
    #[error("hosts_from dns:{0}: no address")]
    NoAddress(String),
}

impl HostError {
    /// Whether the plan is at fault (a usage error) rather than the network at the time
    /// of the run (DNS).
    pub fn is_usage(&self) -> bool {
        !matches!(self, Self::Resolve { .. } | Self::NoAddress(_))
    }
}

/// One host of a plan: a wirebench server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanHost {
    /// Its name in the plan (a test's `hosts`, the mesh's rows and columns).
    pub name: String,
    /// Its address or DNS name.
    pub host: String,
    /// Its control port.
    pub port: u16,
    /// Its key file, when it asks for a key.
    pub key_file: Option<PathBuf>,
}

/// Where a plan's hosts come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostSource {
    /// `[[host]]` entries.
    Listed(Vec<PlanHost>),
    /// `hosts_from = "dns:NAME[:PORT]"`: every address of NAME when the run starts.
    Dns {
        /// The name to resolve.
        name: String,
        /// The servers' control port.
        port: u16,
        /// The fleet's key file (`hosts_key_file`).
        key_file: Option<PathBuf>,
    },
}

/// A host's name in plans, command lines and tables: letters, digits and `.-_:[]`, not
/// starting with `-` (an address is a name).
///
/// # Errors
/// [`HostError::BadName`]: an empty name or one with another character.
pub fn check_name(name: &str) -> Result<(), HostError> {
    let ok = |c: char| c.is_ascii_alphanumeric() || ".-_:[]".contains(c);
    if name.is_empty() || name.starts_with('-') || !name.chars().all(ok) {
        return Err(HostError::BadName(name.to_owned()));
    }
    Ok(())
}

/// A server's control address as another host dials it: `HOST:PORT`, `[IPV6]:PORT`.
pub(crate) fn address(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `HOST[:PORT]`, `[IPV6]:PORT` or a bare IPv6 address; the port is 5301 when not given.
///
/// # Errors
/// [`HostError::BadAddress`]: an empty host, a port that is not a number, an unclosed
/// bracket.
pub fn split_address(text: &str) -> Result<(String, u16), HostError> {
    let bad = || HostError::BadAddress(text.to_owned());
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (h, tail) = rest.split_once(']').ok_or_else(bad)?;
        let port = match tail.strip_prefix(':') {
            Some(p) => p.parse().map_err(|_| bad())?,
            None if tail.is_empty() => control::DEFAULT_PORT,
            None => return Err(bad()),
        };
        (h, port)
    } else if text.matches(':').count() > 1 {
        (text, control::DEFAULT_PORT)
    } else {
        match text.split_once(':') {
            Some((h, p)) => (h, p.parse().map_err(|_| bad())?),
            None => (text, control::DEFAULT_PORT),
        }
    };
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host.to_owned(), port))
}

/// The hosts behind resolved addresses: one per distinct address, in address order, each
/// named by its address; IPv4 addresses only when there are any (a dual-stack host has
/// one of each family).
pub fn from_addresses(
    addrs: impl IntoIterator<Item = SocketAddr>,
    key_file: Option<&PathBuf>,
) -> Vec<PlanHost> {
    let mut ips: Vec<(IpAddr, u16)> = addrs.into_iter().map(|a| (a.ip(), a.port())).collect();
    // A dual-stack host has an address of each family: one host, by its IPv4 address.
    if ips.iter().any(|(ip, _)| ip.is_ipv4()) {
        ips.retain(|(ip, _)| ip.is_ipv4());
    }
    ips.sort_unstable();
    ips.dedup_by_key(|(ip, _)| *ip);
    ips.into_iter()
        .map(|(ip, port)| PlanHost {
            name: ip.to_string(),
            host: ip.to_string(),
            port,
            key_file: key_file.cloned(),
        })
        .collect()
}

impl HostSource {
    /// `hosts_from`'s value: `dns:NAME[:PORT]`.
    ///
    /// # Errors
    /// [`HostError::NotDns`]: another scheme; [`HostError::BadDnsAddress`]: a bad name or
    /// port.
    pub fn parse_from(text: &str, key_file: Option<PathBuf>) -> Result<Self, HostError> {
        let Some(rest) = text.strip_prefix("dns:") else {
            return Err(HostError::NotDns(text.to_owned()));
        };
        let (name, port) =
            split_address(rest).map_err(|_| HostError::BadDnsAddress(rest.to_owned()))?;
        Ok(Self::Dns {
            name,
            port,
            key_file,
        })
    }

    /// The hosts as far as they are known before the run: the listed ones, or two
    /// stand-ins for names DNS gives when the run starts.
    pub fn stand_in(&self) -> Vec<PlanHost> {
        match self {
            Self::Listed(h) => h.clone(),
            Self::Dns { port, key_file, .. } => from_addresses(
                ["198.18.0.1", "198.18.0.2"]
                    .map(|a| SocketAddr::new(a.parse().expect("an address"), *port)),
                key_file.as_ref(),
            ),
        }
    }

    /// The hosts now: the listed ones, or every address DNS gives for the name.
    ///
    /// # Errors
    /// [`HostError::Resolve`]: the name does not resolve; [`HostError::NoAddress`]: to no
    /// address.
    pub fn resolve(&self) -> Result<Vec<PlanHost>, HostError> {
        match self {
            Self::Listed(h) => Ok(h.clone()),
            Self::Dns {
                name,
                port,
                key_file,
            } => {
                let addrs = (name.as_str(), *port).to_socket_addrs().map_err(|error| {
                    HostError::Resolve {
                        name: name.clone(),
                        error,
                    }
                })?;
                let hosts = from_addresses(addrs, key_file.as_ref());
                if hosts.is_empty() {
                    return Err(HostError::NoAddress(name.clone()));
                }
                Ok(hosts)
            }
        }
    }

    /// What the results say of them.
    pub fn describe(hosts: &[PlanHost]) -> String {
        let names: Vec<String> = hosts
            .iter()
            .map(|h| format!("{} ({})", h.name, address(&h.host, h.port)))
            .collect();
        format!("hosts {}", names.join(", "))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn host_names_cannot_become_flags_or_break_tables() {
        for ok in [
            "a",
            "lab-b",
            "198.18.40.1",
            "fd00::1",
            "h_1.example",
            "[fd00::1]:7",
        ] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-x", "a=b", "a|b", "a>", "a b", "a/b", "a,b"] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn addresses_split_with_the_default_port() {
        let ok = |t: &str| split_address(t).unwrap();
        assert_eq!(ok("198.18.1.1"), ("198.18.1.1".into(), 5301));
        assert_eq!(ok("agent-0.wb:7000"), ("agent-0.wb".into(), 7000));
        assert_eq!(ok("[fd00::1]:9"), ("fd00::1".into(), 9));
        assert_eq!(ok("[fd00::1]"), ("fd00::1".into(), 5301));
        assert_eq!(ok("fd00::1"), ("fd00::1".into(), 5301));
        for bad in ["", ":5301", "h:port", "[fd00::1", "[fd00::1]x", "h:70000"] {
            assert!(split_address(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn resolved_addresses_become_hosts_in_order_once_each() {
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        let key = PathBuf::from("/k");
        let hosts = from_addresses(
            [
                a("198.18.40.3:5301"),
                a("198.18.40.1:5301"),
                a("198.18.40.3:5301"),
            ],
            Some(&key),
        );
        let names: Vec<&str> = hosts.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["198.18.40.1", "198.18.40.3"]);
        // Dual stack: the IPv4 addresses; IPv6 where there are no others.
        let both = from_addresses([a("[fd00::1]:5301"), a("198.18.40.1:5301")], None);
        assert_eq!(both.len(), 1);
        assert_eq!(both[0].host, "198.18.40.1");
        let v6 = from_addresses([a("[fd00::2]:5301"), a("[fd00::1]:5301")], None);
        assert_eq!(v6[0].name, "fd00::1");
        assert_eq!(hosts[0].key_file.as_deref(), Some(key.as_path()));
        assert_eq!(hosts[1].port, 5301);
    }

    #[test]
    fn hosts_from_takes_dns_only() {
        assert_eq!(
            HostSource::parse_from("dns:agents.wb.svc:7000", None).unwrap(),
            HostSource::Dns {
                name: "agents.wb.svc".into(),
                port: 7000,
                key_file: None
            }
        );
        let e = HostSource::parse_from("srv:agents", None).unwrap_err();
        assert!(e.to_string().contains("dns:NAME"), "{e}");
        assert!(
            matches!(e, HostError::NotDns(ref t) if t == "srv:agents"),
            "{e:?}"
        );
        assert!(matches!(
            HostSource::parse_from("dns:", None),
            Err(HostError::BadDnsAddress(ref t)) if t.is_empty()
        ));
        // Before the run, DNS hosts are two stand-ins with the port and key.
        let s = HostSource::parse_from("dns:x:9", Some("/k".into()))
            .unwrap()
            .stand_in();
        assert_eq!(s.len(), 2);
        assert!(s.iter().all(|h| h.port == 9 && h.key_file.is_some()));
    }

    #[test]
    fn each_problem_is_its_own_variant_with_the_message_and_class_it_had() {
        let e = check_name("a b").unwrap_err();
        assert!(
            matches!(e, HostError::BadName(ref n) if n == "a b"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "host name 'a b': letters, digits and . - _ : [ ] only, not starting with -"
        );
        let e = split_address("h:port").unwrap_err();
        assert!(
            matches!(e, HostError::BadAddress(ref a) if a == "h:port"),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "'h:port' is not HOST[:PORT] (IPv6: [ADDR]:PORT)"
        );
        let e = HostSource::parse_from("dns:h:x", None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "hosts_from: 'h:x' is not HOST[:PORT] (IPv6: [ADDR]:PORT)"
        );
        assert!(e.is_usage());
        // DNS at the time of the run is no fault of the plan.
        let e = HostError::NoAddress("agents.wb".into());
        assert_eq!(e.to_string(), "hosts_from dns:agents.wb: no address");
        assert!(!e.is_usage());
        let e = HostError::Resolve {
            name: "agents.wb".into(),
            error: std::io::Error::other("lookup failed"),
        };
        assert_eq!(e.to_string(), "hosts_from dns:agents.wb: lookup failed");
        assert!(!e.is_usage());
    }

    #[test]
    fn addresses_bracket_ipv6() {
        assert_eq!(address("198.18.1.1", 5301), "198.18.1.1:5301");
        assert_eq!(address("fd00::1", 5301), "[fd00::1]:5301");
        assert_eq!(address("agent-0.wb", 7), "agent-0.wb:7");
    }
}
