//! The JSON of every message kind that carries a stream's or a raw port's figures, pinned:
//! each message is built from a fixed value and must encode to the string here, and the
//! string must decode to the same message. A change of these strings is a change of the
//! protocol and goes with a new [`crate::VERSION`].
//!
//! Version 8 changed the types these messages are built of (the protocol's own instead of
//! the engine's), not their JSON: the strings are those of version 7. Version 10 added a
//! reception's `strays`.

use std::time::Duration;

use model::clock::UnixNanos;
use model::stats::buckets::BucketCounts;
use model::stats::histogram::{LatencyHistogram, LatencySummary};
use model::stats::slots::TxSlots;
use model::stats::Counters;

use super::raw::{RawReceivedStream, RawReception, RawReflected, RawSendLoad, RawSending};
use super::report::TcpState;
use super::*;

fn summary() -> LatencySummary {
    LatencySummary {
        count: 3,
        min_us: 1.5,
        avg_us: 2.0,
        p50_us: 2.0,
        p90_us: 2.5,
        p99_us: 2.5,
        p999_us: 2.5,
        p9999_us: 2.5,
        max_us: 2.5,
    }
}

fn histogram() -> LatencyHistogram {
    let mut h = LatencyHistogram::new();
    h.record_ns(1_500);
    h.record_n_ns(2_500, 2);
    h
}

fn slots() -> TxSlots {
    TxSlots {
        width_ns: 1_000_000,
        first: 7,
        counts: vec![3, 4],
        beyond: 1,
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn reports() -> Vec<StreamReport> {
    vec![
        StreamReport::UdpTx(UdpTxReport {
            stream_id: 1,
            packets: 10,
            bytes: 12_000,
            elapsed: ms(1_000),
            target_pps: Some(10.0),
            behind_ratio: 0.25,
            generator_limited: false,
            pacing_error: Some(summary()),
            rtt: None,
            rtt_histogram: Some(histogram()),
            kernel_timestamps: true,
            cpu_time: ms(12),
            backend: "udp-gso".into(),
            send_errors: 2,
            slots: slots(),
            first_tx: Some(UnixNanos(1_700_000_000_000_000_000)),
        }),
        StreamReport::UdpRx(UdpRxReport {
            stream_id: 2,
            counters: Counters {
                sent: 0,
                received: 9,
                lost: 1,
                duplicates: 2,
                reordered: 3,
                late: 4,
            },
            bytes: 10_800,
            jitter_us: 12.5,
            latency: Some(summary()),
            latency_histogram: Some(histogram()),
            clock_skew_samples: 5,
            gaps: None,
            active: ms(990),
            foreign: 6,
            echoed: 7,
            kernel_timestamps: false,
            mode: "blocking".into(),
            cpu_time: ms(8),
            wall_time: ms(1_100),
            slots: slots(),
            // Only an AF_XDP receiver's report carries it; absent, the JSON is version 7's.
            af_xdp_frames: None,
        }),
        StreamReport::TcpTx(TcpTxReport {
            stream_id: 3,
            bytes: 1 << 20,
            elapsed: ms(2_000),
            retransmits: Some(4),
            rtt_us: Some(250),
            behind_ratio: 0.0,
            generator_limited: false,
            cpu_time: ms(30),
            sendfile: true,
            omitted_bytes: 100,
            // Absent, the JSON is version 7's.
            tcp_bytes: None,
        }),
        StreamReport::TcpRx(TcpRxReport {
            stream_id: 4,
            bytes: 1 << 19,
            first_read_bytes: 1448,
            elapsed: ms(1_999),
            cpu_time: ms(20),
            omitted_bytes: 50,
        }),
    ]
}

fn live() -> Vec<(u8, LiveCounts)> {
    let tcp = TcpState {
        cwnd_bytes: 14_480,
        snd_wnd: 65_535,
        rtt_us: 120,
        rttvar_us: 30,
        pmtu: 1500,
    };
    vec![
        (
            1,
            LiveCounts {
                packets: 5,
                bytes: 6_000,
                lost: 1,
                duplicates: 2,
                reordered: 3,
                jitter_ns: 1_234,
                retransmits: 0,
                tcp: TcpState::default(),
                latency: BucketCounts(vec![(3, 2), (9, 1)]),
            },
        ),
        (
            2,
            LiveCounts {
                packets: 7,
                bytes: 70_000,
                jitter_ns: 0,
                retransmits: 2,
                tcp,
                ..LiveCounts::default()
            },
        ),
    ]
}

/// A message of either side.
#[derive(Debug, PartialEq)]
enum Msg {
    Client(ClientMsg),
    Server(ServerMsg),
}

impl Msg {
    fn json(&self) -> String {
        match self {
            Msg::Client(m) => serde_json::to_string(m),
            Msg::Server(m) => serde_json::to_string(m),
        }
        .unwrap()
    }

    /// `json` decoded as a message of the same side.
    fn decode_like(&self, json: &str) -> Option<Msg> {
        match self {
            Msg::Client(_) => serde_json::from_str(json).ok().map(Msg::Client),
            Msg::Server(_) => serde_json::from_str(json).ok().map(Msg::Server),
        }
    }
}

/// Each pinned kind with its message built from fixed values.
fn messages() -> Vec<(&'static str, Msg)> {
    let rate = RawSendLoad::Rate {
        pps: 1000.0,
        duration: ms(1_500),
        count: Some(1_200),
    };
    let burst = RawSendLoad::Burst {
        frames: 64,
        target_pps: 14_880_952.0,
    };
    let send = |load| ClientMsg::RawSend {
        frame: "00aa".into(),
        frame_len: 64,
        test_id: 7,
        stream_id: 1,
        load,
    };
    vec![
        (
            "finish",
            Msg::Client(ClientMsg::Finish {
                reports: reports(),
                early: true,
                intervals: Some(3),
            }),
        ),
        (
            "results",
            Msg::Server(ServerMsg::Results {
                reports: reports(),
                host: Some(ServerHost {
                    cpu: model::results::CpuUse::default(),
                    congestion: Some("cubic".into()),
                }),
            }),
        ),
        (
            "interval",
            Msg::Server(ServerMsg::Interval {
                index: 2,
                streams: live(),
            }),
        ),
        ("raw_send rate", Msg::Client(send(rate))),
        ("raw_send burst", Msg::Client(send(burst))),
        (
            "raw_sent",
            Msg::Server(ServerMsg::RawSent {
                sent: RawSending {
                    sent: 1_000,
                    elapsed: ms(999),
                    offered_pps: 1_001.0,
                    generator_limited: true,
                    behind_ratio: 0.5,
                    pacing_error: Some(summary()),
                    send_errors: 3,
                    tx_cpu: ms(40),
                    t0_wall: UnixNanos(1_700_000_000_000_000_001),
                },
            }),
        ),
        (
            "raw_received",
            Msg::Server(ServerMsg::RawReceived {
                reception: RawReception {
                    streams: vec![RawReceivedStream {
                        id: 1,
                        counters: Counters {
                            received: 990,
                            duplicates: 1,
                            ..Counters::default()
                        },
                        bytes: 59_400,
                        latency: histogram(),
                        unstamped: 2,
                        span: Some((UnixNanos(10), UnixNanos(20))),
                    }],
                    strays: vec![RawReceivedStream {
                        id: 2,
                        counters: Counters {
                            received: 3,
                            ..Counters::default()
                        },
                        bytes: 180,
                        latency: LatencyHistogram::new(),
                        unstamped: 0,
                        span: None,
                    }],
                    foreign: 4,
                    drops: 5,
                },
            }),
        ),
        (
            "raw_reflected",
            Msg::Server(ServerMsg::RawReflected {
                reflected: RawReflected {
                    reflected: 100,
                    not_sent: 1,
                    foreign: 2,
                    rx_drops: 3,
                    send_errors: 4,
                },
            }),
        ),
    ]
}

/// The pinned JSON, by kind.
const GOLDEN: &[(&str, &str)] = &[
    (
        "finish",
        r#"{"type":"finish","reports":[{"kind":"udp_tx","stream_id":1,"packets":10,"bytes":12000,"elapsed":{"secs":1,"nanos":0},"target_pps":10.0,"behind_ratio":0.25,"generator_limited":false,"pacing_error":{"count":3,"min_us":1.5,"avg_us":2.0,"p50_us":2.0,"p90_us":2.5,"p99_us":2.5,"p999_us":2.5,"p9999_us":2.5,"max_us":2.5},"rtt":null,"rtt_histogram":"HISTFAAAACd4nJNpmSzMwMDAxgABzFCaEYjFPcpeMNh/gAhsF2fq5GEBAG12BaY=","kernel_timestamps":true,"cpu_time":{"secs":0,"nanos":12000000},"backend":"udp-gso","send_errors":2,"slots":{"width_ns":1000000,"first":7,"counts":[3,4],"beyond":1},"first_tx":1700000000000000000},{"kind":"udp_rx","stream_id":2,"packets":9,"lost_so_far":1,"duplicates":2,"reordered":3,"late":4,"bytes":10800,"jitter_us":12.5,"latency":{"count":3,"min_us":1.5,"avg_us":2.0,"p50_us":2.0,"p90_us":2.5,"p99_us":2.5,"p999_us":2.5,"p9999_us":2.5,"max_us":2.5},"latency_histogram":"HISTFAAAACd4nJNpmSzMwMDAxgABzFCaEYjFPcpeMNh/gAhsF2fq5GEBAG12BaY=","clock_skew_samples":5,"gaps":null,"active":{"secs":0,"nanos":990000000},"foreign":6,"echoed":7,"kernel_timestamps":false,"mode":"blocking","cpu_time":{"secs":0,"nanos":8000000},"wall_time":{"secs":1,"nanos":100000000},"slots":{"width_ns":1000000,"first":7,"counts":[3,4],"beyond":1}},{"kind":"tcp_tx","stream_id":3,"bytes":1048576,"elapsed":{"secs":2,"nanos":0},"retransmits":4,"rtt_us":250,"behind_ratio":0.0,"generator_limited":false,"cpu_time":{"secs":0,"nanos":30000000},"sendfile":true,"omitted_bytes":100},{"kind":"tcp_rx","stream_id":4,"bytes":524288,"first_read_bytes":1448,"elapsed":{"secs":1,"nanos":999000000},"cpu_time":{"secs":0,"nanos":20000000},"omitted_bytes":50}],"early":true,"intervals":3}"#,
    ),
    (
        "results",
        r#"{"type":"results","reports":[{"kind":"udp_tx","stream_id":1,"packets":10,"bytes":12000,"elapsed":{"secs":1,"nanos":0},"target_pps":10.0,"behind_ratio":0.25,"generator_limited":false,"pacing_error":{"count":3,"min_us":1.5,"avg_us":2.0,"p50_us":2.0,"p90_us":2.5,"p99_us":2.5,"p999_us":2.5,"p9999_us":2.5,"max_us":2.5},"rtt":null,"rtt_histogram":"HISTFAAAACd4nJNpmSzMwMDAxgABzFCaEYjFPcpeMNh/gAhsF2fq5GEBAG12BaY=","kernel_timestamps":true,"cpu_time":{"secs":0,"nanos":12000000},"backend":"udp-gso","send_errors":2,"slots":{"width_ns":1000000,"first":7,"counts":[3,4],"beyond":1},"first_tx":1700000000000000000},{"kind":"udp_rx","stream_id":2,"packets":9,"lost_so_far":1,"duplicates":2,"reordered":3,"late":4,"bytes":10800,"jitter_us":12.5,"latency":{"count":3,"min_us":1.5,"avg_us":2.0,"p50_us":2.0,"p90_us":2.5,"p99_us":2.5,"p999_us":2.5,"p9999_us":2.5,"max_us":2.5},"latency_histogram":"HISTFAAAACd4nJNpmSzMwMDAxgABzFCaEYjFPcpeMNh/gAhsF2fq5GEBAG12BaY=","clock_skew_samples":5,"gaps":null,"active":{"secs":0,"nanos":990000000},"foreign":6,"echoed":7,"kernel_timestamps":false,"mode":"blocking","cpu_time":{"secs":0,"nanos":8000000},"wall_time":{"secs":1,"nanos":100000000},"slots":{"width_ns":1000000,"first":7,"counts":[3,4],"beyond":1}},{"kind":"tcp_tx","stream_id":3,"bytes":1048576,"elapsed":{"secs":2,"nanos":0},"retransmits":4,"rtt_us":250,"behind_ratio":0.0,"generator_limited":false,"cpu_time":{"secs":0,"nanos":30000000},"sendfile":true,"omitted_bytes":100},{"kind":"tcp_rx","stream_id":4,"bytes":524288,"first_read_bytes":1448,"elapsed":{"secs":1,"nanos":999000000},"cpu_time":{"secs":0,"nanos":20000000},"omitted_bytes":50}],"host":{"cpu":{"total":0.0,"user":0.0,"system":0.0},"congestion":"cubic"}}"#,
    ),
    (
        "interval",
        r#"{"type":"interval","index":2,"streams":[[1,{"packets":5,"bytes":6000,"lost":1,"duplicates":2,"reordered":3,"jitter_ns":1234,"retransmits":0,"latency":[[3,2],[9,1]]}],[2,{"packets":7,"bytes":70000,"lost":0,"duplicates":0,"reordered":0,"jitter_ns":0,"retransmits":2,"tcp":{"cwnd_bytes":14480,"snd_wnd":65535,"rtt_us":120,"rttvar_us":30,"pmtu":1500}}]]}"#,
    ),
    (
        "raw_send rate",
        r#"{"type":"raw_send","frame":"00aa","frame_len":64,"test_id":7,"stream_id":1,"load":{"rate":{"pps":1000.0,"duration":{"secs":1,"nanos":500000000},"count":1200}}}"#,
    ),
    (
        "raw_send burst",
        r#"{"type":"raw_send","frame":"00aa","frame_len":64,"test_id":7,"stream_id":1,"load":{"burst":{"frames":64,"target_pps":14880952.0}}}"#,
    ),
    (
        "raw_sent",
        r#"{"type":"raw_sent","sent":{"sent":1000,"elapsed":{"secs":0,"nanos":999000000},"offered_pps":1001.0,"generator_limited":true,"behind_ratio":0.5,"pacing_error":{"count":3,"min_us":1.5,"avg_us":2.0,"p50_us":2.0,"p90_us":2.5,"p99_us":2.5,"p999_us":2.5,"p9999_us":2.5,"max_us":2.5},"send_errors":3,"tx_cpu":{"secs":0,"nanos":40000000},"t0_wall":1700000000000000001}}"#,
    ),
    (
        "raw_received",
        r#"{"type":"raw_received","reception":{"streams":[{"id":1,"counters":{"packets":990,"lost_so_far":0,"duplicates":1,"reordered":0,"late":0},"bytes":59400,"latency":"HISTFAAAACd4nJNpmSzMwMDAxgABzFCaEYjFPcpeMNh/gAhsF2fq5GEBAG12BaY=","unstamped":2,"span":[10,20]}],"strays":[{"id":2,"counters":{"packets":3,"lost_so_far":0,"duplicates":0,"reordered":0,"late":0},"bytes":180,"latency":"HISTFAAAACB4nJNpmSzMwMDAyAABzFAaxBf3KHvBYP8BKgIAUR8EOA==","unstamped":0,"span":null}],"foreign":4,"drops":5}}"#,
    ),
    (
        "raw_reflected",
        r#"{"type":"raw_reflected","reflected":{"reflected":100,"not_sent":1,"foreign":2,"rx_drops":3,"send_errors":4}}"#,
    ),
];

/// Each message encodes to its golden string, and the string decodes to the message.
#[test]
fn messages_with_figures_keep_their_json() {
    let messages = messages();
    assert_eq!(messages.len(), GOLDEN.len());
    for ((kind, msg), (golden_kind, golden)) in messages.iter().zip(GOLDEN) {
        assert_eq!(kind, golden_kind);
        assert_eq!(&msg.json(), golden, "the JSON of {kind} changed");
        assert_eq!(
            msg.decode_like(golden).as_ref(),
            Some(msg),
            "{kind} decodes to another message"
        );
    }
}
