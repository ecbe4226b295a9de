//! The frames of the raw-frame jobs: naming a port (`IFACE` on this host, `NODE:IFACE` of a
//! lab), the frame template from the request and what the interfaces say (addresses, the
//! next hop's MAC as the kernel resolves it), and opening the frame backends.

use std::net::IpAddr;

use engine::frameio::{Backend, Endpoint, FrameRx, FrameTx};
use wire::frame::{FrameSpec, L4Spec};

use crate::request::{FrameBackend, FrameProto, FrameRequest};
use crate::{usage, Error};

/// A port a raw-frame method uses: on this host, or lent by a wirebench server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Port {
    /// `IFACE` or `NODE:IFACE` (see [`port`]).
    Local(Endpoint),
    /// `HOST/IFACE`: interface `iface` of the server at `host` (started with
    /// `--raw-ports`).
    Agent {
        /// Host name or address.
        host: String,
        /// Control port (`HOST:PORT/IFACE`; otherwise the method's `--port`).
        port: Option<u16>,
        /// The interface there.
        iface: String,
    },
}

/// `HOST/IFACE` (`HOST` a name, an IPv4 address, `[IPv6]`, each with an optional `:PORT`)
/// or what [`port`] takes.
///
/// # Errors
/// A malformed `HOST/IFACE`, or what [`port`] refuses.
pub fn any_port(s: &str, lab: &str) -> Result<Port, Error> {
    let Some((host, iface)) = s.rsplit_once('/') else {
        return port(s, lab).map(Port::Local);
    };
    let bad = || {
        usage(format!(
            "'{s}': a port of a wirebench server is HOST/IFACE (HOST a name or address, [IPv6] with a port, :PORT optional)"
        ))
    };
    if iface.is_empty() || host.is_empty() || iface.contains(':') {
        return Err(bad());
    }
    let (host, port) = if let Some(rest) = host.strip_prefix('[') {
        let (h, tail) = rest.split_once(']').ok_or_else(bad)?;
        let port = match tail {
            "" => None,
            t => Some(
                t.strip_prefix(':')
                    .and_then(|p| p.parse().ok())
                    .ok_or_else(bad)?,
            ),
        };
        (h.to_owned(), port)
    } else if host.parse::<std::net::Ipv6Addr>().is_ok() {
        (host.to_owned(), None)
    } else if let Some((h, p)) = host.rsplit_once(':') {
        (h.to_owned(), Some(p.parse().map_err(|_| bad())?))
    } else {
        (host.to_owned(), None)
    };
    Ok(Port::Agent {
        host,
        port,
        iface: iface.to_owned(),
    })
}

/// `IFACE` on this host, or `NODE:IFACE` of lab `lab` (namespace `wb-LAB-NODE`).
///
/// # Errors
/// A node name that is not valid, or a node the lab does not have.
pub fn port(s: &str, lab: &str) -> Result<Endpoint, Error> {
    let Some((node, iface)) = s.split_once(':') else {
        return Ok(Endpoint {
            netns: None,
            iface: s.to_owned(),
        });
    };
    lab::naming::check(node)?;
    let ns = lab::naming::namespace(lab, node);
    if !std::path::Path::new(&format!("/run/netns/{ns}")).exists() {
        return Err(usage(format!(
            "'{s}': lab '{lab}' has no node '{node}' (namespace {ns} not found; see `wirebench lab status`)"
        )));
    }
    Ok(Endpoint {
        netns: Some(ns),
        iface: iface.to_owned(),
    })
}

/// The frame template: the request first, then what the interfaces say. Without a
/// destination address, the receiving port's (`rx`) is taken.
///
/// # Errors
/// An address the interfaces do not have and the request does not give, mixed address
/// families, a next hop that does not answer address resolution.
pub fn spec(a: &FrameRequest, tx: &Endpoint, rx: Option<&Endpoint>) -> Result<FrameSpec, Error> {
    let runner = &mut lab::SystemRunner;
    let txa = lab::probe::addresses(runner, tx)?;
    let rxa = match rx {
        Some(rx) if a.dst_ip.is_none() => {
            Some((rx.to_string(), lab::probe::addresses(runner, rx)?))
        }
        _ => None,
    };
    let dst_ip = dst_ip(a, rxa.as_ref().map(|(n, a)| (n.as_str(), a)))?;
    let dst_mac = match a.dst_mac {
        Some(m) => m,
        None => lab::probe::next_hop_mac(runner, tx, dst_ip)?,
    };
    headers(a, (&tx.to_string(), &txa), dst_ip, dst_mac)
}

/// Whether the request's frames are IPv6 (an IPv6 address given).
fn v6(a: &FrameRequest) -> bool {
    a.dst_ip.or(a.src_ip).is_some_and(|ip| ip.is_ipv6())
}

/// The frames' destination address: the request's, or the receiving port's (`rx`: its
/// name and addresses).
///
/// # Errors
/// Neither gives one of the request's family.
pub fn dst_ip(
    a: &FrameRequest,
    rx: Option<(&str, &lab::probe::Addresses)>,
) -> Result<IpAddr, Error> {
    let v6 = v6(a);
    let family = if v6 { "IPv6" } else { "IPv4" };
    match (a.dst_ip, rx) {
        (Some(ip), _) => Ok(ip),
        (None, Some((name, rxa))) => rxa
            .ip(v6)
            .ok_or_else(|| usage(format!("{name} has no {family} address: give --dst-ip"))),
        (None, None) => Err(usage("give --dst-ip (or --rx to take it from)")),
    }
}

/// The frame template from the request and the sending port (`tx`: its name and
/// addresses), toward `dst_ip` through the next hop `dst_mac`.
///
/// # Errors
/// The sending port has no address of the family and the request gives none, or the
/// families differ.
pub fn headers(
    a: &FrameRequest,
    (tx, txa): (&str, &lab::probe::Addresses),
    dst_ip: IpAddr,
    dst_mac: [u8; 6],
) -> Result<FrameSpec, Error> {
    use wire::ethernet::EthernetRepr;
    use wire::ipv4::Ipv4Repr;
    use wire::ipv6::Ipv6Repr;
    let v6 = v6(a);
    let family = if v6 { "IPv6" } else { "IPv4" };
    let src_ip = a
        .src_ip
        .or(txa.ip(v6))
        .ok_or_else(|| usage(format!("{tx} has no {family} address: give --src-ip")))?;
    if src_ip.is_ipv6() != dst_ip.is_ipv6() {
        return Err(usage(format!(
            "--src-ip {src_ip} and --dst-ip {dst_ip} are of different families"
        )));
    }
    let l4 = match a.proto {
        FrameProto::Udp => L4Spec::Udp {
            src_port: a.src_port,
            dst_port: a.dst_port,
        },
        FrameProto::Tcp => L4Spec::Tcp(wire::tcp::TcpRepr {
            src_port: a.src_port,
            dst_port: a.dst_port,
            seq: 1,
            ack: 0,
            flags: wire::tcp::TcpFlags::ACK,
            window: 65535,
        }),
        FrameProto::Icmp => L4Spec::IcmpEcho(wire::icmp::IcmpEchoRepr {
            kind: wire::icmp::EchoKind::Request,
            ident: a.src_port,
            seq: 0,
        }),
    };
    // EtherTypes, protocol numbers and lengths are derived by FrameSpec::build.
    let ip = match (src_ip, dst_ip) {
        (IpAddr::V4(s), IpAddr::V4(d)) => wire::IpRepr::V4(Ipv4Repr {
            src_addr: wire::Ipv4Address(s.octets()),
            dst_addr: wire::Ipv4Address(d.octets()),
            protocol: wire::IpProtocol::UDP,
            payload_len: 0,
            ttl: 64,
            dscp: a.dscp,
            ecn: 0,
            dont_frag: true,
            ident: 0,
        }),
        (IpAddr::V6(s), IpAddr::V6(d)) => wire::IpRepr::V6(Ipv6Repr {
            src_addr: wire::Ipv6Address(s.octets()),
            dst_addr: wire::Ipv6Address(d.octets()),
            next_header: wire::IpProtocol::UDP,
            payload_len: 0,
            hop_limit: 64,
            traffic_class: a.dscp << 2,
            flow_label: 0,
        }),
        _ => return Err(usage("mixed address families")),
    };
    Ok(FrameSpec {
        eth: EthernetRepr {
            src_addr: wire::EthernetAddress(a.src_mac.unwrap_or(txa.mac)),
            dst_addr: wire::EthernetAddress(dst_mac),
            ethertype: wire::EtherType::IPV4,
        },
        vlan: a.vlan.map(|vid| wire::vlan::VlanRepr {
            pcp: a.pcp,
            dei: false,
            vid,
            inner_ethertype: wire::EtherType::IPV4,
        }),
        ip,
        l4,
    })
}

/// A raw frame of `len` bytes with FCS (built without it) from MAC `src` to MAC `dst` of
/// EtherType `ethertype`, behind an 802.1Q tag when `vlan` gives one, the test header
/// `hdr` right after the EtherType; and where a sender patches it.
///
/// # Errors
/// A length too short for the headers and the test header (the message names it).
pub(crate) fn l2_frame(
    (src, dst): ([u8; 6], [u8; 6]),
    ethertype: u16,
    vlan: Option<wire::vlan::VlanRepr>,
    len: u64,
    hdr: &wire::testhdr::TestHeaderRepr,
) -> Result<(Vec<u8>, engine::multi::Patch), String> {
    let eth = wire::ethernet::EthernetRepr {
        src_addr: wire::EthernetAddress(src),
        dst_addr: wire::EthernetAddress(dst),
        ethertype: wire::EtherType::from(ethertype),
    };
    engine::multi::Patch::l2_frame(&eth, vlan.as_ref(), len as usize, hdr)
        .map_err(|e| format!("{len}-byte frame: {e}"))
}

/// Refuses frame sizes too small for the template's headers and the test header.
pub(crate) fn check_sizes(spec: &FrameSpec, sizes: &[u64]) -> Result<(), Error> {
    match sizes.iter().find(|s| (**s as usize) < spec.min_frame_len()) {
        Some(s) => Err(usage(format!(
            "frame size {s} is too small for these headers: at least {}",
            spec.min_frame_len()
        ))),
        None => Ok(()),
    }
}

fn backend(b: FrameBackend) -> Option<Backend> {
    match b {
        FrameBackend::Auto => None,
        FrameBackend::Packet => Some(Backend::Packet),
        FrameBackend::Ring => Some(Backend::Ring),
        FrameBackend::Xdp => Some(Backend::Xdp),
    }
}

/// Refuses a frame of `frame_len` bytes (FCS included, `vlan` when it carries an 802.1Q
/// tag) that port `ep` cannot carry: its Ethernet payload must fit the interface's MTU, or
/// the kernel drops every frame without a word.
///
/// # Errors
/// The frame is larger than the MTU allows (a usage error naming both sizes and the fix).
pub fn fits_mtu(ep: &Endpoint, frame_len: u64, vlan: bool) -> Result<(), Error> {
    let iface = ep.iface.clone();
    let mtu = engine::frameio::in_netns(ep.netns.as_deref(), || engine::nic::mtu(&iface))
        .ok()
        .and_then(Result::ok);
    fits(mtu, (&ep.to_string(), &ep.iface), frame_len, vlan)
}

/// [`fits_mtu`] for a port named `name` (interface `iface` where it is) with MTU `mtu`
/// (unknown: it fits; opening the port reports what is wrong with it).
///
/// # Errors
/// The frame's Ethernet payload does not fit the MTU.
pub fn fits(
    mtu: Option<u32>,
    (name, iface): (&str, &str),
    frame_len: u64,
    vlan: bool,
) -> Result<(), Error> {
    let Some(mtu) = mtu else { return Ok(()) };
    // 14 bytes of Ethernet header and 4 of FCS; a VLAN tag's 4 bytes do not count against
    // the MTU.
    let payload = frame_len.saturating_sub(18 + if vlan { 4 } else { 0 });
    if payload > u64::from(mtu) {
        return Err(usage(format!(
            "a frame of {frame_len} bytes needs an MTU of {payload} on {name}, which has {mtu}: raise it (`ip link set dev {iface} mtu {payload}`, or `wirebench lab up ... --mtu {payload}`) or send smaller frames"
        )));
    }
    Ok(())
}

/// The sender: the asked backend, or with `auto` the fastest that opens (AF_XDP, then the
/// TX ring, then sendmmsg), saying why the faster ones did not.
///
/// # Errors
/// The backend does not open (no root, no such interface).
pub fn open_tx(b: FrameBackend, ep: &Endpoint, max_len: u64) -> Result<Box<dyn FrameTx>, Error> {
    let opened = match backend(b) {
        Some(b) => b.open_tx(ep),
        None => Backend::open_tx_first(&Backend::AUTO_TX, ep, max_len as usize).map(|(tx, why)| {
            if !why.is_empty() {
                tracing::info!("backend {} chosen: {}", tx.name(), why.join("; "));
            }
            tx
        }),
    };
    opened.map_err(|e| Error::Failed(format!("sending on {ep}: {e}")))
}

/// `n` senders on `ep`, one per generator thread: the asked backend (AF_XDP on transmit
/// queues 0..n), or with `auto` the first of AF_XDP, the TX ring and sendmmsg that opens
/// all `n` (AF_XDP needs `n` queues), saying why the faster ones did not.
///
/// # Errors
/// The backend does not open `n` senders.
pub fn open_txs(
    b: FrameBackend,
    ep: &Endpoint,
    max_len: u64,
    n: usize,
) -> Result<Vec<Box<dyn FrameTx>>, Error> {
    if n <= 1 {
        return Ok(vec![open_tx(b, ep, max_len)?]);
    }
    let all = |b: Backend| -> std::io::Result<Vec<Box<dyn FrameTx>>> {
        if b == Backend::Xdp && max_len as usize > engine::sys::xdp::CHUNK {
            return Err(std::io::Error::other(format!(
                "frames above {} bytes",
                engine::sys::xdp::CHUNK
            )));
        }
        (0..n).map(|q| b.open_tx_queue(ep, q as u32)).collect()
    };
    let opened = match backend(b) {
        Some(b) => all(b),
        None => {
            let mut why = Vec::new();
            let mut got = None;
            for b in Backend::AUTO_TX {
                match all(b) {
                    Ok(t) => {
                        got = Some(t);
                        break;
                    }
                    Err(e) => why.push(format!("{b:?}: {e}")),
                }
            }
            match got {
                Some(t) => {
                    if !why.is_empty() {
                        tracing::info!("backend for {n} threads chosen: {}", why.join("; "));
                    }
                    Ok(t)
                }
                None => Err(std::io::Error::other(why.join("; "))),
            }
        }
    };
    opened.map_err(|e| Error::Failed(format!("sending with {n} threads on {ep}: {e}")))
}

/// The receiver: the asked backend's, or with `auto` the TPACKET_V3 ring, then recvmmsg,
/// saying why the ring did not open; an explicitly asked backend does not fall back.
/// `auto` does not receive through AF_XDP: its program takes the port's frames from the
/// host's stack, and on veth under load it lost frames the shaper had passed (two CI runs
/// measured a 100 Mbit/s class at 58 % of its rate), which a loss measurement must not
/// count. `xdp` asks for it.
///
/// # Errors
/// The backend does not open.
pub fn open_rx(b: FrameBackend, ep: &Endpoint) -> Result<Box<dyn FrameRx>, Error> {
    let rx = match backend(b) {
        Some(b) => b.open_rx(ep),
        None => Backend::open_rx_first(&Backend::AUTO_RX, ep).map(|(rx, why)| {
            if !why.is_empty() {
                tracing::info!("receiver {} chosen: {}", rx.name(), why.join("; "));
            }
            rx
        }),
    };
    rx.map_err(|e| Error::Failed(format!("receiving on {ep}: {e}")))
}

/// A test id for one job's frames: distinct per process and per job within it, so frames
/// of another run, or left over from the previous test of a plan, are not counted.
pub fn test_id() -> u16 {
    static JOBS: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(0);
    let job = JOBS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    (std::process::id() as u16 ^ 0x5742).wrapping_add(job.wrapping_mul(0x9e37))
}

/// Raw frames need `CAP_NET_RAW`.
pub fn need_root() -> Result<(), Error> {
    crate::need_root("raw frames need root (CAP_NET_RAW): run it with sudo")
}

#[cfg(test)]
mod test {
    use super::*;

    fn agent(host: &str, port: Option<u16>, iface: &str) -> Port {
        Port::Agent {
            host: host.into(),
            port,
            iface: iface.into(),
        }
    }

    #[test]
    fn host_slash_iface_names_a_servers_port() {
        let cases = [
            ("198.18.1.1/eth0", agent("198.18.1.1", None, "eth0")),
            (
                "198.18.1.1:7000/eth1",
                agent("198.18.1.1", Some(7000), "eth1"),
            ),
            ("talker/eth0", agent("talker", None, "eth0")),
            (
                "talker.lab:5301/enp1s0",
                agent("talker.lab", Some(5301), "enp1s0"),
            ),
            ("2001:db8::1/eth0", agent("2001:db8::1", None, "eth0")),
            (
                "[2001:db8::1]:7000/eth0",
                agent("2001:db8::1", Some(7000), "eth0"),
            ),
            ("[2001:db8::1]/eth0", agent("2001:db8::1", None, "eth0")),
        ];
        for (s, want) in cases {
            assert_eq!(any_port(s, "x").unwrap(), want, "{s}");
        }
        assert_eq!(
            any_port("eth0", "x").unwrap(),
            Port::Local(Endpoint {
                netns: None,
                iface: "eth0".into()
            })
        );
        for bad in [
            "/eth0",
            "host/",
            "host:port/eth0",
            "[2001:db8::1/eth0",
            "[2001:db8::1]x/eth0",
            "host/node:eth0",
        ] {
            let e = any_port(bad, "x").unwrap_err().to_string();
            assert!(e.contains("HOST/IFACE"), "{bad}: {e}");
        }
    }
}
