//! netio-style block-size sweep: for each write size, a TCP trial client-to-server (Tx) and
//! one server-to-client (Rx), each measured at its receiver, reported in MByte/s (10^6
//! bytes per second; netio's own powers of two are a way of writing them, in `report`),
//! with each side's CPU.

use std::time::Duration;

use model::results::BlocksizeRow;
use model::spec::{Direction, Protocol, Rate};

use crate::{PlanError, Trial, TrialRequest};

/// Largest block accepted (16 MiB).
pub const MAX_BLOCK: usize = 16 * 1024 * 1024;

/// A validated block-size sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct BlocksizePlan {
    sizes: Vec<usize>,
    duration: Duration,
}

impl BlocksizePlan {
    /// Sizes in bytes, each 1..=16 MiB, at least one.
    pub fn new(sizes: Vec<usize>, duration: Duration) -> Result<Self, PlanError> {
        if sizes.is_empty() {
            return Err(PlanError::Sizes("give at least one block size".into()));
        }
        if let Some(bad) = sizes.iter().find(|&&s| s == 0 || s > MAX_BLOCK) {
            return Err(PlanError::Sizes(format!(
                "block size {bad} is outside 1..={MAX_BLOCK} bytes"
            )));
        }
        Ok(Self { sizes, duration })
    }

    /// Runs Tx then Rx for each size, calling `on_row` after each size.
    pub fn run<T: Trial>(
        &self,
        trial: &mut T,
        mut on_row: impl FnMut(&BlocksizeRow),
    ) -> Result<Vec<BlocksizeRow>, T::Error> {
        let mut rows = Vec::with_capacity(self.sizes.len());
        for &size in &self.sizes {
            let mut mbyte_s = [0.0; 2];
            // CPU per side and direction: (client, server).
            let mut cpu = [(None, None); 2];
            for (i, direction) in [Direction::Forward, Direction::Reverse]
                .into_iter()
                .enumerate()
            {
                let req = TrialRequest::payload(
                    Protocol::Tcp,
                    direction,
                    size,
                    Rate::Unlimited,
                    self.duration,
                );
                let r = trial.run(&req)?;
                mbyte_s[i] = r.received_bps.unwrap_or(0.0) / 8.0 / 1e6;
                cpu[i] = match direction {
                    Direction::Forward => (r.sender_cpu, r.receiver_cpu),
                    _ => (r.receiver_cpu, r.sender_cpu),
                };
            }
            let mean = |a: Option<f64>, b: Option<f64>| Some((a? + b?) / 2.0);
            let row = BlocksizeRow {
                block_bytes: size,
                tx_mbyte_s: mbyte_s[0],
                rx_mbyte_s: mbyte_s[1],
                duration_s: self.duration.as_secs_f64(),
                client_cpu: mean(cpu[0].0, cpu[1].0),
                server_cpu: mean(cpu[0].1, cpu[1].1),
            };
            on_row(&row);
            rows.push(row);
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_device::Device;

    #[test]
    fn measures_each_direction_at_its_receiver() {
        // 800 Mbit/s device = 100 MByte/s; the simulated per-write cost makes small blocks slower.
        let mut dev = Device::new(800e6, f64::INFINITY).with_write_cost(Duration::from_micros(20));
        let plan = BlocksizePlan::new(vec![1024, 32 * 1024], Duration::from_secs(2)).unwrap();
        let rows = plan.run(&mut dev, |_| {}).unwrap();
        assert_eq!(dev.log.len(), 4);
        assert_eq!(dev.log[0].direction, Direction::Forward);
        assert_eq!(dev.log[1].direction, Direction::Reverse);
        assert!(rows[0].tx_mbyte_s < rows[1].tx_mbyte_s, "{rows:?}");
        assert!((rows[1].rx_mbyte_s - 100.0).abs() < 1e-6, "{rows:?}");
    }

    #[test]
    fn bad_sizes_are_refused() {
        assert!(BlocksizePlan::new(vec![], Duration::from_secs(1)).is_err());
        let e = BlocksizePlan::new(vec![1024, 0], Duration::from_secs(1)).unwrap_err();
        assert!(e.to_string().contains("block size 0"), "{e}");
    }
}
