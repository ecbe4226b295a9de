//! Block-size sweeps (netio style): Tx and Rx per block size, in the units the sweep asked
//! for: SI (MByte/s = 10^6 bytes/s, the stored unit) or netio 1.33's own (powers of two,
//! `32k` = 32,767 bytes). The NIC matrix ([`super::nic`]) writes its cells with the same
//! [`Units`].

use model::results::campaign::Campaign;
use model::results::{BlocksizeRow, RunResult};
use model::units::block;

use super::sections::BLOCKSIZE;
use super::sourced;
use crate::table::{opt, Table};

/// How a block-size sweep writes sizes and rates. The results store SI MByte/s; netio
/// units are arithmetic on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Units {
    /// MByte/s = 10^6 bytes/s; sizes `1k` = 1024 bytes ([`block`]).
    Si,
    /// netio 1.33: MByte/s = 2^20 bytes/s, KByte/s = 2^10 bytes/s below 1 MByte/s; a size
    /// of 1024 × n bytes, or one byte less (netio sends 32,767 bytes for `32k`), is `nk`.
    Netio,
}

impl Units {
    /// The units a result or matrix names (`"netio"`); anything else, or none, is SI.
    pub fn named(name: Option<&str>) -> Self {
        match name {
            Some("netio") => Self::Netio,
            _ => Self::Si,
        }
    }

    /// The units of a block-size result (its `params.units`).
    pub fn of(r: &RunResult) -> Self {
        Self::named(r.params.get("units").and_then(|u| u.as_str()))
    }

    /// `si` or `netio`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Si => "si",
            Self::Netio => "netio",
        }
    }

    /// The line under a table that says what its MByte/s are.
    pub fn legend(self) -> &'static str {
        match self {
            Self::Si => "MByte/s = 10^6 bytes/s",
            Self::Netio => {
                "netio units: KByte/s and MByte/s are powers of 2 (2^10 and 2^20 bytes/s); 32k = 32767 bytes"
            }
        }
    }

    /// A block size: `1k`, `32k`, `1500`.
    pub fn size(self, bytes: usize) -> String {
        match (self, netio_k(bytes)) {
            (Self::Netio, Some(k)) => format!("{k}k"),
            (Self::Netio, None) => bytes.to_string(),
            (Self::Si, _) => block(bytes),
        }
    }

    /// A rate for a column whose header says MByte/s: SI `418.08`; netio the same rate in
    /// MByte/s of 2^20 bytes, or `512.00 KByte/s` below 1 MByte/s, as netio writes it.
    pub fn rate(self, mbyte_s: f64) -> String {
        match self {
            Self::Si => format!("{mbyte_s:.2}"),
            Self::Netio => match netio_rate(mbyte_s) {
                (v, MBYTE) => format!("{v:.2}"),
                (v, unit) => format!("{v:.2} {unit}"),
            },
        }
    }

    /// A rate with its unit, in words: SI `438.39 MByte/s`; netio `418.08 MByte/s` or
    /// `488.28 KByte/s`.
    pub fn words(self, mbyte_s: f64) -> String {
        match self {
            Self::Si => format!("{mbyte_s:.2} {MBYTE}"),
            Self::Netio => {
                let (v, unit) = netio_rate(mbyte_s);
                format!("{v:.2} {unit}")
            }
        }
    }
}

const MBYTE: &str = "MByte/s";

/// A direction of a sweep and its rate in a row.
pub type Way = (&'static str, fn(&BlocksizeRow) -> f64);

/// The two directions: `Tx` client to server, `Rx` server to client.
pub const WAYS: [Way; 2] = [("Tx", |r| r.tx_mbyte_s), ("Rx", |r| r.rx_mbyte_s)];

/// netio's `k` count of a size: 1024 × n bytes, or one byte less, is `nk` (netio's
/// `PacketSize`: `(size + 512) / 1024`).
fn netio_k(bytes: usize) -> Option<usize> {
    matches!(bytes % 1024, 0 | 1023)
        .then_some((bytes + 512) / 1024)
        .filter(|k| *k > 0)
}

/// A rate stored in SI MByte/s as netio gives it: (value, `MByte/s`) of 2^20 bytes/s, or
/// (value, `KByte/s`) of 2^10 bytes/s below 1 MByte/s.
fn netio_rate(mbyte_s: f64) -> (f64, &'static str) {
    let bytes_s = mbyte_s * 1e6;
    if bytes_s >= 1_048_576.0 {
        (bytes_s / 1_048_576.0, MBYTE)
    } else {
        (bytes_s / 1024.0, "KByte/s")
    }
}

/// One sweep as netio 1.33 prints it, a line per block size:
/// `Packet size  1k bytes:  418.08 MByte/s Tx,  445.19 MByte/s Rx.`
pub fn netio_lines(rows: &[BlocksizeRow]) -> String {
    let rate = |mbyte_s: f64| {
        let (v, unit) = netio_rate(mbyte_s);
        format!("{v:6.2} {unit}")
    };
    rows.iter()
        .map(|r| {
            let size = match netio_k(r.block_bytes) {
                Some(k) => format!("{k:>2}k"),
                None => r.block_bytes.to_string(),
            };
            format!(
                "Packet size {size} bytes:  {} Tx,  {} Rx.\n",
                rate(r.tx_mbyte_s),
                rate(r.rx_mbyte_s)
            )
        })
        .collect()
}

/// One sweep, as a terminal shows it (SI MByte/s).
pub fn steps(rows: &[BlocksizeRow]) -> Table {
    let cells = rows
        .iter()
        .map(|r| {
            let mut row = vec![block(r.block_bytes)];
            row.extend([r.tx_mbyte_s, r.rx_mbyte_s].map(|v| Units::Si.rate(v)));
            row.extend([r.client_cpu, r.server_cpu].map(|c| opt(c, |c| format!("{c:.0}"))));
            row
        })
        .collect();
    Table::plain(
        "block>|Tx MByte/s>|Rx MByte/s>|client CPU %>|server CPU %>",
        cells,
    )
}

/// The TCP connections a sweep used (its `params.streams`), or `-` when it does not say.
fn streams(r: &RunResult) -> String {
    match r.params.get("streams").and_then(|s| s.as_u64()) {
        Some(n) => n.to_string(),
        None => "-".into(),
    }
}

/// The report's table: every step of every block-size sweep, in the sweep's units.
pub fn report(c: &Campaign) -> Option<Table> {
    BLOCKSIZE.table(sourced(c, |r| {
        let units = Units::of(r);
        let rows = r.blocksize.iter().flatten().map(|row| {
            let mut cells = vec![units.size(row.block_bytes)];
            cells.extend([row.tx_mbyte_s, row.rx_mbyte_s].map(|v| units.rate(v)));
            cells.extend([units.name().to_owned(), streams(r)]);
            cells
        });
        rows.collect()
    }))
}

#[cfg(test)]
mod test {
    use super::*;

    fn row(block_bytes: usize, tx: f64, rx: f64) -> BlocksizeRow {
        BlocksizeRow {
            block_bytes,
            tx_mbyte_s: tx,
            rx_mbyte_s: rx,
            duration_s: 2.0,
            client_cpu: None,
            server_cpu: None,
        }
    }

    #[test]
    fn netio_sizes_and_rates_are_netios() {
        assert_eq!(Units::Netio.size(1024), "1k");
        assert_eq!(Units::Netio.size(32767), "32k");
        assert_eq!(Units::Netio.size(32768), "32k");
        assert_eq!(Units::Netio.size(1500), "1500");
        assert_eq!(Units::Netio.size(1023), "1k");
        assert_eq!(Units::Si.size(32767), "32767");
        assert_eq!(Units::Si.size(32768), "32k");
        // 438.39 × 10^6 bytes/s = 418.08 × 2^20 bytes/s.
        assert_eq!(Units::Netio.rate(438.39), "418.08");
        assert_eq!(Units::Si.rate(438.39), "438.39");
        // Below 1 MByte/s netio writes KByte/s (of 1024 bytes): 0.5 × 10^6 / 1024.
        assert_eq!(Units::Netio.rate(0.5), "488.28 KByte/s");
        assert_eq!(Units::Netio.words(438.39), "418.08 MByte/s");
        assert_eq!(Units::Netio.words(0.5), "488.28 KByte/s");
        assert_eq!(Units::Si.words(0.5), "0.50 MByte/s");
        assert_eq!(Units::named(Some("netio")), Units::Netio);
        assert_eq!(Units::named(Some("si")), Units::Si);
        assert_eq!(Units::named(None), Units::Si);
    }

    #[test]
    fn netio_lines_are_netios_own() {
        let rows = [row(1024, 438.39, 466.817), row(32767, 0.5, 1101.2)];
        assert_eq!(
            netio_lines(&rows),
            concat!(
                "Packet size  1k bytes:  418.08 MByte/s Tx,  445.19 MByte/s Rx.\n",
                "Packet size 32k bytes:  488.28 KByte/s Tx,  1050.19 MByte/s Rx.\n",
            )
        );
    }
}
