//! Built-in topologies and the lab life cycle: up (all or nothing), down, list, exec.
//!
//! - `direct`: talker (198.18.0.1) — listener (198.18.0.2), one veth pair.
//! - `router`: talker (198.18.1.1) — dut (198.18.1.254 | 198.18.2.254, IPv4 forwarding) —
//!   listener (198.18.2.1), default routes through the dut.
//!
//! Addresses are from the RFC 2544 benchmarking range 198.18.0.0/15 (RFC 2544 §12 /
//! RFC 6815); MACs are locally administered (02:77:62:…). Every lab lives in its own
//! namespaces, so several labs with the same addresses run side by side.

use std::net::Ipv4Addr;

use serde::Serialize;

use crate::cmd::{Cmd, Runner};
use crate::naming;
use crate::shaper::ShaperSpec;
use crate::LabError;

/// One end of a link.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Iface {
    /// Node (namespace) it lives in.
    pub node: String,
    /// Interface name inside the namespace.
    pub name: String,
    /// IPv4 address.
    pub addr: Ipv4Addr,
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
}

/// A test network: nodes, links, routes and which nodes forward.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Topology {
    /// Built-in name.
    pub kind: String,
    /// Node names (no '-').
    pub nodes: Vec<String>,
    /// veth pairs.
    pub links: Vec<Link>,
    /// (node, gateway): default routes.
    pub routes: Vec<(String, Ipv4Addr)>,
    /// Nodes with IPv4 forwarding on.
    pub forwarding: Vec<String>,
    /// The class-based shaper on the dut's egress toward the listener (`shaper`).
    #[serde(skip)]
    pub shaper: Option<ShaperSpec>,
}

fn iface(node: &str, name: &str, addr: [u8; 4], link: u8, side: u8) -> Iface {
    Iface {
        node: node.to_owned(),
        name: name.to_owned(),
        addr: Ipv4Addr::from(addr),
        prefix: 24,
        mac: [0x02, 0x77, 0x62, 0x00, link, side],
    }
}

impl Topology {
    /// A built-in topology by name.
    pub fn builtin(kind: &str) -> Result<Self, LabError> {
        match kind {
            "direct" => Ok(Self {
                kind: kind.to_owned(),
                nodes: vec!["talker".into(), "listener".into()],
                links: vec![Link {
                    a: iface("talker", "eth0", [198, 18, 0, 1], 0, 1),
                    b: iface("listener", "eth0", [198, 18, 0, 2], 0, 2),
                }],
                routes: vec![],
                forwarding: vec![],
                shaper: None,
            }),
            "router" => Ok(Self {
                kind: kind.to_owned(),
                nodes: vec!["talker".into(), "dut".into(), "listener".into()],
                links: vec![
                    Link {
                        a: iface("talker", "eth0", [198, 18, 1, 1], 1, 1),
                        b: iface("dut", "eth0", [198, 18, 1, 254], 1, 2),
                    },
                    Link {
                        a: iface("dut", "eth1", [198, 18, 2, 254], 2, 1),
                        b: iface("listener", "eth0", [198, 18, 2, 1], 2, 2),
                    },
                ],
                routes: vec![
                    ("talker".into(), Ipv4Addr::new(198, 18, 1, 254)),
                    ("listener".into(), Ipv4Addr::new(198, 18, 2, 254)),
                ],
                forwarding: vec!["dut".into()],
                shaper: None,
            }),
            "shaper" => Err(LabError::NeedsShape),
            other => Err(LabError::UnknownTopology(other.to_owned())),
        }
    }

    /// `shaper`: the router topology with an HTB class tree on the dut's egress toward the
    /// listener (dut eth1).
    pub fn shaper(spec: ShaperSpec) -> Self {
        let mut t = Self::builtin("router").unwrap_or_else(|_| unreachable!("router is built in"));
        t.kind = "shaper".into();
        t.shaper = Some(spec);
        t
    }

    /// The address a node is reached at (its first interface).
    pub fn address_of(&self, node: &str) -> Option<Ipv4Addr> {
        self.links
            .iter()
            .flat_map(|l| [&l.a, &l.b])
            .find(|i| i.node == node)
            .map(|i| i.addr)
    }

    /// Every command that builds the topology as lab `lab`, in order.
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
            ));
            for i in [&l.a, &l.b] {
                out.push(Cmd::set_mac(&ns(&i.node), &i.name, i.mac));
                out.push(Cmd::addr_add(&ns(&i.node), &i.name, i.addr, i.prefix));
                out.push(Cmd::link_up(&ns(&i.node), &i.name));
            }
        }
        for n in &self.forwarding {
            out.push(Cmd::sysctl(&ns(n), "net.ipv4.ip_forward", "1"));
        }
        for (n, via) in &self.routes {
            out.push(Cmd::default_route(&ns(n), *via));
        }
        if let Some(s) = &self.shaper {
            out.extend(s.commands(&ns("dut"), "eth1"));
        }
        out
    }
}

/// A lab that is up.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Lab {
    /// Lab name.
    pub name: String,
    /// Its nodes' namespaces, in node order.
    pub namespaces: Vec<String>,
}

/// Namespaces that labs made, as (namespace, lab, node).
pub fn lab_namespaces(runner: &mut dyn Runner) -> Result<Vec<(String, String, String)>, LabError> {
    let out = runner.run(&Cmd::netns_list())?;
    Ok(out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|ns| {
            naming::parse(ns).map(|(lab, node)| (ns.to_owned(), lab.to_owned(), node.to_owned()))
        })
        .collect())
}

impl Lab {
    /// Builds `topo` as lab `name`: all or nothing. A lab of that name must not exist; if
    /// any command fails, everything this call created is removed again.
    pub fn up(name: &str, topo: &Topology, runner: &mut dyn Runner) -> Result<Lab, LabError> {
        naming::check(name)?;
        if !runner.is_dry()
            && lab_namespaces(runner)?
                .iter()
                .any(|(_, lab, _)| lab == name)
        {
            return Err(LabError::Exists(name.to_owned()));
        }
        let lab = Lab {
            name: name.to_owned(),
            namespaces: topo
                .nodes
                .iter()
                .map(|n| naming::namespace(name, n))
                .collect(),
        };
        for c in topo.build_commands(name) {
            if let Err(e) = runner.run(&c) {
                let _ = Self::down(name, runner);
                return Err(e);
            }
        }
        Ok(lab)
    }

    /// Removes every namespace of lab `name` (its veths go with them). Returns how many.
    pub fn down(name: &str, runner: &mut dyn Runner) -> Result<usize, LabError> {
        naming::check(name)?;
        let mine: Vec<String> = lab_namespaces(runner)?
            .into_iter()
            .filter(|(_, lab, _)| lab == name)
            .map(|(ns, _, _)| ns)
            .collect();
        for ns in &mine {
            runner.run(&Cmd::netns_del(ns))?;
        }
        Ok(mine.len())
    }

    /// Removes every namespace any lab made. Returns how many.
    pub fn down_all(runner: &mut dyn Runner) -> Result<usize, LabError> {
        let all = lab_namespaces(runner)?;
        for (ns, _, _) in &all {
            runner.run(&Cmd::netns_del(ns))?;
        }
        Ok(all.len())
    }

    /// The command that runs `argv` on `node` of lab `name`.
    pub fn exec(
        name: &str,
        node: &str,
        argv: &[String],
        runner: &mut dyn Runner,
    ) -> Result<Cmd, LabError> {
        naming::check(name)?;
        let all = lab_namespaces(runner)?;
        let nodes: Vec<&str> = all
            .iter()
            .filter(|(_, l, _)| l == name)
            .map(|(_, _, n)| n.as_str())
            .collect();
        if nodes.is_empty() {
            return Err(LabError::NotFound(name.to_owned()));
        }
        if !nodes.contains(&node) {
            return Err(LabError::NoSuchNode {
                lab: name.to_owned(),
                node: node.to_owned(),
                nodes: nodes.join(", "),
            });
        }
        Ok(Cmd::exec_in(&naming::namespace(name, node), argv))
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::cmd::DryRun;

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
        assert!(script.contains(
            "ip link add eth0 netns wb-r1-talker type veth peer name eth0 netns wb-r1-dut"
        ));
        assert!(script.contains(
            "ip link add eth1 netns wb-r1-dut type veth peer name eth0 netns wb-r1-listener"
        ));
        assert!(script.contains("ip netns exec wb-r1-dut sysctl -qw net.ipv4.ip_forward=1"));
        assert!(
            script.ends_with("ip -n wb-r1-listener route add default via 198.18.2.254"),
            "{script}"
        );
        assert_eq!(t.address_of("listener"), Some(Ipv4Addr::new(198, 18, 2, 1)));
        // Every address in the benchmarking range, every MAC locally administered.
        for i in t.links.iter().flat_map(|l| [&l.a, &l.b]) {
            assert_eq!(i.addr.octets()[..2], [198, 18]);
            assert_eq!(i.mac[0] & 0x03, 0x02, "locally administered unicast");
        }
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

    /// A runner whose n-th command fails, recording everything.
    struct FailAt {
        n: usize,
        seen: Vec<String>,
        namespaces: Vec<String>,
    }

    impl Runner for FailAt {
        fn run(&mut self, cmd: &Cmd) -> Result<String, LabError> {
            self.seen.push(cmd.to_string());
            if cmd.args[..2] == ["netns", "list"] {
                return Ok(self.namespaces.join("\n"));
            }
            if self.seen.len() == self.n {
                return Err(LabError::Command {
                    cmd: cmd.to_string(),
                    detail: "injected".into(),
                });
            }
            match cmd.args[..2] {
                [ref a, ref b] if a == "netns" && b == "add" => {
                    self.namespaces.push(cmd.args[2].clone())
                }
                [ref a, ref b] if a == "netns" && b == "del" => {
                    self.namespaces.retain(|n| *n != cmd.args[2])
                }
                _ => {}
            }
            Ok(String::new())
        }
    }

    #[test]
    fn a_failure_half_way_removes_what_was_built() {
        let t = Topology::builtin("router").unwrap();
        let mut r = FailAt {
            n: 12,
            seen: vec![],
            namespaces: vec!["wb-other-talker".into()],
        };
        assert!(Lab::up("r2", &t, &mut r).is_err());
        assert_eq!(
            r.namespaces,
            ["wb-other-talker"],
            "only the other lab's namespace is left"
        );
    }

    #[test]
    fn an_existing_lab_is_not_built_again() {
        let t = Topology::builtin("direct").unwrap();
        let mut r = FailAt {
            n: 0,
            seen: vec![],
            namespaces: vec!["wb-d1-talker".into(), "wb-d1-listener".into()],
        };
        assert!(matches!(
            Lab::up("d1", &t, &mut r),
            Err(LabError::Exists(_))
        ));
        assert_eq!(r.seen, ["ip netns list"], "nothing was built");
    }
}
