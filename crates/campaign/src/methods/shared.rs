//! The threshold metrics of the figures that several methods' results share (a summary,
//! latency rows, RFC 2544 rows, block-size rows, ...): `model::results::figures` reads
//! those figures, and [`model::results::figures::Metric::threshold`] names them. A
//! method's figures of its own are defined in its module.

use model::results::figures::Unit;

use super::method::ThresholdMetric;

const fn metric(name: &'static str, unit: Unit) -> ThresholdMetric {
    ThresholdMetric { name, unit }
}

/// A throughput test's received rate, bit/s of payload.
pub const RECEIVED_BPS: ThresholdMetric = metric("received_bps", Unit::BitsPerSec);
/// A throughput test's loss ratio.
pub const LOSS: ThresholdMetric = metric("loss", Unit::Ratio);
/// Latency p50, p99, p99.9 and max, µs: of a throughput test, of a ping-pong's message
/// sizes, of RFC 2544 frame sizes.
pub const LATENCY: [ThresholdMetric; 4] = [
    metric("latency_p50", Unit::Micros),
    metric("latency_p99", Unit::Micros),
    metric("latency_p999", Unit::Micros),
    metric("latency_max", Unit::Micros),
];
/// A sweep's highest zero-loss rate, bit/s.
pub const ZERO_LOSS_BPS: ThresholdMetric = metric("zero_loss_bps", Unit::BitsPerSec);
/// RFC 2544 throughput per frame size, L2 bit/s incl. FCS.
pub const RFC2544_THROUGHPUT_BPS: ThresholdMetric =
    metric("rfc2544_throughput_bps", Unit::BitsPerSec);
/// A profile stream's received rate, L2 bit/s.
pub const STREAM_RECEIVED_BPS: ThresholdMetric = metric("stream_received_bps", Unit::BitsPerSec);
/// What FRER cost in a measurement, % of the control.
pub const FRER_OVERHEAD: ThresholdMetric = metric("frer_overhead", Unit::Percent);
/// A block-size sweep's client-to-server rate per block size, MByte/s.
pub const BLOCK_TX: ThresholdMetric = metric("block_tx_mbyte_s", Unit::MBytePerSec);
/// A block-size sweep's server-to-client rate per block size, MByte/s.
pub const BLOCK_RX: ThresholdMetric = metric("block_rx_mbyte_s", Unit::MBytePerSec);
/// A NIC matrix combination's client-to-server rate per block size, MByte/s.
pub const NIC_TX: ThresholdMetric = metric("nic_tx_mbyte_s", Unit::MBytePerSec);
/// A NIC matrix combination's server-to-client rate per block size, MByte/s.
pub const NIC_RX: ThresholdMetric = metric("nic_rx_mbyte_s", Unit::MBytePerSec);

/// The threshold metric of a method's own figure.
pub const fn named(n: model::results::figures::Named) -> ThresholdMetric {
    metric(n.name, n.unit)
}
