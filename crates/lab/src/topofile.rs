//! A lab described in a file (TOML): nodes with a role, links between named ports with
//! their own rate, MTU, impairment and addresses, and which nodes talk and listen. This
//! module reads and checks such a file and works out each link's subnet and each port's
//! address; every error names the file, the line and the field.
//!
//! ```toml
//! [[node]]
//! name = "talker"
//! role = "host"            # host, switch, router, shaper, impair, relay
//! talker = true            # optional: a plan's server-based tests start here (listener: where they end)
//!
//! [[node]]
//! name = "sw"
//! role = "switch"          # a Linux bridge: vlan_filtering, ageing_s, learning_limit
//! learning_limit = 512
//!
//! [[node]]
//! name = "sh"
//! role = "shaper"          # a router with a shaper on one port's egress:
//! shape = "classes.toml"   #   HTB classes (a class list, beside this file), or
//! # egress = "20M"         #   one FIFO at a port rate
//! egress_port = "eth1"     # optional: else its second port in file order
//!
//! [[node]]
//! name = "wan"
//! role = "impair"          # two ports; forwards through the impairment stage
//! impair = "delay=20ms,loss=0.1%"   # first port to second: forward
//! # bridge = true          # optional: forward as a bridge, without addresses (always so
//!                          #   next to a relay)
//!
//! [[node]]
//! name = "split"
//! role = "relay"           # an 802.1CB relay: one port to a host, two or more paths
//! frer = "history=2048"    # optional: history, reset_ms, elimination, mode, fast
//!
//! [[link]]
//! a = "talker:eth0"
//! b = "sw:p1"
//! subnet = "198.18.5.0/24" # optional: else 198.18.N.0/24, N from 1 up, unused ones
//! a_addr = "198.18.5.10"   # optional: else the subnet's next free host address
//! a_mac = "02:77:62:00:01:01"   # optional: else the lab numbers it
//! rate = "100M"            # optional: the most the link carries, bit/s
//! mtu = 9000               # optional
//! impair = "delay=5ms"     # optional: through the impairment stage
//! ```
//!
//! A switch's ports carry no address: every link to one switch is one subnet, its hosts'
//! ports numbered in file order. Relays carry none either: a relay pair joins its two
//! hosts in one subnet, over paths that are direct links between the relays or cross an
//! impair node each (which then forwards as a bridge, without addresses). What it does not do: build the lab (namespaces, veths,
//! bridges, routes): that is `topology`'s.

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;

use serde::Deserialize;
use toml::Spanned;

use crate::impair::spec::ImpairSpec;
use crate::relay::options::FrerLabOptions;

/// What a node does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// An end host: it runs tests.
    Host,
    /// A Linux bridge over its ports.
    Switch,
    /// Forwards IPv4 between its ports.
    Router,
    /// A router with a class-based shaper on its egress.
    Shaper,
    /// A router whose forwarding goes through the impairment stage.
    Impair,
    /// An IEEE 802.1CB relay.
    Relay,
}

impl Role {
    const NAMES: [(&'static str, Role); 6] = [
        ("host", Role::Host),
        ("switch", Role::Switch),
        ("router", Role::Router),
        ("shaper", Role::Shaper),
        ("impair", Role::Impair),
        ("relay", Role::Relay),
    ];

    fn parse(s: &str) -> Option<Role> {
        Self::NAMES.iter().find(|(n, _)| *n == s).map(|(_, r)| *r)
    }

    /// It forwards IPv4 in its kernel (a router, a shaper).
    pub fn forwards(self) -> bool {
        matches!(self, Role::Router | Role::Shaper)
    }

    /// Other nodes route through it: it forwards, or its stage does (an impair node).
    pub fn routes(self) -> bool {
        self.forwards() || self == Role::Impair
    }

    /// Its name in a file.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, r)| *r == self)
            .map_or("?", |(n, _)| n)
    }
}

/// A switch's bridge settings, where the kernel has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SwitchSettings {
    /// 802.1Q VLAN filtering on the bridge.
    pub vlan_filtering: bool,
    /// FDB ageing time, s (the kernel's default 300 when absent).
    pub ageing_s: Option<u32>,
    /// The most addresses it learns (`fdb_max_learned`, Linux 6.7+).
    pub learning_limit: Option<u32>,
}

/// A shaper node's shaper, as the file gives it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShaperSettings {
    /// A class list file, as written (relative to the topology file).
    pub classes: Option<String>,
    /// Or a plain port rate, bit/s.
    pub egress_bps: Option<u64>,
    /// The port whose egress is shaped (`None`: its second port in file order).
    pub port: Option<String>,
}

/// One checked node.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Its name (a namespace's last part).
    pub name: String,
    /// What it does.
    pub role: Role,
    /// Marked as where tests start (read and checked; nothing uses it yet).
    pub talker: bool,
    /// Marked as where tests end: a plan's server runs there.
    pub listener: bool,
    /// Its bridge settings (a switch).
    pub switch: SwitchSettings,
    /// Its shaper (a shaper).
    pub shaper: ShaperSettings,
    /// Its impairment (an impair node; `None`: none, the stage only forwards).
    pub impair: Option<ImpairSpec>,
    /// An impair node that forwards as a bridge, without addresses: one between two relays
    /// (a stage on one of their paths), or one marked `bridge = true`.
    pub bridging: bool,
    /// Its FRER settings (a relay; the defaults when the file gives none).
    pub frer: FrerLabOptions,
}

impl Node {
    /// How an error names it: its role, or "bridging stage".
    fn describe(&self) -> &'static str {
        if self.bridging {
            "bridging stage"
        } else {
            self.role.name()
        }
    }

    /// It joins its links into one subnet and has no address: a switch, a relay, an
    /// impair node between relays.
    pub fn layer2(&self) -> bool {
        matches!(self.role, Role::Switch | Role::Relay) || self.bridging
    }
}

/// `NODE:PORT`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Port {
    /// The node.
    pub node: String,
    /// The interface name in its namespace.
    pub port: String,
}

impl std::fmt::Display for Port {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.node, self.port)
    }
}

/// One checked link, its ends' addresses worked out (none on a switch's port).
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// One end and its address.
    pub a: (Port, Option<Ipv4Addr>),
    /// The other end and its address.
    pub b: (Port, Option<Ipv4Addr>),
    /// Its ends' MACs, where the file gives them (else the lab numbers them).
    pub macs: [Option<[u8; 6]>; 2],
    /// Its subnet: (network, prefix length).
    pub subnet: (Ipv4Addr, u8),
    /// The most it carries, bit/s.
    pub rate_bps: Option<u64>,
    /// Its MTU.
    pub mtu: Option<u16>,
    /// Its impairment.
    pub impair: Option<ImpairSpec>,
}

/// A checked topology file.
#[derive(Debug, Clone, PartialEq)]
pub struct TopologyFile {
    /// Nodes in file order.
    pub nodes: Vec<Node>,
    /// Links in file order.
    pub links: Vec<Link>,
}

/// What is wrong with a topology file: where, which field, what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {field}: {problem}")]
pub struct TopoFileError {
    /// The file as named.
    pub file: String,
    /// The line, from 1 (0: the file as a whole).
    pub line: usize,
    /// The field (`node[2].role`, `link[1].b`).
    pub field: String,
    /// What is wrong.
    pub problem: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileToml {
    #[serde(default)]
    node: Vec<NodeToml>,
    #[serde(default)]
    link: Vec<LinkToml>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeToml {
    name: Spanned<String>,
    role: Spanned<String>,
    #[serde(default)]
    talker: bool,
    #[serde(default)]
    listener: bool,
    vlan_filtering: Option<Spanned<bool>>,
    ageing_s: Option<Spanned<u32>>,
    learning_limit: Option<Spanned<u32>>,
    shape: Option<Spanned<String>>,
    egress: Option<Spanned<String>>,
    egress_port: Option<Spanned<String>>,
    impair: Option<Spanned<String>>,
    bridge: Option<Spanned<bool>>,
    frer: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkToml {
    a: Spanned<String>,
    b: Spanned<String>,
    subnet: Option<Spanned<String>>,
    a_addr: Option<Spanned<String>>,
    b_addr: Option<Spanned<String>>,
    a_mac: Option<Spanned<String>>,
    b_mac: Option<Spanned<String>>,
    rate: Option<Spanned<String>>,
    mtu: Option<Spanned<u32>>,
    impair: Option<Spanned<String>>,
}

/// The auto subnets: 198.18.N.0/24.
const AUTO_BASE: [u8; 2] = [198, 18];

impl TopologyFile {
    /// Reads and checks `text`, the contents of `file`.
    ///
    /// # Errors
    /// The first problem, with the file, line and field.
    pub fn parse(file: &str, text: &str) -> Result<Self, TopoFileError> {
        let err = |line: usize, field: String, problem: String| TopoFileError {
            file: file.to_owned(),
            line,
            field,
            problem,
        };
        let at = |span: std::ops::Range<usize>| {
            text[..span.start.min(text.len())].matches('\n').count() + 1
        };
        let t: FileToml = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(0, &at);
            err(line, "syntax".into(), e.message().to_owned())
        })?;
        if t.node.is_empty() {
            return Err(err(0, "node".into(), "the file has no [[node]]".into()));
        }
        let mut nodes: Vec<Node> = Vec::new();
        for (i, n) in t.node.iter().enumerate() {
            let field = |f: &str| format!("node[{}].{f}", i + 1);
            let name = n.name.get_ref();
            if crate::naming::check(name).is_err() || name.contains('-') {
                return Err(err(
                    at(n.name.span()),
                    field("name"),
                    format!("'{name}': 1 to 8 characters of a-z and 0-9"),
                ));
            }
            if nodes.iter().any(|x| &x.name == name) {
                return Err(err(
                    at(n.name.span()),
                    field("name"),
                    format!("a second node named '{name}'"),
                ));
            }
            let role = Role::parse(n.role.get_ref()).ok_or_else(|| {
                let names: Vec<&str> = Role::NAMES.iter().map(|(n, _)| *n).collect();
                err(
                    at(n.role.span()),
                    field("role"),
                    format!(
                        "unknown role '{}': one of {}",
                        n.role.get_ref(),
                        names.join(", ")
                    ),
                )
            })?;
            let bridge_keys = [
                n.vlan_filtering.as_ref().map(Spanned::span),
                n.ageing_s.as_ref().map(Spanned::span),
                n.learning_limit.as_ref().map(Spanned::span),
            ];
            if let Some(span) = bridge_keys.into_iter().flatten().next() {
                if role != Role::Switch {
                    return Err(err(
                        at(span),
                        field("role"),
                        "bridge settings belong to a switch".into(),
                    ));
                }
            }
            let shaper_keys = [&n.shape, &n.egress, &n.egress_port];
            if let Some(k) = shaper_keys.into_iter().flatten().next() {
                if role != Role::Shaper {
                    return Err(err(
                        at(k.span()),
                        field("role"),
                        "shape, egress and egress_port belong to a shaper".into(),
                    ));
                }
            }
            if let (Some(_), Some(e)) = (&n.shape, &n.egress) {
                return Err(err(
                    at(e.span()),
                    field("egress"),
                    "give the classes (shape) or a plain port rate (egress), not both".into(),
                ));
            }
            if role == Role::Shaper && n.shape.is_none() && n.egress.is_none() {
                return Err(err(
                    at(n.role.span()),
                    field("shape"),
                    "a shaper needs its classes (shape = \"FILE.toml\") or a port rate (egress = \"20M\")".into(),
                ));
            }
            let egress_bps = rate(n.egress.as_ref(), "20M")
                .map_err(|(span, problem)| err(at(span), field("egress"), problem))?;
            let impair = match &n.impair {
                Some(v) if role != Role::Impair => {
                    return Err(err(
                        at(v.span()),
                        field("role"),
                        "impair belongs to an impair node (a link takes its own impair)".into(),
                    ))
                }
                Some(v) => Some(
                    ImpairSpec::parse_inline(v.get_ref())
                        .map_err(|e| err(at(v.span()), field("impair"), e.to_string()))?,
                ),
                None => None,
            };
            if let Some(b) = &n.bridge {
                if role != Role::Impair {
                    return Err(err(
                        at(b.span()),
                        field("role"),
                        "bridge belongs to an impair node".into(),
                    ));
                }
            }
            let frer = match &n.frer {
                Some(v) if role != Role::Relay => {
                    return Err(err(
                        at(v.span()),
                        field("role"),
                        "frer belongs to a relay".into(),
                    ))
                }
                Some(v) => FrerLabOptions::parse_inline(v.get_ref())
                    .map_err(|e| err(at(v.span()), field("frer"), e.to_string()))?,
                None => FrerLabOptions::default(),
            };
            nodes.push(Node {
                name: name.clone(),
                role,
                talker: n.talker,
                listener: n.listener,
                shaper: ShaperSettings {
                    classes: n.shape.as_ref().map(|v| v.get_ref().clone()),
                    egress_bps,
                    port: n.egress_port.as_ref().map(|v| v.get_ref().clone()),
                },
                impair,
                bridging: n.bridge.as_ref().is_some_and(|b| *b.get_ref()),
                frer,
                switch: SwitchSettings {
                    vlan_filtering: n.vlan_filtering.as_ref().is_some_and(|v| *v.get_ref()),
                    ageing_s: n.ageing_s.as_ref().map(|v| *v.get_ref()),
                    learning_limit: n.learning_limit.as_ref().map(|v| *v.get_ref()),
                },
            });
        }
        let role_of = |node: &str| nodes.iter().find(|n| n.name == node).map(|n| n.role);
        let mut used: BTreeMap<Port, usize> = BTreeMap::new();
        let mut checked = Vec::new();
        for (i, l) in t.link.iter().enumerate() {
            let field = |f: &str| format!("link[{}].{f}", i + 1);
            let mut ends = Vec::new();
            for (key, v) in [("a", &l.a), ("b", &l.b)] {
                let line = at(v.span());
                let (node, port) = v.get_ref().split_once(':').ok_or_else(|| {
                    err(
                        line,
                        field(key),
                        format!("'{}': give NODE:PORT", v.get_ref()),
                    )
                })?;
                if role_of(node).is_none() {
                    return Err(err(line, field(key), format!("no node named '{node}'")));
                }
                let port_ok = (1..=15).contains(&port.len())
                    && port.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
                if !port_ok {
                    return Err(err(
                        line,
                        field(key),
                        format!("port '{port}': 1 to 15 letters, digits or _"),
                    ));
                }
                let p = Port {
                    node: node.to_owned(),
                    port: port.to_owned(),
                };
                if let Some(first) = used.insert(p.clone(), i + 1) {
                    return Err(err(
                        line,
                        field(key),
                        format!("port {p} is already an end of link[{first}]"),
                    ));
                }
                ends.push(p);
            }
            let (a, b) = (ends[0].clone(), ends[1].clone());
            if a.node == b.node {
                return Err(err(
                    at(l.b.span()),
                    field("b"),
                    format!("a link from node '{}' to itself", a.node),
                ));
            }
            let rate_bps = rate(l.rate.as_ref(), "100M")
                .map_err(|(span, problem)| err(at(span), field("rate"), problem))?;
            let mtu = match &l.mtu {
                Some(m) => Some(
                    u16::try_from(*m.get_ref())
                        .ok()
                        .filter(|v| *v >= 68)
                        .ok_or_else(|| {
                            err(at(m.span()), field("mtu"), "68..=65535 bytes".into())
                        })?,
                ),
                None => None,
            };
            let impair = match &l.impair {
                Some(s) => Some(
                    ImpairSpec::parse_inline(s.get_ref())
                        .map_err(|e| err(at(s.span()), field("impair"), e.to_string()))?,
                ),
                None => None,
            };
            checked.push((l, a, b, rate_bps, mtu, impair));
        }
        // An impair node next to a relay is a stage on one of its paths: a bridge.
        let next_to_relays: Vec<String> = nodes
            .iter()
            .filter(|n| n.role == Role::Impair)
            .filter(|n| {
                neighbours(&checked, &n.name)
                    .iter()
                    .any(|(_, m)| role_of(m) == Some(Role::Relay))
            })
            .map(|n| n.name.clone())
            .collect();
        for n in nodes.iter_mut() {
            n.bridging |= next_to_relays.contains(&n.name);
        }
        let role_of = |node: &str| nodes.iter().find(|n| n.name == node).map(|n| n.role);
        if let Some((i, cycle)) = loop_without_switch(&nodes, &checked) {
            return Err(err(
                at(checked[i].0.a.span()),
                format!("link[{}]", i + 1),
                format!(
                    "a loop without a switch ({}): its routes would be ambiguous; break it \
                     or join its ends through a switch",
                    cycle.join(" - ")
                ),
            ));
        }
        if let Some(i) = layer2_loop(&nodes, &checked) {
            return Err(err(
                at(checked[i].0.a.span()),
                format!("link[{}]", i + 1),
                "it closes a loop of switches or bridging impair nodes, where frames would \
                 circle (no spanning tree here); only a relay pair's paths may form a loop"
                    .into(),
            ));
        }
        let ports_of = |node: &str| -> Vec<&Port> {
            checked
                .iter()
                .flat_map(|(_, a, b, ..)| [a, b])
                .filter(|p| p.node == node)
                .collect()
        };
        for (i, (n, toml)) in nodes.iter().zip(&t.node).enumerate() {
            let field = |f: &str| format!("node[{}].{f}", i + 1);
            let ports = ports_of(&n.name);
            if let (Some(p), Some(span)) = (&n.shaper.port, &toml.egress_port) {
                if !ports.iter().any(|x| &x.port == p) {
                    return Err(err(
                        at(span.span()),
                        field("egress_port"),
                        format!("'{}' has no port {p}", n.name),
                    ));
                }
            }
            if n.role == Role::Shaper && n.shaper.port.is_none() && ports.len() < 2 {
                return Err(err(
                    at(toml.role.span()),
                    field("egress_port"),
                    format!(
                        "'{}' has {} port(s): give egress_port, or link it on both sides",
                        n.name,
                        ports.len()
                    ),
                ));
            }
            let linked = neighbours(&checked, &n.name);
            let next: Vec<Option<Role>> = linked.iter().map(|(_, m)| role_of(m)).collect();
            let near_relay = n.role == Role::Impair && next.contains(&Some(Role::Relay));
            if near_relay && (ports.len() != 2 || next.iter().any(|r| *r != Some(Role::Relay))) {
                return Err(err(
                    at(toml.role.span()),
                    field("role"),
                    format!(
                        "an impair node next to a relay is a stage on one of its paths: two \
                         ports, each linked to a relay; '{}' has {} port(s), linked to {}",
                        n.name,
                        ports.len(),
                        linked
                            .iter()
                            .map(|(_, m)| format!("'{m}'"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            if n.bridging && ports.len() != 2 {
                return Err(err(
                    at(toml.role.span()),
                    field("role"),
                    format!(
                        "a bridging impair node forwards between exactly two ports; '{}' has {}",
                        n.name,
                        ports.len()
                    ),
                ));
            }
            if n.role == Role::Relay {
                relay_check(&nodes, &checked, &n.name)
                    .map_err(|problem| err(at(toml.role.span()), field("role"), problem))?;
            }
            if n.role == Role::Impair
                && !n.bridging
                && (ports.len() != 2 || next.contains(&Some(Role::Switch)))
            {
                return Err(err(
                    at(toml.role.span()),
                    field("role"),
                    format!(
                        "an impair node forwards between exactly two ports, each linked to a \
                         node with an address (not a switch); '{}' has {} port(s)",
                        n.name,
                        ports.len()
                    ),
                ));
            }
        }
        let links = address(&nodes, checked, &err, &at)?;
        Ok(Self { nodes, links })
    }
}

/// A rate key's value in bit/s, if given; else where it is and what is wrong (`example`
/// shows a good one).
fn rate(
    v: Option<&Spanned<String>>,
    example: &str,
) -> Result<Option<u64>, (std::ops::Range<usize>, String)> {
    let Some(r) = v else { return Ok(None) };
    model::units::positive_rate_bps(r.get_ref())
        .map(|v| Some(v as u64))
        .ok_or_else(|| {
            (
                r.span(),
                format!(
                    "'{}' is not a rate above zero (e.g. {example})",
                    r.get_ref()
                ),
            )
        })
}

type Checked<'a> = (
    &'a LinkToml,
    Port,
    Port,
    Option<u64>,
    Option<u16>,
    Option<ImpairSpec>,
);

/// A cycle of nodes none of which is a layer-2 node (a switch, a relay, a bridging impair
/// node), if the links make one: the link that closes it (its index) and the nodes in
/// order around it.
fn loop_without_switch(nodes: &[Node], links: &[Checked<'_>]) -> Option<(usize, Vec<String>)> {
    // Layer-2 segments are another check's (`layer2_loop`), and a relay pair's paths are a
    // loop by design (the relays eliminate what it repeats).
    let layer2 = |n: &str| nodes.iter().any(|x| x.name == n && x.layer2());
    // The links so far form a forest; a link between two nodes it already joins closes a
    // cycle: that path and the link.
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (i, (_, a, b, ..)) in links.iter().enumerate() {
        let (a, b) = (a.node.as_str(), b.node.as_str());
        if layer2(a) || layer2(b) {
            continue;
        }
        if let Some(path) = path_between(&next, a, b) {
            return Some((i, path.into_iter().map(str::to_owned).collect()));
        }
        next.entry(a).or_default().push(b);
        next.entry(b).or_default().push(a);
    }
    None
}

/// The nodes from `from` to `to` over `next` (a forest), both included.
fn path_between<'a>(
    next: &BTreeMap<&'a str, Vec<&'a str>>,
    from: &'a str,
    to: &'a str,
) -> Option<Vec<&'a str>> {
    let mut came: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([from]);
    came.insert(from, from);
    while let Some(n) = queue.pop_front() {
        if n == to {
            let mut path = vec![to];
            let mut at = to;
            while at != from {
                at = came[at];
                path.push(at);
            }
            path.reverse();
            return Some(path);
        }
        for &m in next.get(n).into_iter().flatten() {
            if !came.contains_key(m) {
                came.insert(m, n);
                queue.push_back(m);
            }
        }
    }
    None
}

/// Each link's subnet and its ends' addresses: a link between two nodes that are not
/// switches is a subnet of its own; every link to one switch shares that switch's.
fn address(
    nodes: &[Node],
    links: Vec<Checked<'_>>,
    err: &dyn Fn(usize, String, String) -> TopoFileError,
    at: &dyn Fn(std::ops::Range<usize>) -> usize,
) -> Result<Vec<Link>, TopoFileError> {
    let layer2 = |n: &str| nodes.iter().find(|x| x.name == n && x.layer2());
    let segments = layer2_segments(nodes, &links);
    // The segment of each link: its switch's (or relay pair's) name, or the link itself.
    let segment = |i: usize, a: &Port, b: &Port| -> String {
        match [a, b]
            .into_iter()
            .find_map(|p| segments.get(p.node.as_str()))
        {
            Some(first) => match nodes.iter().find(|x| x.name == *first) {
                Some(x) if x.role == Role::Switch => format!("switch {first}"),
                _ => format!("the layer-2 segment of {first}"),
            },
            None => format!("link[{}]", i + 1),
        }
    };
    // Subnets given, per segment; they must agree within one and not overlap another's.
    let mut subnets: BTreeMap<String, (Ipv4Addr, u8)> = BTreeMap::new();
    for (i, (l, a, b, ..)) in links.iter().enumerate() {
        let Some(s) = &l.subnet else { continue };
        let field = format!("link[{}].subnet", i + 1);
        let net = parse_subnet(s.get_ref()).ok_or_else(|| {
            err(
                at(s.span()),
                field.clone(),
                format!("'{}': give A.B.C.D/N", s.get_ref()),
            )
        })?;
        let seg = segment(i, a, b);
        if let Some(other) = subnets.get(&seg).filter(|o| **o != net) {
            return Err(err(
                at(s.span()),
                field,
                format!("{seg} is already {}/{}", other.0, other.1),
            ));
        }
        if let Some((other_seg, o)) = subnets
            .iter()
            .find(|(k, o)| **k != seg && overlaps(**o, net))
        {
            return Err(err(
                at(s.span()),
                field,
                format!("overlaps {}/{} of {other_seg}", o.0, o.1),
            ));
        }
        subnets.insert(seg, net);
    }
    let mut next_auto = 1u8;
    let mut macs: BTreeMap<[u8; 6], String> = BTreeMap::new();
    let mut taken: BTreeMap<String, BTreeSet<Ipv4Addr>> = BTreeMap::new();
    let mut out = Vec::new();
    for (i, (l, a, b, rate_bps, mtu, impair)) in links.into_iter().enumerate() {
        let seg = segment(i, &a, &b);
        let net = match subnets.get(&seg) {
            Some(n) => *n,
            None => {
                let n = loop {
                    let cand = (Ipv4Addr::new(AUTO_BASE[0], AUTO_BASE[1], next_auto, 0), 24);
                    if next_auto == 255 {
                        return Err(err(0, "link".into(), "more than 254 subnets".into()));
                    }
                    next_auto += 1;
                    if !subnets.values().any(|o| overlaps(*o, cand)) {
                        break cand;
                    }
                };
                subnets.insert(seg.clone(), n);
                n
            }
        };
        let used = taken.entry(seg.clone()).or_default();
        let mut end = |p: &Port, given: &Option<Spanned<String>>, key: &str| {
            let field = format!("link[{}].{key}", i + 1);
            if let Some(x) = layer2(&p.node) {
                return match given {
                    Some(g) => Err(err(
                        at(g.span()),
                        field,
                        format!("a {}'s port has no address", x.describe()),
                    )),
                    None => Ok(None),
                };
            }
            let addr = match given {
                Some(g) => {
                    let a: Ipv4Addr = g.get_ref().parse().map_err(|_| {
                        err(
                            at(g.span()),
                            field.clone(),
                            format!("'{}' is not an IPv4 address", g.get_ref()),
                        )
                    })?;
                    if !within(net, a) {
                        return Err(err(
                            at(g.span()),
                            field,
                            format!("{a} is outside the link's subnet {}/{}", net.0, net.1),
                        ));
                    }
                    a
                }
                None => next_free(net, used).ok_or_else(|| {
                    err(
                        0,
                        field.clone(),
                        format!("subnet {}/{} is full", net.0, net.1),
                    )
                })?,
            };
            if !used.insert(addr) {
                let line = given.as_ref().map_or(0, |g| at(g.span()));
                return Err(err(
                    line,
                    field,
                    format!("address {addr} is used twice in {seg}"),
                ));
            }
            Ok(Some(addr))
        };
        let a_addr = end(&a, &l.a_addr, "a_addr")?;
        let b_addr = end(&b, &l.b_addr, "b_addr")?;
        let mut mac = |given: &Option<Spanned<String>>, key: &str| match given {
            None => Ok(None),
            Some(g) => {
                let field = format!("link[{}].{key}", i + 1);
                let m = model::units::mac(g.get_ref())
                    .ok()
                    .filter(|m| wire::EthernetAddress(*m).is_unicast() && *m != [0; 6])
                    .ok_or_else(|| {
                        err(
                            at(g.span()),
                            field.clone(),
                            format!("'{}' is not a unicast MAC address", g.get_ref()),
                        )
                    })?;
                // The lab numbers the ends not given as 02:77:62:f0:.. and its link stages'
                // ports as 02:77:62:f1:..: a given one there could clash.
                if m[..3] == [0x02, 0x77, 0x62] && (m[3] == 0xf0 || m[3] == 0xf1) {
                    return Err(err(
                        at(g.span()),
                        field,
                        format!(
                            "{} is in 02:77:62:f0-f1:.., the MACs the lab gives the ends not \
                             given",
                            g.get_ref()
                        ),
                    ));
                }
                if let Some(first) = macs.insert(m, field.clone()) {
                    return Err(err(
                        at(g.span()),
                        field,
                        format!("{} is {first}'s too", g.get_ref()),
                    ));
                }
                Ok(Some(m))
            }
        };
        let link_macs = [mac(&l.a_mac, "a_mac")?, mac(&l.b_mac, "b_mac")?];
        out.push(Link {
            a: (a, a_addr),
            b: (b, b_addr),
            macs: link_macs,
            subnet: net,
            rate_bps,
            mtu,
            impair,
        });
    }
    Ok(out)
}

/// The link that closes a loop of layer-2 nodes (a switch, a bridging impair node), if
/// any: frames would circle it. A relay pair's own links (between relays and the stages on
/// their paths) are left out: their loop is by design, its copies eliminated.
fn layer2_loop(nodes: &[Node], links: &[Checked<'_>]) -> Option<usize> {
    let node = |n: &str| nodes.iter().find(|x| x.name == n);
    let relay = |n: &str| node(n).is_some_and(|x| x.role == Role::Relay);
    // A relay, or a bridging stage on one of its paths.
    let near_relay = |n: &str| {
        relay(n)
            || node(n).is_some_and(|x| x.bridging)
                && neighbours(links, n).iter().any(|(_, m)| relay(m))
    };
    // Union-find over layer-2 nodes; any other end is a leaf of its own (node:port).
    let mut parent: BTreeMap<String, String> = BTreeMap::new();
    fn root(parent: &mut BTreeMap<String, String>, v: &str) -> String {
        let mut v = v.to_owned();
        while let Some(p) = parent.get(&v).filter(|p| **p != v).cloned() {
            v = p;
        }
        v
    }
    let l2 = |p: &Port| node(&p.node).is_some_and(Node::layer2);
    for (i, (_, a, b, ..)) in links.iter().enumerate() {
        if !(l2(a) || l2(b)) || (near_relay(&a.node) && near_relay(&b.node)) {
            continue;
        }
        let vertex = |p: &Port| if l2(p) { p.node.clone() } else { p.to_string() };
        let (x, y) = (root(&mut parent, &vertex(a)), root(&mut parent, &vertex(b)));
        if x == y {
            return Some(i);
        }
        parent.insert(x, y);
    }
    None
}

/// Each layer-2 node's segment: the first layer-2 node (in file order) it is joined to
/// through layer-2 nodes alone.
fn layer2_segments<'n>(nodes: &'n [Node], links: &[Checked<'_>]) -> BTreeMap<&'n str, &'n str> {
    let mut out: BTreeMap<&str, &str> = BTreeMap::new();
    for first in nodes.iter().filter(|n| n.layer2()) {
        if out.contains_key(first.name.as_str()) {
            continue;
        }
        let mut queue = vec![first.name.as_str()];
        while let Some(n) = queue.pop() {
            if out.insert(n, first.name.as_str()).is_some() {
                continue;
            }
            for (_, m) in neighbours(links, n) {
                if let Some(x) = nodes.iter().find(|x| x.name == m && x.layer2()) {
                    queue.push(x.name.as_str());
                }
            }
        }
    }
    out
}

/// The nodes linked to `node`: (its port, the neighbour's name), in link order.
fn neighbours(links: &[Checked<'_>], node: &str) -> Vec<(String, String)> {
    links
        .iter()
        .filter_map(|(_, a, b, ..)| {
            if a.node == node {
                Some((a.port.clone(), b.node.clone()))
            } else if b.node == node {
                Some((b.port.clone(), a.node.clone()))
            } else {
                None
            }
        })
        .collect()
}

/// A relay's ports: one linked to a host (its edge), two or more paths that each lead to
/// the same other relay, directly or through one impair node (IEEE 802.1CB's replication
/// and elimination between two relays). What is wrong, if anything.
fn relay_check(nodes: &[Node], links: &[Checked<'_>], relay: &str) -> Result<(), String> {
    let role_of = |n: &str| nodes.iter().find(|x| x.name == n).map(|x| x.role);
    let next = neighbours(links, relay);
    let hosts: Vec<&(String, String)> = next
        .iter()
        .filter(|(_, m)| role_of(m) == Some(Role::Host))
        .collect();
    if hosts.len() != 1 {
        return Err(format!(
            "a relay has one port linked to a host (its edge); '{relay}' has {}",
            hosts.len()
        ));
    }
    let mut peers = BTreeSet::new();
    for (port, m) in next.iter().filter(|(_, m)| role_of(m) != Some(Role::Host)) {
        let peer = match role_of(m) {
            Some(Role::Relay) => Some(m.clone()),
            Some(Role::Impair) => neighbours(links, m)
                .into_iter()
                .map(|(_, x)| x)
                .find(|x| x != relay && role_of(x) == Some(Role::Relay)),
            _ => None,
        };
        let Some(peer) = peer else {
            return Err(format!(
                "'{relay}' port {port} leads to '{m}', not to another relay (directly or \
                 through one impair node)"
            ));
        };
        peers.insert(peer);
    }
    let paths = next.len() - 1;
    match (peers.len(), paths) {
        (1, 2..) => Ok(()),
        (1, _) => Err(format!(
            "'{relay}' has {paths} path(s) to its peer: a relay replicates onto two or more"
        )),
        (0, _) => Err(format!("'{relay}' has no path to another relay")),
        _ => Err(format!(
            "'{relay}' has paths to {} relays ({}): all its paths lead to one peer",
            peers.len(),
            peers.into_iter().collect::<Vec<_>>().join(", ")
        )),
    }
}

fn parse_subnet(s: &str) -> Option<(Ipv4Addr, u8)> {
    let (ip, len) = s.split_once('/')?;
    let ip: Ipv4Addr = ip.trim().parse().ok()?;
    let len: u8 = len.trim().parse().ok().filter(|l| (8..=30).contains(l))?;
    (u32::from(ip) & !mask(len) == 0).then_some((ip, len))
}

fn mask(len: u8) -> u32 {
    u32::MAX << (32 - u32::from(len))
}

fn within(net: (Ipv4Addr, u8), a: Ipv4Addr) -> bool {
    u32::from(a) & mask(net.1) == u32::from(net.0)
        && u32::from(a) != u32::from(net.0)
        && u32::from(a) != u32::from(net.0) | !mask(net.1)
}

fn overlaps(x: (Ipv4Addr, u8), y: (Ipv4Addr, u8)) -> bool {
    let m = mask(x.1.min(y.1));
    u32::from(x.0) & m == u32::from(y.0) & m
}

/// The lowest host address of `net` not in `used`.
fn next_free(net: (Ipv4Addr, u8), used: &BTreeSet<Ipv4Addr>) -> Option<Ipv4Addr> {
    let base = u32::from(net.0);
    let hosts = !mask(net.1);
    (1..hosts)
        .map(|h| Ipv4Addr::from(base | h))
        .find(|a| !used.contains(a))
}

#[cfg(test)]
mod test {
    use super::*;

    fn parse(text: &str) -> Result<TopologyFile, TopoFileError> {
        TopologyFile::parse("t.toml", text)
    }

    fn ip(s: &str) -> Option<Ipv4Addr> {
        Some(s.parse().unwrap())
    }

    /// `n` nodes of `role` named by `names`, then `links` as (a, b) pairs.
    fn file(nodes: &[(&str, &str)], links: &[(&str, &str)]) -> String {
        let mut s = String::new();
        for (name, role) in nodes {
            s += &format!("[[node]]\nname = \"{name}\"\nrole = \"{role}\"\n\n");
        }
        for (a, b) in links {
            s += &format!("[[link]]\na = \"{a}\"\nb = \"{b}\"\n\n");
        }
        s
    }

    #[test]
    fn a_switch_with_four_hosts_is_one_subnet() {
        let mut text =
            String::from("[[node]]\nname = \"sw\"\nrole = \"switch\"\nlearning_limit = 512\n\n");
        text += &file(
            &[
                ("h1", "host"),
                ("h2", "host"),
                ("h3", "host"),
                ("h4", "host"),
            ],
            &[
                ("h1:eth0", "sw:p1"),
                ("h2:eth0", "sw:p2"),
                ("sw:p3", "h3:eth0"),
                ("h4:eth0", "sw:p4"),
            ],
        );
        let t = parse(&text).unwrap();
        assert_eq!(t.nodes[0].role, Role::Switch);
        assert_eq!(t.nodes[0].switch.learning_limit, Some(512));
        let hosts: Vec<Option<Ipv4Addr>> = t
            .links
            .iter()
            .map(|l| if l.a.0.node == "sw" { l.b.1 } else { l.a.1 })
            .collect();
        assert_eq!(
            hosts,
            [
                ip("198.18.1.1"),
                ip("198.18.1.2"),
                ip("198.18.1.3"),
                ip("198.18.1.4")
            ]
        );
        assert!(t
            .links
            .iter()
            .all(|l| l.subnet == (Ipv4Addr::new(198, 18, 1, 0), 24)));
        let switch_ports: Vec<Option<Ipv4Addr>> = t
            .links
            .iter()
            .map(|l| if l.a.0.node == "sw" { l.a.1 } else { l.b.1 })
            .collect();
        assert!(switch_ports.iter().all(Option::is_none));
    }

    #[test]
    fn a_chain_of_three_hops_is_a_subnet_per_link() {
        let text = file(
            &[
                ("a", "host"),
                ("r1", "router"),
                ("sh", "shaper"),
                ("r2", "router"),
                ("b", "host"),
            ],
            &[
                ("a:eth0", "r1:eth0"),
                ("r1:eth1", "sh:eth0"),
                ("sh:eth1", "r2:eth0"),
                ("r2:eth1", "b:eth0"),
            ],
        )
        .replace(
            "role = \"shaper\"\n",
            "role = \"shaper\"\negress = \"20M\"\n",
        );
        let t = parse(&text).unwrap();
        for (i, l) in t.links.iter().enumerate() {
            let n = u8::try_from(i + 1).unwrap();
            assert_eq!(l.subnet, (Ipv4Addr::new(198, 18, n, 0), 24));
            assert_eq!(
                (l.a.1, l.b.1),
                (
                    Some(Ipv4Addr::new(198, 18, n, 1)),
                    Some(Ipv4Addr::new(198, 18, n, 2))
                )
            );
        }
    }

    #[test]
    fn given_subnets_addresses_rates_and_impairments_are_kept() {
        let mut text = file(&[("a", "host"), ("r", "router"), ("b", "host")], &[]);
        text += "[[link]]\na = \"a:eth0\"\nb = \"r:eth0\"\nrate = \"100M\"\nmtu = 9000\n\
                 impair = \"delay=5ms,loss=1%\"\n\n\
                 [[link]]\na = \"r:eth1\"\nb = \"b:eth0\"\nsubnet = \"198.18.1.0/24\"\n\
                 b_addr = \"198.18.1.200\"\n";
        let t = parse(&text).unwrap();
        // The first link's auto subnet steps over the one the second was given.
        assert_eq!(t.links[0].subnet, (Ipv4Addr::new(198, 18, 2, 0), 24));
        assert_eq!(
            (t.links[0].rate_bps, t.links[0].mtu),
            (Some(100_000_000), Some(9000))
        );
        assert!(t.links[0].impair.is_some());
        assert_eq!(
            (t.links[1].a.1, t.links[1].b.1),
            (ip("198.18.1.1"), ip("198.18.1.200"))
        );
    }

    #[test]
    fn errors_name_the_file_the_line_and_the_field() {
        let hosts = file(&[("a", "host"), ("b", "host"), ("r", "router")], &[]);
        let cases: Vec<(String, &str)> = vec![
            (
                "[[node]]\nname = \"a\"\nrole = \"hub\"\n".into(),
                "t.toml:3: node[1].role: unknown role 'hub': one of host, switch, router",
            ),
            (
                hosts.clone() + "[[link]]\na = \"a:eth0\"\nb = \"r:eth0\"\n[[link]]\na = \"b:eth0\"\nb = \"r:eth0\"\n",
                "t.toml:18: link[2].b: port r:eth0 is already an end of link[1]",
            ),
            (
                hosts.clone() + "[[link]]\na = \"a:eth0\"\nb = \"x:eth0\"\n",
                "t.toml:15: link[1].b: no node named 'x'",
            ),
            (
                hosts.clone() + "[[link]]\na = \"a:eth0\"\nb = \"a:eth1\"\n",
                "t.toml:15: link[1].b: a link from node 'a' to itself",
            ),
            (
                hosts.clone() + "[[link]]\na = \"a\"\nb = \"r:eth0\"\n",
                "t.toml:14: link[1].a: 'a': give NODE:PORT",
            ),
            (
                file(&[("a", "router"), ("b", "router"), ("c", "router")], &[("a:e0", "b:e0"), ("b:e1", "c:e0"), ("c:e1", "a:e1")]),
                "t.toml:22: link[3]: a loop without a switch (c - b - a)",
            ),
            (
                hosts.clone() + "[[link]]\na = \"a:eth0\"\nb = \"r:eth0\"\nsubnet = \"198.18.1.0/24\"\n\
                 [[link]]\na = \"b:eth0\"\nb = \"r:eth1\"\nsubnet = \"198.18.1.128/25\"\n",
                "t.toml:20: link[2].subnet: overlaps 198.18.1.0/24 of link[1]",
            ),
            (
                hosts.clone() + "[[link]]\na = \"a:eth0\"\nb = \"r:eth0\"\nsubnet = \"198.18.1.0/24\"\na_addr = \"198.18.2.1\"\n",
                "t.toml:17: link[1].a_addr: 198.18.2.1 is outside the link's subnet 198.18.1.0/24",
            ),
            (
                "[[node]]\nname = \"Big-Name\"\nrole = \"host\"\n".into(),
                "t.toml:2: node[1].name: 'Big-Name': 1 to 8 characters",
            ),
            (
                "[[node]]\nname = \"a\"\nrole = \"host\"\n[[node]]\nname = \"a\"\nrole = \"host\"\n".into(),
                "t.toml:5: node[2].name: a second node named 'a'",
            ),
            (
                "[[node]]\nname = \"r\"\nrole = \"router\"\nageing_s = 30\n".into(),
                "t.toml:4: node[1].role: bridge settings belong to a switch",
            ),
            (
                "[[node]]\nname = \"a\"\nrole = \"host\"\ncolour = 1\n".into(),
                "t.toml:4: syntax: unknown field `colour`",
            ),
            (
                hosts.clone() + "[[link]]\na = \"a:eth0\"\nb = \"r:eth0\"\nimpair = \"delay=5\"\n",
                "t.toml:16: link[1].impair: delay needs a unit",
            ),
            (
                hosts.clone() + "[[link]]\na = \"a:eth0\"\nb = \"r:eth0\"\nrate = \"fast\"\n",
                "t.toml:16: link[1].rate: 'fast' is not a rate",
            ),
            ("".into(), "t.toml:0: node: the file has no [[node]]"),
            (
                "[[node]]\nname = \"a\"\nrole = \"host\"\nshape = \"c.toml\"\n".into(),
                "t.toml:4: node[1].role: shape, egress and egress_port belong to a shaper",
            ),
            (
                "[[node]]\nname = \"s\"\nrole = \"shaper\"\n".into(),
                "t.toml:3: node[1].shape: a shaper needs its classes",
            ),
            (
                "[[node]]\nname = \"s\"\nrole = \"shaper\"\nshape = \"c.toml\"\negress = \"1M\"\n".into(),
                "t.toml:5: node[1].egress: give the classes (shape) or a plain port rate (egress), not both",
            ),
            (
                "[[node]]\nname = \"s\"\nrole = \"shaper\"\negress = \"fast\"\n".into(),
                "t.toml:4: node[1].egress: 'fast' is not a rate",
            ),
            (
                "[[node]]\nname = \"r\"\nrole = \"router\"\nimpair = \"delay=1ms\"\n".into(),
                "t.toml:4: node[1].role: impair belongs to an impair node",
            ),
            (
                "[[node]]\nname = \"s\"\nrole = \"shaper\"\negress = \"1M\"\negress_port = \"eth7\"\n\
                 [[node]]\nname = \"a\"\nrole = \"host\"\n[[link]]\na = \"a:eth0\"\nb = \"s:eth0\"\n".into(),
                "t.toml:5: node[1].egress_port: 's' has no port eth7",
            ),
            (
                "[[node]]\nname = \"s\"\nrole = \"shaper\"\negress = \"1M\"\n\
                 [[node]]\nname = \"a\"\nrole = \"host\"\n[[link]]\na = \"a:eth0\"\nb = \"s:eth0\"\n".into(),
                "t.toml:3: node[1].egress_port: 's' has 1 port(s)",
            ),
            (
                "[[node]]\nname = \"w\"\nrole = \"impair\"\n\
                 [[node]]\nname = \"a\"\nrole = \"host\"\n[[link]]\na = \"a:eth0\"\nb = \"w:eth0\"\n".into(),
                "t.toml:3: node[1].role: an impair node forwards between exactly two ports",
            ),
            (
                file(&[("s1", "switch"), ("s2", "switch")], &[("s1:p1", "s2:p1"), ("s1:p2", "s2:p2")]),
                "t.toml:14: link[2]: it closes a loop of switches or bridging impair nodes",
            ),
            (
                file(&[("sw", "switch"), ("w", "impair")], &[("sw:p1", "w:e0"), ("w:e1", "sw:p2")])
                    .replace("role = \"impair\"\n", "role = \"impair\"\nbridge = true\n"),
                "t.toml:15: link[2]: it closes a loop of switches or bridging impair nodes",
            ),
            (
                hosts.clone() + "[[link]]\na = \"a:eth0\"\nb = \"r:eth0\"\na_mac = \"02:77:62:f0:01:01\"\n",
                "t.toml:16: link[1].a_mac: 02:77:62:f0:01:01 is in 02:77:62:f0-f1",
            ),
            (
                "[[node]]\nname = \"a\"\nrole = \"host\"\nbridge = true\n".into(),
                "t.toml:4: node[1].role: bridge belongs to an impair node",
            ),
            (
                hosts.clone() + "[[link]]\na = \"a:eth0\"\nb = \"r:eth0\"\na_mac = \"03:00:00:00:00:01\"\n",
                "t.toml:16: link[1].a_mac: '03:00:00:00:00:01' is not a unicast MAC address",
            ),
            (
                hosts.clone() + "[[link]]\na = \"a:eth0\"\nb = \"r:eth0\"\na_mac = \"02:00:00:00:00:01\"\n\
                 b_mac = \"02:00:00:00:00:01\"\n",
                "t.toml:17: link[1].b_mac: 02:00:00:00:00:01 is link[1].a_mac's too",
            ),
            (
                "[[node]]\nname = \"a\"\nrole = \"host\"\nfrer = \"history=8\"\n".into(),
                "t.toml:4: node[1].role: frer belongs to a relay",
            ),
            (
                "[[node]]\nname = \"s\"\nrole = \"relay\"\nfrer = \"history=1\"\n".into(),
                "t.toml:4: node[1].frer: history: '1' is not 2..=2048",
            ),
            (
                file(
                    &[("a", "host"), ("s", "relay"), ("m", "relay"), ("b", "host")],
                    &[("a:e0", "s:e0"), ("s:e1", "m:e1"), ("m:e0", "b:e0")],
                ),
                "t.toml:7: node[2].role: 's' has 1 path(s) to its peer: a relay replicates onto two or more",
            ),
            (
                file(&[("s", "relay"), ("m", "relay")], &[("s:e1", "m:e1"), ("s:e2", "m:e2")]),
                "t.toml:3: node[1].role: a relay has one port linked to a host (its edge); 's' has 0",
            ),
            (
                file(
                    &[("a", "host"), ("w", "impair"), ("s", "relay"), ("m", "relay"), ("b", "host")],
                    &[("a:e0", "w:e0"), ("w:e1", "s:e0"), ("s:e1", "m:e1"), ("s:e2", "m:e2"), ("m:e0", "b:e0")],
                ),
                "t.toml:7: node[2].role: an impair node next to a relay is a stage on one of its paths",
            ),
            (
                file(
                    &[("a", "host"), ("s", "relay"), ("r", "router"), ("m", "relay"), ("b", "host")],
                    &[("a:e0", "s:e0"), ("s:e1", "r:e0"), ("r:e1", "m:e1"), ("s:e2", "m:e2"), ("m:e0", "b:e0")],
                ),
                "t.toml:7: node[2].role: 's' port e1 leads to 'r', not to another relay",
            ),
        ];
        let mut wrong = Vec::new();
        for (text, want) in cases {
            let e = parse(&text).unwrap_err().to_string();
            if !e.starts_with(want) {
                wrong.push(format!("{e}\n  wanted: {want}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn a_relay_pair_joins_its_hosts_in_one_subnet_over_bridging_stages() {
        let nodes = [
            ("t", "host"),
            ("s", "relay"),
            ("pa", "impair"),
            ("m", "relay"),
            ("l", "host"),
            ("r", "router"),
            ("x", "host"),
        ];
        let links = [
            ("t:e0", "s:e0"),
            ("s:e1", "pa:e0"),
            ("pa:e1", "m:e1"),
            ("s:e2", "m:e2"),
            ("m:e0", "l:e0"),
            ("l:e1", "r:e0"),
            ("r:e1", "x:e0"),
        ];
        let f = parse(&file(&nodes, &links)).unwrap();
        let addr = |i: usize| (f.links[i].a.1, f.links[i].b.1);
        assert_eq!(addr(0), (ip("198.18.1.1"), None));
        for i in 1..4 {
            assert_eq!(addr(i), (None, None), "link {i}: no address on a path");
            assert_eq!(f.links[i].subnet.0, Ipv4Addr::new(198, 18, 1, 0));
        }
        assert_eq!(addr(4), (None, ip("198.18.1.2")));
        // The next link is a subnet of its own.
        assert_eq!(addr(5), (ip("198.18.2.1"), ip("198.18.2.2")));
        let pa = f.nodes.iter().find(|n| n.name == "pa").unwrap();
        assert!(pa.bridging && pa.layer2());
        let text = file(&nodes, &links).replacen(
            "b = \"pa:e0\"\n",
            "b = \"pa:e0\"\nb_addr = \"198.18.1.9\"\n",
            1,
        );
        let e = parse(&text).unwrap_err().to_string();
        assert!(
            e.contains("link[2].b_addr: a bridging stage's port has no address"),
            "{e}"
        );
        let text = file(&nodes, &links).replacen(
            "b = \"s:e0\"\n",
            "b = \"s:e0\"\nb_addr = \"198.18.1.9\"\n",
            1,
        );
        let e = parse(&text).unwrap_err().to_string();
        assert!(
            e.contains("link[1].b_addr: a relay's port has no address"),
            "{e}"
        );
    }

    #[test]
    fn two_hosts_given_one_address_on_a_switch_clash() {
        let mut text = file(&[("sw", "switch"), ("a", "host"), ("b", "host")], &[]);
        text += "[[link]]\na = \"a:eth0\"\nb = \"sw:p1\"\nsubnet = \"198.18.9.0/24\"\na_addr = \"198.18.9.7\"\n\
                 [[link]]\na = \"b:eth0\"\nb = \"sw:p2\"\na_addr = \"198.18.9.7\"\n";
        let e = parse(&text).unwrap_err().to_string();
        assert!(
            e.contains("link[2].a_addr: address 198.18.9.7 is used twice in switch sw"),
            "{e}"
        );
        let text = file(&[("sw", "switch"), ("a", "host")], &[])
            + "[[link]]\na = \"a:eth0\"\nb = \"sw:p1\"\nb_addr = \"198.18.1.9\"\n";
        let e = parse(&text).unwrap_err().to_string();
        assert!(
            e.contains("link[1].b_addr: a switch's port has no address"),
            "{e}"
        );
    }
}
