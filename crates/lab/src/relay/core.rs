//! The relay's per-frame decisions, pure: a frame arrives on port `p` at time `now_ms`;
//! the relay identifies its stream and emits zero or more frames on other ports. No I/O
//! and no allocation per frame (one scratch buffer), so it is tested with hand-built
//! frames and a virtual clock; [`super::process`] drives it from sockets.
//!
//! - Replication (802.1CB 7.7, 7.4.1, 7.8): one sequence number per frame from the
//!   stream's generator, the R-TAG inserted after any VLAN tags (an existing R-TAG is
//!   rewritten), the same tagged frame sent on every out-port.
//! - Elimination (7.4.2, 7.5): optional individual recovery per in-port, then the stream's
//!   sequence recovery function; a passed frame leaves with its tag stripped (or kept).
//!   Per in-port it counts frames received and frames passed, i.e. which path delivered
//!   first.
//! - Latent error detection (7.4.4) runs from [`Relay::tick`].
//! - Frames of no stream follow the `pass` map or are dropped; runts are dropped. All of
//!   it is counted, nothing panics on any input.

use std::net::IpAddr;

use frer::generation::SequenceGenerator;
use frer::latent::{LatentConfig, LatentErrorDetector};
use frer::recovery::{Algorithm, Recovery, RecoveryConfig, Verdict};
pub use model::results::relay::{
    EliminationCounters, PathCounters, PortCounters, RelayCounters, ReplicationCounters,
    StreamCounters,
};

use super::config::{protocol_number, AlgorithmName, ConfigError, RelayConfig};

/// The largest frame the relay handles (a 9000-byte MTU plus headers); the R-TAG adds 6.
pub const MAX_FRAME: usize = 9216;

/// A parsed identification.
#[derive(Debug, Clone, Default)]
struct Ident {
    dst_mac: Option<[u8; 6]>,
    vlan: Option<u16>,
    src_ip: Option<IpAddr>,
    dst_ip: Option<IpAddr>,
    proto: Option<u8>,
    src_port: Option<u16>,
    dst_port: Option<u16>,
}

impl Ident {
    fn needs_ip(&self) -> bool {
        self.src_ip.is_some()
            || self.dst_ip.is_some()
            || self.proto.is_some()
            || self.src_port.is_some()
            || self.dst_port.is_some()
    }

    fn matches(&self, k: &Keys) -> bool {
        self.dst_mac.is_none_or(|m| m == k.dst_mac)
            && self.vlan.is_none_or(|v| k.vlan == Some(v))
            && (!self.needs_ip()
                || k.ip.as_ref().is_some_and(|ip| {
                    self.src_ip.is_none_or(|a| a == ip.src)
                        && self.dst_ip.is_none_or(|a| a == ip.dst)
                        && self.proto.is_none_or(|p| p == ip.proto)
                        && self
                            .src_port
                            .is_none_or(|p| ip.ports.is_some_and(|q| q.0 == p))
                        && self
                            .dst_port
                            .is_none_or(|p| ip.ports.is_some_and(|q| q.1 == p))
                }))
    }
}

struct IpKeys {
    src: IpAddr,
    dst: IpAddr,
    proto: u8,
    ports: Option<(u16, u16)>,
}

struct Keys {
    dst_mac: [u8; 6],
    vlan: Option<u16>,
    ip: Option<IpKeys>,
}

fn be16(f: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*f.get(at)?, *f.get(at + 1)?]))
}

/// Identification keys of a frame: destination MAC, the outer VLAN id, and (`with_ip`:
/// only when some stream matches on it) the IP 5-tuple behind any VLAN tags and R-TAG (no
/// IPv6 extension headers, no fragments).
fn keys(f: &[u8], with_ip: bool) -> Option<Keys> {
    let dst_mac: [u8; 6] = f.get(..6)?.try_into().ok()?;
    let mut at = 12;
    let mut vlan = None;
    let mut ty = be16(f, at)?;
    while matches!(ty, 0x8100 | 0x88A8) {
        vlan = vlan.or(Some(be16(f, at + 2)? & 0x0FFF));
        at += 4;
        ty = be16(f, at)?;
    }
    if !with_ip {
        return Some(Keys {
            dst_mac,
            vlan,
            ip: None,
        });
    }
    if ty == frer::rtag::ETHERTYPE {
        at += frer::rtag::LEN;
        ty = be16(f, at)?;
    }
    let l3 = at + 2;
    // (source, destination, protocol, where the L4 header starts if its ports are there)
    let ip = match ty {
        0x0800 => f.get(l3..l3 + 20).and_then(|h| {
            let ihl = usize::from(h[0] & 0x0F) * 4;
            let fragment = be16(h, 6)? & 0x1FFF != 0;
            let src = IpAddr::from(<[u8; 4]>::try_from(&h[12..16]).ok()?);
            let dst = IpAddr::from(<[u8; 4]>::try_from(&h[16..20]).ok()?);
            Some((src, dst, h[9], (!fragment && ihl >= 20).then_some(l3 + ihl)))
        }),
        0x86DD => f.get(l3..l3 + 40).and_then(|h| {
            let src = IpAddr::from(<[u8; 16]>::try_from(&h[8..24]).ok()?);
            let dst = IpAddr::from(<[u8; 16]>::try_from(&h[24..40]).ok()?);
            Some((src, dst, h[6], Some(l3 + 40)))
        }),
        _ => None,
    };
    let ip = ip.map(|(src, dst, proto, l4)| IpKeys {
        src,
        dst,
        proto,
        ports: l4
            .filter(|_| matches!(proto, 6 | 17))
            .and_then(|l4| Some((be16(f, l4)?, be16(f, l4 + 2)?))),
    });
    Some(Keys { dst_mac, vlan, ip })
}

struct Replication {
    from: usize,
    to: Vec<usize>,
    generator: SequenceGenerator,
    frames: u64,
}

struct Elimination {
    from: Vec<usize>,
    to: usize,
    keep_tag: bool,
    off: bool,
    recovery: Recovery,
    individual: Option<Vec<Recovery>>,
    latent: Option<LatentErrorDetector>,
    paths: Vec<PathCounters>,
}

struct Stream {
    name: String,
    ident: Ident,
    replication: Option<Replication>,
    elimination: Option<Elimination>,
}

/// A relay: its streams, its ports and its counters.
pub struct Relay {
    ports: Vec<String>,
    streams: Vec<Stream>,
    pass: Vec<Option<usize>>,
    /// Some stream matches on IP fields, so frames are parsed that deep.
    needs_ip: bool,
    counters: RelayCounters,
    scratch: Vec<u8>,
}

impl Relay {
    /// A relay for a checked configuration, started at `now_ms`.
    ///
    /// # Errors
    /// The configuration does not pass [`RelayConfig::check`].
    pub fn new(cfg: &RelayConfig, now_ms: u64) -> Result<Self, ConfigError> {
        cfg.check()?;
        let ports = cfg.ports();
        let idx = |p: &str| ports.iter().position(|q| q == p).unwrap_or(0);
        let streams: Vec<Stream> = cfg
            .streams
            .iter()
            .map(|s| {
                let i = &s.ident;
                let ident = Ident {
                    dst_mac: i
                        .dst_mac
                        .as_deref()
                        .and_then(wire::ethernet::EthernetAddress::parse_str)
                        .map(|m| m.0),
                    vlan: i.vlan,
                    src_ip: i.src_ip,
                    dst_ip: i.dst_ip,
                    proto: i.proto.as_deref().and_then(protocol_number),
                    src_port: i.src_port,
                    dst_port: i.dst_port,
                };
                let replication = s.replicate.as_ref().map(|r| Replication {
                    from: idx(&r.from),
                    to: r.to.iter().map(|p| idx(p)).collect(),
                    generator: SequenceGenerator::new(),
                    frames: 0,
                });
                let elimination = s.eliminate.as_ref().map(|e| {
                    let rc = RecoveryConfig {
                        algorithm: match e.algorithm {
                            AlgorithmName::Vector => Algorithm::Vector,
                            AlgorithmName::Match => Algorithm::Match,
                        },
                        history_length: e.history,
                        reset_ms: (e.reset_ms > 0).then_some(e.reset_ms),
                        take_no_sequence: e.take_no_sequence,
                        individual: false,
                    };
                    let recovery = Recovery::new(rc);
                    let individual = e.individual.then(|| {
                        e.from
                            .iter()
                            .map(|_| {
                                Recovery::new(RecoveryConfig {
                                    individual: true,
                                    ..rc
                                })
                            })
                            .collect()
                    });
                    let latent = e.latent.map(|l| {
                        LatentErrorDetector::new(
                            LatentConfig {
                                paths: l.paths.unwrap_or(e.from.len() as u16),
                                difference: l.difference,
                                period_ms: l.period_ms,
                                reset_period_ms: l.reset_period_ms,
                            },
                            now_ms,
                            0,
                            0,
                        )
                    });
                    Elimination {
                        from: e.from.iter().map(|p| idx(p)).collect(),
                        to: idx(&e.to),
                        keep_tag: e.keep_tag,
                        off: e.off,
                        recovery,
                        individual,
                        latent,
                        paths: e
                            .from
                            .iter()
                            .map(|p| PathCounters {
                                port: p.clone(),
                                ..PathCounters::default()
                            })
                            .collect(),
                    }
                });
                Stream {
                    name: s.name.clone(),
                    ident,
                    replication,
                    elimination,
                }
            })
            .collect();
        let pass = ports
            .iter()
            .map(|p| cfg.pass.get(p).map(|q| idx(q)))
            .collect();
        let counters = RelayCounters {
            ports: ports
                .iter()
                .map(|p| PortCounters {
                    name: p.clone(),
                    ..PortCounters::default()
                })
                .collect(),
            ..RelayCounters::default()
        };
        let needs_ip = streams.iter().any(|s| s.ident.needs_ip());
        Ok(Self {
            ports,
            streams,
            pass,
            needs_ip,
            counters,
            scratch: vec![0; MAX_FRAME + frer::rtag::LEN],
        })
    }

    /// The ports, in the order port indices refer to.
    pub fn ports(&self) -> &[String] {
        &self.ports
    }

    /// A frame arrived on port `port` at `now_ms`; `emit(out_port, frame)` is called for
    /// every frame to send.
    pub fn on_frame(
        &mut self,
        now_ms: u64,
        port: usize,
        frame: &[u8],
        emit: &mut dyn FnMut(usize, &[u8]),
    ) {
        let Some(pc) = self.counters.ports.get_mut(port) else {
            return;
        };
        pc.received += 1;
        if frame.len() > MAX_FRAME {
            self.counters.too_long += 1;
            return;
        }
        let Some(k) = keys(frame, self.needs_ip) else {
            self.counters.malformed += 1;
            return;
        };
        let stream = self.streams.iter_mut().find(|s| {
            let on_port = s.replication.as_ref().is_some_and(|r| r.from == port)
                || s.elimination
                    .as_ref()
                    .is_some_and(|e| e.from.contains(&port));
            on_port && s.ident.matches(&k)
        });
        let Some(s) = stream else {
            match self.pass.get(port).copied().flatten() {
                Some(out) => {
                    self.counters.unmatched_passed += 1;
                    self.counters.ports[out].sent += 1;
                    emit(out, frame);
                }
                None => self.counters.unmatched_dropped += 1,
            }
            return;
        };
        let ports = &mut self.counters.ports;
        if let Some(r) = s.replication.as_mut().filter(|r| r.from == port) {
            let seq = r.generator.next_seq();
            let Some(n) = frer::rtag::encode(frame, seq, &mut self.scratch) else {
                self.counters.too_long += 1;
                return;
            };
            r.frames += 1;
            for &out in &r.to {
                ports[out].sent += 1;
                emit(out, &self.scratch[..n]);
            }
            return;
        }
        let Some(e) = s.elimination.as_mut() else {
            return;
        };
        let Some(path) = e.from.iter().position(|&p| p == port) else {
            return;
        };
        e.paths[path].received += 1;
        let seq = frer::rtag::decode(frame).map(|(s, _)| s);
        if let Some(ind) = e.individual.as_mut() {
            if ind[path].on_frame(now_ms, seq) == Verdict::Discard && seq.is_some() {
                e.paths[path].individual_discarded += 1;
                return;
            }
        }
        let verdict = if e.off {
            Verdict::Pass
        } else {
            e.recovery.on_frame(now_ms, seq)
        };
        if verdict == Verdict::Discard {
            return;
        }
        e.paths[path].passed += 1;
        ports[e.to].sent += 1;
        if e.keep_tag || seq.is_none() {
            emit(e.to, frame);
        } else if let Some((n, _)) = frer::rtag::strip(frame, &mut self.scratch) {
            emit(e.to, &self.scratch[..n]);
        }
    }

    /// Runs the reset timers and latent error detection to `now_ms`. Returns the streams
    /// whose latent error test failed, with the drift.
    pub fn tick(&mut self, now_ms: u64) -> Vec<(String, i64)> {
        let mut out = Vec::new();
        for s in &mut self.streams {
            let Some(e) = s.elimination.as_mut() else {
                continue;
            };
            e.recovery.tick(now_ms);
            for r in e.individual.iter_mut().flatten() {
                r.tick(now_ms);
            }
            let c = e.recovery.counters();
            if let Some(l) = e.latent.as_mut() {
                if let Some(d) = l.poll(now_ms, c.passed, c.discarded) {
                    out.push((s.name.clone(), d));
                }
            }
        }
        out
    }

    /// The counters (socket fields of ports as last set by [`Self::port_counters_mut`]).
    pub fn counters(&self) -> RelayCounters {
        let mut c = self.counters.clone();
        c.streams = self
            .streams
            .iter()
            .map(|s| StreamCounters {
                name: s.name.clone(),
                replication: s.replication.as_ref().map(|r| ReplicationCounters {
                    from: self.ports[r.from].clone(),
                    to: r.to.iter().map(|&p| self.ports[p].clone()).collect(),
                    frames: r.frames,
                    seq_gen_resets: r.generator.resets,
                }),
                elimination: s.elimination.as_ref().map(|e| {
                    let mut recovery = e.recovery.counters();
                    if e.off {
                        recovery.passed = e.paths.iter().map(|p| p.passed).sum();
                    }
                    EliminationCounters {
                        to: self.ports[e.to].clone(),
                        off: e.off,
                        recovery,
                        latent_errors: e.latent.as_ref().map(|l| l.errors),
                        latent_resets: e.latent.as_ref().map(|l| l.resets),
                        paths: e.paths.clone(),
                    }
                }),
            })
            .collect();
        c
    }

    /// Port counters, for the I/O loop to add the socket's own figures.
    pub fn port_counters_mut(&mut self, port: usize) -> Option<&mut PortCounters> {
        self.counters.ports.get_mut(port)
    }
}

#[cfg(test)]
mod test {
    use super::super::config::{Eliminate, Identification, StreamConfig};
    use super::*;

    const LISTENER: [u8; 6] = [2, 0x77, 0x62, 0, 0x1f, 2];

    fn udp_frame(dst_mac: [u8; 6], dst_port: u16, payload: u8) -> Vec<u8> {
        let mut f = Vec::new();
        etherparse::PacketBuilder::ethernet2([2, 0x77, 0x62, 0, 0x1e, 1], dst_mac)
            .ipv4([198, 18, 30, 1], [198, 18, 30, 2], 64)
            .udp(5000, dst_port)
            .write(&mut f, &[payload; 18])
            .unwrap();
        f
    }

    /// eth0 replicates onto eth1/eth2; eth1/eth2 eliminate onto eth3.
    fn config(history: u16) -> RelayConfig {
        RelayConfig {
            streams: vec![
                StreamConfig::replicating(
                    "rep",
                    Identification::dst_mac("02:77:62:00:1f:02"),
                    "eth0",
                    &["eth1", "eth2"],
                ),
                StreamConfig::eliminating(
                    "elim",
                    Identification {
                        proto: Some("udp".into()),
                        dst_port: Some(5201),
                        ..Identification::default()
                    },
                    Eliminate {
                        history,
                        ..Eliminate::new(&["eth1", "eth2"], "eth3")
                    },
                ),
            ],
            pass: [("eth0".to_owned(), "eth1".to_owned())].into(),
        }
    }

    fn run(relay: &mut Relay, now: u64, port: usize, f: &[u8]) -> Vec<(usize, Vec<u8>)> {
        let mut out = Vec::new();
        relay.on_frame(now, port, f, &mut |p, b| out.push((p, b.to_vec())));
        out
    }

    #[test]
    fn replication_tags_every_copy_with_one_fresh_number() {
        let mut r = Relay::new(&config(8), 0).unwrap();
        let f = udp_frame(LISTENER, 5201, 1);
        for want in 0..3u16 {
            let out = run(&mut r, 0, 0, &f);
            assert_eq!(out.len(), 2);
            assert_eq!((out[0].0, out[1].0), (1, 2));
            assert_eq!(out[0].1, out[1].1);
            assert_eq!(frer::rtag::decode(&out[0].1), Some((want, 12)));
            assert_eq!(out[0].1.len(), f.len() + 6);
        }
        let c = r.counters();
        assert_eq!(c.streams[0].replication.as_ref().unwrap().frames, 3);
        assert_eq!(
            (c.ports[0].received, c.ports[1].sent, c.ports[2].sent),
            (3, 3, 3)
        );
    }

    #[test]
    fn elimination_passes_each_number_once_strips_the_tag_and_counts_paths() {
        let mut rep = Relay::new(&config(8), 0).unwrap();
        let mut elim = Relay::new(&config(8), 0).unwrap();
        let plain = udp_frame(LISTENER, 5201, 7);
        let mut delivered = Vec::new();
        for i in 0..10u64 {
            let copies = run(&mut rep, i, 0, &plain);
            // Path B (eth2) delivers first for even numbers; path A loses number 3.
            let order: Vec<&(usize, Vec<u8>)> = if i % 2 == 0 {
                vec![&copies[1], &copies[0]]
            } else {
                vec![&copies[0], &copies[1]]
            };
            for (port, f) in order {
                if i == 3 && *port == 1 {
                    continue;
                }
                delivered.extend(run(&mut elim, i, *port, f));
            }
        }
        assert_eq!(delivered.len(), 10, "every number once");
        assert!(delivered.iter().all(|(p, f)| *p == 3 && *f == plain));
        let c = r_elim(&elim);
        assert_eq!(
            (
                c.recovery.passed,
                c.recovery.discarded,
                c.recovery.rogue,
                c.recovery.tagless
            ),
            (10, 9, 0, 0)
        );
        assert_eq!(c.paths[0].received, 9);
        assert_eq!(c.paths[1].received, 10);
        // eth2 first on 0,2,4,6,8 and on 3 (eth1 lost it).
        assert_eq!((c.paths[0].passed, c.paths[1].passed), (4, 6));
    }

    fn r_elim(r: &Relay) -> EliminationCounters {
        r.counters().streams[1].elimination.clone().unwrap()
    }

    #[test]
    fn elimination_off_passes_every_copy() {
        let mut cfg = config(8);
        cfg.streams[1].eliminate.as_mut().unwrap().off = true;
        let mut rep = Relay::new(&config(8), 0).unwrap();
        let mut elim = Relay::new(&cfg, 0).unwrap();
        let mut n = 0;
        for _ in 0..5 {
            for (port, f) in run(&mut rep, 0, 0, &udp_frame(LISTENER, 5201, 0)) {
                n += run(&mut elim, 0, port, &f).len();
            }
        }
        assert_eq!(n, 10);
        assert_eq!(r_elim(&elim).recovery.passed, 10);
    }

    #[test]
    fn foreign_and_broken_frames_are_counted_never_a_panic() {
        let mut r = Relay::new(&config(8), 0).unwrap();
        // No stream on eth0 for another MAC: passed to eth1 by the pass map.
        let other = udp_frame([2, 0, 0, 0, 0, 9], 5201, 0);
        assert_eq!(run(&mut r, 0, 0, &other), vec![(1, other.clone())]);
        // Not a stream frame on eth3 and no pass entry there: dropped.
        assert!(run(&mut r, 0, 3, &other).is_empty());
        // A stream frame without an R-TAG at the eliminator: tagless, discarded.
        assert!(run(&mut r, 0, 1, &udp_frame(LISTENER, 5201, 0)).is_empty());
        // Runts, garbage, an R-TAG cut short, endless VLAN tags.
        for junk in [
            vec![],
            vec![0u8; 5],
            vec![0xff; 13],
            [&LISTENER[..], &[0u8; 6], &[0xF1, 0xC1, 0]].concat(),
            [&LISTENER[..], &[0u8; 6], &[0x81, 0x00].repeat(30)].concat(),
        ] {
            for port in 0..4 {
                run(&mut r, 0, port, &junk);
            }
        }
        // A port index the relay does not have.
        run(&mut r, 0, 99, &other);
        let c = r.counters();
        assert_eq!((c.unmatched_passed, c.unmatched_dropped), (1, 1));
        assert_eq!(c.malformed, 5 * 4);
        assert!(run(&mut r, 0, 0, &vec![0u8; MAX_FRAME + 1]).is_empty());
        assert_eq!(r.counters().too_long, 1);
        assert_eq!(r_elim(&r).recovery.tagless, 1);
    }

    #[test]
    fn ip_identification_looks_behind_vlan_and_rtag() {
        let r = Relay::new(&config(8), 0).unwrap();
        let ident = &r.streams[1].ident;
        let mut f = udp_frame(LISTENER, 5201, 0);
        assert!(ident.matches(&keys(&f, true).unwrap()));
        // With a VLAN tag and an R-TAG in front of the IP header.
        f.splice(12..12, [0x81, 0x00, 0x00, 0x0a]);
        let mut tagged = vec![0u8; f.len() + 6];
        let n = frer::rtag::encode(&f, 9, &mut tagged).unwrap();
        let k = keys(&tagged[..n], true).unwrap();
        assert_eq!(k.vlan, Some(10));
        assert!(ident.matches(&k));
        assert!(!ident.matches(&keys(&udp_frame(LISTENER, 5202, 0), true).unwrap()));
    }

    #[test]
    fn the_reset_timer_and_latent_error_detection_run_on_tick() {
        let mut cfg = config(8);
        let e = cfg.streams[1].eliminate.as_mut().unwrap();
        e.reset_ms = 100;
        e.latent = Some(super::super::config::Latent {
            paths: None,
            difference: 2,
            period_ms: 1000,
            reset_period_ms: 30_000,
        });
        let mut rep = Relay::new(&config(8), 0).unwrap();
        let mut elim = Relay::new(&cfg, 0).unwrap();
        // 100 frames over both paths, then 100 over path A only.
        for i in 0..200u64 {
            for (port, f) in run(&mut rep, i, 0, &udp_frame(LISTENER, 5201, 0)) {
                if i < 100 || port == 1 {
                    run(&mut elim, i, port, &f);
                }
            }
            assert!(elim.tick(i).is_empty());
        }
        let failed = elim.tick(1000);
        assert_eq!(failed, vec![("elim".to_owned(), -100)]);
        assert_eq!(r_elim(&elim).latent_errors, Some(1));
        // Nothing passes for longer than reset_ms: the recovery resets.
        elim.tick(1200);
        assert_eq!(r_elim(&elim).recovery.resets, 1);
    }
}
