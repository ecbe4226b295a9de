//! Block-size sweeps (netio style): Tx and Rx MByte/s per block size.

use model::results::BlocksizeRow;
use model::units::block;

use crate::table::Table;

/// One sweep, as a terminal shows it.
pub fn steps(rows: &[BlocksizeRow]) -> Table {
    let cells = rows
        .iter()
        .map(|r| {
            vec![
                block(r.block_bytes),
                format!("{:.2}", r.tx_mbyte_s),
                format!("{:.2}", r.rx_mbyte_s),
            ]
        })
        .collect();
    Table::plain("block>|Tx MByte/s>|Rx MByte/s>", cells)
}
