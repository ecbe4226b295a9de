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

/// A relay configuration that does not parse or cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// TOML syntax, an unknown key or a value of the wrong type; the text names the line.
    #[error("{0}")]
    Syntax(String),
    /// No stream and no pass-through: nothing to do.
    #[error("the relay has no [[stream]] and no pass: nothing to do")]
    Empty,
    /// A stream without a name, by its position (from 1).
    #[error("stream {0}: name is empty")]
    Unnamed(usize),
    /// A stream that cannot work.
    #[error("stream '{stream}': {problem}")]
    Stream {
        /// The stream's name.
        stream: String,
        /// What is wrong with it.
        problem: StreamProblem,
    },
    /// A pass-through entry whose ports are not interface names.
    #[error("pass: '{from}' = '{to}' is not a pair of interface names")]
    PassNotPorts {
        /// The in-port as written.
        from: String,
        /// The out-port as written.
        to: String,
    },
    /// A pass-through entry back out of its in-port.
    #[error("pass: {0} cannot pass frames back out of itself")]
    PassToItself(String),
    /// More ports than the relay serves.
    #[error("a relay has at most 64 ports")]
    TooManyPorts,
}

/// What is wrong with one stream of a relay.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StreamProblem {
    /// Another stream has the same name.
    #[error("the name is used twice")]
    NameTwice,
    /// Its identification does not read.
    #[error("match.{0}")]
    Match(MatchError),
    /// Neither replication nor elimination.
    #[error("give replicate or eliminate (or both)")]
    NoFunction,
    /// A replication port that is not an interface name.
    #[error("replicate names a port that is not an interface name")]
    ReplicateNotAPort,
    /// Replication onto no port.
    #[error("replicate.to is empty")]
    ReplicateToNothing,
    /// Replication back out of the in-port.
    #[error("replicate.to contains its own in-port {0}")]
    ReplicateToItself(String),
    /// Replication onto one port twice.
    #[error("replicate.to names a port twice")]
    ReplicateTwice,
    /// An elimination port that is not an interface name.
    #[error("eliminate names a port that is not an interface name")]
    EliminateNotAPort,
    /// Elimination from no port.
    #[error("eliminate.from is empty")]
    EliminateFromNothing,
    /// Elimination from the out-port.
    #[error("eliminate.from contains its own out-port {0}")]
    EliminateFromItself(String),
    /// Elimination from one port twice.
    #[error("eliminate.from names a port twice")]
    EliminateTwice,
    /// A history length the recovery function does not take.
    #[error("eliminate.history {0} is outside 2..={max}", max = frer::recovery::MAX_HISTORY)]
    History(u16),
    /// Latent error detection with individual recovery.
    #[error(
        "latent error detection needs sequence recovery, not individual recovery (802.1CB 7.4.4)"
    )]
    LatentWithIndividual,
    /// Latent error detection with a count of paths or a period of 0.
    #[error("latent paths and periods must be above 0")]
    LatentZero,
    /// One port both replicates and eliminates the stream.
    #[error("a port cannot both replicate and eliminate the same stream")]
    BothOnOnePort,
}

/// A stream identification (`match`) that does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MatchError {
    /// Not a MAC address.
    #[error("dst_mac '{0}' is not a MAC address (02:77:62:00:1f:02)")]
    DstMac(String),
    /// A VLAN id above 4094.
    #[error("vlan {0} is outside 0..=4094")]
    Vlan(u16),
    /// Not a protocol name or number.
    #[error("proto '{0}' is not udp, tcp, icmp or a number 0..=255")]
    Proto(String),
    /// One IPv4 and one IPv6 address.
    #[error("src_ip and dst_ip are of different IP versions")]
    MixedVersions,
}

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
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let c: Self = toml::from_str(text)
            .map_err(|e| ConfigError::Syntax(e.to_string().trim().to_owned()))?;
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
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.streams.is_empty() && self.pass.is_empty() {
            return Err(ConfigError::Empty);
        }
        for (i, s) in self.streams.iter().enumerate() {
            if s.name.trim().is_empty() {
                return Err(ConfigError::Unnamed(i + 1));
            }
            if self.streams[..i].iter().any(|o| o.name == s.name) {
                return Err(ConfigError::Stream {
                    stream: s.name.clone(),
                    problem: StreamProblem::NameTwice,
                });
            }
            s.check().map_err(|problem| ConfigError::Stream {
                stream: s.name.clone(),
                problem,
            })?;
        }
        for (a, b) in &self.pass {
            if !port_ok(a) || !port_ok(b) {
                return Err(ConfigError::PassNotPorts {
                    from: a.clone(),
                    to: b.clone(),
                });
            }
            if a == b {
                return Err(ConfigError::PassToItself(a.clone()));
            }
        }
        if self.ports().len() > 64 {
            return Err(ConfigError::TooManyPorts);
        }
        Ok(())
    }
}

/// Whether `p` can be an interface name.
fn port_ok(p: &str) -> bool {
    !p.is_empty() && p.len() < 16 && !p.contains(['/', ' ', ':', '\0'])
}

impl StreamConfig {
    /// What [`RelayConfig::check`] refuses in one stream, but for its name.
    fn check(&self) -> Result<(), StreamProblem> {
        use StreamProblem as P;
        self.ident.check().map_err(P::Match)?;
        if self.replicate.is_none() && self.eliminate.is_none() {
            return Err(P::NoFunction);
        }
        let mut ins: Vec<&str> = Vec::new();
        if let Some(r) = &self.replicate {
            if !port_ok(&r.from) || r.to.iter().any(|p| !port_ok(p)) {
                return Err(P::ReplicateNotAPort);
            }
            if r.to.is_empty() {
                return Err(P::ReplicateToNothing);
            }
            if r.to.contains(&r.from) {
                return Err(P::ReplicateToItself(r.from.clone()));
            }
            if (1..r.to.len()).any(|k| r.to[..k].contains(&r.to[k])) {
                return Err(P::ReplicateTwice);
            }
            ins.push(&r.from);
        }
        if let Some(e) = &self.eliminate {
            if !port_ok(&e.to) || e.from.iter().any(|p| !port_ok(p)) {
                return Err(P::EliminateNotAPort);
            }
            if e.from.is_empty() {
                return Err(P::EliminateFromNothing);
            }
            if e.from.contains(&e.to) {
                return Err(P::EliminateFromItself(e.to.clone()));
            }
            if (1..e.from.len()).any(|k| e.from[..k].contains(&e.from[k])) {
                return Err(P::EliminateTwice);
            }
            if !(2..=frer::recovery::MAX_HISTORY).contains(&e.history) {
                return Err(P::History(e.history));
            }
            if let Some(l) = &e.latent {
                if e.individual {
                    return Err(P::LatentWithIndividual);
                }
                if l.paths == Some(0) || l.period_ms == 0 || l.reset_period_ms == 0 {
                    return Err(P::LatentZero);
                }
            }
            if ins.iter().any(|p| e.from.iter().any(|q| q == p)) {
                return Err(P::BothOnOnePort);
            }
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

    fn check(&self) -> Result<(), MatchError> {
        if let Some(m) = &self.dst_mac {
            if wire::ethernet::EthernetAddress::parse_str(m).is_none() {
                return Err(MatchError::DstMac(m.clone()));
            }
        }
        if let Some(v) = self.vlan {
            if v > 4094 {
                return Err(MatchError::Vlan(v));
            }
        }
        if let Some(p) = &self.proto {
            if protocol_number(p).is_none() {
                return Err(MatchError::Proto(p.clone()));
            }
        }
        if let (Some(a), Some(b)) = (self.src_ip, self.dst_ip) {
            if a.is_ipv4() != b.is_ipv4() {
                return Err(MatchError::MixedVersions);
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
            let e = RelayConfig::from_toml(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    #[test]
    fn errors_name_the_stream_and_keep_their_words() {
        let e = RelayConfig::from_toml(
            "[[stream]]\nname = \"s\"\nmatch = { vlan = 4095 }\nreplicate = { from = \"a\", to = [\"b\"] }\n",
        )
        .unwrap_err();
        assert_eq!(
            e,
            ConfigError::Stream {
                stream: "s".into(),
                problem: StreamProblem::Match(MatchError::Vlan(4095))
            }
        );
        assert_eq!(
            e.to_string(),
            "stream 's': match.vlan 4095 is outside 0..=4094"
        );
        let e = RelayConfig::from_toml(
            "[[stream]]\nname = \"s\"\neliminate = { from = [\"a\", \"b\"], to = \"c\", history = 1 }\n",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "stream 's': eliminate.history 1 is outside 2..=2048"
        );
        let e = RelayConfig::from_toml("[[stream]]\nname = \" \"\n").unwrap_err();
        assert_eq!(e, ConfigError::Unnamed(1));
        assert_eq!(e.to_string(), "stream 1: name is empty");
        let e = RelayConfig::from_toml("pass = { a = \"b/c\" }\n").unwrap_err();
        assert_eq!(
            e.to_string(),
            "pass: 'a' = 'b/c' is not a pair of interface names"
        );
    }
}
