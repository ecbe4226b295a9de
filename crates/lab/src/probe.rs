//! Host probing: what an interface of this host or of a lab's node is (its MAC and
//! addresses; for the report its driver, speed, MTU and offloads) and which MAC the next
//! hop toward an address has, as the kernel resolves it.
//!
//! Addresses and neighbours come from `ip -j` (a typed [`Cmd`] run through a [`Runner`]);
//! driver, speed and offloads from the kernel's ethtool interface ([`engine::nic`]). An
//! interface of a lab node is named by its namespace ([`Endpoint`]).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use engine::frameio::Endpoint;
use model::results::campaign::InterfaceFacts;
use serde_json::Value;

use crate::cmd::{Cmd, Runner};
use crate::LabError;

fn bad(ep: &Endpoint, what: impl std::fmt::Display) -> LabError {
    LabError::Interface(format!("{ep}: {what}"))
}

/// Runs `ip [-n NS] -j ARGS` and parses its JSON.
fn ip_json(runner: &mut dyn Runner, ns: Option<&str>, args: &[&str]) -> Result<Value, LabError> {
    let out = runner.run(&Cmd::ip_json(ns, args))?;
    serde_json::from_str(&out).map_err(|e| LabError::Command {
        cmd: Cmd::ip_json(ns, args).to_string(),
        detail: format!("its output is not JSON: {e}"),
    })
}

/// An interface's MAC and first global IPv4 and IPv6 addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addresses {
    /// MAC address.
    pub mac: [u8; 6],
    /// First IPv4 address.
    pub ipv4: Option<Ipv4Addr>,
    /// First IPv6 address that is not link-local.
    pub ipv6: Option<Ipv6Addr>,
}

impl Addresses {
    /// The address of the family asked for.
    pub fn ip(&self, v6: bool) -> Option<IpAddr> {
        if v6 {
            self.ipv6.map(IpAddr::V6)
        } else {
            self.ipv4.map(IpAddr::V4)
        }
    }
}

/// The MAC and addresses of `ep`.
///
/// # Errors
/// No such interface, not an Ethernet interface, or `ip` failed.
pub fn addresses(runner: &mut dyn Runner, ep: &Endpoint) -> Result<Addresses, LabError> {
    let v = addr_show(runner, ep)?;
    let link = v.get(0).ok_or_else(|| bad(ep, "no such interface"))?;
    let mac = link["address"]
        .as_str()
        .and_then(|m| wire::EthernetAddress::parse_str(m).map(|m| m.0))
        .ok_or_else(|| bad(ep, "not an Ethernet interface"))?;
    let first = |family: &str| -> Option<IpAddr> {
        link["addr_info"].as_array()?.iter().find_map(|x| {
            (x["family"] == family && x["scope"] != "link")
                .then(|| x["local"].as_str()?.parse().ok())
                .flatten()
        })
    };
    Ok(Addresses {
        mac,
        ipv4: match first("inet") {
            Some(IpAddr::V4(a)) => Some(a),
            _ => None,
        },
        ipv6: match first("inet6") {
            Some(IpAddr::V6(a)) => Some(a),
            _ => None,
        },
    })
}

/// `ip -j addr show dev IFACE` of `ep`.
fn addr_show(runner: &mut dyn Runner, ep: &Endpoint) -> Result<Value, LabError> {
    ip_json(
        runner,
        ep.netns.as_deref(),
        &["addr", "show", "dev", &ep.iface],
    )
    .map_err(|e| bad(ep, e))
}

/// Every address of `ep` (IPv4 and IPv6, link-local ones too) with its prefix length: the
/// interface's own addresses and the subnets it is on.
///
/// # Errors
/// No such interface, or `ip` failed.
pub fn networks(runner: &mut dyn Runner, ep: &Endpoint) -> Result<Vec<(IpAddr, u8)>, LabError> {
    let v = addr_show(runner, ep)?;
    let link = v.get(0).ok_or_else(|| bad(ep, "no such interface"))?;
    Ok(link["addr_info"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|x| {
            let ip: IpAddr = x["local"].as_str()?.parse().ok()?;
            let len = u8::try_from(x["prefixlen"].as_u64()?).ok()?;
            Some((ip, len))
        })
        .collect())
}

/// The interface this namespace (`ns`, or the calling thread's) sends to `dst` through,
/// as the kernel's routing says (`ip route get`); `None` without a route.
pub fn route_interface(runner: &mut dyn Runner, ns: Option<&str>, dst: IpAddr) -> Option<String> {
    let route = ip_json(runner, ns, &["route", "get", &dst.to_string()]).ok()?;
    route.get(0)?["dev"].as_str().map(str::to_owned)
}

/// The MAC of the next hop from `ep` toward `dst`, as the kernel resolves it (RFC 2544
/// §25: the DUT answers address resolution). A datagram to the discard port makes the
/// kernel ask, then the neighbour table is read, for up to a second.
///
/// # Errors
/// No route, a route through another interface, or no answer to address resolution.
pub fn next_hop_mac(
    runner: &mut dyn Runner,
    ep: &Endpoint,
    dst: IpAddr,
) -> Result<[u8; 6], LabError> {
    let ns = ep.netns.as_deref();
    let route = ip_json(runner, ns, &["route", "get", &dst.to_string()]).map_err(|e| bad(ep, e))?;
    let r = route
        .get(0)
        .ok_or_else(|| bad(ep, format!("no route to {dst}")))?;
    let hop: IpAddr = r["gateway"]
        .as_str()
        .or(r["dst"].as_str())
        .and_then(|s| s.parse().ok())
        .unwrap_or(dst);
    if r["dev"].as_str() != Some(ep.iface.as_str()) {
        return Err(bad(
            ep,
            format!(
                "the route to {dst} leaves through {}, not {}; give --dst-mac",
                r["dev"].as_str().unwrap_or("?"),
                ep.iface
            ),
        ));
    }
    for attempt in 0..20 {
        let n = ip_json(
            runner,
            ns,
            &["neigh", "show", "to", &hop.to_string(), "dev", &ep.iface],
        )
        .map_err(|e| bad(ep, e))?;
        if let Some(mac) = n
            .get(0)
            .and_then(|x| x["lladdr"].as_str())
            .and_then(|m| wire::EthernetAddress::parse_str(m).map(|m| m.0))
        {
            return Ok(mac);
        }
        if attempt % 5 == 0 {
            let _ = ep.within(|| {
                let any = if dst.is_ipv6() { "[::]:0" } else { "0.0.0.0:0" };
                let s = std::net::UdpSocket::bind(any)?;
                s.send_to(&[0], (dst, 9)).map(drop)
            });
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(bad(
        ep,
        format!(
            "the next hop {hop} toward {dst} does not answer address resolution; give --dst-mac"
        ),
    ))
}

/// The interfaces of `node` (in namespace `ns`, or this host) that `keep` accepts, with
/// their driver, speed, MTU, MAC, addresses and offloads as far as the kernel reports them.
/// What cannot be read is left out, never guessed.
pub fn interfaces(
    runner: &mut dyn Runner,
    node: &str,
    ns: Option<&str>,
    keep: impl Fn(&str) -> bool,
) -> Vec<InterfaceFacts> {
    let Ok(list) = ip_json(runner, ns, &["-d", "addr", "show"]) else {
        return vec![];
    };
    let mut out = Vec::new();
    for i in list.as_array().into_iter().flatten() {
        let name = i["ifname"].as_str().unwrap_or("").to_owned();
        if name.is_empty() || !keep(&name) {
            continue;
        }
        // The driver's own answers, asked in the node's namespace.
        let nic = engine::frameio::in_netns(ns, || engine::nic::facts(&name))
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        let driver = nic
            .driver
            .or_else(|| i["linkinfo"]["info_kind"].as_str().map(str::to_owned));
        let (offloads_on, speed_mbps) = (nic.offloads_on, nic.speed_mbps);
        out.push(InterfaceFacts {
            node: node.to_owned(),
            name: name.clone(),
            driver,
            speed_mbps,
            mtu: i["mtu"].as_u64().map(|m| m as u32),
            mac: i["address"].as_str().map(str::to_owned),
            addresses: i["addr_info"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|a| {
                    Some(format!(
                        "{}/{}",
                        a["local"].as_str()?,
                        a["prefixlen"].as_u64()?
                    ))
                })
                .collect(),
            offloads_on,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A runner that answers every command with the same output.
    struct Canned(&'static str);

    impl Runner for Canned {
        fn run(&mut self, _: &Cmd) -> Result<String, LabError> {
            Ok(self.0.to_owned())
        }
    }

    #[test]
    fn an_interface_s_networks_are_its_addresses_with_their_prefixes() {
        let mut ip = Canned(
            r#"[{"ifname":"eth0","address":"02:77:62:00:00:01","addr_info":[
            {"family":"inet","local":"198.18.0.1","prefixlen":24,"scope":"global"},
            {"family":"inet6","local":"2001:2::1","prefixlen":64,"scope":"global"},
            {"family":"inet6","local":"fe80::77:62ff:fe00:1","prefixlen":64,"scope":"link"},
            {"family":"inet","local":"not an address","prefixlen":24}]}]"#,
        );
        let ep = Endpoint {
            netns: None,
            iface: "eth0".into(),
        };
        let nets = networks(&mut ip, &ep).unwrap();
        let want: Vec<(IpAddr, u8)> = vec![
            ("198.18.0.1".parse().unwrap(), 24),
            ("2001:2::1".parse().unwrap(), 64),
            ("fe80::77:62ff:fe00:1".parse().unwrap(), 64),
        ];
        assert_eq!(nets, want);
        assert!(networks(&mut Canned("[]"), &ep).is_err());
    }
}
