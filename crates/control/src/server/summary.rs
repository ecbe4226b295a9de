//! The line a server writes when a test ends, as `iperf3 -s` prints each test's summary:
//! the client, the protocol and streams, how long, and what this side received and sent
//! (with the datagrams lost, for UDP). Logged at `info` under the target
//! [`TARGET`], which the binary shows by default.
//!
//! What it does not do: print (the binary's log writer does), or know the client's figures
//! beyond what its reports said.

use std::net::SocketAddr;

use model::spec::TestSpec;
use model::units::{bps, iperf3_bytes};

use crate::messages::StreamReport;

/// The log target of the summaries.
pub const TARGET: &str = "wirebench::test";

/// One finished test, from the server's own reports (`ours`).
pub(crate) fn line(client: SocketAddr, spec: &TestSpec, ours: &[StreamReport]) -> String {
    let (mut rx, mut tx, mut secs) = (0u64, 0u64, 0f64);
    let (mut got, mut lost) = (0u64, 0u64);
    let mut udp_rx = false;
    for r in ours {
        match r {
            StreamReport::TcpRx(x) => {
                rx += x.bytes;
                secs = secs.max(x.elapsed.as_secs_f64());
            }
            StreamReport::TcpTx(x) => {
                tx += x.bytes;
                secs = secs.max(x.elapsed.as_secs_f64());
            }
            StreamReport::UdpRx(x) => {
                udp_rx = true;
                rx += x.bytes;
                got += x.counters.received;
                lost += x.counters.lost;
                secs = secs.max(x.active.as_secs_f64());
            }
            StreamReport::UdpTx(x) => {
                tx += x.bytes;
                secs = secs.max(x.elapsed.as_secs_f64());
            }
        }
    }
    let rate = |b: u64| {
        if secs > 0.0 {
            bps(b as f64 * 8.0 / secs)
        } else {
            "-".to_owned()
        }
    };
    let streams = model::units::counted(spec.streams.into(), "stream");
    let mut out = format!(
        "test from {client}: {}, {streams}, {secs:.2} s",
        spec.protocol.as_str().to_uppercase()
    );
    if rx > 0 || udp_rx {
        out.push_str(&format!(": received {} at {}", iperf3_bytes(rx), rate(rx)));
        if udp_rx {
            let all = got + lost;
            let pct = if all > 0 {
                lost as f64 * 100.0 / all as f64
            } else {
                0.0
            };
            out.push_str(&format!(", lost {lost}/{all} ({pct:.3} %)"));
        }
    }
    if tx > 0 {
        let sep = if rx > 0 || udp_rx { ";" } else { ":" };
        out.push_str(&format!("{sep} sent {} at {}", iperf3_bytes(tx), rate(tx)));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::messages::report::{TcpRxReport, UdpRxReport};
    use model::spec::Protocol;
    use model::stats::Counters;

    #[test]
    fn a_summary_says_who_what_how_long_and_how_much() {
        let client: SocketAddr = "198.18.0.1:40000".parse().unwrap();
        let tcp = TestSpec {
            streams: 2,
            ..TestSpec::base(Protocol::Tcp)
        };
        let rx = |id, bytes| {
            StreamReport::TcpRx(TcpRxReport {
                stream_id: id,
                bytes,
                elapsed: Duration::from_secs(2),
                ..TcpRxReport::default()
            })
        };
        assert_eq!(
            line(client, &tcp, &[rx(1, 125_000_000), rx(2, 125_000_000)]),
            "test from 198.18.0.1:40000: TCP, 2 streams, 2.00 s: received 238.42 MBytes at 1.00 Gbit/s"
        );
        let udp = TestSpec::base(Protocol::Udp);
        let got = StreamReport::UdpRx(UdpRxReport {
            stream_id: 1,
            counters: Counters {
                received: 990,
                lost: 10,
                ..Counters::default()
            },
            bytes: 990_000,
            active: Duration::from_secs(1),
            ..UdpRxReport::default()
        });
        assert_eq!(
            line(client, &udp, &[got]),
            "test from 198.18.0.1:40000: UDP, 1 stream, 1.00 s: received 966.80 KBytes at 7.92 Mbit/s, lost 10/1000 (1.000 %)"
        );
    }
}
