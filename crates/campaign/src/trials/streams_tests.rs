//! The streams runner's steps without ports: the checks of a profile's streams, the frame
//! requests and frames they give, what a server's port is sent, the server streams over a
//! fake server, and how each stream's counts settle.

use std::net::{IpAddr, Ipv4Addr};

use model::spec::Rate;
use model::stop::Stop;

use super::*;
use crate::request::{Agents, FrameBackend};
use crate::trials::fakes::{latency, summary, FakeServer};
use crate::trials::streams_ends::{
    l2_templates, l4_templates, refuse_other_ethertypes, refuse_past_longest,
};
use crate::trials::streams_run::stream_request;
use method::streams::StreamProto;

/// Streams of every kind: raw TCP with a size pattern, a server's UDP stream, raw
/// EtherType frames with a VLAN tag.
const PROFILE: &str = r#"
duration = 2
line_rate = "100M"

[[stream]]
name = "data"
source = "talker:eth0"
destination = "listener:eth0"
protocol = "tcp"
size = [128, 96, 128, 256]
load = "1000pps"
dscp = 10
vlan = 10
pcp = 5
dst_ip = "10.0.0.9"
dst_mac = "02:00:00:00:00:09"
src_port = 1000
dst_port = 2000
start = 0.5
stop = 1.5

[[stream]]
name = "voice"
source = "wirebench://h1:5300"
destination = "listener:eth0"
protocol = "udp"
size = 1518
load = "10M"
dscp = 46
start = 0.5
stop = 1.5

[[stream]]
name = "l2"
source = "talker:eth0"
destination = "h2/eth1"
protocol = "0x88b5"
size = [64, 100]
load = "1%"
vlan = 7
"#;

fn profile() -> Profile {
    Profile::parse(PROFILE).expect("profile")
}

fn run() -> StreamsRun {
    StreamsRun {
        lab: "s2".into(),
        backend: FrameBackend::Ring,
        stop: Stop::new(),
        interval: None,
        agents: Agents::default(),
        listen: Vec::new(),
    }
}

/// The headers of stream `s` from a port with 10.0.0.1.
fn spec_of(s: &StreamSpec, line: LineRate) -> wire::frame::FrameSpec {
    let here = lab::probe::Addresses {
        mac: [2, 0, 0, 0, 0, 1],
        ipv4: Some(Ipv4Addr::new(10, 0, 0, 1)),
        ipv6: None,
    };
    let request = stream_request(s, &run(), line);
    let dst = request
        .dst_ip
        .unwrap_or(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)));
    frames::headers(&request, ("talker:eth0", &here), dst, [2, 0, 0, 0, 0, 2]).expect("headers")
}

fn hdr() -> wire::testhdr::TestHeaderRepr {
    wire::testhdr::TestHeaderRepr::template(7, 1)
}

#[test]
fn a_wirebench_source_names_its_server() {
    assert_eq!(server_of("wirebench://h1:5300"), Some("h1:5300"));
    assert_eq!(server_of("wirebench://"), Some(""));
    assert_eq!(server_of("h1/eth0"), None);
    assert_eq!(server_of("talker:eth0"), None);
}

#[test]
fn a_server_stream_is_udp_of_one_size_to_a_named_host() {
    let p = profile();
    let voice = &p.streams[1];
    assert!(check_server_stream(voice, "h1:5300").is_ok());
    let refused = |s: &StreamSpec, server: &str| match check_server_stream(s, server) {
        Err(Error::Usage(m)) => m,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        refused(voice, ""),
        "stream 'voice': wirebench://HOST[:PORT] needs a host"
    );
    let tcp = StreamSpec {
        protocol: StreamProto::Tcp,
        ..voice.clone()
    };
    assert!(refused(&tcp, "h1").ends_with("is UDP"));
    let two_sizes = StreamSpec {
        pattern: vec![1518, 64],
        ..voice.clone()
    };
    assert!(refused(&two_sizes, "h1").ends_with("has one frame size"));
}

#[test]
fn a_stream_asks_for_its_own_headers() {
    let p = profile();
    let r = stream_request(&p.streams[0], &run(), p.line_rate);
    assert_eq!(r.proto, crate::request::FrameProto::Tcp);
    assert_eq!((r.src_port, r.dst_port), (1000, 2000));
    assert_eq!((r.vlan, r.pcp, r.dscp), (Some(10), 5, 10));
    assert_eq!(r.dst_ip, Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9))));
    assert_eq!(r.dst_mac, Some([2, 0, 0, 0, 0, 9]));
    assert_eq!(r.lab, "s2");
    assert_eq!(r.line_rate, 100e6);
    assert_eq!(r.backend, FrameBackend::Ring);
    let l2 = stream_request(&p.streams[2], &run(), p.line_rate);
    assert_eq!(l2.proto, crate::request::FrameProto::Udp);
}

#[test]
fn a_stream_has_one_frame_per_size_and_its_pattern_points_at_them() {
    let p = profile();
    let s = &p.streams[0];
    let built = l4_templates(s, &spec_of(s, p.line_rate), &hdr()).expect("frames");
    let sizes: Vec<u64> = built.iter().map(|(l, _, _)| *l).collect();
    assert_eq!(sizes, [96, 128, 256]);
    for (len, frame, _) in &built {
        assert_eq!(frame.len() as u64, len - 4, "without the FCS");
    }
    let tx = stream_tx(s, 1, built, p.line_rate, 0);
    assert_eq!(tx.pattern, [1, 0, 1, 2]);
    assert_eq!(tx.pps, 1000.0);
    assert_eq!(
        (tx.start, tx.stop),
        (Duration::from_millis(500), Duration::from_millis(1500))
    );
}

#[test]
fn a_frame_too_small_for_the_headers_names_its_stream() {
    let p = profile();
    let s = StreamSpec {
        pattern: vec![128, 40],
        ..p.streams[0].clone()
    };
    let e = l4_templates(&s, &spec_of(&s, p.line_rate), &hdr()).err();
    assert!(
        matches!(&e, Some(Error::Usage(m)) if m.starts_with("stream 'data': 40-byte frame: ")),
        "{e:?}"
    );
}

#[test]
fn ethertype_frames_carry_the_test_header_after_the_tag() {
    let p = profile();
    let s = &p.streams[2];
    let StreamProto::EtherType(t) = s.protocol else {
        panic!("{:?}", s.protocol);
    };
    let built =
        l2_templates(s, t, ([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]), &hdr()).expect("frames");
    assert_eq!(built.len(), 2);
    for (len, frame, patch) in &built {
        assert_eq!(frame.len() as u64, len - 4);
        assert!(matches!(patch, engine::multi::Patch::L2(18)), "{patch:?}");
        assert_eq!(frame[12..14], [0x81, 0x00]);
        assert_eq!(frame[16..18], [0x88, 0xb5]);
    }
}

#[test]
fn a_servers_port_is_sent_its_streams_smallest_frame_sizes_and_schedule() {
    let p = profile();
    let s = &p.streams[0];
    let built = l4_templates(s, &spec_of(s, p.line_rate), &hdr()).expect("frames");
    let smallest = control::auth::to_hex(&built[0].1);
    let tx = stream_tx(s, 3, built, p.line_rate, 0);
    let wire = wire_streams(&[tx]);
    assert_eq!(wire.len(), 1);
    let w = &wire[0];
    assert_eq!(w.stream_id, 3);
    assert_eq!(w.frame, smallest);
    assert_eq!(w.sizes, [96, 128, 256]);
    assert_eq!(w.pattern, [1, 0, 1, 2]);
    assert_eq!(w.pps, 1000.0);
    assert_eq!((w.start_s, w.stop_s), (0.5, 1.5));
}

#[test]
fn a_request_too_large_for_one_message_is_refused() {
    let most = control::frame::MAX_MESSAGE - 4096;
    assert!(check_request_size("h1/eth0", most).is_ok());
    let e = check_request_size("h1/eth0", most + 1).err();
    assert!(
        matches!(&e, Some(Error::Usage(m)) if m.starts_with("the streams from h1/eth0 make a request of ")),
        "{e:?}"
    );
}

#[test]
fn streams_past_a_servers_longest_test_are_refused() {
    let p = profile();
    let mine: Vec<&StreamSpec> = p.streams.iter().take(2).collect();
    assert!(refuse_past_longest(("h2/eth1", 2.0), &mine).is_ok());
    let e = refuse_past_longest(("h2/eth1", 1.0), &mine).err();
    assert_eq!(
        e.map(|e| e.to_string()).as_deref(),
        Some("h2/eth1: its streams run until 1.5 s; this server's longest test is 1 s")
    );
}

#[test]
fn the_streams_to_a_destination_and_those_without_latency_are_named() {
    let p = profile();
    assert_eq!(ids_to(&p, "listener:eth0"), [1, 2]);
    assert_eq!(ids_to(&p, "h2/eth1"), [3]);
    assert_eq!(latency_note(&p, &[]), None);
    let note = latency_note(&p, &[1, 3]).unwrap_or_default();
    assert!(
        note.starts_with("no one-way latency for data, l2: "),
        "{note}"
    );
}

#[test]
fn a_server_stream_is_a_udp_test_at_its_frame_rate_for_its_time() {
    let p = profile();
    let voice = &p.streams[1];
    let mut server = FakeServer::answering(vec![Ok(summary(800, 790))]);
    let d = run_server_stream(voice, p.line_rate, &mut server).expect("stream");
    let spec = &server.asked[0];
    assert_eq!(spec.protocol, Protocol::Udp);
    assert_eq!(spec.len, 1518 - 46);
    assert_eq!(spec.rate, Rate::PacketsPerSec(10e6 / (8.0 * 1518.0)));
    assert_eq!(spec.duration, Duration::from_secs(1));
    assert_eq!(spec.dscp, Some(46));
    assert_eq!((d.counters.sent, d.counters.lost), (800, 10));
    // Frames on an Ethernet without their FCS.
    assert_eq!(d.received_bytes, 790 * 1514);
    assert!(d.latency.is_some());
}

#[test]
fn a_server_streams_failure_names_the_stream() {
    let p = profile();
    let voice = StreamSpec {
        dscp: 0,
        ..p.streams[1].clone()
    };
    let mut server = FakeServer::answering(vec![Err(Error::Failed("refused".into()))]);
    let e = run_server_stream(&voice, p.line_rate, &mut server).err();
    assert_eq!(
        e.map(|e| e.to_string()).as_deref(),
        Some("stream 'voice': refused")
    );
    assert_eq!(server.asked[0].dscp, None, "DSCP 0 is no DSCP");
}

#[test]
fn a_servers_address_has_its_port_or_the_default() {
    assert_eq!(server_address("h1"), ("h1".into(), control::DEFAULT_PORT));
    assert_eq!(server_address("h1:5300"), ("h1".into(), 5300));
    assert_eq!(
        server_address("h1:http"),
        ("h1:http".into(), control::DEFAULT_PORT)
    );
}

#[test]
fn a_stop_ends_the_wait_for_a_start_offset() {
    let stop = Stop::raised();
    assert!(matches!(
        wait_for_start(3600.0, &stop),
        Err(Error::Interrupted)
    ));
    assert!(wait_for_start(0.0, &Stop::new()).is_ok());
}

#[test]
fn a_streams_counts_settle_against_what_was_sent() {
    let sent = StreamSent {
        stream_id: 1,
        sent: 100,
        active: Duration::from_secs(1),
        generator_limited: true,
        ..StreamSent::default()
    };
    let h = latency(90);
    let arrived = || Arrived {
        counters: Counters {
            received: 90,
            duplicates: 2,
            ..Counters::default()
        },
        bytes: 90 * 124,
        span: Some((UnixNanos(1_000_000), UnixNanos(5_000_000))),
        latency: &h,
    };
    let d = stream_data(&sent, Some(arrived()), true);
    assert_eq!(
        (d.counters.sent, d.counters.received, d.counters.lost),
        (100, 90, 10)
    );
    assert_eq!(d.counters.duplicates, 2);
    assert_eq!(d.received_bytes, 90 * 124);
    assert_eq!(d.duration, Duration::from_secs(1));
    assert_eq!(d.rx_span, Some(Duration::from_millis(4)));
    assert!(d.generator_limited);
    assert!(d.latency.is_some());
    // Ends without a shared clock: no latency.
    assert!(stream_data(&sent, Some(arrived()), false).latency.is_none());
    // Nothing arrived: everything sent was lost, and there is no latency to report.
    let none = stream_data(&sent, None, true);
    assert_eq!((none.counters.received, none.counters.lost), (0, 100));
    assert!(none.latency.is_none() && none.rx_span.is_none());
    let empty = LatencyHistogram::new();
    let unstamped = Arrived {
        latency: &empty,
        ..arrived()
    };
    assert!(stream_data(&sent, Some(unstamped), true).latency.is_none());
}

/// A stray (a stream's frame at a listening port not its destination) has a one-way
/// latency where its source and that port share a clock: both here, or hosts whose boot
/// ids are known and equal (this host's too, when the other end is here).
#[test]
fn a_strays_latency_needs_one_clock() {
    let here = Some("boot-a".to_owned());
    let at = |id: Option<&str>| Some(id.map(str::to_owned));
    assert!(one_clock(None, None, &None), "two ports here: one clock");
    assert!(one_clock(None, at(Some("boot-a")), &here));
    assert!(one_clock(at(Some("boot-a")), None, &here));
    assert!(one_clock(at(Some("boot-b")), at(Some("boot-b")), &here));
    assert!(!one_clock(at(Some("boot-b")), None, &here));
    assert!(
        !one_clock(None, at(Some("boot-a")), &None),
        "this host's id unknown"
    );
    assert!(
        !one_clock(at(None), at(None), &here),
        "ids unknown are not equal"
    );
}

/// Raw EtherType streams of another EtherType than the test one are refused before
/// anything runs when an end is a server's port (its server would refuse them once the
/// streams here have started).
#[test]
fn a_servers_port_takes_raw_frames_of_the_test_ethertype_only() {
    let p = Profile::parse(PROFILE).unwrap();
    let l2 = &p.streams[2];
    assert!(refuse_other_ethertypes(&[l2]).is_ok());
    let ptp = StreamSpec {
        protocol: StreamProto::EtherType(0x88f7),
        ..l2.clone()
    };
    let e = refuse_other_ethertypes(&[l2, &ptp])
        .unwrap_err()
        .to_string();
    assert!(e.contains("stream 'l2'") && e.contains("not 0x88F7"), "{e}");
}
