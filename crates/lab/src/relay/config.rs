//! The relay's configuration: which frames form which stream (802.1CB clause 6 stream
//! identification: destination MAC + VLAN, or an IP 5-tuple), and what the relay does with
//! each stream on which ports: replicate (7.7 stream splitting, 7.4.1 sequence generation
//! and 7.8 R-TAG encoding) or eliminate (7.4.2 sequence recovery, optionally after 7.5
//! individual recovery per port, with 7.4.4 latent error detection).
//!
//! The same structure is the TOML file a user writes and the JSON the lab hands to a
//! relay it manages. [`RelayConfig::check`] refuses what cannot work, naming the stream
//! and key; TOML syntax errors and unknown keys name the line.
//!
//! ```toml
//! pass = { eth0 = "eth1", eth1 = "eth0" }   # frames of no stream: in-port = out-port
//!
//! [[stream]]
//! name = "to-listener"
//! match = { dst_mac = "02:77:62:00:1f:02" }  # and/or vlan, src_ip, dst_ip, proto, src_port, dst_port
//! replicate = { from = "eth0", to = ["eth1", "eth2"] }
//!
//! [[stream]]
//! name = "from-listener"
//! match = { dst_mac = "02:77:62:00:1e:01" }
//! eliminate = { from = ["eth1", "eth2"], to = "eth0", history = 1024, reset_ms = 2000 }
//! ```

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

/// A relay: its streams and where frames of no stream go.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelayConfig {
    /// The streams, matched in order: a frame belongs to the first stream whose
    /// identification matches and which has a function on the frame's port.
    #[serde(default, rename = "stream")]
    pub streams: Vec<StreamConfig>,
    /// Frames of no stream (ARP, other traffic): in-port -> out-port, forwarded unchanged.
    /// Frames of no stream on a port not listed are dropped. Both are counted.
    #[serde(default)]
    pub pass: BTreeMap<String, String>,
}

/// One stream and the relay's functions on it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamConfig {
    /// Name used in counters.
    pub name: String,
    /// Which frames belong to the stream; empty = every frame.
    #[serde(default, rename = "match")]
    pub ident: Identification,
    /// Replicate onto several ports with a fresh R-TAG sequence number.
    #[serde(default)]
    pub replicate: Option<Replicate>,
    /// Eliminate duplicates arriving on several ports.
    #[serde(default)]
    pub eliminate: Option<Eliminate>,
}

impl StreamConfig {
    /// A stream replicated from `from` onto `to`.
    pub fn replicating(name: &str, ident: Identification, from: &str, to: &[&str]) -> Self {
        Self {
            name: name.to_owned(),
            ident,
            replicate: Some(Replicate {
                from: from.to_owned(),
                to: to.iter().map(|p| (*p).to_owned()).collect(),
            }),
            eliminate: None,
        }
    }

    /// A stream eliminated as `eliminate` says.
    pub fn eliminating(name: &str, ident: Identification, eliminate: Eliminate) -> Self {
        Self {
            name: name.to_owned(),
            ident,
            replicate: None,
            eliminate: Some(eliminate),
        }
    }
}

/// Stream identification (802.1CB 6.4 null / 6.6 active destination MAC and VLAN / 6.7 IP
/// stream identification): every field given must match; none given matches every frame.
/// IP fields are looked up after any VLAN tags and R-TAG.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Identification {
    /// Destination MAC, `02:77:62:00:1f:02`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_mac: Option<String>,
    /// VLAN id of the outer 802.1Q tag (a frame without a tag does not match).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<u16>,
    /// IPv4 or IPv6 source address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_ip: Option<IpAddr>,
    /// IPv4 or IPv6 destination address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_ip: Option<IpAddr>,
    /// `udp`, `tcp`, `icmp` or an IP protocol number.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proto: Option<String>,
    /// UDP/TCP source port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_port: Option<u16>,
    /// UDP/TCP destination port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_port: Option<u16>,
}

/// Replication: frames of the stream arriving on `from` leave on every port of `to`, each
/// copy with an R-TAG carrying the same, freshly generated sequence number.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replicate {
    /// The in-port.
    pub from: String,
    /// The out-ports (the member streams / paths).
    pub to: Vec<String>,
}

/// The recovery algorithm (frerSeqRcvyAlgorithm).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AlgorithmName {
    /// VectorRecoveryAlgorithm (7.4.3.4), the default.
    #[default]
    Vector,
    /// MatchRecoveryAlgorithm (7.4.3.5).
    Match,
}

/// Elimination: frames of the stream arriving on any port of `from` go through one
/// sequence recovery function; those it passes leave on `to`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Eliminate {
    /// The in-ports (the member streams / paths).
    pub from: Vec<String>,
    /// The out-port.
    pub to: String,
    /// frerSeqRcvyAlgorithm.
    #[serde(default)]
    pub algorithm: AlgorithmName,
    /// frerSeqRcvyHistoryLength, 2..=2048 (802.1CB default 2). It must cover the skew
    /// between the paths in frames, or a copy that arrives late on the slower path after
    /// the faster one lost it is rogue.
    #[serde(default = "default_history")]
    pub history: u16,
    /// frerSeqRcvyResetMSec; 0 = no reset timer (default 2000).
    #[serde(default = "default_reset_ms")]
    pub reset_ms: u64,
    /// Keep the R-TAG on frames passed (default: strip it).
    #[serde(default)]
    pub keep_tag: bool,
    /// frerSeqRcvyTakeNoSequence: pass frames without an R-TAG.
    #[serde(default)]
    pub take_no_sequence: bool,
    /// Individual recovery (7.5) on each in-port before sequence recovery.
    #[serde(default)]
    pub individual: bool,
    /// Elimination off: every copy passes (the tag is still stripped), as a broken
    /// eliminator would do; for testing the analyzer.
    #[serde(default)]
    pub off: bool,
    /// Latent error detection (7.4.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latent: Option<Latent>,
}

impl Eliminate {
    /// Elimination from `from` onto `to` with the defaults (Vector, history 2, 2 s reset,
    /// tag stripped).
    pub fn new(from: &[&str], to: &str) -> Self {
        Self {
            from: from.iter().map(|p| (*p).to_owned()).collect(),
            to: to.to_owned(),
            ..Self::default()
        }
    }
}

impl Default for Eliminate {
    fn default() -> Self {
        Self {
            from: vec![],
            to: String::new(),
            algorithm: AlgorithmName::Vector,
            history: default_history(),
            reset_ms: default_reset_ms(),
            keep_tag: false,
            take_no_sequence: false,
            individual: false,
            off: false,
            latent: None,
        }
    }
}

fn default_history() -> u16 {
    2
}

fn default_reset_ms() -> u64 {
    2000
}

/// Latent error detection parameters (frerSeqRcvyLatentError…).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Latent {
    /// frerSeqRcvyLatentErrorPaths (default: the number of in-ports).
    #[serde(default)]
    pub paths: Option<u16>,
    /// frerSeqRcvyLatentErrorDifference.
    #[serde(default)]
    pub difference: i64,
    /// frerSeqRcvyLatentErrorPeriod, ms (default 2000).
    #[serde(default = "default_latent_period")]
    pub period_ms: u64,
    /// frerSeqRcvyLatentResetPeriod, ms (default 30000).
    #[serde(default = "default_latent_reset")]
    pub reset_period_ms: u64,
}

fn default_latent_period() -> u64 {
    2000
}

fn default_latent_reset() -> u64 {
    30_000
}

/// An IP protocol name or number.
pub fn protocol_number(s: &str) -> Option<u8> {
    match s.trim().to_ascii_lowercase().as_str() {
        "udp" => Some(17),
        "tcp" => Some(6),
        "icmp" => Some(1),
        "icmpv6" | "ipv6-icmp" => Some(58),
        n => n.parse().ok(),
    }
}

impl RelayConfig {
    /// Parses a TOML relay file and checks it.
    ///
    /// # Errors
    /// Syntax errors and unknown keys (with their line), and everything [`Self::check`]
    /// refuses.
    pub fn from_toml(text: &str) -> Result<Self, String> {
        let c: Self = toml::from_str(text).map_err(|e| e.to_string().trim().to_owned())?;
        c.check()?;
        Ok(c)
    }

    /// Every port the relay uses, in order of first mention.
    pub fn ports(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut add = |p: &str| {
            if !out.iter().any(|q| q == p) {
                out.push(p.to_owned());
            }
        };
        for s in &self.streams {
            if let Some(r) = &s.replicate {
                add(&r.from);
                r.to.iter().for_each(|p| add(p));
            }
            if let Some(e) = &s.eliminate {
                e.from.iter().for_each(|p| add(p));
                add(&e.to);
            }
        }
        for (a, b) in &self.pass {
            add(a);
            add(b);
        }
        out
    }

    /// Refuses a configuration that cannot work, naming the stream and the key.
    ///
    /// # Errors
    /// The first problem found.
    pub fn check(&self) -> Result<(), String> {
        if self.streams.is_empty() && self.pass.is_empty() {
            return Err("the relay has no [[stream]] and no pass: nothing to do".into());
        }
        let port_ok = |p: &str| !p.is_empty() && p.len() < 16 && !p.contains(['/', ' ', ':', '\0']);
        for (i, s) in self.streams.iter().enumerate() {
            let at = format!("stream '{}'", s.name);
            if s.name.trim().is_empty() {
                return Err(format!("stream {}: name is empty", i + 1));
            }
            if self.streams[..i].iter().any(|o| o.name == s.name) {
                return Err(format!("{at}: the name is used twice"));
            }
            s.ident.check().map_err(|e| format!("{at}: match.{e}"))?;
            if s.replicate.is_none() && s.eliminate.is_none() {
                return Err(format!("{at}: give replicate or eliminate (or both)"));
            }
            let mut ins: Vec<&str> = Vec::new();
            if let Some(r) = &s.replicate {
                if !port_ok(&r.from) || r.to.iter().any(|p| !port_ok(p)) {
                    return Err(format!(
                        "{at}: replicate names a port that is not an interface name"
                    ));
                }
                if r.to.is_empty() {
                    return Err(format!("{at}: replicate.to is empty"));
                }
                if r.to.contains(&r.from) {
                    return Err(format!(
                        "{at}: replicate.to contains its own in-port {}",
                        r.from
                    ));
                }
                if (1..r.to.len()).any(|k| r.to[..k].contains(&r.to[k])) {
                    return Err(format!("{at}: replicate.to names a port twice"));
                }
                ins.push(&r.from);
            }
            if let Some(e) = &s.eliminate {
                if !port_ok(&e.to) || e.from.iter().any(|p| !port_ok(p)) {
                    return Err(format!(
                        "{at}: eliminate names a port that is not an interface name"
                    ));
                }
                if e.from.is_empty() {
                    return Err(format!("{at}: eliminate.from is empty"));
                }
                if e.from.contains(&e.to) {
                    return Err(format!(
                        "{at}: eliminate.from contains its own out-port {}",
                        e.to
                    ));
                }
                if (1..e.from.len()).any(|k| e.from[..k].contains(&e.from[k])) {
                    return Err(format!("{at}: eliminate.from names a port twice"));
                }
                if !(2..=frer::recovery::MAX_HISTORY).contains(&e.history) {
                    return Err(format!(
                        "{at}: eliminate.history {} is outside 2..={}",
                        e.history,
                        frer::recovery::MAX_HISTORY
                    ));
                }
                if let Some(l) = &e.latent {
                    if e.individual {
                        return Err(format!(
                            "{at}: latent error detection needs sequence recovery, not individual recovery (802.1CB 7.4.4)"
                        ));
                    }
                    if l.paths == Some(0) || l.period_ms == 0 || l.reset_period_ms == 0 {
                        return Err(format!("{at}: latent paths and periods must be above 0"));
                    }
                }
                if ins.iter().any(|p| e.from.iter().any(|q| q == p)) {
                    return Err(format!(
                        "{at}: a port cannot both replicate and eliminate the same stream"
                    ));
                }
            }
        }
        for (a, b) in &self.pass {
            if !port_ok(a) || !port_ok(b) {
                return Err(format!(
                    "pass: '{a}' = '{b}' is not a pair of interface names"
                ));
            }
            if a == b {
                return Err(format!("pass: {a} cannot pass frames back out of itself"));
            }
        }
        if self.ports().len() > 64 {
            return Err("a relay has at most 64 ports".into());
        }
        Ok(())
    }
}

impl Identification {
    /// Frames to destination MAC `mac` (active destination MAC identification, 6.6).
    pub fn dst_mac(mac: &str) -> Self {
        Self {
            dst_mac: Some(mac.to_owned()),
            ..Self::default()
        }
    }

    fn check(&self) -> Result<(), String> {
        if let Some(m) = &self.dst_mac {
            if wire::ethernet::EthernetAddress::parse_str(m).is_none() {
                return Err(format!(
                    "dst_mac '{m}' is not a MAC address (02:77:62:00:1f:02)"
                ));
            }
        }
        if let Some(v) = self.vlan {
            if v > 4094 {
                return Err(format!("vlan {v} is outside 0..=4094"));
            }
        }
        if let Some(p) = &self.proto {
            if protocol_number(p).is_none() {
                return Err(format!(
                    "proto '{p}' is not udp, tcp, icmp or a number 0..=255"
                ));
            }
        }
        if let (Some(a), Some(b)) = (self.src_ip, self.dst_ip) {
            if a.is_ipv4() != b.is_ipv4() {
                return Err("src_ip and dst_ip are of different IP versions".into());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod test {
    use super::*;

    const TWO_WAY: &str = r#"
pass = { eth0 = "eth1", eth1 = "eth0", eth2 = "eth0" }

[[stream]]
name = "to-listener"
match = { dst_mac = "02:77:62:00:1f:02", vlan = 10 }
replicate = { from = "eth0", to = ["eth1", "eth2"] }

[[stream]]
name = "from-listener"
match = { dst_ip = "198.18.30.1", proto = "udp", dst_port = 5201 }
eliminate = { from = ["eth1", "eth2"], to = "eth0", history = 1024, latent = { difference = 10 } }
"#;

    #[test]
    fn a_relay_file_parses_with_defaults() {
        let c = RelayConfig::from_toml(TWO_WAY).unwrap();
        assert_eq!(c.ports(), ["eth0", "eth1", "eth2"]);
        let e = c.streams[1].eliminate.as_ref().unwrap();
        assert_eq!(
            (e.history, e.reset_ms, e.algorithm),
            (1024, 2000, AlgorithmName::Vector)
        );
        assert!(!e.keep_tag && !e.off);
        assert_eq!(e.latent.unwrap().period_ms, 2000);
        assert_eq!(c.streams[0].ident.vlan, Some(10));
        // JSON round trip (the lab hands the config over as JSON).
        let j = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<RelayConfig>(&j).unwrap(), c);
    }

    #[test]
    fn the_example_relay_file_parses() {
        let c =
            RelayConfig::from_toml(include_str!("../../../../examples/frer-relay.toml")).unwrap();
        assert_eq!(c.streams.len(), 2);
        assert_eq!(c.streams[1].eliminate.as_ref().unwrap().history, 1024);
    }

    #[test]
    fn bad_relay_files_name_the_problem() {
        let cases: &[(&str, &str)] = &[
            ("[[stream]]\nname = \"s\"\nmatch = { dst_mac = \"nope\" }\nreplicate = { from = \"a\", to = [\"b\"] }\n", "dst_mac 'nope'"),
            ("[[stream]]\nname = \"s\"\nreplicate = { from = \"a\", to = [\"a\", \"b\"] }\n", "own in-port"),
            ("[[stream]]\nname = \"s\"\nreplicate = { from = \"a\", to = [] }\n", "replicate.to is empty"),
            ("[[stream]]\nname = \"s\"\neliminate = { from = [\"a\", \"b\"], to = \"c\", history = 1 }\n", "history 1"),
            ("[[stream]]\nname = \"s\"\neliminate = { from = [\"a\"], to = \"c\", individual = true, latent = {} }\n", "individual"),
            ("[[stream]]\nname = \"s\"\n", "give replicate or eliminate"),
            ("[[stream]]\nname = \"s\"\nmatch = { proto = \"sctpx\" }\nreplicate = { from = \"a\", to = [\"b\"] }\n", "proto 'sctpx'"),
            ("[[stream]]\nname = \"s\"\nreplicate = { from = \"a\", to = [\"b\"] }\nbogus = 1\n", "line 4"),
            ("[[stream]]\nname = \"s\"\nreplicate = { from = \"a\", to = [\"b\"] }\n[[stream]]\nname = \"s\"\nreplicate = { from = \"a\", to = [\"b\"] }\n", "twice"),
            ("pass = { a = \"a\" }\n", "back out of itself"),
            ("", "nothing to do"),
            ("[[stream]]\nname = \"s\"\nreplicate = { from = \"a\", to = [\"b\"] }\neliminate = { from = [\"a\", \"b\"], to = \"c\" }\n", "both replicate and eliminate"),
        ];
        for (text, want) in cases {
            let e = RelayConfig::from_toml(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }
}
