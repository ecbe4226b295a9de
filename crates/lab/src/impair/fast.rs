//! The impairment stage's kernel fast path: `bpf/impair.c` on both interfaces (tc ingress
//! through TCX links, which the kernel removes when this process ends, however it ends),
//! loss and duplication decided in the kernel by the userspace model's own generator, and
//! a rate limit by an HTB class with a pfifo of `limit` frames on the outgoing interface.
//!
//! What it serves: loss (Bernoulli or in bursts), duplication, rate and limit, in bridge
//! and router mode. What it does not ([`unsupported`] says why, and the stage then runs in
//! user space): delay, jitter and reordering, which hold frames back.
//!
//! The userspace model ([`super::model`]) is the reference: with the same seed the fast
//! path drops and duplicates the same frames of the same sequence (the differential test
//! runs both).

use aya::maps::{Array, HashMap as BpfHashMap, MapData, PerCpuArray};
use engine::sys::bpf::{ImpairCounters, ImpairParams, ImpairPort, ImpairRng, ImpairStageCounters};

pub use crate::bpf::FastError;
use crate::bpf::{kernel, Object};
use crate::cmd::{Cmd, Runner, SystemRunner};

use super::model::{Counters, Params};
use super::spec::ImpairSpec;
use super::stage::{Mode, StageConfig};

/// The fast path's object, built from `bpf/impair.c` by `bpf/build.sh`.
static OBJECT: &[u8] = aya::include_bytes_aligned!("../../../../bpf/impair.o");

const LOSS_NONE: u32 = 0;
const LOSS_ALL: u32 = 1;
const LOSS_BERNOULLI: u32 = 2;
const LOSS_GILBERT: u32 = 3;

/// Why `spec` needs the userspace stage, if it does.
pub fn unsupported(spec: &ImpairSpec) -> Option<String> {
    for (dir, p) in [("forward", &spec.forward), ("reverse", &spec.reverse)] {
        let held = [
            ("delay", p.delay_ns > 0),
            ("jitter", p.jitter_ns > 0),
            ("reorder", p.reorder > 0.0),
        ];
        if let Some((what, _)) = held.iter().find(|(_, on)| *on) {
            return Some(format!(
                "{dir} {what} holds frames back, which the kernel fast path cannot"
            ));
        }
    }
    None
}

/// rand's `Bernoulli::new(p)` threshold: a draw `< threshold` is a success; all ones means
/// "always, without a draw" (p = 1).
fn threshold(p: f64) -> u64 {
    if p >= 1.0 {
        u64::MAX
    } else {
        // 2^64 * p, truncated, as rand computes it.
        (p * 18_446_744_073_709_551_616.0) as u64
    }
}

/// The thresholds of one direction, the draws the model makes (see `Impairer::lose`).
fn params(p: &Params) -> ImpairParams {
    let (loss_mode, loss_t, enter_t, exit_t) = if p.loss <= 0.0 {
        (LOSS_NONE, 0, 0, 0)
    } else if p.loss >= 1.0 {
        (LOSS_ALL, 0, 0, 0)
    } else if p.loss_burst <= 1.0 {
        (LOSS_BERNOULLI, threshold(p.loss), 0, 0)
    } else {
        let b = p.loss_burst;
        let enter = (p.loss / (b * (1.0 - p.loss))).min(1.0);
        (LOSS_GILBERT, 0, threshold(enter), threshold(1.0 / b))
    };
    ImpairParams {
        loss_mode,
        dup_on: u32::from(p.duplicate > 0.0),
        loss_t,
        enter_t,
        exit_t,
        dup_t: threshold(p.duplicate.min(1.0)),
    }
}

/// The state rand's `SmallRng::seed_from_u64(seed)` starts from on 64-bit machines
/// (xoshiro256++ filled by SplitMix64).
fn seeded(seed: u64) -> ImpairRng {
    const PHI: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut state = seed;
    let mut s = [0u64; 4];
    for word in &mut s {
        state = state.wrapping_add(PHI);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        *word = z ^ (z >> 31);
    }
    ImpairRng {
        lock: 0,
        bursting: 0,
        s,
    }
}

/// The two ports' entries: interface a's frames go forward (direction 0) out of b, b's go
/// in reverse (direction 1) out of a.
fn ports(cfg: &StageConfig, ifindex: [u32; 2]) -> [(u32, ImpairPort); 2] {
    let entry = |dir: u32| {
        let (inside, outside) = (dir as usize, 1 - dir as usize);
        let mut p = ImpairPort {
            dir,
            out_ifindex: ifindex[outside],
            ..ImpairPort::default()
        };
        if let Mode::Router { a, b } = &cfg.mode {
            let sides = [a, b];
            let (i, o) = (sides[inside], sides[outside]);
            p.router = 1;
            p.local_in = u32::from_ne_bytes(i.local.octets());
            p.local_out = u32::from_ne_bytes(o.local.octets());
            p.in_mac = i.mac;
            p.out_mac = o.mac;
            p.neighbour = o.neighbour;
        }
        (ifindex[inside], p)
    };
    [entry(0), entry(1)]
}

/// A rate queue a stage left behind (killed before it could remove it) on `cfg`'s
/// interfaces: HTB with handle 1: at the root, removed so that a stage starting there does
/// not find its frames still limited. Other root qdiscs are not touched.
pub fn remove_stale_rate_queues(cfg: &StageConfig) {
    for dev in [&cfg.a, &cfg.b] {
        let show = Cmd::tc(
            ["-j", "qdisc", "show", "dev", dev]
                .map(str::to_owned)
                .to_vec(),
        );
        let Ok(out) = SystemRunner.run(&show) else {
            continue;
        };
        let ours = serde_json::from_str::<serde_json::Value>(&out).is_ok_and(|v| {
            v.as_array().is_some_and(|qs| {
                qs.iter()
                    .any(|q| q["root"] == true && q["kind"] == "htb" && q["handle"] == "1:")
            })
        });
        if ours {
            let del = Cmd::tc(
                ["qdisc", "del", "dev", dev, "root"]
                    .map(str::to_owned)
                    .to_vec(),
            );
            let _ = SystemRunner.run(&del);
        }
    }
}

/// The fast path's counters, summed over CPUs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FastCounters {
    /// a -> b (queue counters zero: the qdisc has them).
    pub forward: Counters,
    /// b -> a.
    pub reverse: Counters,
    /// Router mode: frames left to the node's kernel.
    pub not_forwarded: u64,
    /// Router mode: frames whose TTL ran out.
    pub ttl_expired: u64,
    /// Frames longer than the stage forwards.
    pub too_long: u64,
    /// Duplicates the kernel refused to send.
    pub send_errors: u64,
}

/// The commands that limit the rate of frames leaving `dev` to `p`'s rate, queueing at
/// most `p.limit` frames (tail drop): an HTB class at that rate (L2 bytes, as the
/// userspace stage counts) over a pfifo. `None` without a rate.
pub fn rate_commands(dev: &str, p: &Params) -> Option<Vec<Cmd>> {
    let rate = p.rate_bps?.max(1.0);
    let bps = format!("{rate:.0}bit");
    // A bucket of 5 ms at the rate (at least two full frames): a dequeue the busy machine
    // runs late catches up instead of losing the rate (HTB's default bucket is one
    // frame, which loses 5 % on a loaded 2-core machine).
    let burst = format!("{:.0}b", (rate * 0.005 / 8.0).max(2.0 * 1514.0));
    let tc = |args: &[&str]| Cmd::tc(args.iter().map(|a| (*a).to_owned()).collect());
    let limit = p.limit.to_string();
    Some(vec![
        tc(&[
            "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb", "default", "1",
        ]),
        tc(&[
            "class", "replace", "dev", dev, "parent", "1:", "classid", "1:1", "htb", "rate", &bps,
            "ceil", &bps, "burst", &burst, "cburst", &burst, "quantum", "10000",
        ]),
        tc(&[
            "qdisc", "replace", "dev", dev, "parent", "1:1", "handle", "10:", "pfifo", "limit",
            &limit,
        ]),
    ])
}

/// What a rate queue has sent, holds and has dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueStats {
    /// Frames that left through it.
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Frames dropped because `limit` frames waited.
    pub drops: u64,
    /// Frames waiting.
    pub qlen: u64,
    /// Their bytes.
    pub backlog: u64,
}

/// The rate queue's pfifo (handle 10:) in the output of `tc -s -j qdisc show dev DEV`.
pub fn queue_stats(json: &str) -> Option<QueueStats> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let q = v
        .as_array()?
        .iter()
        .find(|q| q["kind"] == "pfifo" && q["handle"] == "10:")?;
    let n = |k: &str| q[k].as_u64();
    Some(QueueStats {
        packets: n("packets")?,
        bytes: n("bytes")?,
        drops: n("drops")?,
        qlen: n("qlen")?,
        backlog: n("backlog")?,
    })
}

/// A loaded fast path: the program verified and the maps filled; [`FastStage::attach`]
/// puts it on the interfaces, [`FastStage::add_rate_queues`] the rate limits on them.
pub struct FastStage {
    obj: Object,
    ifaces: Vec<String>,
    /// Per direction (forward, reverse): the interface its rate queue is on.
    rate_queues: [Option<String>; 2],
    rates: [Option<Vec<Cmd>>; 2],
}

/// The fast path of `cfg` loaded, attached to its interfaces (of this network namespace)
/// and its rate queues in place.
///
/// # Errors
/// As [`FastStage::load`], [`FastStage::attach`] and [`FastStage::add_rate_queues`]; an
/// interface is missing.
pub fn start(cfg: &StageConfig) -> Result<FastStage, FastError> {
    let index = |dev: &str| {
        engine::sys::interface_index(dev).map_err(|e| FastError::Kernel {
            what: format!("interface {dev}"),
            source: Box::new(e),
        })
    };
    let mut f = FastStage::load(cfg, [index(&cfg.a)?, index(&cfg.b)?])?;
    f.attach()?;
    f.add_rate_queues()?;
    Ok(f)
}

impl FastStage {
    /// Loads the program for `cfg`, whose interfaces a and b have the indexes `ifindex`.
    ///
    /// # Errors
    /// [`FastError::Unsupported`] for delay, jitter or reordering; [`FastError::Kernel`]
    /// when the kernel refuses the program or maps (no BPF, no privileges, an older
    /// kernel).
    pub fn load(cfg: &StageConfig, ifindex: [u32; 2]) -> Result<Self, FastError> {
        if let Some(why) = unsupported(&cfg.spec) {
            return Err(FastError::Unsupported(why));
        }
        let mut obj = Object::load(OBJECT, "impair.o")?;
        obj.load_programs(&["impair_port"])?;
        {
            let mut m: BpfHashMap<&mut MapData, u32, ImpairPort> =
                BpfHashMap::try_from(obj.map_mut("ports")?).map_err(kernel("ports"))?;
            for (k, v) in &ports(cfg, ifindex) {
                m.insert(k, v, 0).map_err(kernel("ports"))?;
            }
        }
        let seed = cfg.spec.seed;
        let dirs = [
            (&cfg.spec.forward, seed),
            (&cfg.spec.reverse, seed.wrapping_add(1)),
        ];
        {
            let mut m: Array<&mut MapData, ImpairParams> =
                Array::try_from(obj.map_mut("params")?).map_err(kernel("params"))?;
            for (i, (p, _)) in dirs.iter().enumerate() {
                m.set(i as u32, params(p), 0).map_err(kernel("params"))?;
            }
        }
        {
            let mut m: Array<&mut MapData, ImpairRng> =
                Array::try_from(obj.map_mut("rngs")?).map_err(kernel("rngs"))?;
            for (i, (_, s)) in dirs.iter().enumerate() {
                m.set(i as u32, seeded(*s), 0).map_err(kernel("rngs"))?;
            }
        }
        Ok(Self {
            obj,
            ifaces: vec![cfg.a.clone(), cfg.b.clone()],
            rate_queues: [None, None],
            // Forward frames leave through b, reverse ones through a.
            rates: [
                rate_commands(&cfg.b, &cfg.spec.forward),
                rate_commands(&cfg.a, &cfg.spec.reverse),
            ],
        })
    }

    /// How long the kernel has run the stage's program (see
    /// [`crate::bpf::RunTimeStats`]).
    pub fn run_time(&mut self) -> Option<std::time::Duration> {
        self.obj.run_time(&["impair_port"])
    }

    /// Puts the rate queues on the outgoing interfaces (with `tc`, in this network
    /// namespace); the ones added before a failure are removed again.
    ///
    /// # Errors
    /// `tc` failed (missing, or the kernel has no HTB).
    pub fn add_rate_queues(&mut self) -> Result<(), FastError> {
        let mut runner = SystemRunner;
        for dir in 0..2 {
            let Some(cmds) = self.rates[dir].clone() else {
                continue;
            };
            let dev = if dir == 0 {
                &self.ifaces[1]
            } else {
                &self.ifaces[0]
            };
            self.rate_queues[dir] = Some(dev.clone());
            for c in &cmds {
                if let Err(e) = runner.run(c) {
                    self.remove_rate_queues();
                    return Err(FastError::Kernel {
                        what: "the rate queue".into(),
                        source: Box::new(e),
                    });
                }
            }
        }
        Ok(())
    }

    /// Removes the rate queues (the interfaces' default qdiscs come back); failures are
    /// ignored: the queue may be gone with its interface.
    pub fn remove_rate_queues(&mut self) {
        for dev in self.rate_queues.iter_mut().filter_map(Option::take) {
            let del = Cmd::tc(
                ["qdisc", "del", "dev", &dev, "root"]
                    .map(str::to_owned)
                    .to_vec(),
            );
            let _ = SystemRunner.run(&del);
        }
    }

    /// The rate queue of direction `dir` (0 forward, 1 reverse), read with `tc`.
    fn queue(&self, dir: usize) -> Option<QueueStats> {
        let dev = self.rate_queues[dir].as_deref()?;
        let show = Cmd::tc(
            ["-s", "-j", "qdisc", "show", "dev", dev]
                .map(str::to_owned)
                .to_vec(),
        );
        queue_stats(&SystemRunner.run(&show).ok()?)
    }

    /// Attaches the program to both interfaces' ingress through TCX links, which go with
    /// this value or the process.
    ///
    /// # Errors
    /// An interface is missing, or the kernel refuses the link (older than 6.6).
    pub fn attach(&mut self) -> Result<(), FastError> {
        self.obj.attach_ingress("impair_port", &self.ifaces)
    }

    /// Runs the program on `frame` as if it arrived on the interface with index
    /// `ingress_ifindex`, sending nothing: the verdict and the frame as it was left.
    ///
    /// # Errors
    /// The kernel refused the test run.
    pub fn run_frame(
        &mut self,
        ingress_ifindex: u32,
        frame: &[u8],
    ) -> Result<(i32, Vec<u8>), FastError> {
        self.obj.run_frame("impair_port", ingress_ifindex, frame)
    }

    /// The counters, summed over CPUs. With a rate queue, frames and bytes out are what
    /// left through it and `dropped_queue` what it dropped, as the kernel counts them on
    /// that interface (the node's own few frames there, ARP, included).
    ///
    /// # Errors
    /// A map read failed.
    pub fn counters(&self) -> Result<FastCounters, FastError> {
        let dirs: PerCpuArray<&MapData, ImpairCounters> =
            PerCpuArray::try_from(self.obj.map("dir_stats")?).map_err(kernel("dir_stats"))?;
        let stage: PerCpuArray<&MapData, ImpairStageCounters> =
            PerCpuArray::try_from(self.obj.map("stage_stats")?).map_err(kernel("stage_stats"))?;
        let mut out = FastCounters::default();
        for (i, c) in [&mut out.forward, &mut out.reverse].into_iter().enumerate() {
            let v = dirs.get(&(i as u32), 0).map_err(kernel("dir_stats"))?;
            let sum = |f: fn(&ImpairCounters) -> u64| v.iter().map(f).sum::<u64>();
            *c = Counters {
                frames_in: sum(|c| c.frames_in),
                bytes_in: sum(|c| c.bytes_in),
                dropped_loss: sum(|c| c.dropped_loss),
                duplicated: sum(|c| c.duplicated),
                frames_out: sum(|c| c.frames_out),
                bytes_out: sum(|c| c.bytes_out),
                ..Counters::default()
            };
            out.send_errors += sum(|c| c.send_errors);
            if let Some(q) = self.queue(i) {
                c.dropped_queue = q.drops;
                c.frames_out = q.packets;
                c.bytes_out = q.bytes;
            }
        }
        let v = stage.get(&0, 0).map_err(kernel("stage_stats"))?;
        out.not_forwarded = v.iter().map(|c| c.not_forwarded).sum();
        out.ttl_expired = v.iter().map(|c| c.ttl_expired).sum();
        out.too_long = v.iter().map(|c| c.too_long).sum();
        Ok(out)
    }
}

impl Drop for FastStage {
    /// The rate queues go with the stage however its loop ends (the program goes with its
    /// links).
    fn drop(&mut self) {
        self.remove_rate_queues();
    }
}

#[cfg(test)]
mod test {
    use rand::rngs::SmallRng;
    use rand::{RngExt, SeedableRng};

    use super::super::model::Impairer;
    use super::super::stage::test::sides;
    use super::super::stage::{route, RouterSide, Verdict};
    use super::*;
    use crate::bpf::{root_or_skip, TC_ACT_OK, TC_ACT_REDIRECT, TC_ACT_SHOT};

    /// Interface indexes that exist nowhere: nothing is sent (a duplicate's clone fails
    /// and counts as a send error, which is how the test sees it).
    const IFINDEX: [u32; 2] = [9101, 9102];

    fn udp(dst_mac: [u8; 6], dst: [u8; 4], ttl: u8, payload: usize) -> Vec<u8> {
        let mut f = Vec::new();
        etherparse::PacketBuilder::ethernet2([2, 0x77, 0x62, 0, 9, 9], dst_mac)
            .ipv4([198, 18, 1, 1], dst, ttl)
            .udp(5000, 5001)
            .write(&mut f, &vec![0x5a; payload])
            .unwrap();
        f
    }

    /// Frames of every kind the router path tells apart, for side `inside` (and plain
    /// frames for a bridge): forwardable ones most of the time.
    fn frame(rng: &mut SmallRng, inside: &RouterSide, far: [u8; 4]) -> Vec<u8> {
        let len = rng.random_range(18..1400);
        match rng.random_range(0..40) {
            0 => udp([2, 0, 0, 0, 0, 9], far, 64, len),
            1 => udp(inside.mac, inside.local.octets(), 64, len),
            2 => udp(inside.mac, far, 1, len),
            3 => {
                let mut f = udp(inside.mac, far, 64, len);
                f[12..14].copy_from_slice(&[0x08, 0x06]);
                f
            }
            4 => {
                // IP options (header length 24): the checksum covers them.
                let mut f = udp(inside.mac, far, 9, len);
                f.splice(34..34, [1, 1, 1, 0]);
                f[14] = 0x46;
                let total = u16::from_be_bytes([f[16], f[17]]) + 4;
                f[16..18].copy_from_slice(&total.to_be_bytes());
                f
            }
            5 => {
                // A wrong header checksum: the stage writes a right one.
                let mut f = udp(inside.mac, far, 64, len);
                f[24] ^= 0xff;
                f
            }
            6 => {
                // Total length beyond the frame.
                let mut f = udp(inside.mac, far, 64, len);
                f[16] = 0xff;
                f
            }
            _ => udp(inside.mac, far, rng.random_range(2..=255), len),
        }
    }

    /// The differential test: the same frames, alternating between the two directions,
    /// through the userspace model (and `route`) and through the program
    /// (BPF_PROG_TEST_RUN): the same verdict for every frame, the same copies, the same
    /// rewritten frame, and the same counters, for Bernoulli and burst loss, duplication
    /// and both modes.
    #[test]
    fn the_fast_path_decides_and_counts_as_the_userspace_stage() {
        if !root_or_skip("the_fast_path_decides_and_counts_as_the_userspace_stage") {
            return;
        }
        let (a, b) = sides();
        let settings = [
            ("loss=10%", false),
            ("loss=5%,loss_burst=4,seed=7", false),
            ("duplicate=20%,seed=3", false),
            ("loss=10%,duplicate=10%,reverse.loss=30%,seed=11", true),
            ("forward.loss=100%,reverse.duplicate=100%", true),
            ("loss=2%,loss_burst=30,duplicate=1%,rate=10M,limit=50", true),
            ("", true),
        ];
        for (inline, router) in settings {
            let spec = ImpairSpec::parse_inline(inline).unwrap();
            let cfg = StageConfig {
                a: "a".into(),
                b: "b".into(),
                mode: if router {
                    Mode::Router { a, b }
                } else {
                    Mode::Bridge
                },
                spec,
            };
            let mut fast = FastStage::load(&cfg, IFINDEX).expect("the program loads");
            let mut model = [
                Impairer::<Vec<u8>>::new(spec.forward, spec.seed),
                Impairer::<Vec<u8>>::new(spec.reverse, spec.seed.wrapping_add(1)),
            ];
            let mut rng = SmallRng::seed_from_u64(99);
            let (mut not_forwarded, mut ttl_expired) = (0, 0);
            let mut seen = [0u64; 5];
            for n in 0..3000u64 {
                let dir = usize::from(rng.random_bool(0.5));
                let (inside, outside) = if dir == 0 { (&a, &b) } else { (&b, &a) };
                let f = frame(&mut rng, inside, [198, 18, 2 - dir as u8, 1]);
                let mut expected = f.clone();
                let verdict = if router {
                    route(&mut expected, inside, outside)
                } else {
                    Verdict::Forward
                };
                let before = fast.counters().unwrap().send_errors;
                let (code, out) = fast.run_frame(IFINDEX[dir], &f).unwrap();
                let copies = fast.counters().unwrap().send_errors - before;
                let ctx = format!("{inline}, frame {n} ({dir}): {verdict:?}");
                match verdict {
                    Verdict::LeaveToKernel => {
                        not_forwarded += 1;
                        seen[0] += 1;
                        assert_eq!(code, TC_ACT_OK, "{ctx}");
                        assert_eq!(out, f, "{ctx}: left unchanged");
                    }
                    Verdict::TtlExpired => {
                        ttl_expired += 1;
                        seen[1] += 1;
                        assert_eq!(code, TC_ACT_SHOT, "{ctx}");
                    }
                    Verdict::Forward => {
                        let len = expected.len();
                        model[dir].push(n, expected.clone(), len);
                        let mut out_model = Vec::new();
                        while let Some(g) = model[dir].poll(u64::MAX) {
                            out_model.push(g);
                        }
                        match out_model.len() {
                            0 => {
                                seen[2] += 1;
                                assert_eq!(code, TC_ACT_SHOT, "{ctx}: lost");
                            }
                            k => {
                                seen[3 + k.min(2) - 1] += 1;
                                assert_eq!(code, TC_ACT_REDIRECT, "{ctx}: sent");
                                assert_eq!(copies + 1, k as u64, "{ctx}: copies");
                                assert_eq!(out, expected, "{ctx}: the frame sent");
                            }
                        }
                    }
                }
            }
            let c = fast.counters().unwrap();
            let queue_free = |mut m: Counters| {
                m.delayed = 0;
                m
            };
            assert_eq!(
                c.forward,
                queue_free(model[0].counters()),
                "{inline}: forward"
            );
            assert_eq!(
                c.reverse,
                queue_free(model[1].counters()),
                "{inline}: reverse"
            );
            assert_eq!(c.not_forwarded, not_forwarded, "{inline}");
            assert_eq!(c.ttl_expired, ttl_expired, "{inline}");
            eprintln!(
                "{inline} (router {router}): kernel {}, ttl {}, lost {}, sent once {}, twice {}",
                seen[0], seen[1], seen[2], seen[3], seen[4]
            );
            // Every kind of decision the setting allows was made.
            if router {
                assert!(seen[0] > 0 && seen[1] > 0, "{inline}: {seen:?}");
            }
            let p = spec.forward;
            assert_eq!(
                seen[2] > 0,
                p.loss > 0.0 || spec.reverse.loss > 0.0,
                "{seen:?}"
            );
            assert_eq!(
                seen[4] > 0,
                p.duplicate > 0.0 || spec.reverse.duplicate > 0.0,
                "{seen:?}"
            );
        }
    }

    #[test]
    fn rate_queues_are_an_htb_class_over_a_pfifo_of_limit_frames() {
        let spec = ImpairSpec::parse_inline("forward.rate=10M,limit=50").unwrap();
        assert!(rate_commands("eth0", &spec.reverse).is_none());
        let text: Vec<String> = rate_commands("eth1", &spec.forward)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            text[0].ends_with("qdisc replace dev eth1 root handle 1: htb default 1"),
            "{text:?}"
        );
        assert!(
            text[1].contains("rate 10000000bit ceil 10000000bit"),
            "{text:?}"
        );
        assert!(text[2].ends_with("pfifo limit 50"), "{text:?}");
        let json = r#"[{"kind":"htb","handle":"1:","root":true,"bytes":90,"packets":1,"drops":0,"backlog":0,"qlen":0},{"kind":"pfifo","handle":"10:","parent":"1:1","options":{"limit":50},"bytes":90,"packets":1,"drops":7,"overlimits":0,"requeues":0,"backlog":3000,"qlen":2}]"#;
        assert_eq!(
            queue_stats(json),
            Some(QueueStats {
                packets: 1,
                bytes: 90,
                drops: 7,
                qlen: 2,
                backlog: 3000
            })
        );
        assert_eq!(queue_stats("[]"), None);
        assert_eq!(queue_stats("not json"), None);
    }

    #[test]
    fn settings_that_hold_frames_back_are_named() {
        for (inline, word) in [
            ("delay=5ms", "forward delay"),
            ("reverse.jitter=1ms", "reverse jitter"),
            ("forward.reorder=1%", "forward reorder"),
        ] {
            let why = unsupported(&ImpairSpec::parse_inline(inline).unwrap()).unwrap();
            assert!(why.contains(word), "{inline}: {why}");
        }
        for inline in ["loss=1%,loss_burst=3,duplicate=1%,rate=1G,limit=10", ""] {
            assert_eq!(
                unsupported(&ImpairSpec::parse_inline(inline).unwrap()),
                None
            );
        }
    }

    /// The seeding matches rand's (the generator itself is checked against the model by
    /// the differential test).
    #[test]
    fn the_generator_starts_where_rands_small_rng_starts() {
        for seed in [0, 1, 7, u64::MAX] {
            let mut ours = seeded(seed).s;
            let mut theirs = SmallRng::seed_from_u64(seed);
            for _ in 0..8 {
                let res = ours[0]
                    .wrapping_add(ours[3])
                    .rotate_left(23)
                    .wrapping_add(ours[0]);
                let t = ours[1] << 17;
                ours[2] ^= ours[0];
                ours[3] ^= ours[1];
                ours[1] ^= ours[2];
                ours[0] ^= ours[3];
                ours[2] ^= t;
                ours[3] = ours[3].rotate_left(45);
                assert_eq!(res, theirs.random::<u64>(), "seed {seed}");
            }
        }
    }
}
