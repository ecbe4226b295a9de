//! `wirebench gen` and `wirebench rfc2544`: whole Ethernet frames on named interfaces.
//!
//! This module resolves the command line into a frame template (addresses read from the
//! interfaces with `ip -j`, the next hop's MAC from the kernel's ARP), opens the frame
//! backends (in a lab node's namespace for `NODE:IFACE`), and adapts `engine::raw` trials
//! to `method::rfc2544`'s `FrameTrial`.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};
use engine::frameio::{Backend, Endpoint, FrameRx, FrameTx};
use engine::raw::{RawLoad, RawTrialReport, RawTrialSpec};
use engine::results::RunResult;
use method::rfc2544::{FrameLoad, FrameTrial, FrameTrialRequest, FrameTrialResult};
use wire::frame::{FrameSpec, L4Spec};
use wire::linerate::LineRate;

use crate::cli::{
    FrameArgs, FrameBackend, FrameProto, GenArgs, Rfc2544Args, Rfc2544Test, SearchArg,
};
use crate::commands::UsageError;

fn usage(msg: impl Into<String>) -> anyhow::Error {
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

fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut m = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut m {
        *b = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(m)
}

/// An interface's MAC and first IPv4 address.
struct IfaceFacts {
    mac: [u8; 6],
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

fn iface_facts(ep: &Endpoint) -> Result<IfaceFacts> {
    let v = ip_json(ep, &["addr", "show", "dev", &ep.iface])?;
    let link = v
        .get(0)
        .ok_or_else(|| usage(format!("{ep}: no such interface")))?;
    let mac = link["address"]
        .as_str()
        .and_then(parse_mac)
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
            .and_then(parse_mac)
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
fn frame_spec(a: &FrameArgs, tx: &Endpoint, rx: Option<&Endpoint>) -> Result<FrameSpec> {
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
fn open_tx(a: &FrameArgs, ep: &Endpoint, max_len: u64) -> Result<Box<dyn FrameTx>> {
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

fn open_rx(a: &FrameArgs, ep: &Endpoint) -> Result<Box<dyn FrameRx>> {
    backend(a)
        .unwrap_or(Backend::Ring)
        .open_rx(ep)
        .or_else(|_| Backend::Packet.open_rx(ep))
        .with_context(|| format!("receiving on {ep}"))
}

fn need_root() -> Result<()> {
    if lab::cmd::is_root() {
        Ok(())
    } else {
        Err(usage(
            "raw frames need root (CAP_NET_RAW): run it with sudo",
        ))
    }
}

fn test_id() -> u16 {
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
    let mut doc = RunResult::new(
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
        "sent": r.sent, "elapsed_s": r.elapsed.as_secs_f64(), "target_pps": pps,
        "achieved_pps": r.offered_pps, "l2_bps": rates.l2_bps, "l1_bps": rates.l1_bps,
        "percent_of_line_rate": line.percent_of(a.size, r.offered_pps),
        "generator_limited": r.generator_limited, "behind_ratio": r.behind_ratio,
        "pacing_error_us": r.pacing_error, "send_errors": r.send_errors,
        "tx_cpu_s": r.tx_cpu.as_secs_f64(),
    });
    if rx.is_some() {
        summary["received"] = r.received.into();
        summary["lost"] = r.sent.saturating_sub(r.received).into();
        summary["duplicates"] = r.duplicates.into();
        summary["reordered"] = r.reordered.into();
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
        r.sent,
        a.size,
        tx_ep,
        r.elapsed.as_secs_f64(),
        r.offered_pps,
        report::units::bps(rates.l2_bps),
        report::units::bps(rates.l1_bps),
        line.percent_of(a.size, r.offered_pps),
        report::units::bps(line.0 as f64),
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
            r.received,
            r.sent,
            r.sent.saturating_sub(r.received),
            r.duplicates,
            r.reordered,
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

/// `method::rfc2544` trials over raw interfaces.
struct RawTrial {
    tx: Box<dyn FrameTx>,
    rx: Box<dyn FrameRx>,
    frame: FrameSpec,
    line: LineRate,
    test_id: u16,
    stream: u8,
    reports: Vec<RawTrialReport>,
}

impl FrameTrial for RawTrial {
    type Error = anyhow::Error;

    fn run(&mut self, req: &FrameTrialRequest) -> Result<FrameTrialResult> {
        // A fresh stream id per trial: late frames of the previous trial are not counted.
        self.stream = self.stream.wrapping_add(1);
        let load = match req.load {
            FrameLoad::Rate { fps, duration } => RawLoad::Rate {
                pps: fps,
                duration,
                count: None,
            },
            FrameLoad::Burst { frames } => RawLoad::Burst {
                frames,
                target_pps: self.line.max_fps(req.frame_len),
            },
        };
        let spec = RawTrialSpec {
            frame: self.frame,
            frame_len: req.frame_len as usize,
            test_id: self.test_id,
            stream_id: self.stream,
            load,
            // RFC 2544 §23 waits 2 s for residual frames; on one host 300 ms is plenty.
            drain: Duration::from_millis(300),
        };
        let stop = AtomicBool::new(false);
        let r = engine::raw::run_trial(self.tx.as_mut(), Some(self.rx.as_mut()), &spec, &stop)?;
        let out = FrameTrialResult {
            sent: r.sent,
            received: r.received,
            duplicates: r.duplicates,
            reordered: r.reordered,
            offered_fps: r.offered_pps,
            generator_limited: r.generator_limited,
            latency: req.latency.then(|| r.latency.clone()),
        };
        self.reports.push(r);
        Ok(out)
    }
}

/// `method::rfc2544` trials as UDP tests through a wirebench server: a frame of L bytes is
/// a datagram of L - 46 bytes of payload (14 Ethernet + 20 IPv4 + 8 UDP + 4 FCS), at
/// L's frame rate. Bursts at line rate are not possible through a socket.
struct UdpTrial {
    cfg: control::client::ClientConfig,
}

/// Ethernet + IPv4 + UDP headers and the FCS around a UDP payload.
const UDP_FRAME_OVERHEAD: u64 = 46;

impl FrameTrial for UdpTrial {
    type Error = anyhow::Error;

    fn run(&mut self, req: &FrameTrialRequest) -> Result<FrameTrialResult> {
        use engine::spec::{Protocol, Rate, TestSpec};
        let FrameLoad::Rate { fps, duration } = req.load else {
            return Err(usage(
                "back-to-back bursts need raw ports (--tx/--rx): a socket cannot send at line rate",
            ));
        };
        let spec = TestSpec {
            rate: Rate::PacketsPerSec(fps),
            duration,
            len: (req.frame_len - UDP_FRAME_OVERHEAD) as usize,
            ..crate::commands::base_spec(Protocol::Udp)
        };
        let outcome = crate::commands::run_one(&self.cfg, &spec, None, true)?;
        let r = control::assemble::throughput_result(
            &outcome,
            "trial",
            crate::commands::spec_params(&spec, &self.cfg),
        );
        let s = r.summary.context("the trial produced no result")?;
        let sent = s.sent_packets.unwrap_or(0);
        let latency = if req.latency {
            r.streams
                .iter()
                .filter_map(|x| x.latency_histogram.as_deref())
                .filter_map(|b| engine::stats::histogram::LatencyHistogram::from_base64(b).ok())
                .reduce(|mut a, b| {
                    a.merge(&b);
                    a
                })
        } else {
            None
        };
        Ok(FrameTrialResult {
            sent,
            received: sent.saturating_sub(s.lost_packets.unwrap_or(sent)),
            duplicates: s.duplicate_packets.unwrap_or(0),
            reordered: s.reordered_packets.unwrap_or(0),
            offered_fps: s.offered_bps.unwrap_or(0.0) / (8.0 * spec.len as f64),
            generator_limited: s.generator_limited,
            latency,
        })
    }
}

/// Runs the asked benchmarks per frame size over `trial`.
fn benchmarks<T: FrameTrial<Error = anyhow::Error>>(
    trial: &mut T,
    a: &Rfc2544Args,
    cfg: &method::rfc2544::SearchConfig,
    search: method::rfc2544::Search,
    progress: bool,
) -> Result<engine::results::rfc2544::Rfc2544Report> {
    use method::rfc2544 as m;
    let line = cfg.line_rate;
    let mut rep = engine::results::rfc2544::Rfc2544Report {
        line_rate_bps: line.0,
        ..Default::default()
    };
    for &len in &a.sizes {
        let mut tput = None;
        for t in &a.tests {
            match t {
                Rfc2544Test::Throughput => {
                    let r = m::throughput(trial, len, search, cfg, &mut rep.trials)?;
                    if progress {
                        eprintln!(
                            "  {len} bytes: throughput {} ({} trials)",
                            r.fps
                                .map(|f| format!("{f:.0} frames/s"))
                                .unwrap_or_else(|| "none".into()),
                            r.trials
                        );
                    }
                    tput = r.fps;
                    rep.throughput.push(r);
                }
                Rfc2544Test::Latency => {
                    // §26.2: at the throughput rate; without a throughput figure there is
                    // no rate to measure at.
                    let Some(fps) = tput else { continue };
                    let r = m::latency(
                        trial,
                        len,
                        fps,
                        a.latency_trials,
                        cfg.final_duration,
                        &mut rep.trials,
                    )?;
                    rep.latency.push(r);
                }
                Rfc2544Test::Loss => {
                    let rows = m::frame_loss_rate(
                        trial,
                        len,
                        line,
                        a.loss_step,
                        a.duration,
                        &mut rep.trials,
                    )?;
                    rep.loss.extend(rows);
                }
                Rfc2544Test::B2b => {
                    let max = a
                        .b2b_max_burst
                        .unwrap_or_else(|| (line.max_fps(len) * 2.0).ceil() as u64);
                    let r = m::back_to_back(
                        trial,
                        len,
                        line,
                        tput,
                        max,
                        a.b2b_trials,
                        &mut rep.trials,
                    )?;
                    rep.b2b.push(r);
                }
            }
        }
    }
    Ok(rep)
}

/// `wirebench rfc2544 --tx A --rx B` or `wirebench rfc2544 HOST`.
pub fn rfc2544(a: &Rfc2544Args) -> Result<()> {
    use method::rfc2544 as m;
    if a.tests.contains(&Rfc2544Test::Latency) && !a.tests.contains(&Rfc2544Test::Throughput) {
        return Err(usage(
            "the latency test runs at the throughput rate: include throughput in --tests",
        ));
    }
    if a.host.is_some() && a.tests.contains(&Rfc2544Test::B2b) {
        return Err(usage(
            "back-to-back bursts need raw ports (--tx/--rx): a socket cannot send at line rate; drop b2b from --tests",
        ));
    }
    let line = LineRate(a.frame.line_rate as u64);
    let cfg = m::SearchConfig {
        line_rate: line,
        duration: a.duration,
        final_duration: a.final_duration.unwrap_or(a.duration),
        loss_ratio: a.loss_tolerance,
        width: a.width.max(0.0001),
        ..m::SearchConfig::default()
    };
    let search = match a.search {
        SearchArg::Mlr => m::Search::Mlr,
        SearchArg::Binary => m::Search::Binary,
    };
    let progress = !a.json;
    let (rep, backend, timestamps, endpoints) = match (&a.host, &a.tx, &a.rx) {
        (Some(host), _, _) => {
            let target = crate::cli::Target {
                host: host.clone(),
                port: a.port,
                auth_key_file: a.auth_key_file.clone(),
                json: a.json,
            };
            let mut trial = UdpTrial {
                cfg: crate::commands::client_config(&target)?,
            };
            let server = trial.cfg.server.to_string();
            let rep = benchmarks(&mut trial, a, &cfg, search, progress)?;
            (
                rep,
                "udp (frames as UDP datagrams through the host's stack)".to_owned(),
                "kernel-software",
                serde_json::json!({ "server": server }),
            )
        }
        (None, Some(tx), Some(rx)) => {
            need_root()?;
            let tx_ep = endpoint(tx, &a.frame.lab)?;
            let rx_ep = endpoint(rx, &a.frame.lab)?;
            let frame = frame_spec(&a.frame, &tx_ep, Some(&rx_ep))?;
            if let Some(s) = a
                .sizes
                .iter()
                .find(|s| (**s as usize) < frame.min_frame_len())
            {
                return Err(usage(format!(
                    "frame size {s} is too small for these headers: at least {}",
                    frame.min_frame_len()
                )));
            }
            let mut trial = RawTrial {
                tx: open_tx(
                    &a.frame,
                    &tx_ep,
                    a.sizes.iter().copied().max().unwrap_or(64),
                )?,
                rx: open_rx(&a.frame, &rx_ep)?,
                frame,
                line,
                test_id: test_id(),
                stream: 0,
                reports: vec![],
            };
            let rep = benchmarks(&mut trial, a, &cfg, search, progress)?;
            (
                rep,
                format!("{} / {}", trial.tx.name(), trial.rx.name()),
                "kernel-software",
                serde_json::json!({ "tx": tx, "rx": rx }),
            )
        }
        _ => return Err(usage("give HOST, or both --tx and --rx")),
    };
    let mut params = serde_json::json!({
        "sizes": a.sizes, "tests": a.tests.iter().map(|t| format!("{t:?}").to_lowercase()).collect::<Vec<_>>(),
        "trial_duration_s": a.duration.as_secs_f64(), "final_duration_s": cfg.final_duration.as_secs_f64(),
        "loss_tolerance_ratio": a.loss_tolerance, "search": search, "width_ratio": cfg.width,
        "line_rate_bps": line.0, "latency_trials": a.latency_trials, "b2b_trials": a.b2b_trials,
        "protocol": format!("{:?}", a.frame.proto).to_lowercase(),
    });
    if let (Some(p), Some(e)) = (params.as_object_mut(), endpoints.as_object()) {
        p.extend(e.clone());
    }
    let mut doc = RunResult::new("rfc2544", params);
    doc.backend = Some(backend);
    doc.timestamp_source = Some(timestamps.into());
    if a.host.is_some() {
        doc.notes.push(format!(
            "over UDP: a frame of L bytes is a datagram of L - {UDP_FRAME_OVERHEAD} bytes; the path's own framing (loopback, tunnels) may differ, so % of line rate is nominal"
        ));
    }
    if cfg.final_duration < Duration::from_secs(60) {
        doc.notes.push(format!(
            "trials of {:.0} s: RFC 2544 §24 asks for 60 s full-length trials; results are indicative",
            cfg.final_duration.as_secs_f64()
        ));
    }
    if a.loss_tolerance > 0.0 {
        doc.notes.push(format!(
            "loss-tolerant throughput at {} % loss: not RFC 2544 (zero-loss) throughput",
            a.loss_tolerance * 100.0
        ));
    }
    if rep.throughput.iter().any(|t| t.generator_cap_fps.is_some()) {
        doc.notes.push("the generator could not reach line rate at some sizes: the search was capped at what it offered (marked in the table)".into());
    }
    for l in &rep.latency {
        for &(q, limit) in &a.latency_limit {
            let Some(s) = &l.summary else { continue };
            let (name, v) = match q {
                q if q < 0.0 => ("avg".to_owned(), s.avg_us),
                q if q >= 100.0 => ("max".to_owned(), s.max_us),
                q if q <= 0.0 => ("min".to_owned(), s.min_us),
                q => {
                    let h = l.histogram.as_deref().and_then(|b| {
                        engine::stats::histogram::LatencyHistogram::from_base64(b).ok()
                    });
                    (
                        format!("p{q}"),
                        h.and_then(|h| h.percentile_us(q)).unwrap_or(f64::NAN),
                    )
                }
            };
            doc.verdicts.push(engine::results::Verdict {
                name: format!("latency {name} at {} bytes", l.frame_len),
                passed: v <= limit,
                detail: format!("{v:.1} us (limit {limit} us)"),
            });
        }
    }
    doc.rfc2544 = Some(rep);
    if a.json {
        print!("{}", report::json::to_string(&doc));
    } else {
        print!("{}", report::text::rfc2544(&doc));
    }
    if doc.verdicts.iter().any(|v| !v.passed) {
        return Err(crate::commands::VerdictFailed("a latency verdict failed".into()).into());
    }
    Ok(())
}

/// `wirebench streams PROFILE.toml`.
pub fn streams(a: &crate::cli::StreamsArgs) -> Result<()> {
    use engine::multi::{Patch, StreamTx};
    use engine::stats::table::StreamTable;
    use method::streams::{Measured, Profile, StreamProto};
    let text = std::fs::read_to_string(&a.profile)
        .map_err(|e| usage(format!("cannot read {}: {e}", a.profile.display())))?;
    let profile =
        Profile::parse(&text).map_err(|e| usage(format!("{}: {e}", a.profile.display())))?;
    if profile
        .streams
        .iter()
        .any(|s| server_of(&s.source).is_none())
    {
        need_root()?;
    }
    let lab = a
        .lab
        .clone()
        .or(profile.lab.clone())
        .unwrap_or_else(|| "lab".into());
    let id = test_id();
    // Senders by source, receivers by destination, in first-use order.
    let mut sources: Vec<String> = Vec::new();
    let mut dests: Vec<String> = Vec::new();
    for s in &profile.streams {
        if let Some(server) = server_of(&s.source) {
            check_server_stream(s, server)?;
            continue;
        }
        if !sources.contains(&s.source) {
            sources.push(s.source.clone());
        }
        if !dests.contains(&s.destination) {
            dests.push(s.destination.clone());
        }
    }
    let mut groups: Vec<Vec<StreamTx>> = sources.iter().map(|_| Vec::new()).collect();
    for (i, s) in profile.streams.iter().enumerate() {
        if server_of(&s.source).is_some() {
            continue;
        }
        let stream_id = (i + 1) as u8;
        let tx_ep = endpoint(&s.source, &lab)?;
        let rx_ep = endpoint(&s.destination, &lab)?;
        let hdr = wire::testhdr::TestHeaderRepr {
            flags: wire::testhdr::TestFlags::empty(),
            test_id: id,
            stream_id,
            seq: 0,
            tx_ns: 0,
        };
        let mut sizes = s.pattern.clone();
        sizes.sort_unstable();
        sizes.dedup();
        let mut built: Vec<(u64, Vec<u8>, Patch)> = Vec::new();
        let in_stream = |e: String| usage(format!("stream '{}': {e}", s.name));
        match s.protocol {
            StreamProto::EtherType(t) => {
                let src = iface_facts(&tx_ep)?;
                let dst = match s.dst_mac {
                    Some(m) => m,
                    None => iface_facts(&rx_ep)?.mac,
                };
                let eth = wire::ethernet::EthernetRepr {
                    src_addr: wire::EthernetAddress(src.mac),
                    dst_addr: wire::EthernetAddress(dst),
                    ethertype: wire::EtherType::from(t),
                };
                let vlan = s.vlan.map(|vid| wire::vlan::VlanRepr {
                    pcp: s.pcp,
                    dei: false,
                    vid,
                    inner_ethertype: wire::EtherType::from(t),
                });
                let off = 14 + if vlan.is_some() { 4 } else { 0 };
                for &len in &sizes {
                    let mut buf = vec![0u8; len as usize];
                    let n =
                        wire::frame::build_l2(&eth, vlan.as_ref(), len as usize, &hdr, &mut buf)
                            .map_err(|e| in_stream(format!("{len}-byte frame: {e}")))?;
                    buf.truncate(n);
                    built.push((len, buf, Patch::L2(off)));
                }
            }
            proto => {
                let fa = FrameArgs {
                    proto: match proto {
                        StreamProto::Tcp => FrameProto::Tcp,
                        StreamProto::Icmp => FrameProto::Icmp,
                        _ => FrameProto::Udp,
                    },
                    dst_mac: s.dst_mac,
                    src_mac: None,
                    dst_ip: s.dst_ip,
                    src_ip: None,
                    src_port: s.src_port,
                    dst_port: s.dst_port,
                    vlan: s.vlan,
                    pcp: s.pcp,
                    dscp: s.dscp,
                    lab: lab.clone(),
                    line_rate: profile.line_rate.0 as f64,
                    backend: a.backend,
                };
                let spec =
                    frame_spec(&fa, &tx_ep, Some(&rx_ep)).map_err(|e| in_stream(e.to_string()))?;
                for &len in &sizes {
                    let mut buf = vec![0u8; len as usize];
                    let n = spec.build(len as usize, &hdr, &mut buf).map_err(|e| {
                        in_stream(format!(
                            "{len}-byte frame: {e} (at least {} bytes)",
                            spec.min_frame_len()
                        ))
                    })?;
                    buf.truncate(n);
                    let layout = spec
                        .layout(len as usize)
                        .map_err(|e| in_stream(e.to_string()))?;
                    built.push((len, buf, Patch::L4(layout)));
                }
            }
        }
        let pattern = s
            .pattern
            .iter()
            .map(|l| built.iter().position(|b| b.0 == *l).unwrap_or(0))
            .collect();
        let g = sources.iter().position(|x| *x == s.source).unwrap_or(0);
        groups[g].push(StreamTx {
            stream_id,
            templates: built.into_iter().map(|(_, b, p)| (b, p)).collect(),
            pattern,
            pps: s.fps(profile.line_rate),
            start: Duration::from_secs_f64(s.start),
            stop: Duration::from_secs_f64(s.stop),
        });
    }
    let fa_backend = FrameArgs {
        proto: FrameProto::Udp,
        dst_mac: None,
        src_mac: None,
        dst_ip: None,
        src_ip: None,
        src_port: 0,
        dst_port: 0,
        vlan: None,
        pcp: 0,
        dscp: 0,
        lab: lab.clone(),
        line_rate: profile.line_rate.0 as f64,
        backend: a.backend,
    };
    let max_len = profile
        .streams
        .iter()
        .flat_map(|s| s.pattern.iter().copied())
        .max()
        .unwrap_or(64);
    let mut senders = Vec::new();
    let mut backends = Vec::new();
    for (src, streams) in sources.iter().zip(groups) {
        let tx = open_tx(&fa_backend, &endpoint(src, &lab)?, max_len)?;
        backends.push(format!("{src}: {}", tx.name()));
        senders.push((tx, streams));
    }
    let mut receivers = Vec::new();
    for d in &dests {
        let ids = profile
            .streams
            .iter()
            .enumerate()
            .filter(|(_, s)| s.destination == *d)
            .map(|(i, _)| (i + 1) as u8);
        let rx = open_rx(&fa_backend, &endpoint(d, &lab)?)?;
        backends.push(format!("{d}: {}", rx.name()));
        receivers.push((rx, StreamTable::new(id, ids)));
    }
    if !a.json {
        eprintln!(
            "running {} stream(s) for {:.1} s ...",
            profile.streams.len(),
            profile.duration
        );
    }
    // Streams through a wirebench server run as UDP tests of the control protocol, at the
    // same time as the raw streams.
    let server_runs: Vec<_> = profile
        .streams
        .iter()
        .enumerate()
        .filter_map(|(i, s)| server_of(&s.source).map(|srv| (i, s.clone(), srv.to_owned())))
        .map(|(i, s, srv)| {
            let line = profile.line_rate;
            (i, std::thread::spawn(move || server_stream(&s, &srv, line)))
        })
        .collect();
    let stop = AtomicBool::new(false);
    let r = engine::multi::run(senders, receivers, Duration::from_millis(300), &stop)?;
    let mut by_server = std::collections::BTreeMap::new();
    for (i, h) in server_runs {
        let m = h
            .join()
            .map_err(|_| anyhow::anyhow!("a server stream's thread panicked"))??;
        by_server.insert(i, m);
    }
    if !by_server.is_empty() {
        backends.push("wirebench servers: udp".into());
    }
    let mut measured = Vec::new();
    let mut rx_drops = 0;
    for (i, s) in profile.streams.iter().enumerate() {
        if let Some(m) = by_server.remove(&i) {
            measured.push(m);
            continue;
        }
        let stream_id = (i + 1) as u8;
        let g = sources.iter().position(|x| *x == s.source).unwrap_or(0);
        let sent = r.sent[g]
            .iter()
            .find(|x| x.stream_id == stream_id)
            .cloned()
            .unwrap_or_default();
        let d = dests.iter().position(|x| *x == s.destination).unwrap_or(0);
        let (table, drops) = &r.received[d];
        rx_drops += drops;
        let rx = table.stream(stream_id);
        let c = rx.map(|x| x.counters()).unwrap_or_default();
        measured.push(Measured {
            sent: sent.sent,
            received: c.received,
            received_bytes: rx.map_or(0, |x| x.bytes),
            duplicates: c.duplicates,
            reordered: c.reordered,
            active_s: sent.active.as_secs_f64(),
            rx_span_s: rx
                .and_then(|x| x.span)
                .map(|(a, b)| b.0.saturating_sub(a.0) as f64 / 1e9),
            generator_limited: sent.generator_limited,
            latency: rx.and_then(|x| x.latency.summary()),
        });
    }
    let rep = method::streams::report(&profile, &measured);
    let mut doc = RunResult::new(
        "streams",
        serde_json::json!({ "profile": a.profile.display().to_string(), "lab": lab,
            "duration_s": profile.duration, "line_rate_bps": profile.line_rate.0 }),
    );
    doc.backend = Some(backends.join(", "));
    doc.timestamp_source = Some("kernel-software".into());
    for row in &rep.rows {
        if let (Some(e), Some(p), Some(t)) = (row.expected_l2_bps, row.passed, row.tolerance) {
            doc.verdicts.push(engine::results::Verdict {
                name: format!("stream {} received rate", row.name),
                passed: p,
                detail: format!(
                    "{} of L2 frames, expected {} ± {:.1} %",
                    report::units::bps(row.received_l2_bps),
                    report::units::bps(e),
                    t * 100.0
                ),
            });
        }
        if row.generator_limited {
            doc.notes.push(format!(
                "stream {}: the generator fell behind its schedule; its figures measure the tool",
                row.name
            ));
        }
    }
    if rx_drops > 0 {
        doc.notes.push(format!(
            "{rx_drops} frames were dropped by a receiving socket before they were counted: losses include the tool's"
        ));
    }
    doc.profile = Some(rep);
    if a.json {
        print!("{}", report::json::to_string(&doc));
    } else {
        print!("{}", report::text::profile(&doc));
    }
    if doc.verdicts.iter().any(|v| !v.passed) {
        return Err(
            crate::commands::VerdictFailed("a stream missed its expected rate".into()).into(),
        );
    }
    Ok(())
}

/// Sets `bandwidth` on the device: the --dut-cmd template through `sh -c`, or the lab
/// shaper's first class.
fn set_bandwidth(a: &crate::cli::ShapingArgs, bandwidth: f64) -> Result<()> {
    let bits = bandwidth.round() as u64;
    let (program, args): (String, Vec<String>) = match &a.dut_cmd {
        Some(t) => {
            let cmd = t
                .replace("{bandwidth}", &bits.to_string())
                .replace("{bandwidth_k}", &format!("{}", bandwidth / 1e3))
                .replace("{bandwidth_m}", &format!("{}", bandwidth / 1e6));
            ("sh".into(), vec!["-c".into(), cmd])
        }
        None => {
            let ns = lab::naming::namespace(&a.frame.lab, "dut");
            (
                "tc".into(),
                [
                    "-n", &ns, "class", "change", "dev", "eth1", "parent", "1:", "classid", "1:10",
                    "htb", "rate",
                ]
                .iter()
                .map(|s| s.to_string())
                .chain([format!("{bits}bit"), "ceil".into(), format!("{bits}bit")])
                .chain(["quantum".into(), "1514".into()])
                .collect(),
            )
        }
    };
    let out = std::process::Command::new(&program)
        .args(&args)
        .output()
        .with_context(|| format!("running {program}"))?;
    if !out.status.success() {
        return Err(usage(format!(
            "setting the bandwidth to {} failed: `{} {}` exited with {}: {}",
            report::units::bps(bandwidth),
            program,
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// `wirebench shaping`.
pub fn shaping(a: &crate::cli::ShapingArgs) -> Result<()> {
    use engine::multi::{Patch, StreamTx};
    use engine::results::shaping::{Cell, ShapingReport};
    use engine::stats::table::StreamTable;
    need_root()?;
    let tx_ep = endpoint(&a.tx, &a.frame.lab)?;
    let rx_ep = endpoint(&a.rx, &a.frame.lab)?;
    if a.dut_cmd.is_none()
        && !std::path::Path::new(&format!(
            "/run/netns/{}",
            lab::naming::namespace(&a.frame.lab, "dut")
        ))
        .exists()
    {
        return Err(usage(format!(
            "lab '{}' has no dut to shape: build a shaper lab (`wirebench lab up shaper --shape ...`) or give --dut-cmd",
            a.frame.lab
        )));
    }
    let spec = frame_spec(&a.frame, &tx_ep, Some(&rx_ep))?;
    if let Some(s) = a
        .sizes
        .iter()
        .find(|s| (**s as usize) < spec.min_frame_len())
    {
        return Err(usage(format!(
            "frame size {s} is too small for these headers: at least {}",
            spec.min_frame_len()
        )));
    }
    let line = LineRate(a.frame.line_rate as u64);
    let max_len = a.sizes.iter().copied().max().unwrap_or(64);
    let mut tx = Some(open_tx(&a.frame, &tx_ep, max_len)?);
    let mut rx = Some(open_rx(&a.frame, &rx_ep)?);
    let id = test_id();
    let mut rep = ShapingReport {
        sizes: a.sizes.clone(),
        bandwidths_bps: a.bandwidths.clone(),
        configured_by: a
            .dut_cmd
            .clone()
            .unwrap_or_else(|| format!("lab {} shaper class 1:10 (tc class change)", a.frame.lab)),
        cells: vec![],
    };
    let backend = format!(
        "{} / {}",
        tx.as_ref().map_or("", |t| t.name()),
        rx.as_ref().map_or("", |r| r.name())
    );
    let mut stream_id: u8 = 0;
    for &bw in &a.bandwidths {
        set_bandwidth(a, bw)?;
        for &len in &a.sizes {
            stream_id = stream_id.wrapping_add(1).max(1);
            let hdr = wire::testhdr::TestHeaderRepr {
                flags: wire::testhdr::TestFlags::empty(),
                test_id: id,
                stream_id,
                seq: 0,
                tx_ns: 0,
            };
            let mut buf = vec![0u8; len as usize];
            let n = spec.build(len as usize, &hdr, &mut buf)?;
            buf.truncate(n);
            let layout = spec.layout(len as usize)?;
            let fps = line.max_fps(len);
            let stream = StreamTx {
                stream_id,
                templates: vec![(buf, Patch::L4(layout))],
                pattern: vec![0],
                pps: fps,
                start: Duration::ZERO,
                stop: a.duration,
            };
            let (Some(t), Some(r)) = (tx.take(), rx.take()) else {
                break;
            };
            let stop = AtomicBool::new(false);
            let mut res = engine::multi::run(
                vec![(t, vec![stream])],
                vec![(r, StreamTable::new(id, [stream_id]))],
                Duration::from_millis(300),
                &stop,
            )?;
            // The backends come back for the next cell.
            let (sent, (table, _)) = (res.sent.remove(0).remove(0), res.received.remove(0));
            tx = Some(open_tx(&a.frame, &tx_ep, max_len)?);
            rx = Some(open_rx(&a.frame, &rx_ep)?);
            let s = table.stream(stream_id);
            let received = s.map_or(0, |x| x.counters().received);
            let m = method::streams::Measured {
                sent: sent.sent,
                received,
                received_bytes: s.map_or(0, |x| x.bytes),
                active_s: sent.active.as_secs_f64(),
                rx_span_s: s
                    .and_then(|x| x.span)
                    .map(|(p, q)| q.0.saturating_sub(p.0) as f64 / 1e9),
                ..Default::default()
            };
            let rx_bps = method::streams::received_l2_bps(&m);
            let offered_fps = sent.sent as f64 / sent.active.as_secs_f64().max(1e-9);
            let cell = Cell {
                frame_len: len,
                bandwidth_bps: bw,
                offered_fps,
                sent: sent.sent,
                received,
                received_l2_bps: rx_bps,
                passed_ratio: rx_bps / bw,
                generator_limited: offered_fps * 8.0 * len as f64 <= bw * 1.05,
            };
            if !a.json {
                eprintln!(
                    "  {} at {} bytes: {:.2} % passed",
                    report::units::bps(bw),
                    len,
                    cell.passed_ratio * 100.0
                );
            }
            rep.cells.push(cell);
        }
    }
    let mut doc = RunResult::new(
        "shaping",
        serde_json::json!({ "tx": a.tx, "rx": a.rx, "sizes": a.sizes, "bandwidths_bps": a.bandwidths,
            "duration_s": a.duration.as_secs_f64(), "line_rate_bps": line.0, "dut_cmd": a.dut_cmd }),
    );
    doc.backend = Some(backend);
    if rep.cells.iter().any(|c| c.generator_limited) {
        doc.notes.push("some cells could not be offered above their bandwidth (generator limited): they measure the tool, not the shaper".into());
    }
    doc.notes.push("passed rate = received L2 bit/s (frames with FCS, over the receive span) / configured bandwidth; a shaper that counts frames without FCS passes 4 bytes per frame more".into());
    doc.shaping = Some(rep);
    if a.json {
        print!("{}", report::json::to_string(&doc));
    } else {
        print!("{}", report::text::shaping(&doc));
    }
    Ok(())
}

/// The server of a stream whose source is `wirebench://HOST[:PORT]`.
fn server_of(source: &str) -> Option<&str> {
    source.strip_prefix("wirebench://")
}

/// A stream through a wirebench server carries UDP datagrams of one size.
fn check_server_stream(s: &method::streams::StreamSpec, server: &str) -> Result<()> {
    use method::streams::StreamProto;
    if server.is_empty() {
        return Err(usage(format!(
            "stream '{}': wirebench://HOST[:PORT] needs a host",
            s.name
        )));
    }
    if s.protocol != StreamProto::Udp {
        return Err(usage(format!(
            "stream '{}': a stream through a wirebench server is UDP",
            s.name
        )));
    }
    if s.pattern.iter().any(|l| *l != s.pattern[0]) {
        return Err(usage(format!(
            "stream '{}': a stream through a wirebench server has one frame size",
            s.name
        )));
    }
    Ok(())
}

/// Runs a server stream: after its start offset, a UDP test of datagrams of L − 46 bytes
/// at the stream's frame rate until its stop offset.
fn server_stream(
    s: &method::streams::StreamSpec,
    server: &str,
    line: LineRate,
) -> Result<method::streams::Measured> {
    use engine::spec::{Protocol, Rate, TestSpec};
    let (host, port) = match server.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => (h.to_owned(), p.parse().unwrap_or(0)),
        _ => (server.to_owned(), control::DEFAULT_PORT),
    };
    let cfg = crate::commands::client_config(&crate::cli::Target {
        host,
        port,
        auth_key_file: None,
        json: true,
    })?;
    let len = s.pattern[0];
    let payload = (len - UDP_FRAME_OVERHEAD) as usize;
    std::thread::sleep(Duration::from_secs_f64(s.start));
    let duration = Duration::from_secs_f64(s.stop - s.start);
    let spec = TestSpec {
        rate: Rate::PacketsPerSec(s.fps(line)),
        duration,
        len: payload,
        dscp: (s.dscp > 0).then_some(s.dscp),
        ..crate::commands::base_spec(Protocol::Udp)
    };
    let outcome = crate::commands::run_one(&cfg, &spec, None, true)
        .with_context(|| format!("stream '{}'", s.name))?;
    let r = control::assemble::throughput_result(&outcome, "stream", serde_json::Value::Null);
    let sum = r.summary.context("the server stream produced no result")?;
    let sent = sum.sent_packets.unwrap_or(0);
    let received = sent.saturating_sub(sum.lost_packets.unwrap_or(sent));
    Ok(method::streams::Measured {
        sent,
        received,
        // As frames on an Ethernet: L − 4 bytes each (the FCS is added in the report).
        received_bytes: received * (len - 4),
        duplicates: sum.duplicate_packets.unwrap_or(0),
        reordered: sum.reordered_packets.unwrap_or(0),
        active_s: sum.duration_s,
        rx_span_s: None,
        generator_limited: sum.generator_limited,
        latency: sum
            .latency_us
            .map(|l| engine::stats::histogram::LatencySummary {
                count: l.count,
                min_us: l.min,
                avg_us: l.avg,
                p50_us: l.p50,
                p90_us: l.p90,
                p99_us: l.p99,
                p999_us: l.p999,
                p9999_us: l.p9999,
                max_us: l.max,
            }),
    })
}
