//! The frames of the raw-frame jobs: naming a port (`IFACE` on this host, `NODE:IFACE` of a
//! lab), the frame template from the request and what the interfaces say (addresses, the
//! next hop's MAC as the kernel resolves it), and opening the frame backends.

use std::net::IpAddr;

use engine::frameio::{Backend, Endpoint, FrameRx, FrameTx};
use wire::frame::{FrameSpec, L4Spec};

use crate::request::{FrameBackend, FrameProto, FrameRequest};
use crate::{usage, Error};

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
    use wire::ethernet::EthernetRepr;
    use wire::ipv4::Ipv4Repr;
    use wire::ipv6::Ipv6Repr;
    let runner = &mut lab::SystemRunner;
    let txa = lab::probe::addresses(runner, tx)?;
    let v6 = a.dst_ip.or(a.src_ip).is_some_and(|ip| ip.is_ipv6());
    let family = if v6 { "IPv6" } else { "IPv4" };
    let src_ip = a
        .src_ip
        .or(txa.ip(v6))
        .ok_or_else(|| usage(format!("{tx} has no {family} address: give --src-ip")))?;
    let dst_ip = match (a.dst_ip, rx) {
        (Some(ip), _) => ip,
        (None, Some(rx)) => lab::probe::addresses(runner, rx)?
            .ip(v6)
            .ok_or_else(|| usage(format!("{rx} has no {family} address: give --dst-ip")))?,
        (None, None) => return Err(usage("give --dst-ip (or --rx to take it from)")),
    };
    if src_ip.is_ipv6() != dst_ip.is_ipv6() {
        return Err(usage(format!(
            "--src-ip {src_ip} and --dst-ip {dst_ip} are of different families"
        )));
    }
    let dst_mac = match a.dst_mac {
        Some(m) => m,
        None => lab::probe::next_hop_mac(runner, tx, dst_ip)?,
    };
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
    let Ok(Ok(mtu)) = engine::frameio::in_netns(ep.netns.as_deref(), || engine::nic::mtu(&iface))
    else {
        // Unreadable: opening the port reports what is wrong with it.
        return Ok(());
    };
    // 14 bytes of Ethernet header and 4 of FCS; a VLAN tag's 4 bytes do not count against
    // the MTU.
    let payload = frame_len.saturating_sub(18 + if vlan { 4 } else { 0 });
    if payload > u64::from(mtu) {
        return Err(usage(format!(
            "a frame of {frame_len} bytes needs an MTU of {payload} on {ep}, which has {mtu}: raise it (`ip link set dev {} mtu {payload}`, or `wirebench lab up ... --mtu {payload}`) or send smaller frames",
            ep.iface
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
        None => {
            let order = [Backend::Xdp, Backend::Ring, Backend::Packet];
            Backend::open_tx_first(&order, ep, max_len as usize).map(|(tx, why)| {
                if !why.is_empty() {
                    tracing::info!("backend {} chosen: {}", tx.name(), why.join("; "));
                }
                tx
            })
        }
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
            for b in [Backend::Xdp, Backend::Ring, Backend::Packet] {
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
        None => {
            let order = [Backend::Ring, Backend::Packet];
            Backend::open_rx_first(&order, ep).map(|(rx, why)| {
                if !why.is_empty() {
                    tracing::info!("receiver {} chosen: {}", rx.name(), why.join("; "));
                }
                rx
            })
        }
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
