//! Built-in topologies and the lab life cycle: up (all or nothing), down, list, exec.
//!
//! - `direct`: talker (198.18.0.1) — listener (198.18.0.2), one veth pair.
//! - `router`: talker (198.18.1.1) — dut (198.18.1.254 | 198.18.2.254, IPv4 forwarding) —
//!   listener (198.18.2.1), default routes through the dut.
//! - `shaper`: `router` with an HTB class tree on the dut's egress toward the listener.
//! - `impair`: `router` whose dut forwards through the impairment stage
//!   (router mode; the dut kernel's own forwarding is off).
//! - `twopath`: talker (198.18.20.1) — split — two paths — merge — listener (198.18.23.1).
//!   Path A (198.18.21.0/24) and path B (198.18.22.0/24) each cross their own node running
//!   an impairment stage in bridge mode; split and merge are routers that send traffic over
//!   path A.
//! - `frer`: the `twopath` wiring as one subnet (talker 198.18.30.1, listener 198.18.30.2)
//!   whose split and merge run FRER relays instead of routing: 802.1CB replication onto both
//!   paths and elimination before the far end, in both directions.
//!
//! Each built-in but `shaper` is a topology file shipped in the binary
//! (`crates/lab/builtin/NAME.toml`, built as any file is, its nodes' impairments and FRER
//! settings from the command line); `shaper` is `router` with its classes and talkers
//! added here.
//!
//! Addresses are from the RFC 2544 benchmarking range 198.18.0.0/15 (RFC 2544 §12 /
//! RFC 6815); MACs are locally administered (02:77:62:…). Every lab lives in its own
//! namespaces, so several labs with the same addresses run side by side. Managed processes
//! (impairment stages, FRER relays) run inside the lab's namespaces, with their state and logs in
//! `/run/wirebench/labs/LAB/`; `down` stops every process in the lab's namespaces before it
//! removes them.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cmd::Cmd;
use crate::impair::spec::ImpairSpec;
use crate::impair::stage::{Mode, RouterSide, StageConfig};
use crate::naming;
use crate::processes::{ManagedProcess, Program};
use crate::relay::config::RelayConfig;
pub use crate::relay::options::{FrerLabOptions, FrerOptionsError};
use crate::shaper::ShaperSpec;
use crate::LabError;

/// One end of a link.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Iface {
    /// Node (namespace) it lives in.
    pub node: String,
    /// Interface name inside the namespace.
    pub name: String,
    /// IPv4 address; none on a bridge-mode stage's ports.
    pub addr: Option<Ipv4Addr>,
    /// Prefix length.
    pub prefix: u8,
    /// Locally administered MAC address.
    pub mac: [u8; 6],
}

/// A veth pair between two nodes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Link {
    /// One end.
    pub a: Iface,
    /// The other end.
    pub b: Iface,
    /// MTU of both ends when not the default 1500.
    pub mtu: Option<u16>,
}

/// A permanent neighbour entry (no ARP needed), e.g. for hosts behind FRER relays that do
/// not protect broadcast frames.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Neighbour {
    /// Node.
    pub node: String,
    /// Interface.
    pub dev: String,
    /// The neighbour's address.
    pub addr: Ipv4Addr,
    /// Its MAC.
    pub mac: [u8; 6],
}

/// A static route.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Route {
    /// The node it is added on.
    pub node: String,
    /// Destination network and prefix length; `None` = default route.
    pub dest: Option<(Ipv4Addr, u8)>,
    /// Gateway.
    pub via: Ipv4Addr,
}

/// A managed impairment stage on a node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stage {
    /// The node it runs on.
    pub node: String,
    /// What it runs.
    pub config: StageConfig,
}

impl Stage {
    /// A stage on `node` that forwards as a bridge between ports `a` and `b` (`forward` =
    /// a to b), impaired as `spec` says.
    fn bridge(node: &str, a: &str, b: &str, spec: ImpairSpec) -> Self {
        Self {
            node: node.to_owned(),
            config: StageConfig {
                a: a.to_owned(),
                b: b.to_owned(),
                mode: Mode::Bridge,
                spec,
            },
        }
    }
}

/// A managed FRER relay on a node.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Relay {
    /// The node it runs on.
    pub node: String,
    /// What it runs.
    pub config: RelayConfig,
    /// Forward in the kernel (the BPF fast path) when it allows.
    pub fast: bool,
}

/// A Linux bridge over some of a node's ports (a topology file's `switch`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bridge {
    /// The node it is on.
    pub node: String,
    /// Its name there.
    pub name: String,
    /// The ports it joins.
    pub ports: Vec<String>,
    /// 802.1Q VLAN filtering.
    pub vlan_filtering: bool,
    /// FDB ageing time, s.
    pub ageing_s: Option<u32>,
    /// Most FDB entries it learns by itself (set over rtnetlink; Linux 6.7).
    pub learning_limit: Option<u32>,
}

/// A test network: nodes, links, routes, which nodes forward, and what runs on them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Topology {
    /// Built-in name.
    pub kind: String,
    /// Node names (no '-').
    pub nodes: Vec<String>,
    /// veth pairs.
    pub links: Vec<Link>,
    /// Static routes.
    pub routes: Vec<Route>,
    /// Nodes with IPv4 forwarding on.
    pub forwarding: Vec<String>,
    /// (node, interface) whose checksum and segmentation offloads are turned off, because
    /// a userspace stage sits on the path their frames take.
    pub offloads_off: Vec<(String, String)>,
    /// The class-based shaper on the dut's egress toward the listener (`shaper`).
    #[serde(skip)]
    pub shaper: Option<ShaperSpec>,
    /// Impairment stages the lab starts and stops.
    pub stages: Vec<Stage>,
    /// FRER relays the lab starts and stops.
    pub relays: Vec<Relay>,
    /// Permanent neighbour entries.
    pub neighbours: Vec<Neighbour>,
    /// Ingress port-rate limits: (node, interface, bit/s) enforced on arrival, as a port
    /// of that speed would carry no more.
    pub policers: Vec<(String, String, u64)>,
    /// Egress port-rate limits: (node, interface, bit/s), a token bucket on a forwarding
    /// node's port, so that what it sends is limited before any receiver counts it (a
    /// receiver's raw socket sees frames before its own ingress policer does).
    pub egress_limits: Vec<(String, String, u64)>,
    /// The node a topology file marks `listener = true` (the first), if any.
    pub listener_mark: Option<String>,
    /// The node a topology file marks `talker = true` (the first), if any.
    #[serde(default)]
    pub talker_mark: Option<String>,
    /// A topology file's shapers: (node, port, classes) on that port's egress.
    #[serde(skip)]
    pub file_shapers: Vec<(String, String, ShaperSpec)>,
    /// Bytes each frame counts above its length in those limits (24 in a topology file's
    /// links: a veth frame's missing FCS, preamble and gap; 0 in the built-ins, whose port
    /// rates are L2 rates).
    pub limit_overhead: u32,
    /// Bridges (a topology file's switches).
    pub bridges: Vec<Bridge>,
}

/// The ports of a `shaper` lab (the RTX2000 setup: separate 100 Mbit/s ports in, one out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShaperPorts {
    /// Talker nodes, each on its own link into the dut (`talker`, `talker2`, ...; 1..=8).
    pub ingress: u8,
    /// The rate every ingress link carries at most, bit/s (absent: unlimited).
    pub port_rate_bps: Option<u64>,
}

fn iface(node: &str, name: &str, addr: Option<[u8; 4]>, link: u8, side: u8) -> Iface {
    Iface {
        node: node.to_owned(),
        name: name.to_owned(),
        addr: addr.map(Ipv4Addr::from),
        prefix: 24,
        mac: [0x02, 0x77, 0x62, 0x00, link, side],
    }
}

fn link(a: Iface, b: Iface) -> Link {
    Link { a, b, mtu: None }
}

fn default_route(node: &str, via: [u8; 4]) -> Route {
    Route {
        node: node.to_owned(),
        dest: None,
        via: via.into(),
    }
}

/// The topology files of the built-in labs (`shaper` is `router` with its classes added).
const BUILTIN_FILES: &[(&str, &str)] = &[
    ("direct", include_str!("../builtin/direct.toml")),
    ("router", include_str!("../builtin/router.toml")),
    ("impair", include_str!("../builtin/impair.toml")),
    ("twopath", include_str!("../builtin/twopath.toml")),
    ("frer", include_str!("../builtin/frer.toml")),
];

/// Node `node`'s impairment in file `f`.
fn set_impair(f: &mut crate::topofile::TopologyFile, node: &str, spec: ImpairSpec) {
    for n in f.nodes.iter_mut().filter(|n| n.name == node) {
        n.impair = Some(spec);
    }
}

/// The stages of path A and path B (nodes `patha`, `pathb`), with different random seeds:
/// with equal seeds (e.g. both left at the default) the paths would lose the very same
/// frames, and redundancy would look useless. Path B's seed is moved off path A's.
fn set_paths(f: &mut crate::topofile::TopologyFile, path_a: ImpairSpec, mut path_b: ImpairSpec) {
    if path_b.seed == path_a.seed {
        path_b.seed = path_b.seed.wrapping_add(1000);
    }
    set_impair(f, "patha", path_a);
    set_impair(f, "pathb", path_b);
}

/// A lab relay's configuration: frames from its `edge` port to `far` (a host beyond its
/// peer relay, by destination MAC) are replicated onto every one of `members` with an
/// R-TAG (802.1CB 7.4.1, sequence generation and splitting); frames from the members to
/// `near` (the host on its edge) are eliminated (7.4.2, sequence recovery) and leave by the
/// edge. Other frames pass between the edge and the first member, untagged. The stream
/// names are `to-` and the host's node.
fn frer_relay(
    edge: &str,
    members: &[String],
    far: &Iface,
    near: &Iface,
    opts: &FrerLabOptions,
) -> RelayConfig {
    use crate::relay::config::{Eliminate, Identification, StreamConfig};
    let mac = |m: [u8; 6]| wire::EthernetAddress(m).to_string();
    let members: Vec<&str> = members.iter().map(String::as_str).collect();
    let streams = if opts.plain {
        vec![]
    } else {
        vec![
            StreamConfig::replicating(
                &format!("to-{}", far.node),
                Identification::dst_mac(&mac(far.mac)),
                edge,
                &members,
            ),
            StreamConfig::eliminating(
                &format!("to-{}", near.node),
                Identification::dst_mac(&mac(near.mac)),
                Eliminate {
                    history: opts.history,
                    reset_ms: opts.reset_ms,
                    off: !opts.elimination,
                    ..Eliminate::new(&members, edge)
                },
            ),
        ]
    };
    let first = members.first().copied().unwrap_or(edge);
    let pass = [(edge, first), (first, edge)]
        .into_iter()
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect();
    RelayConfig { streams, pass }
}

/// Queues of every veth end: one per CPU (at most 8), so `gen --threads N` and AF_XDP
/// find a queue per thread as on a multi-queue NIC.
fn veth_queues() -> u16 {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8) as u16)
}

/// The names of the built-in topologies.
pub const BUILTINS: &[&str] = &["direct", "router", "shaper", "impair", "twopath", "frer"];

impl Topology {
    fn empty(kind: &str, nodes: &[&str]) -> Self {
        Self {
            kind: kind.to_owned(),
            nodes: nodes.iter().map(|n| (*n).to_owned()).collect(),
            links: vec![],
            routes: vec![],
            forwarding: vec![],
            offloads_off: vec![],
            shaper: None,
            stages: vec![],
            relays: vec![],
            neighbours: vec![],
            policers: vec![],
            egress_limits: vec![],
            file_shapers: vec![],
            listener_mark: None,
            talker_mark: None,
            limit_overhead: 0,
            bridges: vec![],
        }
    }

    /// A built-in topology by name, with no shaper classes and no impairment (`shaper`
    /// needs [`Topology::shaper`]).
    pub fn builtin(kind: &str) -> Result<Self, LabError> {
        match kind {
            "direct" | "router" => Ok(Self::from_builtin_file(kind, |_| {})),
            "impair" => Ok(Self::impair(ImpairSpec::default())),
            "twopath" => Ok(Self::twopath(ImpairSpec::default(), ImpairSpec::default())),
            "frer" => Ok(Self::frer(
                ImpairSpec::default(),
                ImpairSpec::default(),
                FrerLabOptions::default(),
            )),
            "shaper" => Err(LabError::NeedsShape),
            other => Err(LabError::UnknownTopology(other.to_owned())),
        }
    }

    /// The topology file of built-in `kind` (shipped in the binary), as `edit` leaves its
    /// nodes' settings (the command line's impairments and FRER settings), built as a file
    /// is, with the built-in's name and its port rates as L2 rates.
    fn from_builtin_file(
        kind: &str,
        edit: impl FnOnce(&mut crate::topofile::TopologyFile),
    ) -> Self {
        let text = BUILTIN_FILES
            .iter()
            .find(|(name, _)| *name == kind)
            .map_or("", |(_, text)| text);
        let build = || -> Result<Self, String> {
            let mut f = crate::topofile::TopologyFile::parse(&format!("{kind}.toml"), text)
                .map_err(|e| e.to_string())?;
            edit(&mut f);
            Self::from_file(&f, &|file| Err(LabError::BadTopology(file.to_owned())))
                .map_err(|e| e.to_string())
        };
        let mut t = build().unwrap_or_else(|e| unreachable!("built-in {kind}: {e}"));
        t.kind = kind.to_owned();
        t.limit_overhead = 0;
        t
    }

    /// `shaper`: the router topology with an HTB class tree on the dut's egress toward the
    /// listener (dut eth1).
    pub fn shaper(spec: ShaperSpec) -> Self {
        Self::shaper_with(spec, ShaperPorts::default())
    }

    /// `shaper` with `ports.ingress` talkers, each on its own link into the dut (`talker`
    /// on dut eth0 as in `router`, `talkerN` on dut eth`N` in 198.18.(N+1).0/24), every
    /// ingress link policed to `ports.port_rate_bps`.
    pub fn shaper_with(spec: ShaperSpec, ports: ShaperPorts) -> Self {
        let mut t = Self::builtin("router").unwrap_or_else(|_| unreachable!("router is built in"));
        t.kind = "shaper".into();
        for n in 2..=ports.ingress.clamp(1, 8) {
            let node = format!("talker{n}");
            let net = n + 1;
            t.nodes.insert(n as usize - 1, node.clone());
            t.links.push(link(
                iface(&node, "eth0", Some([198, 18, net, 1]), net + 10, 1),
                iface(
                    "dut",
                    &format!("eth{n}"),
                    Some([198, 18, net, 254]),
                    net + 10,
                    2,
                ),
            ));
            t.routes.push(default_route(&node, [198, 18, net, 254]));
        }
        if let Some(bps) = ports.port_rate_bps {
            let dut_ports = t.links.iter().filter(|l| l.a.node.starts_with("talker"));
            t.policers = dut_ports
                .map(|l| ("dut".into(), l.b.name.clone(), bps))
                .collect();
        }
        t.shaper = Some(spec);
        t
    }

    /// `impair`: the router topology whose dut forwards through an impairment stage
    /// (`forward` = talker -> listener).
    pub fn impair(spec: ImpairSpec) -> Self {
        Self::from_builtin_file("impair", |f| set_impair(f, "dut", spec))
    }

    /// `twopath`: talker — split — {path A, path B} — merge — listener, each path node an
    /// impairment stage in bridge mode (`forward` = toward the listener).
    pub fn twopath(path_a: ImpairSpec, path_b: ImpairSpec) -> Self {
        Self::from_builtin_file("twopath", |f| set_paths(f, path_a, path_b))
    }

    /// `frer`: talker (198.18.30.1) — split — {path A, path B} — merge — listener
    /// (198.18.30.2), one IPv4 subnet. Split and merge have no addresses and no kernel
    /// forwarding: a FRER relay on each bridges in user space. Frames to the listener's
    /// MAC are replicated by split onto both paths with an R-TAG and eliminated by merge;
    /// frames to the talker's MAC the other way round. Other frames cross path A only,
    /// untagged; the end hosts know each other's MAC (permanent neighbours), so a cut path
    /// A costs no ARP. Each path node runs an impairment stage in bridge mode. The path
    /// links carry 1510-byte MTUs, room for the R-TAG on a full-size (tagged) frame.
    pub fn frer(path_a: ImpairSpec, path_b: ImpairSpec, opts: FrerLabOptions) -> Self {
        Self::from_builtin_file("frer", |f| {
            set_paths(f, path_a, path_b);
            for n in f
                .nodes
                .iter_mut()
                .filter(|n| n.role == crate::topofile::Role::Relay)
            {
                n.frer = opts;
            }
        })
    }

    /// A topology file: a built-in topology and its settings.
    ///
    /// ```toml
    /// topology = "twopath"     # direct, router, shaper, impair or twopath
    ///
    /// [path_a]                 # twopath: impairment of path A (and [path_b])
    /// loss = "5%"
    ///
    /// # impair:  [impair] with the same keys (loss, delay, jitter, duplicate, ...)
    /// # shaper:  [[shaper.class]] tables and an optional [shaper.default]
    /// ```
    ///
    /// # Errors
    /// Syntax errors and unknown keys name the line; a setting that does not belong to the
    /// topology, or a bad value, names the table and key.
    pub fn from_toml(text: &str) -> Result<Self, LabError> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            topology: String,
            shaper: Option<ShaperSpec>,
            impair: Option<crate::impair::spec::ImpairToml>,
            path_a: Option<crate::impair::spec::ImpairToml>,
            path_b: Option<crate::impair::spec::ImpairToml>,
            frer: Option<FrerLabOptions>,
        }
        let bad = LabError::BadTopology;
        let f: File = toml::from_str(text).map_err(|e| bad(e.to_string().trim().to_owned()))?;
        let impair = |t: Option<crate::impair::spec::ImpairToml>, table: &str| {
            t.map(ImpairSpec::from_toml)
                .transpose()
                .map(Option::unwrap_or_default)
                .map_err(|e| bad(format!("[{table}]: {e}")))
        };
        let allowed: &[&str] = match f.topology.as_str() {
            "direct" | "router" => &[],
            "shaper" => &["shaper"],
            "impair" => &["impair"],
            "twopath" => &["path_a", "path_b"],
            "frer" => &["path_a", "path_b", "frer"],
            other => return Err(LabError::UnknownTopology(other.to_owned())),
        };
        for (table, present) in [
            ("shaper", f.shaper.is_some()),
            ("impair", f.impair.is_some()),
            ("path_a", f.path_a.is_some()),
            ("path_b", f.path_b.is_some()),
            ("frer", f.frer.is_some()),
        ] {
            if present && !allowed.contains(&table) {
                return Err(bad(format!(
                    "[{table}] does not belong to topology '{}'",
                    f.topology
                )));
            }
        }
        match f.topology.as_str() {
            "shaper" => {
                let spec = f.shaper.ok_or(LabError::NeedsShape)?;
                spec.check().map_err(|e| bad(format!("[shaper]: {e}")))?;
                Ok(Self::shaper(spec))
            }
            "impair" => Ok(Self::impair(impair(f.impair, "impair")?)),
            "twopath" => Ok(Self::twopath(
                impair(f.path_a, "path_a")?,
                impair(f.path_b, "path_b")?,
            )),
            "frer" => {
                let opts = f.frer.unwrap_or_default();
                if !(2..=frer::recovery::MAX_HISTORY).contains(&opts.history) {
                    return Err(bad(format!(
                        "[frer]: history {} is outside 2..=2048",
                        opts.history
                    )));
                }
                Ok(Self::frer(
                    impair(f.path_a, "path_a")?,
                    impair(f.path_b, "path_b")?,
                    opts,
                ))
            }
            other => Self::builtin(other),
        }
    }

    /// The lab a topology file describes: its nodes and links, a bridge on each switch,
    /// forwarding on each router, a route on every node to every subnet it does not touch
    /// (through the first router on a shortest path), and each link's rate limited in each
    /// direction: where a switch or router sends it, or where a host's frames arrive. A link
    /// with an impairment crosses a node of its own (`linkN`, N its place in the file) whose
    /// stage forwards as a bridge, its first end to its second being `forward`; so does an
    /// impair node between two relays. A relay pair runs FRER between its two hosts, as in
    /// the built-in `frer`: permanent neighbours, path links of 1510 bytes unless given.
    ///
    /// # Errors
    /// A shaper without classes or port, an impair node with other than two ports, a
    /// link's stage node whose name a node has, more than 250 links.
    pub fn from_file(
        f: &crate::topofile::TopologyFile,
        classes: &dyn Fn(&str) -> Result<String, LabError>,
    ) -> Result<Self, LabError> {
        use crate::topofile::Role;
        let bad = LabError::BadTopology;
        if f.links.len() > 250 {
            return Err(bad("at most 250 links".into()));
        }
        let names: Vec<&str> = f.nodes.iter().map(|n| n.name.as_str()).collect();
        let mut t = Self::empty("file", &names);
        t.limit_overhead = 24;
        t.listener_mark = f.nodes.iter().find(|n| n.listener).map(|n| n.name.clone());
        t.talker_mark = f.nodes.iter().find(|n| n.talker).map(|n| n.name.clone());
        let node_of = |name: &str| f.nodes.iter().find(|n| n.name == name);
        let role = |name: &str| node_of(name).map(|n| n.role);
        let on_path =
            |name: &str| node_of(name).is_some_and(|n| n.layer2() && n.role != Role::Switch);
        for (i, l) in f.links.iter().enumerate() {
            let k = u8::try_from(i + 1).unwrap_or(u8::MAX);
            let end = |(p, addr): &(crate::topofile::Port, Option<Ipv4Addr>), side: u8| Iface {
                node: p.node.clone(),
                name: p.port.clone(),
                addr: *addr,
                prefix: l.subnet.1,
                mac: l.macs[usize::from(side - 1)].unwrap_or([0x02, 0x77, 0x62, 0xf0, k, side]),
            };
            // A relay's paths carry the R-TAG's 6 bytes on full-size frames.
            let relay_path = on_path(&l.a.0.node) && on_path(&l.b.0.node);
            let mtu = l.mtu.or(relay_path.then_some(1510));
            let (a, b) = (end(&l.a, 1), end(&l.b, 2));
            match l.impair {
                None => t.links.push(Link { a, b, mtu }),
                Some(spec) => {
                    let node = format!("link{k}");
                    if node_of(&node).is_some() {
                        return Err(bad(format!(
                            "link {} - {} has an impairment, whose stage runs on a node \
                             named '{node}': rename the node of that name",
                            l.a.0, l.b.0
                        )));
                    }
                    let stage = |side: u8| Iface {
                        node: node.clone(),
                        name: format!("eth{}", side - 1),
                        addr: None,
                        prefix: l.subnet.1,
                        mac: [0x02, 0x77, 0x62, 0xf1, k, side],
                    };
                    t.nodes.push(node.clone());
                    t.offload_off(&a);
                    t.offload_off(&b);
                    t.links.push(Link {
                        a,
                        b: stage(1),
                        mtu,
                    });
                    t.links.push(Link {
                        a: stage(2),
                        b,
                        mtu,
                    });
                    t.stages.push(Stage::bridge(&node, "eth0", "eth1", spec));
                }
            }
            if let Some(bps) = l.rate_bps {
                // Each direction: a switch or router limits what it sends out of its port;
                // what a host sends is limited where it arrives.
                for ((from, _), (to, _)) in [(&l.a, &l.b), (&l.b, &l.a)] {
                    if role(&from.node).is_some_and(|r| r == Role::Switch || r.forwards()) {
                        t.egress_limits
                            .push((from.node.clone(), from.port.clone(), bps));
                    } else {
                        t.policers.push((to.node.clone(), to.port.clone(), bps));
                    }
                }
            }
        }
        for n in f.nodes.iter().filter(|n| n.role == Role::Switch) {
            let ports = t.ports_of(&n.name).iter().map(|i| i.name.clone()).collect();
            t.bridges.push(Bridge {
                node: n.name.clone(),
                name: crate::switch::BRIDGE.into(),
                ports,
                vlan_filtering: n.switch.vlan_filtering,
                ageing_s: n.switch.ageing_s,
                learning_limit: n.switch.learning_limit,
            });
        }
        t.forwarding = f
            .nodes
            .iter()
            .filter(|n| n.role.forwards())
            .map(|n| n.name.clone())
            .collect();
        t.routes = file_routes(f, &|n| role(n).is_some_and(Role::routes));
        for n in f.nodes.iter().filter(|n| n.role == Role::Shaper) {
            let ports = t.ports_of(&n.name);
            let port = n
                .shaper
                .port
                .clone()
                .or_else(|| ports.get(1).map(|i| i.name.clone()))
                .ok_or_else(|| bad(format!("shaper '{}': which port to shape", n.name)))?;
            let spec = match (&n.shaper.classes, n.shaper.egress_bps) {
                (Some(file), _) => {
                    let spec = crate::shaper::ShaperSpec::parse(&classes(file)?)
                        .map_err(|e| bad(format!("shaper '{}': {file}: {e}", n.name)))?;
                    spec.check()
                        .map_err(|e| bad(format!("shaper '{}': {file}: {e}", n.name)))?;
                    spec
                }
                (None, Some(bps)) => crate::shaper::ShaperSpec::port(bps),
                (None, None) => return Err(bad(format!("shaper '{}': no classes", n.name))),
            };
            if t.egress_limits
                .iter()
                .any(|(x, p, _)| *x == n.name && *p == port)
            {
                return Err(bad(format!(
                    "shaper '{}': the link on {port} has a rate, and its shaper sets what \
                     {port} sends: drop the link's rate or shape another port",
                    n.name
                )));
            }
            t.file_shapers.push((n.name.clone(), port, spec));
        }
        // Bridging stages first: a router-mode stage addresses its frames to the node beyond
        // them.
        let impairs = f.nodes.iter().filter(|n| n.role == Role::Impair);
        let (bridging, routing): (Vec<_>, Vec<_>) = impairs.partition(|n| n.bridging);
        for n in bridging.into_iter().chain(routing) {
            let (a, b) = match t.ports_of(&n.name).as_slice() {
                [a, b] => ((*a).clone(), (*b).clone()),
                _ => return Err(bad(format!("impair '{}': two ports", n.name))),
            };
            if n.bridging {
                // A user-space stage forwards its neighbours' frames: whole frames, final
                // checksums (a relay's frames are whole already).
                for mine in [&a, &b] {
                    if let Some(x) = t
                        .peer_of(mine)
                        .filter(|x| role(&x.node) != Some(Role::Relay))
                        .cloned()
                    {
                        t.offload_off(&x);
                    }
                }
                let spec = n.impair.unwrap_or_default();
                t.stages
                    .push(Stage::bridge(&n.name, &a.name, &b.name, spec));
                continue;
            }
            let side = |mine: &Iface| -> Result<(RouterSide, Iface), LabError> {
                let theirs = t
                    .beyond_stages(mine)
                    .ok_or_else(|| bad(format!("impair '{}': a port without a link", n.name)))?;
                let side = RouterSide {
                    mac: mine.mac,
                    neighbour: theirs.mac,
                    local: mine.addr.unwrap_or(Ipv4Addr::UNSPECIFIED),
                };
                Ok((side, theirs.clone()))
            };
            let ((sa, na), (sb, nb)) = (side(&a)?, side(&b)?);
            for x in [na, nb] {
                t.offload_off(&x);
            }
            t.stages.push(Stage {
                node: n.name.clone(),
                config: StageConfig {
                    a: a.name.clone(),
                    b: b.name.clone(),
                    mode: Mode::Router { a: sa, b: sb },
                    spec: n.impair.unwrap_or_default(),
                },
            });
        }
        for n in f.nodes.iter().filter(|n| n.role == Role::Relay) {
            t.add_file_relay(f, n)?;
        }
        Ok(t)
    }

    /// A topology file's relay `n` (checked by the file's reader: one port to a host, two
    /// or more paths to one peer relay): its configuration, its host's permanent neighbour
    /// (the host beyond the peer, so that a cut path costs no ARP) and its host's offloads
    /// off (a user-space relay may forward its frames).
    fn add_file_relay(
        &mut self,
        f: &crate::topofile::TopologyFile,
        n: &crate::topofile::Node,
    ) -> Result<(), LabError> {
        use crate::topofile::Role;
        let bad = |what: &str| LabError::BadTopology(format!("relay '{}': {what}", n.name));
        let relay = |node: &str| {
            f.nodes
                .iter()
                .any(|x| x.name == node && x.role == Role::Relay)
        };
        // A relay's host (the port toward it, its interface and address), its paths'
        // ports, its peer relay.
        let sides = |node: &str| {
            let mut host = None;
            let mut paths = Vec::new();
            let mut peer = None;
            for mine in self.ports_of(node) {
                match self.beyond_stages(mine) {
                    Some(p) if p.addr.is_some() => {
                        host = p.addr.map(|addr| (mine.name.clone(), p.clone(), addr));
                    }
                    Some(p) if relay(&p.node) => {
                        paths.push(mine.name.clone());
                        peer.get_or_insert(p.node.clone());
                    }
                    _ => {}
                }
            }
            (host, paths, peer)
        };
        let (host, paths, peer) = sides(&n.name);
        let (edge, near, _) = host.ok_or_else(|| bad("no port toward a host"))?;
        let peer = peer.ok_or_else(|| bad("no path to another relay"))?;
        let (_, far, addr) = sides(&peer).0.ok_or_else(|| bad("its peer has no host"))?;
        self.neighbours.push(Neighbour {
            node: near.node.clone(),
            dev: near.name.clone(),
            addr,
            mac: far.mac,
        });
        self.offload_off(&near);
        self.relays.push(Relay {
            node: n.name.clone(),
            config: frer_relay(&edge, &paths, &far, &near, &n.frer),
            fast: n.frer.fast,
        });
        Ok(())
    }

    /// The interface at the other end of `i`'s link, or, where that is a bridge-mode
    /// stage's node, the one beyond it (across every such stage in a row).
    fn beyond_stages(&self, i: &Iface) -> Option<&Iface> {
        let mut p = self.peer_of(i)?;
        for _ in 0..=self.stages.len() {
            let bridging = self
                .stages
                .iter()
                .any(|s| s.node == p.node && s.config.mode == Mode::Bridge);
            if !bridging {
                return Some(p);
            }
            let other = self
                .ports_of(&p.node)
                .into_iter()
                .find(|x| x.name != p.name)?;
            p = self.peer_of(other)?;
        }
        None
    }

    /// Turns `i`'s checksum and segmentation offloads off (a user-space stage or relay
    /// forwards its frames), once however many such neighbours it has.
    fn offload_off(&mut self, i: &Iface) {
        let entry = (i.node.clone(), i.name.clone());
        if !self.offloads_off.contains(&entry) {
            self.offloads_off.push(entry);
        }
    }

    /// The interfaces of `node`, in link order.
    fn ports_of(&self, node: &str) -> Vec<&Iface> {
        self.links
            .iter()
            .flat_map(|l| [&l.a, &l.b])
            .filter(|i| i.node == node)
            .collect()
    }

    /// The interface at the other end of `i`'s link.
    fn peer_of(&self, i: &Iface) -> Option<&Iface> {
        self.links.iter().find_map(|l| {
            if l.a.node == i.node && l.a.name == i.name {
                Some(&l.b)
            } else if l.b.node == i.node && l.b.name == i.name {
                Some(&l.a)
            } else {
                None
            }
        })
    }

    /// The node tests end at and a plan's server runs on: the one named `listener`, else
    /// the one a topology file marks `listener = true`.
    pub fn listener_node(&self) -> Option<&str> {
        if self.nodes.iter().any(|n| n == "listener") {
            return Some("listener");
        }
        self.listener_mark.as_deref()
    }

    /// The node tests start at, where a plan's server-based tests run: the one named
    /// `talker`, else the one a topology file marks `talker = true`.
    pub fn talker_node(&self) -> Option<&str> {
        if self.nodes.iter().any(|n| n == "talker") {
            return Some("talker");
        }
        self.talker_mark.as_deref()
    }

    /// The address a node is reached at (its first interface with an address).
    pub fn address_of(&self, node: &str) -> Option<Ipv4Addr> {
        self.ports_of(node).into_iter().find_map(|i| i.addr)
    }

    /// Every command that builds the topology as lab `lab`, in order (managed processes
    /// are started after these, by [`Lab::up`]).
    pub fn build_commands(&self, lab: &str) -> Vec<Cmd> {
        let ns = |node: &str| naming::namespace(lab, node);
        let mut out: Vec<Cmd> = Vec::new();
        for n in &self.nodes {
            out.push(Cmd::netns_add(&ns(n)));
            out.push(Cmd::link_up(&ns(n), "lo"));
            // Keep the tests' traffic on IPv4 and the interfaces quiet.
            out.push(Cmd::sysctl(&ns(n), "net.ipv6.conf.all.disable_ipv6", "1"));
        }
        for l in &self.links {
            out.push(Cmd::veth(
                &ns(&l.a.node),
                &l.a.name,
                &ns(&l.b.node),
                &l.b.name,
                veth_queues(),
            ));
            for i in [&l.a, &l.b] {
                out.push(Cmd::set_mac(&ns(&i.node), &i.name, i.mac));
                if let Some(mtu) = l.mtu {
                    out.push(Cmd::set_mtu(&ns(&i.node), &i.name, mtu));
                }
                if let Some(a) = i.addr {
                    out.push(Cmd::addr_add(&ns(&i.node), &i.name, a, i.prefix));
                }
                out.push(Cmd::link_up(&ns(&i.node), &i.name));
            }
        }
        for b in &self.bridges {
            out.push(Cmd::bridge_add(
                &ns(&b.node),
                &b.name,
                b.vlan_filtering,
                b.ageing_s,
            ));
            if let Some(limit) = b.learning_limit {
                out.push(Cmd::learning_limit(&ns(&b.node), &b.name, limit));
            }
            for p in &b.ports {
                out.push(Cmd::set_master(&ns(&b.node), p, &b.name));
            }
            out.push(Cmd::link_up(&ns(&b.node), &b.name));
        }
        for n in &self.neighbours {
            out.push(Cmd::neigh_permanent(&ns(&n.node), &n.dev, n.addr, n.mac));
        }
        for (n, dev) in &self.offloads_off {
            out.push(Cmd::offloads_off(&ns(n), dev));
        }
        for n in &self.forwarding {
            out.push(Cmd::sysctl(&ns(n), "net.ipv4.ip_forward", "1"));
        }
        for r in &self.routes {
            out.push(match r.dest {
                None => Cmd::default_route(&ns(&r.node), r.via),
                Some((net, len)) => Cmd::route_add(&ns(&r.node), net, len, r.via),
            });
        }
        if let Some(s) = &self.shaper {
            out.extend(s.commands(&ns("dut"), "eth1"));
        }
        for (n, port, s) in &self.file_shapers {
            out.extend(s.commands(&ns(n), port));
        }
        for (n, dev, bps) in &self.policers {
            let style = crate::shaper::LimitStyle {
                overhead: self.limit_overhead,
                // A topology file's hosts send through their NIC's queue (see LimitStyle).
                queue_frames: (self.limit_overhead > 0).then_some(1000),
            };
            out.extend(crate::shaper::limit_ingress(&ns(n), dev, *bps, style));
        }
        for (n, dev, bps) in &self.egress_limits {
            out.push(crate::shaper::limit_egress(
                &ns(n),
                dev,
                *bps,
                self.limit_overhead,
            ));
        }
        out
    }

    /// The processes lab `lab` of this topology runs: its impairment stages, then its
    /// relays (started after [`Topology::build_commands`], by [`crate::Lab::up`]).
    pub fn processes(&self, lab: &str) -> Vec<ManagedProcess> {
        let stages = self.stages.iter().map(|s| ManagedProcess {
            lab: lab.to_owned(),
            node: s.node.clone(),
            program: Program::Stage(s.config.clone()),
        });
        let relays = self.relays.iter().map(|r| ManagedProcess {
            lab: lab.to_owned(),
            node: r.node.clone(),
            program: Program::Relay {
                config: r.config.clone(),
                fast: r.fast,
            },
        });
        stages.chain(relays).collect()
    }
}

/// What `lab up` is asked to build: a built-in topology with its settings, or a topology
/// file (which carries its own). Settings are written as on the command line: an
/// impairment inline (`loss=1%,delay=5ms`) or as a TOML file, the shaper's class list as a
/// TOML file, the frer options inline.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Request {
    /// A built-in topology name, or a TOML topology file.
    pub topology: String,
    /// Class list of the `shaper` topology (a TOML file).
    pub shape: Option<PathBuf>,
    /// Impairment of `impair`, or of both paths of `twopath` and `frer`.
    pub impair: Option<String>,
    /// Impairment of path A (over `impair`).
    pub path_a: Option<String>,
    /// Impairment of path B (over `impair`).
    pub path_b: Option<String>,
    /// Settings of the `frer` topology (`history=N,reset_ms=N,elimination=on|off,mode=...`).
    pub frer: Option<String>,
    /// `shaper`: talker nodes, each on its own link into the dut.
    pub ingress: Option<u8>,
    /// `shaper`: the rate of every ingress link, bit/s (0 = unlimited).
    pub port_rate_bps: Option<f64>,
    /// `shaper` without classes: a plain port-rate egress, one FIFO, bit/s.
    pub egress_bps: Option<f64>,
    /// MTU of every link; a link that needs more than 1500 for a tag keeps its extra.
    pub mtu: Option<u16>,
}

/// Every node's routes in a topology file's lab: to each subnet it does not touch, via the
/// neighbour on its side of the first hop of a shortest path that only crosses routers;
/// one default route instead where a node that does not route has one first hop only.
fn file_routes(f: &crate::topofile::TopologyFile, router: &dyn Fn(&str) -> bool) -> Vec<Route> {
    // Each subnet's members: (node, address), the switch ports (no address) left out.
    type Members = Vec<(String, Ipv4Addr)>;
    let mut members: Vec<((Ipv4Addr, u8), Members)> = Vec::new();
    for l in &f.links {
        let i = match members.iter().position(|(s, _)| *s == l.subnet) {
            Some(i) => i,
            None => {
                members.push((l.subnet, Vec::new()));
                members.len() - 1
            }
        };
        for (p, addr) in [&l.a, &l.b] {
            if let Some(a) = addr {
                members[i].1.push((p.node.clone(), *a));
            }
        }
    }
    let mut out = Vec::new();
    for node in f.nodes.iter().map(|n| n.name.as_str()) {
        let touches = |s: usize| members[s].1.iter().any(|(n, _)| n == node);
        // Breadth first over subnets: (subnet, the first hop's address).
        let mut first_hop: Vec<Option<Option<Ipv4Addr>>> = vec![None; members.len()];
        let mut queue = std::collections::VecDeque::new();
        for s in (0..members.len()).filter(|&s| touches(s)) {
            first_hop[s] = Some(None);
            queue.push_back(s);
        }
        while let Some(s) = queue.pop_front() {
            let via = first_hop[s].flatten();
            for (n, addr) in &members[s].1 {
                if n == node || !router(n) {
                    continue;
                }
                for t in 0..members.len() {
                    if first_hop[t].is_none() && members[t].1.iter().any(|(m, _)| m == n) {
                        first_hop[t] = Some(Some(via.unwrap_or(*addr)));
                        queue.push_back(t);
                    }
                }
            }
        }
        let routes: Vec<Route> = first_hop
            .iter()
            .enumerate()
            .filter_map(|(s, hop)| {
                hop.flatten().map(|via| Route {
                    node: node.to_owned(),
                    dest: Some(members[s].0),
                    via,
                })
            })
            .collect();
        // A node that does not route, whose every route leaves by one neighbour: a default
        // route through it, as an end host has.
        match routes.first() {
            Some(r) if !router(node) && routes.iter().all(|x| x.via == r.via) => {
                out.push(Route {
                    dest: None,
                    ..r.clone()
                });
            }
            _ => out.extend(routes),
        }
    }
    out
}

fn read(path: &Path) -> Result<String, LabError> {
    std::fs::read_to_string(path)
        .map_err(|e| LabError::BadTopology(format!("cannot read {}: {e}", path.display())))
}

/// An impairment given as `key=value,...` or as a TOML file.
fn impair_spec(arg: &str, flag: &str) -> Result<ImpairSpec, LabError> {
    let path = Path::new(arg);
    let parsed = if path.is_file() {
        ImpairSpec::parse(&read(path)?).map_err(|e| format!("{arg}: {e}"))
    } else {
        ImpairSpec::parse_inline(arg).map_err(|e| e.to_string())
    };
    parsed.map_err(|e| LabError::BadTopology(format!("{flag}: {e}")))
}

impl Request {
    /// Whether the topology is a file (by name or because it exists).
    fn is_file(&self) -> bool {
        self.topology.ends_with(".toml") || Path::new(&self.topology).is_file()
    }

    /// The topology to build.
    ///
    /// # Errors
    /// An unknown topology, a setting that belongs to another topology (or to no file), a
    /// file that cannot be read, settings that do not parse.
    pub fn resolve(&self) -> Result<Topology, LabError> {
        let mut topo = self.resolve_links()?;
        if let Some(mtu) = self.mtu {
            for l in &mut topo.links {
                let extra = l.mtu.map_or(0, |m| m.saturating_sub(1500));
                l.mtu = Some(mtu.saturating_add(extra));
            }
        }
        Ok(topo)
    }

    fn resolve_links(&self) -> Result<Topology, LabError> {
        let topology = self.topology.as_str();
        let wrong = |flag: &str, owner: &str| {
            LabError::BadTopology(format!("{flag} belongs to the {owner} topology"))
        };
        let ports =
            self.ingress.is_some() || self.port_rate_bps.is_some() || self.egress_bps.is_some();
        let has_settings = self.shape.is_some()
            || self.impair.is_some()
            || self.path_a.is_some()
            || self.path_b.is_some()
            || self.frer.is_some()
            || ports;
        if self.is_file() {
            if has_settings {
                return Err(LabError::BadTopology(
                    "a topology file carries its own settings: drop --shape/--impair/--path-a/--path-b/--frer".into(),
                ));
            }
            let text = read(Path::new(topology))?;
            // A file of [[node]] and [[link]] tables describes its own network; one with
            // `topology = NAME` names a built-in and its settings.
            let own = toml::from_str::<toml::Table>(&text)
                .is_ok_and(|t| t.contains_key("node") || t.contains_key("link"));
            if own {
                let f = crate::topofile::TopologyFile::parse(topology, &text)
                    .map_err(|e| LabError::BadTopology(e.to_string()))?;
                // A shaper's class list sits beside the file that names it.
                let dir = Path::new(topology).parent().unwrap_or(Path::new("."));
                let classes = |file: &str| read(&dir.join(file));
                return Topology::from_file(&f, &classes)
                    .map_err(|e| LabError::BadTopology(format!("{topology}: {e}")));
            }
            return Topology::from_toml(&text)
                .map_err(|e| LabError::BadTopology(format!("{topology}: {e}")));
        }
        if (self.shape.is_some() || ports) && topology != "shaper" {
            return Err(wrong("--shape/--ingress/--port-rate/--egress", "shaper"));
        }
        if self.impair.is_some() && !matches!(topology, "impair" | "twopath" | "frer") {
            return Err(wrong("--impair", "impair, twopath or frer"));
        }
        if (self.path_a.is_some() || self.path_b.is_some())
            && !matches!(topology, "twopath" | "frer")
        {
            return Err(wrong("--path-a/--path-b", "twopath or frer"));
        }
        if self.frer.is_some() && topology != "frer" {
            return Err(wrong("--frer", "frer"));
        }
        let both = match &self.impair {
            Some(s) => impair_spec(s, "--impair")?,
            None => ImpairSpec::default(),
        };
        match topology {
            "shaper" => {
                let bits = |v: f64| (v.is_finite() && v >= 1.0).then_some(v.round() as u64);
                let spec = match (&self.shape, self.egress_bps) {
                    (Some(_), Some(_)) => {
                        return Err(LabError::BadTopology(
                            "--egress is a plain port without classes: drop --shape, or put the port rate in the class list's [default]".into(),
                        ))
                    }
                    (Some(path), None) => ShaperSpec::parse(&read(path)?)
                        .map_err(|e| LabError::BadShape(format!("{}: {e}", path.display())))?,
                    (None, Some(e)) => ShaperSpec::port(bits(e).ok_or_else(|| {
                        LabError::BadTopology("--egress: give a rate above 0".into())
                    })?),
                    (None, None) => return Err(LabError::NeedsShape),
                };
                let ingress = self.ingress.unwrap_or(1);
                if !(1..=8).contains(&ingress) {
                    return Err(LabError::BadTopology(format!(
                        "--ingress {ingress}: give 1..=8"
                    )));
                }
                let port_rate_bps = self.port_rate_bps.and_then(bits);
                Ok(Topology::shaper_with(
                    spec,
                    ShaperPorts {
                        ingress,
                        port_rate_bps,
                    },
                ))
            }
            "impair" => Ok(Topology::impair(both)),
            "twopath" | "frer" => {
                let path = |spec: &Option<String>, flag: &str| match spec {
                    Some(s) => impair_spec(s, flag),
                    None => Ok(both),
                };
                let (a, b) = (
                    path(&self.path_a, "--path-a")?,
                    path(&self.path_b, "--path-b")?,
                );
                if topology == "twopath" {
                    return Ok(Topology::twopath(a, b));
                }
                let opts = match &self.frer {
                    Some(s) => FrerLabOptions::parse_inline(s)
                        .map_err(|e| LabError::BadTopology(format!("--frer: {e}")))?,
                    None => FrerLabOptions::default(),
                };
                Ok(Topology::frer(a, b, opts))
            }
            other => Topology::builtin(other),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::cmd::DryRun;
    use crate::lifecycle::Lab;

    #[test]
    fn router_builds_in_order_with_forwarding_and_routes() {
        let t = Topology::builtin("router").unwrap();
        let mut d = DryRun::default();
        Lab::up("r1", &t, &mut d).unwrap();
        let script = d.lines.join("\n");
        assert!(
            script.starts_with("ip netns add wb-r1-talker\n"),
            "{script}"
        );
        let q = veth_queues();
        assert!(script.contains(&format!(
            "ip link add eth0 netns wb-r1-talker numtxqueues {q} numrxqueues {q} type veth peer name eth0 netns wb-r1-dut numtxqueues {q} numrxqueues {q}"
        )), "{script}");
        assert!(script.contains(&format!(
            "ip link add eth1 netns wb-r1-dut numtxqueues {q} numrxqueues {q} type veth peer name eth0 netns wb-r1-listener"
        )), "{script}");
        assert!(script.contains("ip netns exec wb-r1-dut sysctl -qw net.ipv4.ip_forward=1"));
        assert!(
            script.ends_with("ip -n wb-r1-listener route add default via 198.18.2.254"),
            "{script}"
        );
        assert_eq!(t.address_of("listener"), Some(Ipv4Addr::new(198, 18, 2, 1)));
        // Every address in the benchmarking range, every MAC locally administered.
        for i in t.links.iter().flat_map(|l| [&l.a, &l.b]) {
            assert_eq!(i.addr.unwrap().octets()[..2], [198, 18]);
            assert_eq!(i.mac[0] & 0x03, 0x02, "locally administered unicast");
        }
    }

    #[test]
    fn an_mtu_applies_to_every_link_and_tagged_links_keep_their_extra() {
        let script = |topology: &str, mtu: Option<u16>| -> Vec<String> {
            let req = Request {
                topology: topology.into(),
                mtu,
                ..Request::default()
            };
            let t = req.resolve().unwrap();
            t.build_commands("m1")
                .iter()
                .map(|c| c.to_string())
                .collect()
        };
        let direct = script("direct", Some(9000));
        for node in ["talker", "listener"] {
            let want = format!("ip -n wb-m1-{node} link set eth0 mtu 9000");
            assert!(direct.contains(&want), "{direct:#?}");
        }
        assert!(!script("direct", None).iter().any(|c| c.contains(" mtu ")));
        // The frer links carry the R-TAG: 1510 by default, 9010 under --mtu 9000.
        let frer = script("frer", Some(9000));
        assert!(frer.iter().any(|c| c.ends_with("mtu 9010")), "{frer:#?}");
        assert!(!frer.iter().any(|c| c.ends_with("mtu 1510")));
    }

    #[test]
    fn a_shaper_lab_has_ports_of_their_own_at_a_port_rate() {
        let req = Request {
            topology: "shaper".into(),
            ingress: Some(3),
            port_rate_bps: Some(100e6),
            egress_bps: Some(100e6),
            ..Request::default()
        };
        let t = req.resolve().unwrap();
        assert_eq!(t.nodes, ["talker", "talker2", "talker3", "dut", "listener"]);
        let script: Vec<String> = t
            .build_commands("p1")
            .iter()
            .map(|c| c.to_string())
            .collect();
        let has = |l: &str| script.iter().any(|x| x == l);
        assert!(
            has("ip -n wb-p1-talker3 addr add 198.18.4.1/24 dev eth0"),
            "{script:#?}"
        );
        assert!(has(
            "ip -n wb-p1-talker3 route add default via 198.18.4.254"
        ));
        assert!(has("tc -n wb-p1-dut qdisc add dev ifbeth3 root tbf rate 100000000bit burst 12500b limit 65536b"));
        assert!(has("tc -n wb-p1-dut filter add dev eth0 parent ffff: protocol all u32 match u32 0 0 action mirred egress redirect dev ifbeth0"));
        // A plain port egress: one class at the port rate, no filters.
        assert!(script
            .iter()
            .any(|l| l.contains("classid 1:999 htb rate 100000000bit")));
        assert!(!script.iter().any(|l| l.contains(" filter add dev eth1")));
        for (bad, want) in [
            (
                Request {
                    ingress: Some(9),
                    ..req.clone()
                },
                "--ingress 9",
            ),
            (
                Request {
                    shape: Some("x.toml".into()),
                    ..req.clone()
                },
                "--egress is a plain port",
            ),
            (
                Request {
                    topology: "router".into(),
                    ..req.clone()
                },
                "belongs to the shaper",
            ),
        ] {
            let e = bad.resolve().unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn impair_moves_forwarding_from_the_kernel_to_the_stage() {
        let spec = ImpairSpec::parse_inline("loss=1%").unwrap();
        let t = Topology::impair(spec);
        let script: Vec<String> = t
            .build_commands("i1")
            .iter()
            .map(|c| c.to_string())
            .collect();
        assert!(!script.iter().any(|l| l.contains("ip_forward=1")));
        assert!(script
            .contains(&"ip netns exec wb-i1-talker ethtool -K eth0 tx off tso off gso off".into()));
        let [stage] = &t.stages[..] else {
            panic!("one stage")
        };
        assert_eq!(stage.node, "dut");
        let Mode::Router { a, b } = stage.config.mode else {
            panic!("router mode")
        };
        // Side a faces the talker, side b the listener.
        assert_eq!(a.neighbour, t.links[0].a.mac);
        assert_eq!(b.neighbour, t.links[1].b.mac);
        assert_eq!(b.local, Ipv4Addr::new(198, 18, 2, 254));
        let [process] = &t.processes("i1")[..] else {
            panic!("one process")
        };
        let (cmd, log) = (
            process.command(Path::new("/usr/bin/wirebench")),
            process.log_file(),
        );
        let line = cmd.to_string();
        assert!(
            line.starts_with("ip netns exec wb-i1-dut /usr/bin/wirebench lab stage --netns-file /run/netns/wb-i1-dut --state /run/wirebench/labs/i1/dut.state.json --config-json '{"),
            "{line}"
        );
        assert_eq!(log, Path::new("/run/wirebench/labs/i1/dut.log"));
    }

    #[test]
    fn twopath_routes_over_path_a_with_bridging_stages_on_both_paths() {
        let t = Topology::twopath(
            ImpairSpec::parse_inline("loss=5%").unwrap(),
            ImpairSpec::parse_inline("delay=1ms").unwrap(),
        );
        assert_eq!(t.nodes.len(), 6);
        let script = t
            .build_commands("p1")
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join("\n");
        assert!(script.contains("ip -n wb-p1-split route add 198.18.23.0/24 via 198.18.21.2"));
        assert!(script.contains("ip -n wb-p1-merge route add 198.18.20.0/24 via 198.18.21.1"));
        assert!(
            !script.contains("wb-p1-patha addr add"),
            "path nodes have no address"
        );
        let stages: Vec<(&str, Mode, f64)> = t
            .stages
            .iter()
            .map(|s| (s.node.as_str(), s.config.mode, s.config.spec.forward.loss))
            .collect();
        assert_eq!(
            stages,
            [("patha", Mode::Bridge, 0.05), ("pathb", Mode::Bridge, 0.0)]
        );
        assert_eq!(t.address_of("merge"), Some(Ipv4Addr::new(198, 18, 21, 2)));
        // Every MAC is distinct.
        let mut macs: Vec<[u8; 6]> = t.links.iter().flat_map(|l| [l.a.mac, l.b.mac]).collect();
        macs.sort();
        macs.dedup();
        assert_eq!(macs.len(), 12);
    }

    #[test]
    fn frer_replicates_at_split_eliminates_at_merge_and_its_file_parses() {
        let t = Topology::from_toml(include_str!("../../../examples/lab-frer.toml")).unwrap();
        assert_eq!(t.kind, "frer");
        assert!(
            t.forwarding.is_empty(),
            "no kernel forwarding on split or merge"
        );
        let split = &t.relays[0].config;
        assert_eq!(t.relays[0].node, "split");
        let rep = split.streams[0].replicate.as_ref().unwrap();
        assert_eq!((rep.from.as_str(), rep.to.len()), ("eth0", 2));
        let merge = &t.relays[1].config;
        let elim = merge.streams[1].eliminate.as_ref().unwrap();
        assert_eq!(
            (elim.to.as_str(), elim.history, elim.off),
            ("eth0", 1024, false)
        );
        assert_eq!(t.stages[1].config.spec.forward.delay_ns, 1_000_000);
        assert_ne!(t.stages[0].config.spec.seed, t.stages[1].config.spec.seed);
        // The stages start first, then the relays, each with its own settings.
        let processes = t.processes("f1");
        let started: Vec<(&str, &str)> = processes
            .iter()
            .map(|p| (p.node.as_str(), p.what()))
            .collect();
        let (stage, relay) = ("the impairment stage", "the FRER relay");
        assert_eq!(
            started,
            [
                (t.stages[0].node.as_str(), stage),
                (t.stages[1].node.as_str(), stage),
                ("split", relay),
                ("merge", relay)
            ]
        );
        assert_eq!(
            processes[2].program,
            crate::processes::Program::Relay {
                config: split.clone(),
                fast: t.relays[0].fast
            }
        );
        // Paths with the same seed are made independent.
        let same = Topology::frer(
            ImpairSpec::default(),
            ImpairSpec::default(),
            FrerLabOptions::default(),
        );
        assert_ne!(
            same.stages[0].config.spec.seed,
            same.stages[1].config.spec.seed
        );
        // The control group: the same relays, no streams, path A only.
        let plain = Topology::frer(
            ImpairSpec::default(),
            ImpairSpec::default(),
            FrerLabOptions::parse_inline("mode=plain").unwrap(),
        );
        assert!(plain.relays.iter().all(|r| r.config.streams.is_empty()));
        assert_eq!(plain.relays[0].config.pass.get("eth0").unwrap(), "eth1");
        for (bad, text) in [
            ("history=1", "history: '1' is not 2..=2048"),
            ("mode=x", "mode: 'x' is not frer or plain"),
            ("elimination=maybe", "elimination: 'maybe' is not on or off"),
            (
                "x=1",
                "unknown key 'x' (history, reset_ms, elimination, mode, fast)",
            ),
            ("history", "'history' is not key=value"),
            ("reset_ms=soon", "reset_ms: 'soon' is not a number of ms"),
        ] {
            let e = FrerLabOptions::parse_inline(bad).unwrap_err();
            assert_eq!(e.to_string(), text, "{bad}");
        }
        assert_eq!(
            FrerLabOptions::parse_inline("mode=x"),
            Err(FrerOptionsError::Mode("x".into()))
        );
        assert!(Topology::from_toml("topology = \"frer\"\n[impair]\nloss = \"1%\"\n").is_err());
    }

    /// A link as `node:port` with its address at each end, and its MTU.
    type Wire = (
        String,
        Option<Ipv4Addr>,
        String,
        Option<Ipv4Addr>,
        Option<u16>,
    );

    /// The link ends of a topology as `node:port` pairs with their addresses and MTU.
    fn wiring(t: &Topology) -> Vec<Wire> {
        let mut w: Vec<_> = t
            .links
            .iter()
            .map(|l| {
                let end = |i: &Iface| format!("{}:{}", i.node, i.name);
                (end(&l.a), l.a.addr, end(&l.b), l.b.addr, l.mtu)
            })
            .collect();
        w.sort();
        w
    }

    /// A file's marks name where tests start and end: the chain's hosts `a` and `b`.
    #[test]
    fn a_files_talker_and_listener_marks_name_their_nodes() {
        for (name, text, marks) in [
            (
                "lab-chain.toml",
                include_str!("../../../examples/lab-chain.toml"),
                (Some("a"), Some("b")),
            ),
            (
                "lab-switch.toml",
                include_str!("../../../examples/lab-switch.toml"),
                (None, Some("h4")),
            ),
        ] {
            let f = crate::topofile::TopologyFile::parse(name, text).unwrap();
            let t = Topology::from_file(&f, &no_classes).unwrap();
            assert_eq!((t.talker_node(), t.listener_node()), marks, "{name}");
        }
    }

    #[test]
    fn the_frer_network_file_builds_the_built_in_frer_lab() {
        let f = crate::topofile::TopologyFile::parse(
            "lab-frer-network.toml",
            include_str!("../../../examples/lab-frer-network.toml"),
        )
        .unwrap();
        let t = Topology::from_file(&f, &no_classes).unwrap();
        let builtin = Topology::frer(
            ImpairSpec::default(),
            ImpairSpec::default(),
            FrerLabOptions::default(),
        );
        assert_eq!(t.nodes, builtin.nodes);
        assert_eq!(wiring(&t), wiring(&builtin));
        assert!(t.forwarding.is_empty() && t.routes.is_empty());
        assert_eq!(t.offloads_off, builtin.offloads_off);
        // The same permanent neighbours (the MACs are the file's own).
        let neigh = |t: &Topology| -> Vec<(String, String, Ipv4Addr)> {
            t.neighbours
                .iter()
                .map(|n| (n.node.clone(), n.dev.clone(), n.addr))
                .collect()
        };
        let (mut a, mut b) = (neigh(&t), neigh(&builtin));
        a.sort();
        b.sort();
        assert_eq!(a, b);
        let mac_of = |t: &Topology, node: &str| t.ports_of(node)[0].mac;
        assert!(t
            .neighbours
            .iter()
            .any(|n| n.node == "talker" && n.mac == mac_of(&t, "listener")));
        // The same relays, streams and ports; the stages bridge, each with its impairment.
        for (mine, theirs) in t.relays.iter().zip(&builtin.relays) {
            assert_eq!(mine.node, theirs.node);
            assert_eq!(mine.fast, theirs.fast);
            assert_eq!(mine.config.pass, theirs.config.pass);
            assert_eq!(mine.config.streams.len(), 2);
            for (x, y) in mine.config.streams.iter().zip(&theirs.config.streams) {
                assert_eq!(x.name, y.name);
                assert_eq!(x.replicate, y.replicate);
                assert_eq!(x.eliminate, y.eliminate);
            }
        }
        let stages: Vec<(&str, &Mode, &str)> = t
            .stages
            .iter()
            .map(|s| (s.node.as_str(), &s.config.mode, s.config.a.as_str()))
            .collect();
        assert_eq!(
            stages,
            [
                ("patha", &Mode::Bridge, "eth0"),
                ("pathb", &Mode::Bridge, "eth0")
            ]
        );
        assert_eq!(t.stages[1].config.spec.forward.delay_ns, 1_000_000);
        assert_eq!(
            t.relays[1].config.streams[1]
                .eliminate
                .as_ref()
                .unwrap()
                .history,
            1024
        );
    }

    #[test]
    fn every_built_in_is_built_from_its_shipped_file() {
        for (kind, text) in BUILTIN_FILES {
            let f = crate::topofile::TopologyFile::parse(kind, text).unwrap();
            let t = Topology::builtin(kind).unwrap();
            assert_eq!(t.kind, *kind);
            assert_eq!(t.limit_overhead, 0, "{kind}: L2 port rates");
            let names: Vec<&str> = f.nodes.iter().map(|n| n.name.as_str()).collect();
            assert_eq!(t.nodes, names, "{kind}");
            assert_eq!(t.links.len(), f.links.len(), "{kind}");
            // The MACs of before: 02:77:62:00:LINK:SIDE.
            for l in &t.links {
                assert_eq!(l.a.mac[..4], [2, 0x77, 0x62, 0], "{kind}");
                assert_eq!((l.a.mac[4], l.a.mac[5], l.b.mac[5]), (l.b.mac[4], 1, 2));
            }
            assert_eq!(t.listener_node(), Some("listener"));
            assert_eq!(t.talker_node(), Some("talker"), "{kind}");
        }
        // The hosts of router and impair have a default route through the dut.
        for kind in ["router", "impair"] {
            let t = Topology::builtin(kind).unwrap();
            let routes: Vec<(&str, Option<(Ipv4Addr, u8)>)> =
                t.routes.iter().map(|r| (r.node.as_str(), r.dest)).collect();
            assert_eq!(routes, [("talker", None), ("listener", None)], "{kind}");
        }
    }

    #[test]
    fn a_link_with_an_impairment_crosses_a_bridging_stage_of_its_own() {
        let text = "[[node]]\nname = \"a\"\nrole = \"host\"\n\
                    [[node]]\nname = \"b\"\nrole = \"host\"\n\
                    [[link]]\na = \"a:eth0\"\nb = \"b:eth0\"\nimpair = \"delay=5ms\"\nmtu = 9000\n";
        let f = crate::topofile::TopologyFile::parse("f.toml", text).unwrap();
        let t = Topology::from_file(&f, &no_classes).unwrap();
        assert_eq!(t.nodes, ["a", "b", "link1"]);
        let w = wiring(&t);
        let a1 = Some(Ipv4Addr::new(198, 18, 1, 1));
        let b1 = Some(Ipv4Addr::new(198, 18, 1, 2));
        assert_eq!(
            w,
            [
                (
                    "a:eth0".to_owned(),
                    a1,
                    "link1:eth0".to_owned(),
                    None,
                    Some(9000)
                ),
                (
                    "link1:eth1".to_owned(),
                    None,
                    "b:eth0".to_owned(),
                    b1,
                    Some(9000)
                ),
            ]
        );
        assert_eq!(t.stages.len(), 1);
        assert_eq!(t.stages[0].config.mode, Mode::Bridge);
        assert_eq!(t.stages[0].config.spec.forward.delay_ns, 5_000_000);
        assert_eq!(t.offloads_off.len(), 2, "both ends' offloads off");
        // A router-mode impair node beyond a link's stage sends to the host, not the stage.
        let text2 = "[[node]]\nname = \"a\"\nrole = \"host\"\n\
                     [[node]]\nname = \"w\"\nrole = \"impair\"\n\
                     [[node]]\nname = \"b\"\nrole = \"host\"\n\
                     [[link]]\na = \"a:eth0\"\nb = \"w:eth0\"\n\
                     [[link]]\na = \"w:eth1\"\nb = \"b:eth0\"\nimpair = \"delay=5ms\"\n";
        let f = crate::topofile::TopologyFile::parse("f.toml", text2).unwrap();
        let t = Topology::from_file(&f, &no_classes).unwrap();
        let b_mac = t.ports_of("b")[0].mac;
        let w = t.stages.iter().find(|s| s.node == "w").unwrap();
        match &w.config.mode {
            Mode::Router { b, .. } => assert_eq!(b.neighbour, b_mac),
            Mode::Bridge => panic!("w routes"),
        }
        // A node already named like the stage's node is named in the error.
        let clash = "[[node]]\nname = \"link1\"\nrole = \"host\"\n\
                     [[node]]\nname = \"b\"\nrole = \"host\"\n\
                     [[link]]\na = \"link1:eth0\"\nb = \"b:eth0\"\nimpair = \"delay=5ms\"\n";
        let f = crate::topofile::TopologyFile::parse("f.toml", clash).unwrap();
        let e = Topology::from_file(&f, &no_classes)
            .unwrap_err()
            .to_string();
        assert!(e.contains("rename the node of that name"), "{e}");
    }

    #[test]
    fn topology_files_name_a_builtin_and_its_settings() {
        let t = Topology::from_toml(
            "topology = \"twopath\"\n[path_a]\nloss = \"5%\"\n[path_b]\ndelay = \"3ms\"\n",
        )
        .unwrap();
        assert_eq!(t.kind, "twopath");
        assert_eq!(t.stages[1].config.spec.forward.delay_ns, 3_000_000);
        let t = Topology::from_toml(
            "topology = \"shaper\"\n[[shaper.class]]\nname = \"u\"\nprotocol = \"udp\"\nrate = \"5M\"\n",
        )
        .unwrap();
        assert_eq!(t.shaper.as_ref().unwrap().class[0].rate, "5M");
        assert_eq!(
            Topology::from_toml("topology = \"router\"").unwrap(),
            Topology::builtin("router").unwrap()
        );
        for (text, needle) in [
            ("topology = \"mesh\"", "unknown topology 'mesh'"),
            (
                "topology = \"router\"\n[impair]\nloss = 1",
                "[impair] does not belong",
            ),
            (
                "topology = \"impair\"\n[impair]\nloss = 101",
                "[impair]: loss must be",
            ),
            (
                "topology = \"impair\"\nname = \"x\"",
                "unknown field `name`",
            ),
            ("topology = \"shaper\"", "needs its classes"),
            ("[impair]\nloss = 1", "missing field `topology`"),
        ] {
            let e = Topology::from_toml(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
    }

    #[test]
    fn a_file_network_gets_bridges_forwarding_routes_and_policers() {
        let text = "[[node]]\nname = \"a\"\nrole = \"host\"\n\
                    [[node]]\nname = \"r\"\nrole = \"router\"\n\
                    [[node]]\nname = \"sw\"\nrole = \"switch\"\nvlan_filtering = true\n\
                    [[node]]\nname = \"b\"\nrole = \"host\"\n\
                    [[node]]\nname = \"c\"\nrole = \"host\"\n\
                    [[link]]\na = \"a:eth0\"\nb = \"r:eth0\"\nrate = \"10M\"\n\
                    [[link]]\na = \"r:eth1\"\nb = \"sw:p1\"\n\
                    [[link]]\na = \"b:eth0\"\nb = \"sw:p2\"\n\
                    [[link]]\na = \"c:eth0\"\nb = \"sw:p3\"\n";
        let f = crate::topofile::TopologyFile::parse("f.toml", text).unwrap();
        let t = Topology::from_file(&f, &no_classes).unwrap();
        assert_eq!(t.forwarding, ["r"]);
        assert_eq!(t.bridges.len(), 1);
        assert_eq!(
            (t.bridges[0].node.as_str(), t.bridges[0].vlan_filtering),
            ("sw", true)
        );
        assert_eq!(t.bridges[0].ports, ["p1", "p2", "p3"]);
        // The switch's subnet is 198.18.2.0/24: r .1, b .2, c .3.
        // Each host has one first hop, so one default route (None) through it.
        let route = |node: &str| -> Vec<(Option<Ipv4Addr>, Ipv4Addr)> {
            t.routes
                .iter()
                .filter(|r| r.node == node)
                .map(|r| (r.dest.map(|d| d.0), r.via))
                .collect()
        };
        let ip = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        assert_eq!(route("a"), [(None, ip("198.18.1.2"))]);
        assert_eq!(route("b"), [(None, ip("198.18.2.1"))]);
        assert_eq!(route("c"), [(None, ip("198.18.2.1"))]);
        assert!(route("r").is_empty(), "the router touches both subnets");
        // a -> r limited where it arrives, r -> a where the router sends it.
        assert_eq!(t.policers, [("r".into(), "eth0".into(), 10_000_000)]);
        assert_eq!(t.egress_limits, [("r".into(), "eth0".into(), 10_000_000)]);
        let cmds: Vec<String> = t
            .build_commands("x")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            cmds.contains(&"ip -n wb-x-sw link add br0 type bridge vlan_filtering 1".to_owned())
        );
        assert!(cmds.contains(&"ip -n wb-x-sw link set p3 master br0".to_owned()));
        // A learning limit is set over rtnetlink, before the ports join (and learn).
        let limited = text.replacen("vlan_filtering = true", "learning_limit = 512", 1);
        let f = crate::topofile::TopologyFile::parse("f.toml", &limited).unwrap();
        let cmds = Topology::from_file(&f, &no_classes)
            .unwrap()
            .build_commands("x");
        let at = |line: &str| cmds.iter().position(|c| c.to_string() == line);
        let limit = at("ip -n wb-x-sw link set br0 type bridge fdb_max_learned 512").unwrap();
        assert!(cmds[limit].kernel.is_some());
        assert!(limit < at("ip -n wb-x-sw link set p1 master br0").unwrap());
    }

    /// A class list reader for files that name none.
    fn no_classes(file: &str) -> Result<String, LabError> {
        Err(LabError::BadTopology(format!("no file {file} here")))
    }

    #[test]
    fn a_file_shaper_shapes_its_port_and_an_impair_node_forwards_through_its_stage() {
        let text = "[[node]]\nname = \"a\"\nrole = \"host\"\n\
                    [[node]]\nname = \"sh\"\nrole = \"shaper\"\nshape = \"c.toml\"\n\
                    [[node]]\nname = \"wan\"\nrole = \"impair\"\nimpair = \"delay=5ms\"\n\
                    [[node]]\nname = \"b\"\nrole = \"host\"\n\
                    [[link]]\na = \"a:eth0\"\nb = \"sh:eth0\"\n\
                    [[link]]\na = \"sh:eth1\"\nb = \"wan:eth0\"\n\
                    [[link]]\na = \"wan:eth1\"\nb = \"b:eth0\"\n";
        let f = crate::topofile::TopologyFile::parse("f.toml", text).unwrap();
        let classes = |file: &str| {
            assert_eq!(file, "c.toml");
            Ok("[[class]]\nname = \"all\"\nrate = \"20M\"\n".to_owned())
        };
        let t = Topology::from_file(&f, &classes).unwrap();
        // The shaper forwards and shapes its second port; the impair node does not forward
        // in the kernel: its stage does, between its two ports.
        assert_eq!(t.forwarding, ["sh"]);
        assert_eq!(t.file_shapers.len(), 1);
        assert_eq!(
            (t.file_shapers[0].0.as_str(), t.file_shapers[0].1.as_str()),
            ("sh", "eth1")
        );
        let cmds: Vec<String> = t
            .build_commands("x")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            cmds.iter()
                .any(|c| c.starts_with("tc -n wb-x-sh qdisc add dev eth1 root handle 1: htb")),
            "{cmds:?}"
        );
        assert_eq!(t.stages.len(), 1);
        let st = &t.stages[0];
        assert_eq!(
            (st.node.as_str(), st.config.a.as_str(), st.config.b.as_str()),
            ("wan", "eth0", "eth1")
        );
        let Mode::Router { a, b } = st.config.mode else {
            panic!("router mode")
        };
        // Toward sh (link 2, side 1) and toward b (link 3, side 2).
        assert_eq!((a.neighbour[4], a.neighbour[5]), (2, 1));
        assert_eq!((b.neighbour[4], b.neighbour[5]), (3, 2));
        assert!(a.local != Ipv4Addr::UNSPECIFIED && b.local != Ipv4Addr::UNSPECIFIED);
        assert_eq!(
            t.offloads_off,
            [("sh".into(), "eth1".into()), ("b".into(), "eth0".into())]
        );
        // a reaches b's subnet through sh; b reaches a's through wan.
        let via = |node: &str| {
            t.routes
                .iter()
                .filter(|r| r.node == node)
                .map(|r| r.via)
                .collect::<Vec<_>>()
        };
        assert!(!via("a").is_empty() && !via("b").is_empty());
        assert_eq!(t.processes("x").len(), 1);
        // A class list that is not there is named.
        let e = Topology::from_file(&f, &no_classes)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no file c.toml"), "{e}");
    }

    #[test]
    fn unknown_topologies_and_bad_names_are_refused() {
        assert!(matches!(
            Topology::builtin("mesh"),
            Err(LabError::UnknownTopology(_))
        ));
        let t = Topology::builtin("direct").unwrap();
        assert!(matches!(
            Lab::up("Bad Name", &t, &mut DryRun::default()),
            Err(LabError::BadName(_))
        ));
    }
}
