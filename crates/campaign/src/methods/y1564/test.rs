//! The method's own decisions on known inputs: its command line, and the figures and
//! verdicts it reads from a profile run's rows (the steps and verdict rules themselves
//! are tested in `method::y1564`).

use std::time::Duration;

use clap::{FromArgMatches, Parser};
use model::results::profile::ProfileReport;
use model::results::RunResult;
use serde_json::json;

use super::run::{performance_of, step_result};
use super::*;

const LIST: &str = r#"
[[service]]
name = "voice"
source = "talker:eth0"
destination = "listener:eth0"
dscp = 46
size = 1518
cir = "20M"
eir = "5M"
yellow_dscp = 10
[service.sac]
flr = "0.1%"
ftd = "10ms"
fdv = "2ms"
"#;

#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    args: Y1564Args,
}

/// `y1564 FILE ARGS` with FILE holding `list`.
fn req(list: &str, line: &str) -> Result<Y1564Request, String> {
    let file = std::env::temp_dir().join(format!(
        "wb-y1564-{}-{:x}.toml",
        std::process::id(),
        line.len() * 31 + list.len()
    ));
    std::fs::write(&file, list).unwrap();
    let path = file.display().to_string();
    let argv = ["y1564", path.as_str()]
        .into_iter()
        .chain(line.split_whitespace());
    let m = <Cli as clap::CommandFactory>::command()
        .try_get_matches_from(argv)
        .map_err(|e| e.to_string());
    let out = m.and_then(|m| {
        let cli = Cli::from_arg_matches(&m).map_err(|e| e.to_string())?;
        request(&cli.args).map_err(|e| e.to_string())
    });
    let _ = std::fs::remove_file(&file);
    out
}

#[test]
fn the_command_line_reads_tests_steps_and_durations() {
    let r = req(LIST, "").unwrap();
    assert!(r.configuration && r.performance);
    assert_eq!(r.percents, [25.0, 50.0, 75.0, 100.0]);
    assert_eq!(r.step_time, Duration::from_secs(60));
    assert_eq!(r.duration, Duration::from_secs(900));
    assert_eq!(r.overshoot, 0.25);
    assert_eq!(
        (r.availability.window, r.availability.flr_threshold),
        (10, 0.5)
    );
    assert_eq!(r.lab, "lab");
    let r = req(
        LIST,
        "--tests performance --duration 2h --steps 100,50 --overshoot 10% --lab s1",
    )
    .unwrap();
    assert!(!r.configuration && r.performance);
    assert_eq!(r.duration, Duration::from_secs(7200));
    assert_eq!(r.percents, [50.0, 100.0]);
    assert_eq!((r.overshoot, r.lab.as_str()), (0.1, "s1"));
    assert!(req(LIST, "--duration 2d")
        .unwrap_err()
        .contains("not a duration"));
    assert!(req(LIST, "--steps 0,50").unwrap_err().contains("% of CIR"));
    let e = req(&LIST.replace("cir = \"20M\"", "cir = \"x\""), "").unwrap_err();
    assert!(e.contains("service 'voice', line 8: cir 'x'"), "{e}");
    // One configuration run of 4 CIR steps, CIR + EIR and policing at 2 s, then 60 s.
    let r = req(LIST, "-t 2 --duration 60").unwrap();
    let est = Y1564.estimate(&Box::new(r)).unwrap();
    assert_eq!(est, Duration::from_millis(6 * 3_500 + 61_500));
}

/// A profile run's result with `rows` (sent, lost, received L2 bit/s, latency min, mean,
/// p99, max in µs) and 1-s interval rows of the first stream (sent, lost, received).
fn profile_result(rows: &[(u64, u64, f64, [f64; 4])], seconds: &[(u64, u64, u64)]) -> RunResult {
    let mut r = RunResult::new("streams", json!({}), String::new(), Default::default());
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .enumerate()
        .map(|(i, (sent, lost, ir, l))| {
            json!({ "name": format!("s{i}"), "source": "a", "destination": "b",
                "protocol": "udp", "frame": "1518", "mean_frame_len": 1518.0,
                "load_percent": 2.0, "target_fps": 1646.0, "sent": sent,
                "received": sent - lost, "lost": lost,
                "loss_ratio": *lost as f64 / *sent as f64, "duplicates": 0, "reordered": 0,
                "received_l2_bps": ir, "active_s": 2.0, "generator_limited": false,
                "latency": { "count": sent - lost, "min_us": l[0], "avg_us": l[1],
                    "p50_us": l[1], "p90_us": l[2], "p99_us": l[2], "p999_us": l[3],
                    "p9999_us": l[3], "max_us": l[3] } })
        })
        .collect();
    let report: ProfileReport = serde_json::from_value(json!({ "line_rate_bps": 100000000u64,
        "rows": rows, "total_sent": 0, "total_received": 0, "total_received_l2_bps": 0.0 }))
    .unwrap();
    r.profile = Some(report);
    for (k, (sent, lost, got)) in seconds.iter().enumerate() {
        let row = json!({ "start_s": k as f64, "end_s": k as f64 + 1.0, "direction": "rx",
            "stream": 1, "sent_packets": sent, "lost_packets": lost,
            "received_packets": got, "loss_attributed": true });
        r.intervals.push(serde_json::from_value(row).unwrap());
    }
    r
}

#[test]
fn a_step_is_judged_on_its_green_frames_and_its_whole_rate() {
    let list = req(LIST, "").unwrap().list;
    let svc = &list.services[0];
    let steps = method::y1564::configuration_steps(&svc.profile, &[100.0], 0.25);
    // 100 % CIR carried whole, 1.2 ms one way, 0.3 ms of variation: PASS.
    let r = profile_result(&[(3292, 0, 20.0e6, [1000.0, 1200.0, 1300.0, 1500.0])], &[]);
    let s = step_result(svc, &steps[0], &r);
    assert!(s.pass, "{s:?}");
    assert_eq!(s.delay.map(|d| d.fdv_us), Some(300.0));
    // Policing: 31.25 Mbit/s offered, the yellow excess dropped, green whole: PASS.
    let r = profile_result(
        &[
            (3292, 0, 20.0e6, [1000.0, 1200.0, 1300.0, 1500.0]),
            (1852, 1029, 5.0e6, [1000.0, 1200.0, 1300.0, 1500.0]),
        ],
        &[],
    );
    let s = step_result(svc, &steps[2], &r);
    assert!(s.pass && s.ir_bps == 25.0e6 && s.lost == 1029, "{s:?}");
    // Green frames lost in the policing step of a colour-aware service: FAIL, in words.
    let r = profile_result(
        &[
            (3292, 330, 18.0e6, [1000.0, 1200.0, 1300.0, 1500.0]),
            (1852, 0, 8.0e6, [1000.0, 1200.0, 1300.0, 1500.0]),
        ],
        &[],
    );
    let s = step_result(svc, &steps[2], &r);
    assert!(!s.pass, "{s:?}");
    assert!(s.missed.iter().any(|m| m.starts_with("FLR")), "{s:?}");
    assert!(s.missed.iter().any(|m| m.contains("not policed")), "{s:?}");
    // No latency (ends without a shared clock): FTD and FDV cannot pass unmeasured.
    let mut r = profile_result(&[(3292, 0, 20.0e6, [0.0; 4])], &[]);
    if let Some(p) = r.profile.as_mut() {
        p.rows[0].latency = None;
    }
    let s = step_result(svc, &steps[0], &r);
    assert!(
        !s.pass && s.missed.iter().any(|m| m.contains("not measured")),
        "{s:?}"
    );
}

#[test]
fn the_performance_test_reads_each_second_for_ir_and_availability() {
    let mut r = req(LIST, "--availability-window 2").unwrap();
    r.duration = Duration::from_secs(4);
    // Four seconds: two whole, then two losing 60 % (severely errored, two in a row).
    let seconds = [
        (1646, 0, 1646),
        (1646, 0, 1646),
        (1646, 988, 658),
        (1646, 988, 658),
    ];
    let run = profile_result(
        &[(6584, 1976, 14.0e6, [1000.0, 1100.0, 1200.0, 1300.0])],
        &seconds,
    );
    let p = performance_of(&r, &run);
    let row = &p.services[0];
    assert_eq!(row.seconds, 4);
    assert_eq!(row.availability_pct, Some(50.0));
    let (lo, hi) = row.ir_range_bps.unwrap();
    assert!(
        (hi - 1646.0 * 1518.0 * 8.0).abs() < 1.0 && lo < hi / 2.0,
        "{lo} {hi}"
    );
    assert!(!row.pass);
    assert!(
        row.missed
            .iter()
            .any(|m| m.starts_with("availability 50.000 %")),
        "{row:?}"
    );
}
