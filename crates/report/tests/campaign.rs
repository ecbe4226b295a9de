//! The campaign report from a checked-in results file: the schema test (a document of
//! each schema version loads) and snapshot tests (Markdown, every CSV and every SVG chart
//! are the exact bytes stored under tests/data/snapshots). After an intended change,
//! regenerate with `WIREBENCH_UPDATE_SNAPSHOTS=1 cargo test -p wirebench-report` and
//! review the diff.

use std::path::PathBuf;

fn data(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/data")
        .join(rel)
}

fn fixture() -> model::results::campaign::Campaign {
    let text = std::fs::read_to_string(data("campaign-v1.json")).expect("fixture");
    report::campaign::load(&text).expect("campaign/1 loads")
}

fn snapshot(name: &str, actual: &str) {
    let path = data("snapshots").join(name);
    if std::env::var_os("WIREBENCH_UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (WIREBENCH_UPDATE_SNAPSHOTS=1 writes it)",
            path.display()
        )
    });
    if expected != actual {
        let line = expected
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .map_or("at the end".to_owned(), |l| format!("at line {}", l + 1));
        panic!("{name} differs from its snapshot {line}");
    }
}

/// The CSV tables of the fixture, in report order.
#[rustfmt::skip]
const TABLES: [&str; 11] = ["tests", "throughput", "sweep", "rfc2544_throughput", "latency", "rrul", "loss", "overhead", "frer_paths", "compliance", "interfaces"];

/// The charts of the fixture, in report order.
#[rustfmt::skip]
const CHARTS: [&str; 20] = ["FRER per-path loss", "t1: throughput over time", "t2: throughput over time", "t2: loss over time", "t3: throughput against offered load", "t3: loss against offered load", "t5: frame loss rate", "t5: latency by frame size", "t5: latency by percentile", "t6: throughput over time", "t7: throughput over time", "t7: loss over time", "t9: latency by frame size", "t9: latency by percentile", "t10: FRER overhead", "t11: latency under load", "t11: round trips idle and loaded by percentile", "t12: throughput over time", "t12: latency over time", "t12: loss over time"];

#[test]
fn every_schema_version_loads() {
    let c = fixture();
    assert_eq!(c.schema, "wirebench.campaign/1");
    assert_eq!(c.tests.len(), 12);
    assert!(c.tests.iter().all(|t| t.result.is_some()));
    // Refused: other schemas, other documents, garbage.
    for (text, want) in [
        (
            r#"{"schema":"wirebench.campaign/9"}"#,
            "not one this version reads",
        ),
        (
            r#"{"schema":"wirebench.result/1"}"#,
            "not one this version reads",
        ),
        (r#"{"tests":[]}"#, "no schema"),
        ("{", "not JSON"),
    ] {
        let e = report::campaign::load(text).unwrap_err().to_string();
        assert!(e.contains(want), "{text}: {e}");
    }
    // The same words as ever, and the kind of refusal in the type.
    let e = report::campaign::load(r#"{"schema":"wirebench.campaign/9"}"#).unwrap_err();
    assert!(
        matches!(e, report::campaign::LoadError::OtherSchema(ref s) if s == "wirebench.campaign/9")
    );
    assert_eq!(
        e.to_string(),
        "schema 'wirebench.campaign/9' is not one this version reads (wirebench.campaign/1)"
    );
    let e = report::campaign::load(r#"{"tests":[]}"#).unwrap_err();
    assert_eq!(
        e.to_string(),
        "no schema: not a wirebench campaign (results.json of `wirebench run`)"
    );
    let e = report::campaign::load_any(r#"{"schema":"wirebench.result/1"}"#).unwrap_err();
    assert!(
        matches!(e, report::campaign::LoadError::NotAResult(_)),
        "{e}"
    );
    assert!(e.to_string().starts_with("not a result document: "), "{e}");
}

#[test]
fn markdown_is_stable_and_has_every_section() {
    let md = report::campaign::markdown(&fixture());
    for section in [
        "## Summary of key findings",
        "## Tests and methods",
        "## Throughput",
        "## Zero-loss sweep",
        "## Throughput by frame size (RFC 2544)",
        "## Latency by frame size",
        "## Loss against offered load",
        "## Overhead against a control group (FRER)",
        "## FRER per path",
        "## Standards and threshold compliance",
        "## Test environment",
        "## Test details",
    ] {
        assert!(md.contains(section), "{section} missing");
    }
    assert!(
        md.contains("| plan | loss of UDP 20 kpps (t7) | FAIL |"),
        "a failed threshold shows"
    );
    assert!(md.contains("1 of 8 thresholds FAILED"));
    // A generator-limited result is marked as such, exactly when the results say so.
    let capped = fixture()
        .tests
        .iter()
        .filter_map(|t| t.result.as_ref()?.rfc2544.as_ref())
        .any(|x| x.throughput.iter().any(|r| r.generator_cap_fps.is_some()));
    assert_eq!(md.contains("generator limited at"), capped);
    snapshot("report.md", &md);
}

#[test]
fn csv_tables_are_stable() {
    let tables = report::campaign::csv_tables(&fixture());
    let names: Vec<&str> = tables.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, TABLES);
    for (name, csv) in &tables {
        // Every row has as many fields as the header (quoted commas do not split).
        let width = |line: &str| {
            let mut n = 1;
            let mut quoted = false;
            for ch in line.chars() {
                match ch {
                    '"' => quoted = !quoted,
                    ',' if !quoted => n += 1,
                    _ => {}
                }
            }
            n
        };
        let mut lines = csv.lines();
        let w = width(lines.next().unwrap());
        assert!(lines.all(|l| width(l) == w), "{name}.csv has ragged rows");
        snapshot(&format!("{name}.csv"), csv);
    }
}

#[test]
fn svg_charts_are_stable() {
    let charts = report::campaign::charts(&fixture());
    let titles: Vec<&str> = charts.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(titles, CHARTS);
    for (i, (_, svg)) in charts.iter().enumerate() {
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
        snapshot(&format!("chart-{}.svg", i + 1), svg);
    }
    // The HTML report is one file: no script, nothing fetched.
    let html = report::campaign::html(&fixture());
    assert!(!html.contains("<script"));
    assert!(!html.contains("src=\"http") && !html.contains("href=\"http"));
    assert_eq!(html.matches("<svg").count(), charts.len());
    // Each chart sits right after the table it illustrates (before the next section).
    for (caption, section) in [
        ("t3: throughput against offered load", "sweep"),
        ("t5: frame loss rate", "loss"),
        ("t5: latency by percentile", "latency"),
        ("t10: FRER overhead", "overhead"),
    ] {
        let fig = html
            .find(&format!("<figcaption>{caption}</figcaption>"))
            .unwrap_or_else(|| panic!("{caption}"));
        let start = html.find(&format!("<h2 id=\"{section}\">")).expect(section);
        let next = html[start + 4..]
            .find("<h2")
            .map_or(html.len(), |i| start + 4 + i);
        assert!(
            start < fig && fig < next,
            "{caption} is not beside the {section} table"
        );
    }
}

#[test]
fn compare_puts_two_runs_side_by_side() {
    let a = fixture();
    let mut b = fixture();
    // B received half of A's TCP throughput and saw twice its ping-pong latency.
    let s = b.tests[0]
        .result
        .as_mut()
        .unwrap()
        .summary
        .as_mut()
        .unwrap();
    let tcp = s.received_bps.unwrap();
    s.received_bps = Some(tcp / 2.0);
    let lat = b.tests[3]
        .result
        .as_mut()
        .unwrap()
        .latency
        .as_mut()
        .unwrap();
    lat[0].rtt_us.p50 *= 2.0;
    let rows = report::campaign::compare_rows(&a, &b);
    let row = |test: &str, figure: &str| {
        rows.iter()
            .find(|r| r[0] == test && r[1] == figure)
            .unwrap_or_else(|| panic!("{test} / {figure} missing"))
            .clone()
    };
    let r = row(&a.tests[0].name, "received");
    assert_eq!((r[2].as_str(), r[6].as_str()), ("Mbit/s", "+50.0"), "{r:?}");
    let r = row(&a.tests[3].name, "64 B round trip p50");
    assert_eq!(r[6], "+100.0", "{r:?}");
    // What did not change costs nothing.
    let r = row(&a.tests[2].name, "highest zero-loss rate");
    assert_eq!((r[5].as_str(), r[6].as_str()), ("+0.00", "+0.0"));
    // A single command's -J document compares too.
    let one = serde_json::to_string(a.tests[0].result.as_ref().unwrap()).unwrap();
    let c = report::campaign::load_any(&one).unwrap();
    assert_eq!(c.tests.len(), 1);
    let md = report::campaign::compare_markdown(&c, &c, "a.json", "a.json");
    assert!(md.contains("| client | received | Mbit/s |"), "{md}");
}

mod nic {
    //! A campaign built in code with block-size sweeps (netio and SI units), a NIC matrix
    //! and the interfaces the tests used: its sections, chart, findings and comparison.

    use model::results::campaign::{Campaign, TestEntry, TestStatus, SCHEMA};
    use model::results::nic::{
        Channels, Coalesce, HostActivity, InterfaceState, NicCell, NicMatrix, PcieLink, Rings,
    };
    use model::results::{BlocksizeRow, Environment, RunResult};

    use super::snapshot;

    fn row(block_bytes: usize, tx: f64, rx: f64) -> BlocksizeRow {
        BlocksizeRow {
            block_bytes,
            tx_mbyte_s: tx,
            rx_mbyte_s: rx,
            duration_s: 6.0,
            client_cpu: None,
            server_cpu: None,
        }
    }

    fn env() -> Environment {
        Environment {
            hostname: "bench1".into(),
            kernel: "6.8.0".into(),
            cpus: 8,
            cpu_model: None,
            wirebench_version: "0.1.0".into(),
        }
    }

    fn result(command: &str, params: serde_json::Value) -> RunResult {
        RunResult::new(command, params, "2026-08-20T10:00:00Z".into(), env())
    }

    fn entry(id: &str, name: &str, kind: &str, r: RunResult) -> TestEntry {
        TestEntry {
            id: id.into(),
            name: name.into(),
            kind: kind.into(),
            command: format!("wirebench {kind}"),
            node: "this host".into(),
            status: TestStatus::Done,
            error: None,
            duration_s: 30.0,
            result: Some(r),
            frer_paths: vec![],
        }
    }

    fn ixgbe() -> InterfaceState {
        InterfaceState {
            role: "tx".into(),
            name: "enp3s0f0".into(),
            driver: Some("ixgbe".into()),
            driver_version: Some("5.1.0-k".into()),
            firmware: Some("0x800003df".into()),
            bus_info: Some("0000:03:00.0".into()),
            speed_mbps: Some(10_000),
            duplex: Some("full".into()),
            mtu: Some(1500),
            features: [
                ("rx-checksum".to_owned(), true),
                ("rx-gro".to_owned(), true),
                ("rx-lro".to_owned(), false),
            ]
            .into(),
            fixed_features: vec![],
            coalesce: Some(Coalesce {
                rx_usecs: 1,
                tx_usecs: 0,
                rx_frames: 0,
                tx_frames: 0,
                adaptive_rx: false,
                adaptive_tx: false,
            }),
            rings: Some(Rings {
                rx: 512,
                rx_max: 4096,
                tx: 512,
                tx_max: 4096,
            }),
            channels: Some(Channels {
                combined: 8,
                max_combined: 63,
                ..Default::default()
            }),
            pcie: Some(PcieLink {
                current_gts: 5.0,
                current_width: 4,
                max_gts: 8.0,
                max_width: 8,
            }),
            pcie_note: None,
        }
    }

    fn veth() -> InterfaceState {
        InterfaceState {
            role: "rx".into(),
            name: "veth-b".into(),
            driver: Some("veth".into()),
            mtu: Some(1500),
            pcie_note: Some("not a PCIe device".into()),
            ..Default::default()
        }
    }

    fn side(
        role: &str,
        interface: &str,
        irqs: Option<u64>,
        softirqs: u64,
        cpu: f64,
    ) -> HostActivity {
        HostActivity {
            role: role.into(),
            interface: interface.into(),
            irqs,
            net_rx_softirqs: softirqs,
            cpu_busy_percent: cpu,
            seconds: 12.0,
        }
    }

    /// t1: netio sweep, 4 connections, through an ixgbe port and a veth; t2: a NIC matrix
    /// of three combinations (one refused); t3: an SI sweep.
    fn campaign() -> Campaign {
        let mut netio = result(
            "blocksize",
            serde_json::json!({"units": "netio", "streams": 4}),
        );
        netio.blocksize = Some(vec![row(1024, 438.39, 466.82), row(32767, 1101.2, 1099.0)]);
        netio.interfaces = vec![ixgbe(), veth()];
        netio.activity = vec![side("local", "enp3s0f0", Some(51_234), 250_000, 23.5)];
        let mut matrix = result("nicmatrix", serde_json::json!({}));
        matrix.nic_matrix = Some(NicMatrix {
            interfaces: vec!["tx=veth-a".into(), "rx=veth-b".into()],
            units: "si".into(),
            cells: vec![
                NicCell {
                    label: "mtu 1500".into(),
                    mtu: Some(1500),
                    rows: vec![row(1024, 300.0, 280.0), row(4096, 600.0, 590.0)],
                    activity: vec![side("local", "veth-a", None, 98_765, 41.25)],
                    ..Default::default()
                },
                NicCell {
                    label: "mtu 4000".into(),
                    mtu: Some(4000),
                    rows: vec![row(1024, 350.0, 330.0), row(4096, 800.0, 760.0)],
                    ..Default::default()
                },
                NicCell {
                    label: "mtu 4000, rx-gro off".into(),
                    mtu: Some(4000),
                    features: [("rx-gro".to_owned(), false)].into(),
                    error: Some("the driver refused rx-gro off".into()),
                    ..Default::default()
                },
            ],
            best_mtu: Some(4000),
            best_mtu_basis: None,
        });
        let mut si = result(
            "blocksize",
            serde_json::json!({"units": "si", "streams": 1}),
        );
        si.blocksize = Some(vec![row(1024, 100.0, 95.5), row(32768, 940.0, 935.25)]);
        // The same ixgbe port as t1's; the veth with jumbo frames since.
        let jumbo = InterfaceState {
            mtu: Some(9000),
            ..veth()
        };
        si.interfaces = vec![ixgbe(), jumbo];
        Campaign {
            schema: SCHEMA.into(),
            title: "NIC tuning".into(),
            description: None,
            metadata: Default::default(),
            target: "host 192.0.2.1".into(),
            plan_file: "nic.toml".into(),
            started_at: "2026-08-20T10:00:00Z".into(),
            finished_at: Some("2026-08-20T10:02:00Z".into()),
            environment: env(),
            interfaces: vec![],
            tests: vec![
                entry("t1", "netio sweep", "blocksize", netio),
                entry("t2", "NIC matrix", "nicmatrix", matrix),
                entry("t3", "SI sweep", "blocksize", si),
            ],
            verdicts: vec![],
            stopped: None,
        }
    }

    fn csv(c: &Campaign, name: &str) -> String {
        let tables = report::campaign::csv_tables(c);
        let found = tables.into_iter().find(|(n, _)| n == name);
        found.unwrap_or_else(|| panic!("no {name}.csv")).1
    }

    #[test]
    fn sections_show_sweeps_the_matrix_activity_and_interfaces() {
        // The document round-trips through results.json.
        let text = serde_json::to_string(&campaign()).unwrap();
        let c = report::campaign::load(&text).expect("campaign/1 loads");
        let md = report::campaign::markdown(&c);
        for section in [
            "## Block-size sweep (netio style)",
            "## NIC matrix",
            "## Host activity",
            "## Interfaces",
        ] {
            assert!(md.contains(section), "{section} missing");
        }
        // netio rates in 2^20 bytes/s and 32,767 bytes as 32k; SI as stored.
        let b = csv(&c, "blocksize");
        let lines: Vec<&str> = b.lines().collect();
        assert_eq!(
            lines,
            [
                "source,block,Tx MByte/s,Rx MByte/s,units,streams",
                "t1,1k,418.08,445.19,netio,4",
                "t1,32k,1050.19,1048.09,netio,4",
                "t3,1k,100.00,95.50,si,1",
                "t3,32k,940.00,935.25,si,1",
            ]
        );
        // One column per combination; the refused one shows its error.
        let m = csv(&c, "nic_matrix");
        let lines: Vec<&str> = m.lines().collect();
        assert_eq!(
            lines,
            [
                "source,units,block,mtu 1500,mtu 4000,\"mtu 4000, rx-gro off\"",
                "t2,si,1k,300.00 / 280.00,350.00 / 330.00,-",
                "t2,si,4k,600.00 / 590.00,800.00 / 760.00,-",
                "t2,si,error,,,error: the driver refused rx-gro off",
            ]
        );
        let a = csv(&c, "host_activity");
        assert!(
            a.contains("t2,mtu 1500,local,veth-a,-,98765,41.2,12.0,no IRQ lines of its own (virtual device)\n"),
            "{a}"
        );
        assert!(
            a.contains("t1,whole test,local,enp3s0f0,51234,250000,23.5,12.0,\n"),
            "{a}"
        );
        let i = csv(&c, "interface_state");
        assert!(
            i.contains("\"t1, t3\",tx,enp3s0f0,ixgbe,5.1.0-k,0x800003df,0000:03:00.0,10000 Mbit/s,full,1500,Gen2 x4 of Gen3 x8,"),
            "{i}"
        );
        assert!(
            i.contains(",\"on: rx-checksum, rx-gro; off: rx-lro\"\n"),
            "{i}"
        );
        assert!(
            i.contains("t1,rx,veth-b,veth,-,-,-,-,-,1500,not a PCIe device,-,-,-,\n"),
            "{i}"
        );
        // An interface two tests found the same is one row naming both; one that changed
        // between them has its own row, the change marked.
        assert!(i.contains("\"t1, t3\",tx,enp3s0f0,ixgbe,"), "{i}");
        assert!(
            i.contains("t3,rx,veth-b,veth,-,-,-,-,-,≠ 9000,not a PCIe device,-,-,-,\n"),
            "{i}"
        );
        assert_eq!(i.lines().count(), 4, "{i}");
        // Findings: the sweeps' highest rates, the best MTU with the mean of its sweeps
        // ((350 + 330) / 2 and (800 + 760) / 2: 560), the refused combination, the
        // degraded PCIe link.
        for f in [
            "highest Tx 1050.19 MByte/s at block 32k, highest Rx 1048.09 MByte/s at block 32k (netio units: powers of 2)",
            "highest Tx 940.00 MByte/s at block 32k",
            "best MTU 4000: mean of Tx and Rx 560.00 MByte/s",
            "1 of 3 combinations could not be set (mtu 4000, rx-gro off: the driver refused rx-gro off)",
            "tx enp3s0f0 PCIe link Gen2 x4 of Gen3 x8: trained below what the device can do",
        ] {
            assert!(md.contains(f), "finding {f} missing");
        }
        snapshot("nic-report.md", &md);
    }

    #[test]
    fn the_block_size_chart_has_a_line_per_test_and_direction() {
        let charts = report::campaign::charts(&campaign());
        let titles: Vec<&str> = charts.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(titles, ["block-size sweep"]);
        let svg = &charts[0].1;
        for name in ["t1 Tx", "t1 Rx", "t3 Tx", "t3 Rx"] {
            assert!(svg.contains(&format!(">{name}</text>")), "{name} missing");
        }
        assert_eq!(svg.matches("<polyline").count(), 4);
        // Two block sizes each (netio's 32k of 32,767 bytes shares SI's 32k).
        assert_eq!(svg.matches("<circle").count(), 8);
        assert!(svg.contains(">Gbit/s</text>") && svg.contains(">32k</text>"));
        // 1101.2 MByte/s = 8.81 Gbit/s: the axis goes to 10.
        assert!(svg.contains(">10</text>"), "{svg}");
        snapshot("chart-blocksize.svg", svg);
        let html = report::campaign::html(&campaign());
        assert_eq!(html.matches("<svg").count(), 1);
        assert!(html.contains("<th class=\"r\">mtu 4000, rx-gro off</th>"));
    }

    #[test]
    fn compare_shows_block_sizes_cells_and_interface_differences() {
        let a = campaign();
        let mut b = campaign();
        let r = b.tests[0].result.as_mut().unwrap();
        r.blocksize.as_mut().unwrap()[0].tx_mbyte_s = 219.2;
        let tx = &mut r.interfaces[0];
        tx.driver_version = Some("5.19.6".into());
        tx.mtu = Some(9000);
        tx.features.insert("rx-lro".into(), true);
        r.interfaces.truncate(1);
        let cell = &mut b.tests[1]
            .result
            .as_mut()
            .unwrap()
            .nic_matrix
            .as_mut()
            .unwrap()
            .cells[1];
        cell.rows[1].tx_mbyte_s = 720.0;
        let rows = report::campaign::compare_rows(&a, &b);
        let row = |test: &str, figure: &str| {
            rows.iter()
                .find(|r| r[0] == test && r[1] == figure)
                .unwrap_or_else(|| panic!("{test} / {figure} missing in {rows:?}"))
                .clone()
        };
        let r = row("netio sweep", "1k Tx");
        assert_eq!(
            r[2..],
            [
                "MByte/s",
                "438.39",
                "219.20",
                "-219.19",
                "+50.0",
                "one run: not a finding (measure with --repeat)"
            ]
        );
        // Figures are the stored SI values, whatever the units printed; 32,767 bytes exactly.
        let r = row("netio sweep", "32767 Rx");
        assert_eq!((r[3].as_str(), r[6].as_str()), ("1099.00", "+0.0"));
        let r = row("NIC matrix", "mtu 4000: 4k Tx");
        assert_eq!(r[3..7], ["800.00", "720.00", "-80.00", "+10.0"]);
        row("NIC matrix", "mtu 1500: 1k Rx");
        assert!(
            !rows.iter().any(|r| r[1].contains("rx-gro off")),
            "a refused cell measured nothing"
        );
        let d = report::campaign::interface_differences(&a, &b);
        assert_eq!(
            d,
            [
                "netio sweep / tx: driver version: 5.1.0-k -> 5.19.6",
                "netio sweep / tx: mtu: 1500 -> 9000",
                "netio sweep / tx: feature rx-lro: off -> on",
                "netio sweep / rx: only in A (veth-b)",
            ]
        );
        let md = report::campaign::compare_markdown(&a, &b, "a.json", "b.json");
        assert!(md.contains("## Interfaces that differ"), "{md}");
        assert!(
            md.contains("- netio sweep / tx: mtu: 1500 -> 9000\n"),
            "{md}"
        );
        assert!(report::campaign::interface_differences(&a, &a).is_empty());
        let same = report::campaign::compare_markdown(&a, &a, "a.json", "a.json");
        assert!(!same.contains("Interfaces that differ"));
    }
}

/// A `<text>` of an SVG chart as a box: (left, top, right, bottom, text), its width
/// estimated at 0.6 em per character (sans-serif digits and letters are narrower), rotated
/// labels left out.
fn text_boxes(svg: &str) -> Vec<(f64, f64, f64, f64, String)> {
    let attr = |tag: &str, name: &str| -> Option<String> {
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        Some(tag[at..].split('"').next()?.to_owned())
    };
    let mut out = Vec::new();
    for piece in svg.split("<text").skip(1) {
        let Some((tag, rest)) = piece.split_once('>') else {
            continue;
        };
        let text = rest.split("</text>").next().unwrap_or_default().to_owned();
        if tag.contains("transform=") || text.is_empty() {
            continue;
        }
        let num = |n: &str| attr(tag, n).and_then(|v| v.parse::<f64>().ok());
        let (Some(x), Some(y), Some(size)) = (num("x"), num("y"), num("font-size")) else {
            continue;
        };
        let chars = text
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .chars()
            .count() as f64;
        let w = chars * size * 0.6;
        let left = match attr(tag, "text-anchor").as_deref() {
            Some("middle") => x - w / 2.0,
            Some("end") => x - w,
            _ => x,
        };
        out.push((left, y - size * 0.8, left + w, y + size * 0.2, text));
    }
    out
}

#[test]
fn no_chart_text_overlaps_another_or_leaves_the_picture() {
    let mut charts = report::campaign::charts(&fixture());
    assert!(!charts.is_empty());
    // And charts made to crowd: six long legend names, long category labels.
    let names: Vec<String> = (1..=6)
        .map(|i| format!("stream {i} of the long-named test group"))
        .collect();
    let series: Vec<(String, Vec<(f64, f64)>)> = names
        .iter()
        .map(|n| (n.clone(), vec![(0.0, 1.0), (10.0, 2.0)]))
        .collect();
    charts.push((
        "crowded lines".into(),
        report::svg::lines("t", "x", ("y", report::svg::Scale::Linear), &series),
    ));
    let cats: Vec<String> = (1..=5)
        .map(|i| format!("UDP round-trip latency p99.{i} under load"))
        .collect();
    let bars: Vec<(String, Vec<Option<f64>>)> = names[..2]
        .iter()
        .map(|n| (n.clone(), vec![Some(1.0); 5]))
        .collect();
    charts.push((
        "crowded bars".into(),
        report::svg::bars("t", "y", &cats, &bars),
    ));
    charts.push((
        "crowded panels".into(),
        report::svg::panels(
            "t",
            "x",
            &[
                ("y", report::svg::Scale::Linear, series[..3].to_vec()),
                ("z", report::svg::Scale::Log, series[3..].to_vec()),
            ],
        ),
    ));
    for (caption, svg) in &charts {
        let width: f64 = svg
            .split("viewBox=\"0 0 ")
            .nth(1)
            .and_then(|v| v.split(' ').next())
            .and_then(|w| w.parse().ok())
            .expect("a viewBox");
        let boxes = text_boxes(svg);
        assert!(boxes.len() > 3, "{caption}: {boxes:?}");
        for (i, a) in boxes.iter().enumerate() {
            assert!(
                a.0 >= 0.0 && a.2 <= width,
                "{caption}: '{}' leaves the picture",
                a.4
            );
            for b in &boxes[i + 1..] {
                let apart = a.2 <= b.0 || b.2 <= a.0 || a.3 <= b.1 || b.3 <= a.1;
                assert!(apart, "{caption}: '{}' overlaps '{}'", a.4, b.4);
            }
        }
    }
}
