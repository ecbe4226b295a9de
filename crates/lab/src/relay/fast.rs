//! The relay's kernel fast path: `bpf/frer.c` on every port (tc ingress through TCX links,
//! which the kernel removes when this process ends, however it ends), its maps filled from
//! the same [`RelayConfig`] the userspace relay runs, its counters read back into the
//! same [`RelayCounters`].
//!
//! What it serves: streams identified by destination MAC (or by nothing), replication to
//! up to 8 ports, elimination with the Vector or Match algorithm, history up to 2048, the
//! reset timer, tag stripping or keeping, `take_no_sequence`, elimination off, and the
//! `pass` map. What it does not ([`unsupported`] says which, and the relay then runs in
//! user space): identification by VLAN or IP fields, individual recovery, latent error
//! detection. The userspace relay ([`super::core`]) is the reference; the differential
//! test runs both on the same frames.

use std::collections::BTreeMap;

use aya::maps::{Array, HashMap as BpfHashMap, MapData, PerCpuArray};
use aya::programs::{TestRun, TestRunOptions};
use engine::sys::bpf::{
    FrerGenerator, FrerPathCounters, FrerPortCfg, FrerPortCounters, FrerRecovery,
    FrerRelayCounters, FrerRule, FrerRuleKey, FRER_HIST_WORDS, FRER_MAX_OUT, FRER_MAX_PORTS,
    FRER_MAX_STREAMS,
};
use frer::recovery::Counters;

use crate::bpf::{kernel, Object, BPF_F_LOCK};
pub use crate::bpf::{FastError, TC_ACT_OK, TC_ACT_REDIRECT, TC_ACT_SHOT};

use super::config::{AlgorithmName, RelayConfig};
use super::core::{
    EliminationCounters, PathCounters, PortCounters, RelayCounters, ReplicationCounters,
    StreamCounters,
};

/// The fast path's object, built from `bpf/frer.c` by `bpf/build.sh`.
static OBJECT: &[u8] = aya::include_bytes_aligned!("../../../../bpf/frer.o");

const RULE_REPLICATE: u32 = 1;
const RULE_ELIMINATE: u32 = 2;
const F_TAKE_NO_SEQ: u32 = 1;
const F_OFF: u32 = 2;
const F_KEEP_TAG: u32 = 4;

/// Why `cfg` needs the userspace relay, if it does.
pub fn unsupported(cfg: &RelayConfig) -> Option<String> {
    if cfg.streams.len() > FRER_MAX_STREAMS {
        return Some(format!(
            "{} streams (the fast path serves {FRER_MAX_STREAMS})",
            cfg.streams.len()
        ));
    }
    if cfg.ports().len() > FRER_MAX_PORTS {
        return Some(format!("more than {FRER_MAX_PORTS} ports"));
    }
    for s in &cfg.streams {
        let i = &s.ident;
        if mac_of(i.dst_mac.as_deref()) == Some([0; 6]) {
            // The all-zero key is the fast path's "any frame".
            return Some(format!(
                "stream {}: destination MAC 00:00:00:00:00:00",
                s.name
            ));
        }
        if i.vlan.is_some()
            || i.src_ip.is_some()
            || i.dst_ip.is_some()
            || i.proto.is_some()
            || i.src_port.is_some()
            || i.dst_port.is_some()
        {
            return Some(format!(
                "stream {}: identified by more than its destination MAC",
                s.name
            ));
        }
        if let Some(r) = &s.replicate {
            if r.to.len() > FRER_MAX_OUT {
                return Some(format!(
                    "stream {}: replicated to {} ports (the fast path serves {FRER_MAX_OUT})",
                    s.name,
                    r.to.len()
                ));
            }
        }
        if let Some(e) = &s.eliminate {
            if e.individual {
                return Some(format!("stream {}: individual recovery", s.name));
            }
            if e.latent.is_some() {
                return Some(format!("stream {}: latent error detection", s.name));
            }
        }
    }
    None
}

fn mac_of(text: Option<&str>) -> Option<[u8; 6]> {
    text.and_then(wire::ethernet::EthernetAddress::parse_str)
        .map(|m| m.0)
}

/// The entries of the `ports` map (interface index, port) and of the `rules` map.
type Entries = (Vec<(u32, FrerPortCfg)>, Vec<(FrerRuleKey, FrerRule)>);

/// The map entries of `cfg` with the ports' interface indexes `ifindex` (in the relay's
/// port order): the ports, and the rules in first-match order.
fn entries(cfg: &RelayConfig, ifindex: &[u32]) -> Entries {
    let ports = cfg.ports();
    let idx = |p: &str| ports.iter().position(|q| q == p).unwrap_or(0);
    let port_entries = ports
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let pass = cfg.pass.get(p).map(|q| idx(q));
            (
                ifindex[i],
                FrerPortCfg {
                    port: i as u32,
                    pass_ifindex: pass.map_or(0, |q| ifindex[q]),
                    pass_port: pass.unwrap_or(0) as u32,
                    pad: 0,
                },
            )
        })
        .collect();
    let mut rules: BTreeMap<(u32, [u8; 6]), FrerRule> = BTreeMap::new();
    for (port, _) in ports.iter().enumerate() {
        let mut wildcard_seen = false;
        for (i, s) in cfg.streams.iter().enumerate() {
            let name = &ports[port];
            let replicates = s.replicate.as_ref().filter(|r| &r.from == name);
            let path = s
                .eliminate
                .as_ref()
                .and_then(|e| e.from.iter().position(|p| p == name));
            if replicates.is_none() && path.is_none() {
                continue;
            }
            // An earlier stream without keys on this port takes every frame: later ones
            // never match here (the userspace relay's first match).
            if wildcard_seen {
                break;
            }
            let mac = mac_of(s.ident.dst_mac.as_deref()).unwrap_or([0; 6]);
            wildcard_seen = s.ident.dst_mac.is_none();
            let key = (ifindex[port], mac);
            if rules.contains_key(&key) {
                continue;
            }
            let mut rule = FrerRule {
                stream: i as u32,
                ..FrerRule::default()
            };
            if let Some(r) = replicates {
                rule.kind = RULE_REPLICATE;
                rule.n_out = r.to.len() as u32;
                for (k, out) in r.to.iter().enumerate() {
                    rule.out_port[k] = idx(out) as u32;
                    rule.out_ifindex[k] = ifindex[idx(out)];
                }
            } else if let (Some(e), Some(path)) = (&s.eliminate, path) {
                rule.kind = RULE_ELIMINATE;
                rule.path = path as u32;
                rule.n_out = 1;
                rule.out_port[0] = idx(&e.to) as u32;
                rule.out_ifindex[0] = ifindex[idx(&e.to)];
            }
            rules.insert(key, rule);
        }
    }
    let rules = rules
        .into_iter()
        .map(|((ifindex, mac), r)| {
            (
                FrerRuleKey {
                    ifindex,
                    mac,
                    pad: 0,
                },
                r,
            )
        })
        .collect();
    (port_entries, rules)
}

/// A recovery function in its reset state (the reset at BEGIN is not counted).
fn initial_recovery(e: &super::config::Eliminate) -> FrerRecovery {
    let mut flags = 0;
    if e.take_no_sequence {
        flags |= F_TAKE_NO_SEQ;
    }
    if e.off {
        flags |= F_OFF;
    }
    if e.keep_tag {
        flags |= F_KEEP_TAG;
    }
    FrerRecovery {
        lock: 0,
        algorithm: match e.algorithm {
            AlgorithmName::Vector => 0,
            AlgorithmName::Match => 1,
        },
        history: u32::from(e.history.clamp(2, frer::recovery::MAX_HISTORY)),
        flags,
        take_any: 1,
        recov: 0xFFFF,
        valid: 0,
        pad: 0,
        reset_ns: e.reset_ms.saturating_mul(1_000_000),
        deadline_ns: 0,
        passed: 0,
        discarded: 0,
        out_of_order: 0,
        rogue: 0,
        lost: 0,
        lost_before_first: 0,
        tagless: 0,
        resets: 0,
        hist: [0; FRER_HIST_WORDS],
    }
}

/// A loaded fast path: the programs verified and the maps filled; [`FastRelay::attach`]
/// puts it on the ports.
pub struct FastRelay {
    obj: Object,
    cfg: RelayConfig,
    ports: Vec<String>,
}

impl FastRelay {
    /// Loads the programs for `cfg`, whose ports have the interface indexes `ifindex` (in
    /// [`RelayConfig::ports`] order).
    ///
    /// # Errors
    /// [`FastError::Unsupported`] for a configuration the fast path does not serve;
    /// [`FastError::Kernel`] when the kernel refuses the programs or maps (no BPF, no
    /// privileges, an older kernel).
    pub fn load(cfg: &RelayConfig, ifindex: &[u32]) -> Result<Self, FastError> {
        cfg.check()?;
        if let Some(why) = unsupported(cfg) {
            return Err(FastError::Unsupported(why));
        }
        let ports = cfg.ports();
        if ifindex.len() != ports.len() {
            return Err(FastError::Unsupported(format!(
                "{} interface indexes for {} ports",
                ifindex.len(),
                ports.len()
            )));
        }
        let mut obj = Object::load(OBJECT, "frer.o")?;
        obj.load_programs(&["frer_port", "frer_tick"])?;
        let (port_entries, rules) = entries(cfg, ifindex);
        {
            let mut m: BpfHashMap<&mut MapData, u32, FrerPortCfg> =
                BpfHashMap::try_from(obj.map_mut("ports")?).map_err(kernel("ports"))?;
            for (k, v) in &port_entries {
                m.insert(k, v, 0).map_err(kernel("ports"))?;
            }
        }
        {
            let mut m: BpfHashMap<&mut MapData, FrerRuleKey, FrerRule> =
                BpfHashMap::try_from(obj.map_mut("rules")?).map_err(kernel("rules"))?;
            for (k, v) in &rules {
                m.insert(k, v, 0).map_err(kernel("rules"))?;
            }
        }
        {
            let mut m: Array<&mut MapData, FrerRecovery> =
                Array::try_from(obj.map_mut("recoveries")?).map_err(kernel("recoveries"))?;
            for (i, s) in cfg.streams.iter().enumerate() {
                if let Some(e) = &s.eliminate {
                    m.set(i as u32, initial_recovery(e), 0)
                        .map_err(kernel("recoveries"))?;
                }
            }
        }
        Ok(Self {
            obj,
            cfg: cfg.clone(),
            ports,
        })
    }

    /// Attaches the port program to every port's ingress (interfaces of this network
    /// namespace, by name) through TCX links, which go with this value or the process
    /// (see [`Object::attach_ingress`]).
    ///
    /// # Errors
    /// An interface is missing, or the kernel refuses the link (older than 6.6).
    pub fn attach(&mut self) -> Result<(), FastError> {
        self.obj.attach_ingress("frer_port", &self.ports)
    }

    /// How long the kernel has run this relay's programs (see
    /// [`crate::bpf::RunTimeStats`]).
    pub fn run_time(&mut self) -> Option<std::time::Duration> {
        self.obj.run_time(&["frer_port", "frer_tick"])
    }

    /// Runs the reset timers to now (the programs check them only when a frame comes).
    ///
    /// # Errors
    /// The kernel refused the test run.
    pub fn tick(&mut self) -> Result<(), FastError> {
        let p = self.obj.program("frer_tick")?;
        let frame = [0u8; 64];
        p.test_run(TestRunOptions {
            data_in: Some(&frame),
            ..TestRunOptions::default()
        })
        .map_err(kernel("frer_tick"))?;
        Ok(())
    }

    /// Sets the programs' clock to `ms` (tests with a virtual clock; 0 is the kernel's).
    ///
    /// # Errors
    /// The map update failed.
    pub fn set_clock_ms(&mut self, ms: u64) -> Result<(), FastError> {
        let mut m: Array<&mut MapData, u64> =
            Array::try_from(self.obj.map_mut("clock")?).map_err(kernel("clock"))?;
        m.set(0, ms.saturating_mul(1_000_000), 0)
            .map_err(kernel("clock"))
    }

    /// Runs the port program on `frame` as if it arrived on port `port` (which need not
    /// exist: its interface index is only a key), without sending anything: the verdict
    /// ([`TC_ACT_SHOT`], [`TC_ACT_REDIRECT`], ...) and the frame as the program left it.
    ///
    /// # Errors
    /// The kernel refused the test run.
    pub fn run_frame(
        &mut self,
        ingress_ifindex: u32,
        frame: &[u8],
    ) -> Result<(i32, Vec<u8>), FastError> {
        self.obj.run_frame("frer_port", ingress_ifindex, frame)
    }

    /// The counters, summed over CPUs, in the userspace relay's shape.
    ///
    /// # Errors
    /// A map read failed.
    pub fn counters(&self) -> Result<RelayCounters, FastError> {
        let cfg = &self.cfg;
        let per_cpu_port: PerCpuArray<&MapData, FrerPortCounters> =
            PerCpuArray::try_from(self.obj.map("port_stats")?).map_err(kernel("port_stats"))?;
        let per_cpu_path: PerCpuArray<&MapData, FrerPathCounters> =
            PerCpuArray::try_from(self.obj.map("path_stats")?).map_err(kernel("path_stats"))?;
        let per_cpu_relay: PerCpuArray<&MapData, FrerRelayCounters> =
            PerCpuArray::try_from(self.obj.map("relay_stats")?).map_err(kernel("relay_stats"))?;
        let gens: Array<&MapData, FrerGenerator> =
            Array::try_from(self.obj.map("generators")?).map_err(kernel("generators"))?;
        let recs: Array<&MapData, FrerRecovery> =
            Array::try_from(self.obj.map("recoveries")?).map_err(kernel("recoveries"))?;
        let mut out = RelayCounters::default();
        for (i, name) in self.ports.iter().enumerate() {
            let v = per_cpu_port
                .get(&(i as u32), 0)
                .map_err(kernel("port_stats"))?;
            out.ports.push(PortCounters {
                name: name.clone(),
                received: v.iter().map(|c| c.received).sum(),
                sent: v.iter().map(|c| c.sent).sum(),
                send_errors: v.iter().map(|c| c.send_errors).sum(),
                ..PortCounters::default()
            });
        }
        let r = per_cpu_relay.get(&0, 0).map_err(kernel("relay_stats"))?;
        out.unmatched_passed = r.iter().map(|c| c.unmatched_passed).sum();
        out.unmatched_dropped = r.iter().map(|c| c.unmatched_dropped).sum();
        out.malformed = r.iter().map(|c| c.malformed).sum();
        out.too_long = r.iter().map(|c| c.too_long).sum();
        for (i, s) in cfg.streams.iter().enumerate() {
            let replication = match &s.replicate {
                Some(rep) => {
                    let g = gens.get(&(i as u32), 0).map_err(kernel("generators"))?;
                    Some(ReplicationCounters {
                        from: rep.from.clone(),
                        to: rep.to.clone(),
                        frames: g.frames,
                        seq_gen_resets: 0,
                    })
                }
                None => None,
            };
            let elimination = match &s.eliminate {
                Some(e) => {
                    // Under the value's spin lock, so the counters are read whole.
                    let rec = recs
                        .get(&(i as u32), BPF_F_LOCK)
                        .map_err(kernel("recoveries"))?;
                    let mut paths = Vec::with_capacity(e.from.len());
                    for (k, port) in e.from.iter().enumerate() {
                        let key = (i * FRER_MAX_PORTS + k) as u32;
                        let v = per_cpu_path.get(&key, 0).map_err(kernel("path_stats"))?;
                        paths.push(PathCounters {
                            port: port.clone(),
                            received: v.iter().map(|c| c.received).sum(),
                            passed: v.iter().map(|c| c.passed).sum(),
                            individual_discarded: 0,
                        });
                    }
                    let mut recovery = Counters {
                        passed: rec.passed,
                        discarded: rec.discarded,
                        out_of_order: rec.out_of_order,
                        rogue: rec.rogue,
                        lost: rec.lost,
                        lost_before_first: rec.lost_before_first,
                        tagless: rec.tagless,
                        resets: rec.resets,
                    };
                    if e.off {
                        recovery.passed = paths.iter().map(|p| p.passed).sum();
                    }
                    Some(EliminationCounters {
                        to: e.to.clone(),
                        off: e.off,
                        recovery,
                        latent_errors: None,
                        latent_resets: None,
                        paths,
                    })
                }
                None => None,
            };
            out.streams.push(StreamCounters {
                name: s.name.clone(),
                replication,
                elimination,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod test {
    use rand::rngs::SmallRng;
    use rand::{RngExt, SeedableRng};

    use super::super::config::{Eliminate, Identification, StreamConfig};
    use super::super::core::Relay;
    use super::*;

    const TALKER: [u8; 6] = [2, 0x77, 0x62, 0, 0x1e, 1];
    const LISTENER: [u8; 6] = [2, 0x77, 0x62, 0, 0x23, 2];
    const OTHER: [u8; 6] = [2, 0x77, 0x62, 0, 0x99, 9];
    /// Interface indexes that exist nowhere: the test runs never send (clones to them
    /// fail and are counted as send errors, see `sent_or_refused`).
    const IFINDEX: [u32; 3] = [9001, 9002, 9003];

    fn udp_frame(dst: [u8; 6], payload: u8) -> Vec<u8> {
        let mut f = Vec::new();
        etherparse::PacketBuilder::ethernet2(TALKER, dst)
            .ipv4([198, 18, 30, 1], [198, 18, 30, 2], 64)
            .udp(5000, 5201)
            .write(&mut f, &[payload; 18])
            .unwrap();
        f
    }

    fn arp_frame(dst: [u8; 6]) -> Vec<u8> {
        let mut f = dst.to_vec();
        f.extend(TALKER);
        f.extend([0x08, 0x06]);
        f.extend([0u8; 28]);
        f
    }

    fn tagged(f: &[u8], seq: u16) -> Vec<u8> {
        let mut out = vec![0; f.len() + frer::rtag::LEN];
        let n = frer::rtag::encode(f, seq, &mut out).unwrap();
        out.truncate(n);
        out
    }

    /// eth0 replicates the listener's stream onto eth1/eth2; eth1/eth2 eliminate the
    /// talker's onto eth0; frames of no stream pass from eth1 to eth0 only.
    fn config(e: Eliminate) -> RelayConfig {
        RelayConfig {
            streams: vec![
                StreamConfig::replicating(
                    "to-listener",
                    Identification::dst_mac("02:77:62:00:23:02"),
                    "eth0",
                    &["eth1", "eth2"],
                ),
                StreamConfig::eliminating(
                    "to-talker",
                    Identification::dst_mac("02:77:62:00:1e:01"),
                    e,
                ),
            ],
            pass: [("eth1".to_owned(), "eth0".to_owned())].into(),
        }
    }

    /// Frames for one run: (time ms, port, frame). Mostly the talker's stream on both
    /// paths with duplicates, gaps, reordering, rogue numbers and pauses past the reset
    /// timer, the sequence numbers running through the wrap; then tagless frames, frames
    /// of no stream, ARP, and the listener's stream to replicate (plain and already tagged).
    fn frames(seed: u64, n: usize) -> Vec<(u64, usize, Vec<u8>)> {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut out = Vec::new();
        let mut now = 1000u64;
        let mut seq: u16 = 65_500;
        let base = udp_frame(TALKER, 7);
        for _ in 0..n {
            now += rng.random_range(0..3u64);
            match rng.random_range(0..100u32) {
                0..=59 => {
                    // In order on one path, often a copy on the other.
                    seq = seq.wrapping_add(1);
                    let path = rng.random_range(1..3usize);
                    out.push((now, path, tagged(&base, seq)));
                    if rng.random_bool(0.7) {
                        out.push((now, 3 - path, tagged(&base, seq)));
                    }
                }
                60..=69 => {
                    // A gap, mostly short.
                    let gap = if rng.random_bool(0.8) { 2..5u16 } else { 5..40 };
                    seq = seq.wrapping_add(rng.random_range(gap));
                    out.push((now, 1, tagged(&base, seq)));
                }
                70..=77 => {
                    // A late copy from a little while back.
                    let back = rng.random_range(0..12u16);
                    out.push((now, 2, tagged(&base, seq.wrapping_sub(back))));
                }
                78..=80 => {
                    // A rogue number, or a jump the long history still takes.
                    let jump = rng.random_range(100..3000u16);
                    out.push((now, 1, tagged(&base, seq.wrapping_add(jump))));
                    if rng.random_bool(0.5) {
                        seq = seq.wrapping_add(jump);
                    }
                }
                81..=82 => now += rng.random_range(40..120u64), // the reset timer runs out
                83..=85 => out.push((now, 1, base.clone())),    // tagless
                86..=88 => out.push((now, rng.random_range(0..3usize), udp_frame(OTHER, 1))),
                89..=90 => out.push((now, 1, arp_frame(TALKER))),
                91..=96 => out.push((now, 0, udp_frame(LISTENER, 3))),
                97..=98 => out.push((now, 0, arp_frame(LISTENER))),
                _ => out.push((now, 0, tagged(&udp_frame(LISTENER, 4), 77))),
            }
        }
        out
    }

    /// The test runs cannot send: the fast path's clones to the fake interfaces are
    /// refused and counted as send errors, which the userspace relay counts as sent.
    fn sent_or_refused(mut c: RelayCounters) -> RelayCounters {
        for p in &mut c.ports {
            p.sent += p.send_errors;
            p.send_errors = 0;
        }
        c
    }

    /// The differential test: the same frames through the userspace relay and the fast
    /// path (BPF_PROG_TEST_RUN, a virtual clock) give the same decision for every frame,
    /// the same frames out, and the same counters, for every elimination setting.
    #[test]
    fn the_fast_path_decides_and_counts_as_the_userspace_relay() {
        if !crate::bpf::root_or_skip("the_fast_path_decides_and_counts_as_the_userspace_relay") {
            return;
        }
        let e = |history: u16| Eliminate {
            history,
            reset_ms: 50,
            ..Eliminate::new(&["eth1", "eth2"], "eth0")
        };
        let settings = [
            ("vector, history 4", e(4)),
            ("vector, history 64", e(64)),
            ("vector, history 2048", e(2048)),
            (
                "vector, no reset timer",
                Eliminate {
                    reset_ms: 0,
                    ..e(16)
                },
            ),
            (
                "match",
                Eliminate {
                    algorithm: AlgorithmName::Match,
                    ..e(2)
                },
            ),
            (
                "tag kept, tagless taken",
                Eliminate {
                    keep_tag: true,
                    take_no_sequence: true,
                    ..e(8)
                },
            ),
            ("elimination off", Eliminate { off: true, ..e(8) }),
        ];
        for (seed, (what, elim)) in settings.into_iter().enumerate() {
            let cfg = config(elim);
            let mut reference = Relay::new(&cfg, 0).unwrap();
            let mut fast = FastRelay::load(&cfg, &IFINDEX).unwrap();
            for (k, (now, port, frame)) in frames(seed as u64, 3000).into_iter().enumerate() {
                reference.tick(now);
                fast.set_clock_ms(now).unwrap();
                fast.tick().unwrap();
                let mut emitted = Vec::new();
                let left_before = reference.counters().unmatched_dropped;
                reference.on_frame(now, port, &frame, &mut |_, f| emitted.push(f.to_vec()));
                let left = reference.counters().unmatched_dropped > left_before;
                let (verdict, out) = fast.run_frame(IFINDEX[port], &frame).unwrap();
                let ctx = || format!("{what}: frame {k} at {now} ms on eth{port}: {frame:02x?}");
                if left {
                    // Not forwarded, left to the host's stack.
                    assert_eq!(verdict, TC_ACT_OK, "{}", ctx());
                } else if emitted.is_empty() {
                    assert_eq!(verdict, TC_ACT_SHOT, "{}", ctx());
                } else {
                    assert_eq!(verdict, TC_ACT_REDIRECT, "{}", ctx());
                    assert!(emitted.iter().all(|f| *f == out), "{}: {out:02x?}", ctx());
                }
            }
            let want = reference.counters();
            assert_eq!(sent_or_refused(fast.counters().unwrap()), want, "{what}");
            // The frames reached every case they were made for.
            let c = want.streams[1].elimination.as_ref().unwrap();
            let r = &c.recovery;
            eprintln!("{what}: {r:?}");
            assert!(want.streams[0].replication.as_ref().unwrap().frames > 100);
            assert!(want.unmatched_passed > 0 && want.unmatched_dropped > 0);
            if c.off {
                assert_eq!(r.discarded, 0, "{r:?}");
            } else if what.contains("no reset timer") {
                // A rogue jump strands a stream whose timer never resets it.
                assert!(r.resets == 0 && r.rogue > 100 && r.tagless > 10, "{r:?}");
            } else {
                assert!(
                    r.discarded > 100 && r.out_of_order > 20 && r.tagless > 10,
                    "{r:?}"
                );
                assert!(r.resets > 5, "{r:?}");
                if what.starts_with("vector") {
                    assert!(r.lost > 10 && r.rogue > 10, "{r:?}");
                }
            }
        }
    }

    #[test]
    fn configurations_the_fast_path_cannot_serve_are_named() {
        let mut cfg = config(Eliminate::new(&["eth1", "eth2"], "eth0"));
        assert_eq!(unsupported(&cfg), None);
        cfg.streams[1].ident.vlan = Some(10);
        assert!(unsupported(&cfg).unwrap().contains("to-talker"));
        cfg.streams[1].ident.vlan = None;
        if let Some(e) = cfg.streams[1].eliminate.as_mut() {
            e.individual = true;
        }
        assert!(unsupported(&cfg).unwrap().contains("individual"));
        let mut cfg = config(Eliminate::new(&["eth1", "eth2"], "eth0"));
        cfg.streams[0].ident = Identification::dst_mac("00:00:00:00:00:00");
        assert!(unsupported(&cfg).unwrap().contains("00:00:00:00:00:00"));
    }

    #[test]
    fn rules_follow_the_first_matching_stream() {
        let mut cfg = config(Eliminate::new(&["eth1", "eth2"], "eth0"));
        // A keyless stream eliminating on eth1 before everything: it takes eth1's frames.
        cfg.streams.insert(
            0,
            StreamConfig::eliminating(
                "all",
                Identification::default(),
                Eliminate::new(&["eth1"], "eth0"),
            ),
        );
        // Interface indexes in the relay's port order (first mention: eth1, eth0, eth2).
        assert_eq!(cfg.ports(), ["eth1", "eth0", "eth2"]);
        let (ports, rules) = entries(&cfg, &[IFINDEX[1], IFINDEX[0], IFINDEX[2]]);
        let pass_of = |ifindex: u32| ports.iter().find(|p| p.0 == ifindex).unwrap().1;
        assert_eq!(pass_of(IFINDEX[1]).pass_ifindex, IFINDEX[0]);
        assert_eq!(pass_of(IFINDEX[0]).pass_ifindex, 0, "eth0 passes nothing");
        let on = |ifindex: u32| -> Vec<(u32, [u8; 6])> {
            rules
                .iter()
                .filter(|(k, _)| k.ifindex == ifindex)
                .map(|(k, r)| (r.stream, k.mac))
                .collect()
        };
        assert_eq!(on(IFINDEX[1]), vec![(0, [0; 6])], "only the keyless stream");
        assert_eq!(on(IFINDEX[2]), vec![(2, TALKER)]);
        assert_eq!(on(IFINDEX[0]), vec![(1, LISTENER)]);
        let rep = rules
            .iter()
            .find(|(k, _)| k.ifindex == IFINDEX[0])
            .unwrap()
            .1;
        assert_eq!(
            (rep.kind, rep.n_out, &rep.out_ifindex[..2]),
            (RULE_REPLICATE, 2, &IFINDEX[1..3])
        );
    }
}
