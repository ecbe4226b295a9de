//! A one-stream relay from command-line flags (`wirebench frer relay --replicate
//! eth0=eth1,eth2` or `--eliminate eth1,eth2=eth0 --history 1024 --match ...`): the same
//! [`RelayConfig`] a TOML file gives, checked the same way.

use std::collections::BTreeMap;

use super::config::{ConfigError, Eliminate, Identification, RelayConfig, Replicate, StreamConfig};

/// Relay flags that do not parse, or a relay that does not check.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FlagsError {
    /// `--match` does not parse.
    #[error("--match: {0}")]
    Match(MatchFlagError),
    /// A flag that is not `LEFT=RIGHT`.
    #[error("{flag} '{text}': write {form}")]
    NotAPair {
        /// The flag.
        flag: &'static str,
        /// Its value as written.
        text: String,
        /// How to write it (`IN=OUT,OUT`).
        form: &'static str,
    },
    /// The relay the flags describe does not check.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// What is wrong with `--match`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MatchFlagError {
    /// An item without `=`.
    #[error("'{0}' is not key=value")]
    NotKeyValue(String),
    /// A VLAN id or port that is not a number.
    #[error("{key} '{value}' is not a number 0..=65535")]
    NotANumber {
        /// `vlan`, `src_port` or `dst_port`.
        key: &'static str,
        /// The value as written.
        value: String,
    },
    /// An address that is not one.
    #[error("{key} '{value}' is not an IP address")]
    NotAnAddress {
        /// `src_ip` or `dst_ip`.
        key: &'static str,
        /// The value as written.
        value: String,
    },
    /// A key the identification does not have.
    #[error("unknown key '{0}' (dst_mac, vlan, src_ip, dst_ip, proto, src_port, dst_port)")]
    UnknownKey(String),
}

/// The flags of one stream, as written.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RelayFlags {
    /// `--match`: `dst_mac=MAC,vlan=N,src_ip=A,dst_ip=A,proto=udp,src_port=N,dst_port=N`.
    pub matching: Option<String>,
    /// `--replicate IN=OUT,OUT`.
    pub replicate: Option<String>,
    /// `--eliminate IN,IN=OUT`.
    pub eliminate: Option<String>,
    /// The elimination's settings (algorithm, history, reset, tag, latent errors); its
    /// ports come from `eliminate`.
    pub settings: Eliminate,
    /// `--pass IN=OUT` for frames of no stream.
    pub pass: Vec<String>,
}

/// `dst_mac=02:..,vlan=10,proto=udp,dst_port=5201` (`-` and `_` alike in keys).
fn identification(text: &str) -> Result<Identification, MatchFlagError> {
    let mut id = Identification::default();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (k, v) = item
            .split_once('=')
            .ok_or_else(|| MatchFlagError::NotKeyValue(item.to_owned()))?;
        let (k, v) = (k.trim().replace('-', "_"), v.trim());
        let num = |key: &'static str| -> Result<u16, MatchFlagError> {
            v.parse().map_err(|_| MatchFlagError::NotANumber {
                key,
                value: v.to_owned(),
            })
        };
        let ip = |key: &'static str| -> Result<std::net::IpAddr, MatchFlagError> {
            v.parse().map_err(|_| MatchFlagError::NotAnAddress {
                key,
                value: v.to_owned(),
            })
        };
        match k.as_str() {
            "dst_mac" => id.dst_mac = Some(v.to_owned()),
            "vlan" => id.vlan = Some(num("vlan")?),
            "src_ip" => id.src_ip = Some(ip("src_ip")?),
            "dst_ip" => id.dst_ip = Some(ip("dst_ip")?),
            "proto" => id.proto = Some(v.to_owned()),
            "src_port" => id.src_port = Some(num("src_port")?),
            "dst_port" => id.dst_port = Some(num("dst_port")?),
            _ => return Err(MatchFlagError::UnknownKey(k)),
        }
    }
    Ok(id)
}

/// `a, b,c` as names.
fn ports(list: &str) -> Vec<String> {
    list.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// `LEFT=RIGHT`, or an error naming `flag`, `text` and the `form` to write.
fn pair<'a>(
    flag: &'static str,
    text: &'a str,
    form: &'static str,
) -> Result<(&'a str, &'a str), FlagsError> {
    text.split_once('=')
        .map(|(a, b)| (a.trim(), b.trim()))
        .ok_or_else(|| FlagsError::NotAPair {
            flag,
            text: text.to_owned(),
            form,
        })
}

impl RelayConfig {
    /// The relay the flags describe: one stream named `stream` (when it replicates or
    /// eliminates) and the pass-through ports.
    ///
    /// # Errors
    /// A flag that does not parse, or a relay [`RelayConfig::check`] refuses (naming what).
    pub fn from_flags(f: &RelayFlags) -> Result<Self, FlagsError> {
        let ident =
            identification(f.matching.as_deref().unwrap_or("")).map_err(FlagsError::Match)?;
        let replicate = match &f.replicate {
            Some(r) => {
                let (from, to) = pair("--replicate", r, "IN=OUT,OUT")?;
                Some(Replicate {
                    from: from.to_owned(),
                    to: ports(to),
                })
            }
            None => None,
        };
        let eliminate = match &f.eliminate {
            Some(e) => {
                let (from, to) = pair("--eliminate", e, "IN,IN=OUT")?;
                Some(Eliminate {
                    from: ports(from),
                    to: to.to_owned(),
                    ..f.settings.clone()
                })
            }
            None => None,
        };
        let mut pass = BTreeMap::new();
        for p in &f.pass {
            let (i, o) = pair("--pass", p, "IN=OUT")?;
            pass.insert(i.to_owned(), o.to_owned());
        }
        let streams = if replicate.is_some() || eliminate.is_some() {
            vec![StreamConfig {
                name: "stream".into(),
                ident,
                replicate,
                eliminate,
            }]
        } else {
            vec![]
        };
        let c = RelayConfig { streams, pass };
        c.check()?;
        Ok(c)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn flags(
        replicate: Option<&str>,
        eliminate: Option<&str>,
        matching: Option<&str>,
    ) -> RelayFlags {
        RelayFlags {
            matching: matching.map(str::to_owned),
            replicate: replicate.map(str::to_owned),
            eliminate: eliminate.map(str::to_owned),
            ..RelayFlags::default()
        }
    }

    #[test]
    fn flags_make_one_stream() {
        let mut f = flags(
            None,
            Some("eth1,eth2=eth0"),
            Some("dst-mac=02:77:62:00:23:02,proto=udp,dst_port=5201"),
        );
        f.settings.history = 512;
        f.pass = vec!["eth1=eth0".into()];
        let c = RelayConfig::from_flags(&f).unwrap();
        let s = &c.streams[0];
        let e = s.eliminate.as_ref().unwrap();
        assert_eq!((e.from.len(), e.to.as_str(), e.history), (2, "eth0", 512));
        assert_eq!(s.ident.dst_port, Some(5201));
        assert_eq!(c.pass.get("eth1").map(String::as_str), Some("eth0"));
    }

    #[test]
    fn bad_flags_are_named() {
        let mut short = flags(None, Some("eth1,eth2=eth0"), None);
        short.settings.history = 1;
        for (f, want) in [
            (flags(Some("eth0"), None, None), "IN=OUT,OUT"),
            (short, "history 1"),
            (
                flags(Some("eth0=eth1"), None, Some("colour=red")),
                "unknown key 'colour'",
            ),
            (flags(Some("eth0=eth1"), None, Some("vlan=x")), "vlan 'x'"),
            (flags(None, None, None), "nothing to do"),
        ] {
            let e = RelayConfig::from_flags(&f).unwrap_err().to_string();
            assert!(e.contains(want), "{f:?}: {e}");
        }
    }

    #[test]
    fn flag_errors_keep_their_words() {
        for (f, text) in [
            (
                flags(Some("eth0"), None, None),
                "--replicate 'eth0': write IN=OUT,OUT",
            ),
            (
                flags(Some("eth0=eth1"), None, Some("src-ip=x")),
                "--match: src_ip 'x' is not an IP address",
            ),
            (
                flags(Some("eth0=eth1"), None, Some("dst_port=70000")),
                "--match: dst_port '70000' is not a number 0..=65535",
            ),
            (
                flags(Some("eth0=eth1"), None, Some("vlan")),
                "--match: 'vlan' is not key=value",
            ),
            (
                flags(None, None, None),
                "the relay has no [[stream]] and no pass: nothing to do",
            ),
        ] {
            assert_eq!(RelayConfig::from_flags(&f).unwrap_err().to_string(), text);
        }
        assert_eq!(
            RelayConfig::from_flags(&flags(None, None, None)),
            Err(FlagsError::Config(ConfigError::Empty))
        );
    }
}
