//! `wirebench gen`, and what every raw-frame command shares: naming an interface
//! (`NODE:IFACE` of a lab), reading its addresses, resolving the next hop, building the
//! frame template and opening the frame backends.
//!
//! Addresses are read from the interfaces with `ip -j`, the next hop's MAC from the
//! kernel's ARP/ND; sockets of `NODE:IFACE` are opened inside that node's namespace.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};
use engine::frameio::{Backend, Endpoint, FrameRx, FrameTx};
use engine::raw::{RawLoad, RawTrialSpec};
use wire::frame::{FrameSpec, L4Spec};
use wire::linerate::LineRate;

use crate::cli::{FrameArgs, FrameBackend, FrameProto, GenArgs};
use crate::commands::UsageError;

pub(crate) fn usage(msg: impl Into<String>) -> anyhow::Error {
    UsageError(msg.into()).into()
}

/// `IFACE` on this host, or `NODE:IFACE` of lab `lab` (namespace `wb-LAB-NODE`).
pub fn endpoint(s: &str, lab: &str) -> Result<Endpoint> {
    match s.split_once(':') {
        Some((node, iface)) => {
            lab::naming::check(node).map_err(|e| usage(e.to_string()))?;
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
        None => Ok(Endpoint {
            netns: None,
            iface: s.to_owned(),
        }),
    }
}

/// Runs `ip [-n NS] -j ARGS` and parses its JSON.
fn ip_json(ep: &Endpoint, args: &[&str]) -> Result<serde_json::Value> {
    let mut cmd = std::process::Command::new("ip");
    if let Some(ns) = &ep.netns {
        cmd.args(["-n", ns]);
    }
    let out = cmd
        .arg("-j")
        .args(args)
        .output()
        .context("running `ip` (iproute2)")?;
    if !out.status.success() {
        return Err(usage(format!(
            "{}: `ip {}` failed: {}",
            ep,
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    serde_json::from_slice(&out.stdout).context("parsing `ip -j` output")
}

/// An interface's MAC and first IPv4 address.
pub(crate) struct IfaceFacts {
    pub(crate) mac: [u8; 6],
    ipv4: Option<Ipv4Addr>,
    ipv6: Option<std::net::Ipv6Addr>,
}

impl IfaceFacts {
    fn addr(&self, v6: bool) -> Option<IpAddr> {
        if v6 {
            self.ipv6.map(IpAddr::V6)
        } else {
            self.ipv4.map(IpAddr::V4)
        }
    }
}

pub(crate) fn iface_facts(ep: &Endpoint) -> Result<IfaceFacts> {
    let v = ip_json(ep, &["addr", "show", "dev", &ep.iface])?;
    let link = v
        .get(0)
        .ok_or_else(|| usage(format!("{ep}: no such interface")))?;
    let mac = link["address"]
        .as_str()
        .and_then(|m| wire::EthernetAddress::parse_str(m).map(|m| m.0))
        .ok_or_else(|| usage(format!("{ep}: not an Ethernet interface")))?;
    let first = |family: &str| -> Option<IpAddr> {
        link["addr_info"].as_array().and_then(|a| {
            a.iter()
                .filter(|x| x["family"] == family && x["scope"] != "link")
                .find_map(|x| x["local"].as_str().and_then(|s| s.parse().ok()))
        })
    };
    Ok(IfaceFacts {
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

/// The MAC of the next hop from `ep` toward `dst`, as the kernel resolves it (RFC 2544
/// §25: the DUT answers address resolution). A datagram to the discard port makes the
/// kernel ask, then the neighbour table is read.
fn next_hop_mac(ep: &Endpoint, dst: IpAddr) -> Result<[u8; 6]> {
    let route = ip_json(ep, &["route", "get", &dst.to_string()])?;
    let r = route
        .get(0)
        .ok_or_else(|| usage(format!("{ep}: no route to {dst}")))?;
    let hop: IpAddr = r["gateway"]
        .as_str()
        .or(r["dst"].as_str())
        .and_then(|s| s.parse().ok())
        .unwrap_or(dst);
    if r["dev"].as_str() != Some(ep.iface.as_str()) {
        return Err(usage(format!(
            "{ep}: the route to {dst} leaves through {}, not {}; give --dst-mac",
            r["dev"].as_str().unwrap_or("?"),
            ep.iface
        )));
    }
    for attempt in 0..20 {
        let n = ip_json(
            ep,
            &["neigh", "show", "to", &hop.to_string(), "dev", &ep.iface],
        )?;
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
    Err(usage(format!(
        "{ep}: the next hop {hop} toward {dst} does not answer address resolution; give --dst-mac"
    )))
}

/// The frame template: flags first, then what the interfaces say.
pub(crate) fn frame_spec(a: &FrameArgs, tx: &Endpoint, rx: Option<&Endpoint>) -> Result<FrameSpec> {
    use wire::ethernet::EthernetRepr;
    use wire::ipv4::Ipv4Repr;
    use wire::ipv6::Ipv6Repr;
    let txf = iface_facts(tx)?;
    let v6 = a.dst_ip.or(a.src_ip).is_some_and(|ip| ip.is_ipv6());
    let family = if v6 { "IPv6" } else { "IPv4" };
    let src_ip = a
        .src_ip
        .or(txf.addr(v6))
        .ok_or_else(|| usage(format!("{tx} has no {family} address: give --src-ip")))?;
    let dst_ip = match (a.dst_ip, rx) {
        (Some(ip), _) => ip,
        (None, Some(rx)) => iface_facts(rx)?
            .addr(v6)
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
        None => next_hop_mac(tx, dst_ip)?,
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
            src_addr: wire::EthernetAddress(a.src_mac.unwrap_or(txf.mac)),
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

fn backend(a: &FrameArgs) -> Option<Backend> {
    match a.backend {
        FrameBackend::Auto => None,
        FrameBackend::Packet => Some(Backend::Packet),
        FrameBackend::Ring => Some(Backend::Ring),
        FrameBackend::Xdp => Some(Backend::Xdp),
    }
}

/// The sender: the asked backend, or with `auto` the fastest that opens (AF_XDP, then the
/// TX ring, then sendmmsg), saying why the faster ones did not.
pub(crate) fn open_tx(a: &FrameArgs, ep: &Endpoint, max_len: u64) -> Result<Box<dyn FrameTx>> {
    match backend(a) {
        Some(b) => b.open_tx(ep).with_context(|| format!("sending on {ep}")),
        None => {
            let (tx, why) = Backend::open_tx_first(
                &[Backend::Xdp, Backend::Ring, Backend::Packet],
                ep,
                max_len as usize,
            )?;
            if !why.is_empty() {
                tracing::info!("backend {} chosen: {}", tx.name(), why.join("; "));
            }
            Ok(tx)
        }
    }
}

/// The receiver: the asked backend's, or with `auto` the TPACKET_V3 ring, falling back to
/// recvmmsg. An explicitly asked backend does not fall back.
pub(crate) fn open_rx(a: &FrameArgs, ep: &Endpoint) -> Result<Box<dyn FrameRx>> {
    let rx = match backend(a) {
        Some(b) => b.open_rx(ep),
        None => Backend::Ring
            .open_rx(ep)
            .or_else(|_| Backend::Packet.open_rx(ep)),
    };
    rx.with_context(|| format!("receiving on {ep}"))
}

pub(crate) fn need_root() -> Result<()> {
    if lab::cmd::is_root() {
        Ok(())
    } else {
        Err(usage(
            "raw frames need root (CAP_NET_RAW): run it with sudo",
        ))
    }
}

pub(crate) fn test_id() -> u16 {
    // Distinct per run, so frames of another run on the same wire are not counted.
    (std::process::id() as u16) ^ 0x5742
}

/// `wirebench gen`.
pub fn gen(a: &GenArgs) -> Result<()> {
    need_root()?;
    let tx_ep = endpoint(&a.iface, &a.frame.lab)?;
    let rx_ep =
        a.rx.as_deref()
            .map(|r| endpoint(r, &a.frame.lab))
            .transpose()?;
    let frame = frame_spec(&a.frame, &tx_ep, rx_ep.as_ref())?;
    if (a.size as usize) < frame.min_frame_len() {
        return Err(usage(format!(
            "{} bytes is too small for these headers and the test header: at least {}",
            a.size,
            frame.min_frame_len()
        )));
    }
    let line = LineRate(a.frame.line_rate as u64);
    let pps = a.rate.fps(a.size, line);
    let mut tx = open_tx(&a.frame, &tx_ep, a.size)?;
    let mut rx = rx_ep.as_ref().map(|ep| open_rx(&a.frame, ep)).transpose()?;
    let spec = RawTrialSpec {
        frame,
        frame_len: a.size as usize,
        test_id: test_id(),
        stream_id: 1,
        load: RawLoad::Rate {
            pps,
            duration: a.time,
            count: a.count,
        },
        drain: Duration::from_millis(200),
    };
    let stop = AtomicBool::new(false);
    let rx_ref = rx.as_mut().map(|b| b.as_mut() as &mut dyn FrameRx);
    let r = engine::raw::run_trial(tx.as_mut(), rx_ref, &spec, &stop)?;
    let rates = LineRate::rates_at(a.size, r.offered_pps);
    let mut doc = engine::env::result(
        "gen",
        serde_json::json!({
            "interface": a.iface, "rx": a.rx, "frame_len": a.size, "target_pps": pps,
            "line_rate_bps": line.0, "count": a.count, "duration_s": a.time.as_secs_f64(),
        }),
    );
    doc.backend = Some(match &rx {
        Some(rx) => format!("{} / {}", tx.name(), rx.name()),
        None => tx.name().to_owned(),
    });
    let mut summary = serde_json::json!({
        "sent": r.counters.sent, "elapsed_s": r.elapsed.as_secs_f64(), "target_pps": pps,
        "achieved_pps": r.offered_pps, "l2_bps": rates.l2_bps, "l1_bps": rates.l1_bps,
        "percent_of_line_rate": line.percent_of(a.size, r.offered_pps),
        "generator_limited": r.generator_limited, "behind_ratio": r.behind_ratio,
        "pacing_error_us": r.pacing_error, "send_errors": r.send_errors,
        "tx_cpu_s": r.tx_cpu.as_secs_f64(),
    });
    if rx.is_some() {
        summary["received"] = r.counters.received.into();
        summary["lost"] = r.counters.sent.saturating_sub(r.counters.received).into();
        summary["duplicates"] = r.counters.duplicates.into();
        summary["reordered"] = r.counters.reordered.into();
        summary["rx_kernel_drops"] = r.rx_drops.into();
        summary["unstamped"] = r.unstamped.into();
        summary["latency_us"] = serde_json::to_value(r.latency.summary())?;
    }
    if r.generator_limited {
        doc.notes.push(format!(
            "generator limited: asked {pps:.0} frames/s, offered {:.0} ({:.1} % behind its schedule); the figures measure the tool, not the network",
            r.offered_pps,
            r.behind_ratio * 100.0
        ));
    }
    if a.json {
        let mut v = serde_json::to_value(&doc)?;
        v["gen"] = summary;
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    println!(
        "sent {} frames of {} bytes on {} in {:.3} s: {:.0} frames/s ({} L2, {} L1, {:.2} % of {} line rate), backend {}",
        r.counters.sent,
        a.size,
        tx_ep,
        r.elapsed.as_secs_f64(),
        r.offered_pps,
        model::units::bps(rates.l2_bps),
        model::units::bps(rates.l1_bps),
        line.percent_of(a.size, r.offered_pps),
        model::units::bps(line.0 as f64),
        tx.name()
    );
    let p = r.pacing_error;
    println!(
        "schedule: asked {pps:.0} frames/s; {}{}",
        if r.generator_limited {
            format!(
                "NOT kept: {:.1} % behind (generator limited)",
                r.behind_ratio * 100.0
            )
        } else {
            "kept".to_owned()
        },
        p.map(|p| format!(", lateness p50 {:.1} us, p99 {:.1} us", p.p50_us, p.p99_us))
            .unwrap_or_default()
    );
    if let Some(rx_ep) = &rx_ep {
        println!(
            "received on {rx_ep}: {} of {} (lost {}, duplicates {}, reordered {}, kernel drops {})",
            r.counters.received,
            r.counters.sent,
            r.counters.sent.saturating_sub(r.counters.received),
            r.counters.duplicates,
            r.counters.reordered,
            r.rx_drops
        );
        if let Some(l) = r.latency.summary() {
            println!(
                "latency (kernel rx stamp - tx stamp): min {:.1} avg {:.1} p50 {:.1} p99 {:.1} p99.9 {:.1} max {:.1} us",
                l.min_us, l.avg_us, l.p50_us, l.p99_us, l.p999_us, l.max_us
            );
        }
    }
    Ok(())
}
