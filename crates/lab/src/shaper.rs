//! The class-based shaper of the `shaper` topology: an HTB tree on the dut's egress toward
//! the listener, built from a class list, like a router's `queue … type shaping` config.
//!
//! ```toml
//! [[class]]
//! name = "udp"
//! protocol = "udp"     # udp, tcp or icmp; absent = any
//! ports = [5001]       # destination ports, optional
//! src_ports = [49184]  # source ports, optional
//! src = "198.18.1.0/24"   # source IPv4 address or prefix, optional
//! dst = "198.18.2.1"   # destination IPv4 address or prefix, optional
//! dscp = 46            # optional
//! rate = "10M"         # bits/s, k/M/G suffixes
//! ceil = "10M"         # optional, default = rate
//! burst = "15k"        # bytes, the rate's and the ceil's bucket, optional
//!                      # (default: 2 ms at the rate, and 2 ms at the ceil; at least 1600)
//! limit = 100          # queue length in packets, optional (default: txqueuelen)
//!
//! [default]            # unmatched traffic; optional, default 10G
//! rate = "1G"
//! ```
//!
//! HTB counts a packet's L2 length (Ethernet header included, FCS not), so a class of
//! 10 Mbit/s passes 10 Mbit/s of L2 frames.

use serde::Deserialize;

use crate::cmd::Cmd;
use crate::LabError;

/// Transport protocols a class can match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    /// IP protocol 17.
    Udp,
    /// IP protocol 6.
    Tcp,
    /// IP protocol 1.
    Icmp,
}

impl Proto {
    fn number(self) -> u8 {
        match self {
            Proto::Udp => 17,
            Proto::Tcp => 6,
            Proto::Icmp => 1,
        }
    }
}

/// One class.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassSpec {
    /// Name shown in status.
    pub name: String,
    /// Protocol to match.
    pub protocol: Option<Proto>,
    /// Destination ports to match (UDP/TCP).
    pub ports: Option<Vec<u16>>,
    /// Source ports to match (UDP/TCP).
    pub src_ports: Option<Vec<u16>>,
    /// Source IPv4 address or prefix (`198.18.1.0/24`).
    pub src: Option<String>,
    /// Destination IPv4 address or prefix.
    pub dst: Option<String>,
    /// DSCP to match (0..=63).
    pub dscp: Option<u8>,
    /// Guaranteed rate.
    pub rate: String,
    /// Rate it may borrow up to.
    pub ceil: Option<String>,
    /// Burst, bytes.
    pub burst: Option<String>,
    /// Queue length of the class, packets (a `pfifo` leaf; default: the interface's
    /// txqueuelen, 1000 on veth). A router's queue is often far shorter.
    pub limit: Option<u32>,
}

/// The class for unmatched traffic.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DefaultSpec {
    /// Its rate.
    pub rate: String,
}

/// A shaper configuration file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShaperSpec {
    /// The classes, matched in order.
    pub class: Vec<ClassSpec>,
    /// Unmatched traffic.
    pub default: Option<DefaultSpec>,
}

/// A class list that does not parse or cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShaperError {
    /// TOML syntax, an unknown key or a value of the wrong type; the text names the line.
    #[error("{0}")]
    Syntax(String),
    /// No `[[class]]`.
    #[error("the shaper needs at least one [[class]]")]
    NoClasses,
    /// More classes than the tree has ids for.
    #[error("at most 99 classes")]
    TooManyClasses,
    /// A rate, ceil or burst that does not read.
    #[error(transparent)]
    Quantity(#[from] QuantityError),
    /// A DSCP above 63.
    #[error("class '{0}': dscp must be 0..=63")]
    Dscp(String),
    /// Ports to match without a protocol that has ports.
    #[error("class '{0}': ports need protocol udp or tcp")]
    PortsWithoutProtocol(String),
    /// A source or destination that is not an IPv4 address or prefix.
    #[error(
        "class '{class}': {key} '{value}' is not an IPv4 address or prefix (e.g. 198.18.1.0/24)"
    )]
    NotAPrefix {
        /// The class.
        class: String,
        /// `src` or `dst`.
        key: &'static str,
        /// The value as written.
        value: String,
    },
}

/// A rate or a size of a class list (or of an impairment) that does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QuantityError {
    /// Not a number with an optional SI suffix.
    #[error("{what} '{value}' is not a number with an optional k/M/G suffix")]
    NotANumber {
        /// What the value is (`rate`, `ceil`, `burst`, `default rate`).
        what: &'static str,
        /// The value as written.
        value: String,
    },
    /// Below 1.
    #[error("{what} '{value}' must be positive")]
    NotPositive {
        /// What the value is.
        what: &'static str,
        /// The value as written.
        value: String,
    },
}

/// An IPv4 address with an optional prefix length, as `A.B.C.D/LEN` (32 without one);
/// `None` when it is neither.
fn prefix(s: &str) -> Option<String> {
    let (addr, len) = s.split_once('/').unwrap_or((s, "32"));
    let ok = addr.trim().parse::<std::net::Ipv4Addr>().is_ok()
        && len.trim().parse::<u8>().is_ok_and(|l| l <= 32);
    ok.then(|| format!("{}/{}", addr.trim(), len.trim()))
}

/// Default rate of unmatched traffic (effectively unshaped on veth).
const DEFAULT_RATE_BPS: u64 = 10_000_000_000;

/// A rate (`base` 1000) or size (`base` 1024) of the class list, with the unit parser of
/// every other wirebench input.
pub(crate) fn si(s: &str, base: f64, what: &'static str) -> Result<u64, QuantityError> {
    let r = model::units::si_number(s, base).ok_or_else(|| QuantityError::NotANumber {
        what,
        value: s.to_owned(),
    })?;
    if r < 1.0 {
        return Err(QuantityError::NotPositive {
            what,
            value: s.to_owned(),
        });
    }
    Ok(r.round() as u64)
}

impl ShaperSpec {
    /// Parses and checks a TOML class list; errors name the field and, for syntax, the line.
    ///
    /// # Errors
    /// [`ShaperError::Syntax`], or what [`ShaperSpec::check`] refuses.
    pub fn parse(text: &str) -> Result<Self, ShaperError> {
        let spec: ShaperSpec =
            toml::from_str(text).map_err(|e| ShaperError::Syntax(e.to_string()))?;
        spec.check()?;
        Ok(spec)
    }

    /// Checks the values of a class list read as part of a larger file.
    ///
    /// # Errors
    /// The first value that cannot be built, naming its class.
    pub fn check(&self) -> Result<(), ShaperError> {
        let spec = self;
        if spec.class.is_empty() {
            return Err(ShaperError::NoClasses);
        }
        if spec.class.len() > 99 {
            return Err(ShaperError::TooManyClasses);
        }
        for c in &spec.class {
            si(&c.rate, 1000.0, "rate")?;
            if let Some(x) = &c.ceil {
                si(x, 1000.0, "ceil")?;
            }
            if let Some(x) = &c.burst {
                si(x, 1024.0, "burst")?;
            }
            if c.dscp.is_some_and(|d| d > 63) {
                return Err(ShaperError::Dscp(c.name.clone()));
            }
            let any_ports = c.ports.is_some() || c.src_ports.is_some();
            if any_ports && !matches!(c.protocol, Some(Proto::Udp | Proto::Tcp)) {
                return Err(ShaperError::PortsWithoutProtocol(c.name.clone()));
            }
            for (key, v) in [("src", &c.src), ("dst", &c.dst)] {
                if let Some(v) = v {
                    prefix(v).ok_or_else(|| ShaperError::NotAPrefix {
                        class: c.name.clone(),
                        key,
                        value: v.clone(),
                    })?;
                }
            }
        }
        if let Some(d) = &spec.default {
            si(&d.rate, 1000.0, "default rate")?;
        }
        Ok(())
    }

    /// The tc commands that build the tree on `dev` in namespace `ns`: an HTB root whose
    /// default is class 1:999, one class 1:(10+i) per class, u32 filters in class order.
    pub fn commands(&self, ns: &str, dev: &str) -> Vec<Cmd> {
        let tc = |args: Vec<String>| {
            let mut a = vec!["-n".to_owned(), ns.to_owned()];
            a.extend(args);
            Cmd::tc(a)
        };
        let s = |x: &str| x.to_owned();
        let mut out = vec![tc(vec![
            s("qdisc"),
            s("add"),
            s("dev"),
            s(dev),
            s("root"),
            s("handle"),
            s("1:"),
            s("htb"),
            s("default"),
            s("999"),
        ])];
        // `burst` sizes the rate's bucket and `cburst` the ceil's; a class whose rate is its
        // ceil is held by both, so a short `cburst` would undo a long `burst`.
        let class = |id: String, rate: u64, ceil: u64, burst: Option<(u64, u64)>| {
            let mut a = vec![
                s("class"),
                s("add"),
                s("dev"),
                s(dev),
                s("parent"),
                s("1:"),
                s("classid"),
                id,
            ];
            a.extend([
                s("htb"),
                s("rate"),
                format!("{rate}bit"),
                s("ceil"),
                format!("{ceil}bit"),
            ]);
            if let Some((b, cb)) = burst {
                a.extend([s("burst"), format!("{b}b"), s("cburst"), format!("{cb}b")]);
            }
            // An explicit quantum (one full frame) keeps HTB from warning about r2q.
            a.extend([s("quantum"), s("1514")]);
            tc(a)
        };
        for (i, c) in self.class.iter().enumerate() {
            let rate = si(&c.rate, 1000.0, "rate").unwrap_or(1);
            let ceil = c
                .ceil
                .as_deref()
                .and_then(|x| si(x, 1000.0, "ceil").ok())
                .unwrap_or(rate)
                .max(rate);
            let given = c.burst.as_deref().and_then(|x| si(x, 1024.0, "burst").ok());
            let buckets = match given {
                Some(b) => (b, b),
                None => (default_burst(rate), default_burst(ceil)),
            };
            out.push(class(format!("1:{}", 10 + i), rate, ceil, Some(buckets)));
            if let Some(limit) = c.limit {
                out.push(tc(vec![
                    s("qdisc"),
                    s("add"),
                    s("dev"),
                    s(dev),
                    s("parent"),
                    format!("1:{}", 10 + i),
                    s("pfifo"),
                    s("limit"),
                    limit.max(1).to_string(),
                ]));
            }
        }
        let def = self
            .default
            .as_ref()
            .and_then(|d| si(&d.rate, 1000.0, "rate").ok())
            .unwrap_or(DEFAULT_RATE_BPS);
        out.push(class(s("1:999"), def, def, None));
        for (i, c) in self.class.iter().enumerate() {
            let mut matches: Vec<String> = Vec::new();
            if let Some(p) = c.protocol {
                matches.extend([
                    s("match"),
                    s("ip"),
                    s("protocol"),
                    p.number().to_string(),
                    s("0xff"),
                ]);
            }
            if let Some(d) = c.dscp {
                matches.extend([
                    s("match"),
                    s("ip"),
                    s("tos"),
                    format!("{:#04x}", d << 2),
                    s("0xfc"),
                ]);
            }
            for (key, v) in [("src", &c.src), ("dst", &c.dst)] {
                if let Some(p) = v.as_deref().and_then(prefix) {
                    matches.extend([s("match"), s("ip"), s(key), p]);
                }
            }
            let each = |list: &Option<Vec<u16>>| -> Vec<Option<u16>> {
                match list {
                    Some(p) if !p.is_empty() => p.iter().map(|x| Some(*x)).collect(),
                    _ => vec![None],
                }
            };
            let sports = each(&c.src_ports);
            let pairs = each(&c.ports)
                .into_iter()
                .flat_map(|d| sports.iter().map(move |s| (d, *s)));
            for (port, sport) in pairs {
                let mut a = vec![
                    s("filter"),
                    s("add"),
                    s("dev"),
                    s(dev),
                    s("parent"),
                    s("1:"),
                    s("protocol"),
                    s("ip"),
                ];
                a.extend([s("prio"), (1 + i).to_string(), s("u32")]);
                a.extend(matches.iter().cloned());
                if let Some(p) = port {
                    a.extend([s("match"), s("ip"), s("dport"), p.to_string(), s("0xffff")]);
                }
                if let Some(p) = sport {
                    a.extend([s("match"), s("ip"), s("sport"), p.to_string(), s("0xffff")]);
                }
                if !a.iter().any(|x| x == "match") {
                    // Matches everything: u32 needs at least one key.
                    a.extend([s("match"), s("u32"), s("0"), s("0")]);
                }
                a.extend([s("flowid"), format!("1:{}", 10 + i)]);
                out.push(tc(a));
            }
        }
        out
    }
}

/// The command that limits what `dev` in `ns` sends to `bps` (L2 bit/s), as a port of
/// that speed would carry no more: a token bucket at that rate as its root qdisc, with a
/// short queue (64 KB) that drops the excess. Frames sent past the qdisc (a raw socket's
/// `PACKET_QDISC_BYPASS`) are not limited: it is for a forwarding node's port.
pub fn limit_egress(ns: &str, dev: &str, bps: u64, overhead: u32) -> Cmd {
    let mut args: Vec<String> = ["-n", ns, "qdisc", "add", "dev", dev, "root"]
        .iter()
        .map(|a| (*a).to_owned())
        .collect();
    args.extend(token_bucket(bps, overhead));
    Cmd::tc(args)
}

/// A token bucket at `bps` with a 64 KB queue; each frame counted `overhead` bytes longer
/// (24: the FCS, preamble and gap a veth frame lacks against the wire, so a "100M" port
/// carries what a 100 Mbit/s Ethernet does at every frame size), and at least 64 + 20.
fn token_bucket(bps: u64, overhead: u32) -> Vec<String> {
    let burst = (bps / 8 / 1000).max(1600);
    let mut a: Vec<String> = vec![
        "tbf".into(),
        "rate".into(),
        format!("{bps}bit"),
        "burst".into(),
        format!("{burst}b"),
        "limit".into(),
        "65536b".into(),
    ];
    if overhead > 0 {
        a.extend([
            "overhead".into(),
            overhead.to_string(),
            "mpu".into(),
            (64 + 20).to_string(),
        ]);
    }
    a
}

/// How a port-rate limit counts frames and holds the excess.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LimitStyle {
    /// Bytes each frame counts above its length (24: a veth frame's missing FCS,
    /// preamble and gap).
    pub overhead: u32,
    /// Frames an arriving limit queues before it drops (`None`: 64 KB). A host's frames
    /// wait in its NIC's queue (1000 frames, the txqueuelen) for the wire, so a sender's
    /// burst above the line rate is delayed, not lost, on a link of a topology file.
    pub queue_frames: Option<u32>,
}

/// The commands that limit what arrives on `dev` in `ns` to `bps` (L2 bit/s), as a port
/// of that speed would carry no more: its ingress is redirected to an `ifb` device whose
/// egress is a token bucket at that rate with a queue (`style`) that drops the excess.
/// (This kernel has no `police` action; `mirred` and `ifb` it has.)
pub fn limit_ingress(ns: &str, dev: &str, bps: u64, style: LimitStyle) -> Vec<Cmd> {
    let ifb = format!("ifb{dev}");
    let tc = |args: &[&str]| {
        let mut a = vec!["-n".to_owned(), ns.to_owned()];
        a.extend(args.iter().map(|x| (*x).to_owned()));
        Cmd::tc(a)
    };
    let mut root = tc(&["qdisc", "add", "dev", &ifb, "root"]);
    if style.queue_frames.is_some() {
        root.args.extend(["handle".to_owned(), "1:".to_owned()]);
    }
    root.args.extend(token_bucket(bps, style.overhead));
    let mut out = vec![Cmd::ifb(ns, &ifb), Cmd::link_up(ns, &ifb), root];
    if let Some(n) = style.queue_frames {
        let n = n.to_string();
        out.push(tc(&[
            "qdisc", "add", "dev", &ifb, "parent", "1:1", "handle", "10:", "pfifo", "limit", &n,
        ]));
    }
    out.extend([
        tc(&["qdisc", "add", "dev", dev, "handle", "ffff:", "ingress"]),
        tc(&[
            "filter", "add", "dev", dev, "parent", "ffff:", "protocol", "all", "u32", "match",
            "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", &ifb,
        ]),
    ]);
    out
}

impl ShaperSpec {
    /// A plain port-rate egress: no classes, every frame in one FIFO at `bps` (the RTX2000
    /// report's baseline without shaping).
    pub fn port(bps: u64) -> Self {
        Self {
            class: vec![],
            default: Some(DefaultSpec {
                rate: bps.to_string(),
            }),
        }
    }
}

/// A class's bucket when its configuration gives none: 2 ms at its rate, at least one
/// full frame. tc's default of one frame loses the class tokens whenever the dut's
/// softirq runs late on a busy CPU (measured on 2026-12-02: 70 Mbit/s classes passing
/// 65, a 10 Mbit/s class 9.7), which would describe our CPU, not the shaper; 2 ms lets a
/// 0.2 s trial pass at most 1 % more than the rate. The ceil's bucket (`cburst`) gets the
/// same at the ceil: with tc's default there, a class whose ceil is its rate passed 9.54
/// of 10 Mbit/s on a busy CI machine (2026-12-02).
pub fn default_burst(bps: u64) -> u64 {
    (bps / 8 / 500).max(1600)
}

/// The `tc` command that sets the first class (1:10) of lab `lab`'s shaper (on the dut's
/// egress toward the listener) to `bps`, rate and ceil alike, with the
/// [`default_burst`].
pub fn set_first_class_rate(lab: &str, bps: f64) -> Cmd {
    let bits = format!("{}bit", bps.round() as u64);
    let burst = format!("{}b", default_burst(bps.round() as u64));
    let ns = crate::naming::namespace(lab, "dut");
    let args = [
        "-n", &ns, "class", "change", "dev", "eth1", "parent", "1:", "classid", "1:10", "htb",
        "rate", &bits, "ceil", &bits, "burst", &burst, "cburst", &burst, "quantum", "1514",
    ];
    Cmd::tc(args.iter().map(|a| (*a).to_owned()).collect())
}

/// The `tc` command that puts the first class (1:10) of lab `lab`'s shaper back to `was`:
/// its rate, ceil and both buckets as tc wrote them (`10Mbit`, `2500b`). The buckets are
/// given too: `tc class change` without them would shrink both to one frame.
pub fn change_first_class(lab: &str, was: &ClassStats) -> Cmd {
    let ns = crate::naming::namespace(lab, "dut");
    let mut args = vec![
        "-n", &ns, "class", "change", "dev", "eth1", "parent", "1:", "classid", "1:10", "htb",
        "rate", &was.rate, "ceil", &was.ceil,
    ];
    for (key, v) in [("burst", &was.burst), ("cburst", &was.cburst)] {
        if v != "?" {
            args.extend([key, v.as_str()]);
        }
    }
    args.extend(["quantum", "1514"]);
    Cmd::tc(args.iter().map(|a| (*a).to_owned()).collect())
}

/// The classes of lab `lab`'s shaper with their counters and queues.
///
/// # Errors
/// The lab has no shaper, or `tc` fails.
pub fn classes(
    lab: &str,
    runner: &mut dyn crate::cmd::Runner,
) -> Result<Vec<ClassStats>, LabError> {
    let ns = crate::naming::namespace(lab, "dut");
    Ok(parse_class_stats(
        &runner.run(&Cmd::class_stats(&ns, "eth1"))?,
    ))
}

/// One HTB class's counters, as `tc -s class show` reports them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassStats {
    /// Class id (`1:10`).
    pub id: String,
    /// Configured rate, as tc prints it (`10Mbit`).
    pub rate: String,
    /// Configured ceil, as tc prints it.
    pub ceil: String,
    /// The rate's bucket, as tc prints it (`2500b`).
    pub burst: String,
    /// The ceil's bucket, as tc prints it.
    pub cburst: String,
    /// Packets waiting in the class's queue.
    pub backlog_packets: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Packets sent.
    pub packets: u64,
    /// Packets dropped.
    pub dropped: u64,
}

/// Frames dropped so far at each place of lab `lab`'s dut that drops by design: each
/// port's ingress limiter ([`limit_ingress`]: the token bucket on `ifbDEV`), as
/// `ingress limiter dut DEV`, and each HTB class on its egress toward the listener, as
/// `shaper class 1:N (RATE)`. Empty for a lab without a dut; a device whose counters
/// cannot be read is left out.
pub fn drop_counters(runner: &mut dyn crate::cmd::Runner, lab: &str) -> Vec<(String, u64)> {
    let ns = crate::naming::namespace(lab, "dut");
    let Ok(links) = runner.run(&Cmd::brief_addrs(&ns)) else {
        return vec![];
    };
    let mut out = Vec::new();
    for link in links.lines() {
        let name = link.split_whitespace().next().unwrap_or("");
        let name = name.split('@').next().unwrap_or("");
        let Some(dev) = name.strip_prefix("ifb") else {
            continue;
        };
        if let Some(d) = runner
            .run(&Cmd::qdisc_stats(&ns, name))
            .ok()
            .and_then(|t| parse_qdisc_dropped(&t))
        {
            out.push((format!("ingress limiter dut {dev}"), d));
        }
    }
    if let Ok(text) = runner.run(&Cmd::class_stats(&ns, "eth1")) {
        for c in parse_class_stats(&text) {
            out.push((format!("shaper class {} ({})", c.id, c.rate), c.dropped));
        }
    }
    out
}

/// The drops of the first qdisc in `tc -s qdisc show` output (`Sent B bytes P pkt
/// (dropped D, overlimits ...)`).
fn parse_qdisc_dropped(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.trim_start().starts_with("Sent"))?;
    let f: Vec<&str> = line.split_whitespace().collect();
    Some(sent_counts(&f).2)
}

/// (bytes, packets, dropped) of a `Sent B bytes P pkt (dropped D, overlimits ...)` line's
/// words; a count that is not there reads 0.
fn sent_counts(f: &[&str]) -> (u64, u64, u64) {
    let num = |i: usize| {
        f.get(i)
            .and_then(|w| w.trim_end_matches(',').parse().ok())
            .unwrap_or(0)
    };
    let dropped = f
        .iter()
        .position(|w| *w == "(dropped")
        .map_or(0, |i| num(i + 1));
    (num(1), num(3), dropped)
}

/// Parses `tc -s class show` output (HTB classes only), sorted by class id.
pub fn parse_class_stats(text: &str) -> Vec<ClassStats> {
    let mut out: Vec<ClassStats> = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 3 && f[0] == "class" && f[1] == "htb" {
            let after = |key: &str| {
                f.iter()
                    .position(|w| *w == key)
                    .and_then(|i| f.get(i + 1))
                    .map_or_else(|| "?".to_owned(), |w| (*w).to_owned())
            };
            out.push(ClassStats {
                id: f[2].to_owned(),
                rate: after("rate"),
                ceil: after("ceil"),
                burst: after("burst"),
                cburst: after("cburst"),
                backlog_packets: 0,
                bytes: 0,
                packets: 0,
                dropped: 0,
            });
        } else if f.first() == Some(&"backlog") {
            // `backlog 1023250b 675p requeues 0`
            if let Some(c) = out.last_mut() {
                c.backlog_packets = f
                    .get(2)
                    .and_then(|w| w.strip_suffix('p'))
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
            }
        } else if f.first() == Some(&"Sent") {
            if let Some(c) = out.last_mut() {
                (c.bytes, c.packets, c.dropped) = sent_counts(&f);
            }
        }
    }
    out.sort_by_key(|c| {
        c.id.split(':')
            .nth(1)
            .and_then(|m| m.parse::<u32>().ok())
            .unwrap_or(u32::MAX)
    });
    out
}

#[cfg(test)]
mod test {
    use super::*;

    /// `tc` and `ip` answers of a shaper lab's dut with one ingress limiter (eth2) and two
    /// classes, as this kernel prints them.
    struct Dut;

    impl crate::cmd::Runner for Dut {
        fn run(&mut self, cmd: &Cmd) -> Result<String, LabError> {
            let line = cmd.to_string();
            Ok(if line.contains("-br addr") {
                "lo UNKNOWN 127.0.0.1/8\neth1@if9 UP 198.18.2.254/24\neth2@if11 UP\nifbeth2 UNKNOWN\n".into()
            } else if line.contains("qdisc show dev ifbeth2") {
                "qdisc tbf 8001: root refcnt 2 rate 100Mbit burst 12500b lat 4.2ms \n Sent 25012345 bytes 24100 pkt (dropped 11873, overlimits 30000 requeues 0) \n backlog 0b 0p requeues 0\n".into()
            } else if line.contains("class show dev eth1") {
                "class htb 1:10 root leaf 10: prio 0 rate 10Mbit ceil 10Mbit burst 2500b cburst 2500b \n Sent 2500000 bytes 2000 pkt (dropped 613, overlimits 0 requeues 0) \n backlog 0b 0p requeues 0\nclass htb 1:999 root leaf 999: prio 0 rate 10Gbit ceil 10Gbit burst 1600b cburst 1600b \n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n".into()
            } else {
                return Err(LabError::Command {
                    cmd: line,
                    detail: "unexpected".into(),
                });
            })
        }
    }

    #[test]
    fn the_duts_drop_sites_are_its_ingress_limiters_and_its_classes() {
        let sites = drop_counters(&mut Dut, "x");
        assert_eq!(
            sites,
            [
                ("ingress limiter dut eth2".to_owned(), 11873),
                ("shaper class 1:10 (10Mbit)".to_owned(), 613),
                ("shaper class 1:999 (10Gbit)".to_owned(), 0),
            ]
        );
        assert_eq!(parse_qdisc_dropped("qdisc noqueue 0: root"), None);
    }

    const TWO: &str = r#"
[[class]]
name = "udp"
protocol = "udp"
rate = "10M"

[[class]]
name = "tcp"
protocol = "tcp"
ports = [5001, 5002]
dscp = 10
rate = "40M"
ceil = "50M"
burst = "15k"
"#;

    #[test]
    fn builds_the_htb_tree() {
        let s = ShaperSpec::parse(TWO).unwrap();
        let lines: Vec<String> = s
            .commands("wb-x-dut", "eth1")
            .iter()
            .map(|c| c.to_string())
            .collect();
        assert_eq!(
            lines[0],
            "tc -n wb-x-dut qdisc add dev eth1 root handle 1: htb default 999"
        );
        // No burst given: 2 ms at 10 Mbit/s.
        assert_eq!(lines[1], "tc -n wb-x-dut class add dev eth1 parent 1: classid 1:10 htb rate 10000000bit ceil 10000000bit burst 2500b cburst 2500b quantum 1514");
        assert!(
            lines[2].contains(
                "classid 1:11 htb rate 40000000bit ceil 50000000bit burst 15360b cburst 15360b"
            ),
            "{}",
            lines[2]
        );
        assert!(lines[3].contains("classid 1:999 htb rate 10000000000bit"));
        // No burst, a ceil above the rate: each bucket is 2 ms of its own rate.
        let borrowing =
            ShaperSpec::parse("[[class]]\nname = \"a\"\nrate = \"10M\"\nceil = \"40M\"\n").unwrap();
        let first = borrowing.commands("wb-x-dut", "eth1")[1].to_string();
        assert!(
            first.ends_with("ceil 40000000bit burst 2500b cburst 10000b quantum 1514"),
            "{first}"
        );
        assert_eq!(lines[4], "tc -n wb-x-dut filter add dev eth1 parent 1: protocol ip prio 1 u32 match ip protocol 17 0xff flowid 1:10");
        assert_eq!(lines[5], "tc -n wb-x-dut filter add dev eth1 parent 1: protocol ip prio 2 u32 match ip protocol 6 0xff match ip tos 0x28 0xfc match ip dport 5001 0xffff flowid 1:11");
        assert_eq!(lines.len(), 7, "one filter per port");
        let short = ShaperSpec::parse(
            "[[class]]\nname = \"u\"\nprotocol = \"udp\"\nrate = \"100M\"\nlimit = 50\n",
        )
        .unwrap();
        let lines: Vec<String> = short
            .commands("n", "eth1")
            .iter()
            .map(|c| c.to_string())
            .collect();
        assert_eq!(
            lines[2],
            "tc -n n qdisc add dev eth1 parent 1:10 pfifo limit 50"
        );
    }

    #[test]
    fn class_counters_parse() {
        let text = "class htb 1:11 root prio 0 rate 40Mbit ceil 50Mbit burst 1600b cburst 1600b \n Sent 1514000 bytes 1000 pkt (dropped 7, overlimits 0 requeues 0) \n backlog 1023250b 675p requeues 0\n\nclass htb 1:10 root prio 0 rate 10Mbit ceil 10Mbit burst 1600b cburst 1600b \n Sent 0 bytes 0 pkt (dropped 0, overlimits 0 requeues 0) \n";
        let s = parse_class_stats(text);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].id, "1:10");
        assert_eq!(
            s[1],
            ClassStats {
                id: "1:11".into(),
                rate: "40Mbit".into(),
                ceil: "50Mbit".into(),
                burst: "1600b".into(),
                cburst: "1600b".into(),
                backlog_packets: 675,
                bytes: 1_514_000,
                packets: 1000,
                dropped: 7
            }
        );
    }

    #[test]
    fn a_class_is_put_back_with_its_buckets() {
        let text = "class htb 1:10 root prio 0 rate 10Mbit ceil 40Mbit burst 2500b cburst 9Kb \n";
        let was = &parse_class_stats(text)[0];
        assert_eq!(
            change_first_class("x", was).to_string(),
            "tc -n wb-x-dut class change dev eth1 parent 1: classid 1:10 htb rate 10Mbit ceil 40Mbit burst 2500b cburst 9Kb quantum 1514"
        );
    }

    #[test]
    fn classes_match_addresses_and_source_ports() {
        // The RTX2000's `queue class filter 1 1 ip * * udp * *`, narrowed to one sender.
        let spec = ShaperSpec::parse(
            "[[class]]\nname = \"a\"\nprotocol = \"udp\"\nsrc = \"198.18.1.0/24\"\ndst = \"198.18.2.1\"\nsrc_ports = [49184, 49185]\nrate = \"10M\"\n",
        )
        .unwrap();
        let filters: Vec<String> = spec
            .commands("ns", "eth1")
            .iter()
            .map(ToString::to_string)
            .filter(|l| l.contains(" filter "))
            .collect();
        assert_eq!(filters.len(), 2, "{filters:?}");
        for (f, port) in filters.iter().zip([49184, 49185]) {
            assert!(
                f.contains("match ip protocol 17 0xff match ip src 198.18.1.0/24 match ip dst 198.18.2.1/32")
                    && f.contains(&format!("match ip sport {port} 0xffff flowid 1:10")),
                "{f}"
            );
        }
        let bad = |extra: &str| {
            ShaperSpec::parse(&format!(
                "[[class]]\nname = \"a\"\nrate = \"1M\"\n{extra}\n"
            ))
            .unwrap_err()
            .to_string()
        };
        assert!(bad("src = \"10.0.0.300\"").contains("src '10.0.0.300' is not an IPv4"));
        assert!(bad("dst = \"1.2.3.4/33\"").contains("dst"));
        assert!(bad("src_ports = [1]").contains("ports need protocol"));
    }

    #[test]
    fn bad_class_lists_name_the_problem() {
        let e = ShaperSpec::parse("[[class]]\nname = \"a\"\nrate = \"10M\"\nbogus = 1\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bogus") && e.contains("line 4"), "{e}");
        let e = ShaperSpec::parse("[[class]]\nname = \"a\"\nrate = \"fast\"\n").unwrap_err();
        assert_eq!(
            e,
            ShaperError::Quantity(QuantityError::NotANumber {
                what: "rate",
                value: "fast".into()
            })
        );
        assert_eq!(
            e.to_string(),
            "rate 'fast' is not a number with an optional k/M/G suffix"
        );
        let e =
            ShaperSpec::parse("[[class]]\nname = \"a\"\nports = [1]\nrate = \"1M\"\n").unwrap_err();
        assert_eq!(e, ShaperError::PortsWithoutProtocol("a".into()));
        assert_eq!(e.to_string(), "class 'a': ports need protocol udp or tcp");
        assert!(ShaperSpec::parse("")
            .unwrap_err()
            .to_string()
            .contains("class"));
        let none = ShaperSpec {
            class: vec![],
            default: None,
        };
        assert_eq!(none.check(), Err(ShaperError::NoClasses));
        let e = ShaperSpec::parse("[[class]]\nname = \"a\"\nrate = \"1M\"\ndst = \"1.2.3.4/33\"\n")
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "class 'a': dst '1.2.3.4/33' is not an IPv4 address or prefix (e.g. 198.18.1.0/24)"
        );
        let e = ShaperSpec::parse("[[class]]\nname = \"a\"\nrate = \"0.5\"\n").unwrap_err();
        assert_eq!(e.to_string(), "rate '0.5' must be positive");
    }
}
