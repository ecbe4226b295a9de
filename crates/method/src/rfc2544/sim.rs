//! A simulated device for RFC 2544 searches: a forwarding capacity, a buffer, random
//! per-frame loss, occasional stalls (a trial that loses a burst), a generator ceiling
//! a loss that rises smoothly with load, and a latency that grows near capacity. Seeded,
//! so every run is the same.
use super::*;
use rand::rngs::SmallRng;
use rand::{RngExt, SeedableRng};

pub(crate) struct Device {
    pub(crate) line: LineRate,
    /// Frames/s it forwards without loss (per frame size: bits/s cap as well).
    pub(crate) capacity_fps: f64,
    pub(crate) buffer_frames: f64,
    pub(crate) random_loss: f64,
    pub(crate) stall_probability: f64,
    pub(crate) generator_max_fps: f64,
    pub(crate) base_latency_ns: u64,
    /// A queue that drops early: the loss ratio rises linearly from 0 at this share of
    /// the capacity to 50 % at the capacity (and on, up to 100 %); replaces the hard
    /// capacity and the buffer.
    pub(crate) smooth_from: Option<f64>,
    rng: SmallRng,
    pub(crate) trials: usize,
}

impl Device {
    pub(crate) fn new(capacity_fps: f64, seed: u64) -> Self {
        Self {
            line: LineRate(1_000_000_000),
            capacity_fps,
            buffer_frames: 1000.0,
            random_loss: 0.0,
            stall_probability: 0.0,
            generator_max_fps: f64::INFINITY,
            base_latency_ns: 10_000,
            smooth_from: None,
            rng: SmallRng::seed_from_u64(seed),
            trials: 0,
        }
    }

    /// Frames lost at random among `n`, each with probability p (geometric skips).
    fn random_losses(&mut self, n: u64) -> u64 {
        let p = self.random_loss;
        if p <= 0.0 {
            return 0;
        }
        let mut lost = 0;
        let mut i = 0u64;
        loop {
            let u: f64 = self.rng.random::<f64>().max(1e-300);
            i += (u.ln() / (1.0 - p).ln()).floor() as u64 + 1;
            if i > n {
                return lost;
            }
            lost += 1;
        }
    }
}

impl Trial for Device {
    type Error = std::convert::Infallible;

    fn run(&mut self, req: &TrialRequest) -> Result<TrialData, Self::Error> {
        self.trials += 1;
        let frame_len = req.frame_len().unwrap_or(64);
        let cap = self.capacity_fps.min(self.line.max_fps(frame_len));
        let (sent, passed, offered, limited) = match req.load {
            Load::Rate(rate, duration) => {
                let fps = rate.packets_per_sec(1).unwrap_or(f64::INFINITY);
                let offered = fps.min(self.generator_max_fps);
                let secs = duration.as_secs_f64();
                let sent = (offered * secs).round() as u64;
                let passed = if let Some(from) = self.smooth_from {
                    let start = from * cap;
                    let loss = (0.5 * (offered - start) / (cap - start)).clamp(0.0, 1.0);
                    (sent as f64 * (1.0 - loss)).round() as u64
                } else if offered <= cap {
                    sent
                } else {
                    ((cap * secs + self.buffer_frames).round() as u64).min(sent)
                };
                (sent, passed, offered, offered < fps * 0.999)
            }
            Load::Burst(frames) => {
                let line = self.line.max_fps(frame_len);
                // The queue grows by (1 − cap/line) per frame arriving at line rate.
                let fill = 1.0 - (cap / line).min(1.0);
                let longest = if fill <= 0.0 {
                    u64::MAX
                } else {
                    (self.buffer_frames / fill).floor() as u64
                };
                let limited = self.generator_max_fps < line * 0.999;
                (frames, frames.min(longest), line, limited)
            }
        };
        let mut lost_extra = self.random_losses(passed);
        if self.stall_probability > 0.0 && self.rng.random_bool(self.stall_probability) {
            lost_extra += (passed / 1000).max(1);
        }
        let received = passed.saturating_sub(lost_extra);
        let latency = req.latency.then(|| {
            let mut h = LatencyHistogram::new();
            let busy = if let Load::Rate(rate, _) = req.load {
                (rate.packets_per_sec(1).unwrap_or(cap) / cap).min(1.0)
            } else {
                1.0
            };
            let base = self.base_latency_ns + (busy * busy * 20_000.0) as u64;
            h.record_n_ns(base, received * 98 / 100);
            h.record_n_ns(base * 2, received - received * 98 / 100 - received / 1000);
            h.record_n_ns(base * 5, received / 1000);
            h
        });
        Ok(TrialData {
            counters: model::stats::Counters {
                received,
                ..Default::default()
            }
            .settle(sent),
            offered_pps: offered,
            generator_limited: limited,
            latency,
            ..TrialData::default()
        })
    }
}
