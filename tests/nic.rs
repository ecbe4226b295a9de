//! The NIC review: the matrix of block-size sweeps per MTU and feature on a `direct` lab
//! (settings restored afterwards, also on Ctrl-C), jumbo frames end to end, oversize
//! frames refused, the block-size sweep's connections and netio units, and the interface
//! state recorded with a result.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::lab::LabGuard;
use crate::util::{assert_fails, bin, run, run_json, run_within, ServerProc};

/// MTU and every feature of `node:eth0` of `lab`, read through the kernel.
fn settings(lab: &str, node: &str) -> (Option<u32>, BTreeMap<String, bool>) {
    let ns = format!("wb-{lab}-{node}");
    let s = engine::frameio::in_netns(Some(&ns), || engine::nic::state(node, "eth0"))
        .unwrap()
        .unwrap();
    (s.mtu, s.features)
}

fn matrix_args<'a>(lab: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "nicmatrix",
        "--lab",
        lab,
        "--end",
        "talker:eth0,listener:eth0",
    ];
    a.extend(extra);
    a
}

fn the_matrix_runs_every_combination_and_puts_every_setting_back() {
    let lab = LabGuard::up("direct", "nm");
    let before = [settings(&lab.0, "talker"), settings(&lab.0, "listener")];
    let args = matrix_args(
        &lab.0,
        &[
            "--mtu",
            "1500,9000",
            "--offload",
            "rx-checksum=on,off",
            "--sizes",
            "1k,32k",
            "-t",
            "0.5",
            "-J",
        ],
    );
    let v = run_json(&args);
    let m = &v["nic_matrix"];
    let cells = m["cells"].as_array().unwrap();
    let labels: Vec<&str> = cells.iter().map(|c| c["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        [
            "mtu 1500, rx-checksum on",
            "mtu 1500, rx-checksum off",
            "mtu 9000, rx-checksum on",
            "mtu 9000, rx-checksum off"
        ]
    );
    for c in cells {
        assert!(c["error"].is_null(), "{c}");
        let rows = c["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 2, "{c}");
        for r in rows {
            for k in ["tx_mbyte_s", "rx_mbyte_s"] {
                // A veth pair on this machine carries 100-5000 MByte/s of TCP.
                let x = r[k].as_f64().unwrap();
                assert!((1.0..100_000.0).contains(&x), "{k} {x} in {c}");
            }
        }
        // Per side: softirqs counted (the sweep's packets are received as NET_RX), no IRQ
        // lines on a virtual device, CPU a share.
        let act = c["activity"].as_array().unwrap();
        assert_eq!(act.len(), 2, "{c}");
        for a in act {
            assert!(a["net_rx_softirqs"].as_u64().unwrap() > 0, "{a}");
            assert!(a["irqs"].is_null(), "veth has no IRQ lines: {a}");
            let cpu = a["cpu_busy_percent"].as_f64().unwrap();
            assert!((0.0..=100.0).contains(&cpu), "{a}");
        }
    }
    assert!(m["best_mtu"].as_u64().is_some(), "{m}");
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("not a NIC"),
        "veth ends are named as such: {notes}"
    );
    // The interfaces as they were, with what explains a result.
    let ifaces = v["interfaces"].as_array().unwrap();
    assert_eq!(ifaces.len(), 2);
    for i in ifaces {
        assert_eq!(i["driver"], "veth", "{i}");
        assert_eq!(i["mtu"], 1500, "{i}");
        assert_eq!(i["pcie_note"], "not a PCIe device", "{i}");
        assert_eq!(i["features"]["rx-checksum"], true, "{i}");
    }
    // Every setting is back: the last combination was MTU 9000 with rx-checksum off.
    let after = [settings(&lab.0, "talker"), settings(&lab.0, "listener")];
    assert_eq!(before, after);
    assert_eq!(after[0].0, Some(1500));
}

fn a_stop_in_the_middle_of_the_matrix_puts_every_setting_back() {
    let lab = LabGuard::up("direct", "ns");
    let before = [settings(&lab.0, "talker"), settings(&lab.0, "listener")];
    let args = matrix_args(
        &lab.0,
        &[
            "--mtu",
            "9000,4000",
            "--offload",
            "rx-checksum=off,on",
            "--sizes",
            "1k,2k,4k,8k",
            "-t",
            "1",
        ],
    );
    let mut child = Command::new(bin())
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the first combination is set (MTU 9000, rx-checksum off), then stop.
    listener_at_mtu_9000(&lab);
    std::thread::sleep(Duration::from_millis(1500));
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let t1 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t1.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("nicmatrix did not stop after Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    let after = [settings(&lab.0, "talker"), settings(&lab.0, "listener")];
    assert_eq!(before, after, "{err}");
}

fn jumbo_frames_cross_a_lab_built_with_mtu_9000_and_oversize_frames_are_refused() {
    let lab = LabGuard::up_with("direct", "nj", &["--mtu", "9000"]);
    let v = run_json(&[
        "gen",
        "talker:eth0",
        "--rx",
        "listener:eth0",
        "--lab",
        &lab.0,
        "-s",
        "9018",
        "-r",
        "1000pps",
        "-n",
        "200",
        "-J",
    ]);
    let g = &v["gen"];
    assert_eq!(g["sent"], 200, "{g}");
    assert_eq!(g["received"], 200, "every jumbo frame arrives: {g}");
    // On a lab at the default MTU, one byte more than 1500 carries is refused, naming both
    // sizes and the fix; the same for rfc2544.
    let plain = LabGuard::up("direct", "np");
    let out = run(&[
        "gen",
        "talker:eth0",
        "--lab",
        &plain.0,
        "-s",
        "1519",
        "-n",
        "10",
    ]);
    assert_fails(&out, 2, "needs an MTU of 1501");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("which has 1500") && err.contains("--mtu"),
        "{err}"
    );
    let out = run(&[
        "rfc2544",
        "--tx",
        "talker:eth0",
        "--rx",
        "listener:eth0",
        "--lab",
        &plain.0,
        "--sizes",
        "1518,9018",
        "--tests",
        "throughput",
    ]);
    assert_fails(&out, 2, "needs an MTU of 9000");
}

fn blocksize_takes_connections_and_writes_netio_units() {
    let server = ServerProc::start(&[]);
    let port = server.port_arg();
    let v = run_json(&[
        "blocksize",
        "127.0.0.1",
        "-p",
        &port,
        "--sizes",
        "1k,32k",
        "-t",
        "0.3",
        "-P",
        "3",
        "--units",
        "netio",
        "-J",
    ]);
    assert_eq!(v["params"]["streams"], 3, "{}", v["params"]);
    assert_eq!(v["params"]["units"], "netio");
    let rows = v["blocksize"].as_array().unwrap();
    // netio sends 32,767 bytes for "32k".
    let sizes: Vec<u64> = rows
        .iter()
        .map(|r| r["block_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, [1024, 32_767]);
    for r in rows {
        assert!(r["tx_mbyte_s"].as_f64().unwrap() > 1.0, "{r}");
        assert!(r["client_cpu"].as_f64().is_some_and(|c| c > 0.0), "{r}");
        assert!(r["server_cpu"].as_f64().is_some_and(|c| c > 0.0), "{r}");
    }
    // The local side's interface is recorded with the result.
    assert_eq!(v["interfaces"][0]["name"], "lo", "{}", v["interfaces"]);
    assert_eq!(v["interfaces"][0]["role"], "local");
    assert!(v["activity"][0]["net_rx_softirqs"].as_u64().is_some());
    // The text says which units, in netio's own lines.
    let out = run_within(
        &[
            "blocksize",
            "127.0.0.1",
            "-p",
            &port,
            "--sizes",
            "1k",
            "-t",
            "0.3",
            "--units",
            "netio",
        ],
        Duration::from_secs(30),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Packet size  1k bytes:"), "{text}");
    assert!(text.contains("powers of 2"), "{text}");
}

fn nicmatrix_refuses_what_it_cannot_do() {
    for (args, code, needle) in [
        (vec!["nicmatrix", "--end", "lo", "--mtu", "67"], 2, "67"),
        (
            vec!["nicmatrix", "--end", "lo", "--offload", "lro=maybe"],
            2,
            "on and off",
        ),
        (vec!["nicmatrix", "--mtu", "1500"], 2, "--end"),
    ] {
        assert_fails(&run(&args), code, needle);
    }
    // Without HOST both ends must be lab ports.
    assert_fails(
        &run(&["nicmatrix", "--end", "lo", "--mtu", "1500"]),
        2,
        "NODE:IFACE",
    );
}

/// ethtool's names work as ethtool sets them: one feature's alias (`gro`) and the groups
/// (`tx` is every transmit checksum feature, `tso` every TCP segmentation one), in the
/// matrix and through the library, and every setting is put back.
fn ethtools_feature_names_and_groups_set_what_ethtool_sets() {
    let lab = LabGuard::up("direct", "eg");
    let before = settings(&lab.0, "talker");
    let ns = format!("wb-{}-talker", lab.0);
    let set = |name: &str, on: bool| {
        engine::frameio::in_netns(Some(&ns), || engine::nic::set_feature("eth0", name, on))
            .unwrap()
            .unwrap_or_else(|e| panic!("{name} {on}: {e}"));
        settings(&lab.0, "talker").1
    };
    let off = set("tx", false);
    assert_eq!(off.get("tx-checksum-ip-generic"), Some(&false), "{off:?}");
    let off = set("tso", false);
    for f in ["tx-tcp-segmentation", "tx-tcp6-segmentation"] {
        assert_eq!(off.get(f), Some(&false), "{f}: {off:?}");
    }
    // veth starts with GRO off: turned on by its ethtool name.
    let gro = before.1.get("rx-gro").copied().unwrap_or_default();
    let flipped = set("gro", !gro);
    assert_eq!(flipped.get("rx-gro"), Some(&!gro), "{flipped:?}");
    set("generic-receive-offload", gro);
    for name in ["tx-checksumming", "tcp-segmentation-offload"] {
        set(name, true);
    }
    assert_eq!(settings(&lab.0, "talker"), before);
    let args = matrix_args(
        &lab.0,
        &[
            "--offload",
            "tx=off,on",
            "--offload",
            "tso=off",
            "--sizes",
            "8k",
            "-t",
            "0.3",
            "-J",
        ],
    );
    let v = run_json(&args);
    let cells = v["nic_matrix"]["cells"].as_array().unwrap();
    let labels: Vec<&str> = cells.iter().map(|c| c["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        [
            "tcp-segmentation-offload off, tx-checksumming off",
            "tcp-segmentation-offload off, tx-checksumming on"
        ]
    );
    for c in cells {
        assert!(c["error"].is_null(), "{c}");
    }
    assert_eq!(settings(&lab.0, "talker"), before);
}

/// Starts `wirebench server` (with a key, `--allow-tuning` when `allow`) on the listener
/// of `lab`, on `port` (a server outlives `lab exec` being killed, until its --run-for).
fn tuning_server(
    lab: &LabGuard,
    key: &std::path::Path,
    allow: bool,
    port: &str,
) -> std::process::Child {
    let mut args = vec![
        "lab",
        "exec",
        "--name",
        &lab.0,
        "listener",
        "--",
        bin(),
        "server",
        "--bind",
        "198.18.0.2",
        "-p",
        port,
        "--run-for",
        "40",
        "--auth-key-file",
        key.to_str().unwrap(),
    ];
    if allow {
        args.push("--allow-tuning");
    }
    let child = Command::new(bin())
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    child
}

/// Waits (up to 20 s) until the listener of `lab` has MTU 9000.
fn listener_at_mtu_9000(lab: &LabGuard) {
    let t0 = Instant::now();
    while settings(&lab.0, "listener").0 != Some(9000) {
        assert!(t0.elapsed() < Duration::from_secs(20), "never set");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `nicmatrix` client of the tuning server at 198.18.0.2 in `lab` (with `key` and
/// `extra`, which sets MTU 9000 first), returned once the listener's MTU is 9000.
fn client_at_mtu_9000(lab: &LabGuard, key: &str, extra: &[&str]) -> std::process::Child {
    let mut args = vec![
        "nicmatrix",
        "198.18.0.2",
        "--auth-key-file",
        key,
        "--lab",
        &lab.0,
        "--end",
        "talker:eth0",
    ];
    args.extend(extra);
    let child = Command::new(bin())
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    listener_at_mtu_9000(lab);
    child
}

/// The pid of the `wirebench server` process (not the `lab exec` that started it) whose
/// command line contains every one of `words`.
fn pid_with(words: &[&str]) -> Option<i32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .find(|pid| {
            let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd);
            let args: Vec<&str> = cmd.split('\0').collect();
            let line = args.join(" ");
            args.get(1) == Some(&"server") && words.iter().all(|w| line.contains(w))
        })
}

/// A `--allow-tuning` server stopped by SIGTERM while a client has its interface at MTU
/// 9000 puts the interface back before it exits, as it does when the client goes away
/// (it once died with the MTU left as the client set it).
fn a_tuning_server_stopped_by_sigterm_puts_its_interface_back() {
    let lab = LabGuard::up("direct", "nt");
    let key = key_file("t");
    let before = settings(&lab.0, "listener");
    let mut server = tuning_server(&lab, &key, true, "5303");
    let mut client = client_at_mtu_9000(
        &lab,
        key.to_str().unwrap(),
        &[
            "-p",
            "5303",
            "--mtu",
            "9000",
            "--sizes",
            "1k,2k,4k,8k",
            "-t",
            "2",
        ],
    );
    let pid = pid_with(&["-p 5303", "--allow-tuning"]).expect("the server's pid");
    // SAFETY: a plain kill(2) of a process this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let t1 = Instant::now();
    while pid_with(&["-p 5303", "--allow-tuning"]).is_some() {
        assert!(
            t1.elapsed() < Duration::from_secs(15),
            "the server did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        settings(&lab.0, "listener"),
        before,
        "the interface as it was before the client set it"
    );
    let _ = client.kill();
    let _ = client.wait();
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_file(key);
}

fn key_file(tag: &str) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("wb-nic-key-{tag}-{}", std::process::id()));
    crate::util::key_file(&p, "a key of more than sixteen bytes\n");
    p
}

fn a_server_started_with_allow_tuning_has_its_interface_set_and_put_back() {
    let lab = LabGuard::up("direct", "nr");
    let key = key_file("r");
    let before = settings(&lab.0, "listener");
    let mut server = tuning_server(&lab, &key, true, "5301");
    let key_arg = key.to_str().unwrap();
    let v = run_json(&[
        "nicmatrix",
        "198.18.0.2",
        "--auth-key-file",
        key_arg,
        "--lab",
        &lab.0,
        "--end",
        "talker:eth0",
        "--mtu",
        "1500,9000",
        "--sizes",
        "1k",
        "-t",
        "0.3",
        "-J",
    ]);
    let cells = v["nic_matrix"]["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{v}");
    for c in cells {
        assert!(c["error"].is_null(), "{c}");
        assert!(c["rows"][0]["tx_mbyte_s"].as_f64().unwrap() > 1.0, "{c}");
    }
    // The server's end is recorded as it was, and is back as it was.
    let roles: Vec<&str> = v["interfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["talker:eth0", "server"]);
    assert_eq!(v["interfaces"][1]["mtu"], 1500);
    assert_eq!(settings(&lab.0, "listener"), before);

    // A client that dies in the middle: the server puts its interface back by itself.
    let mut child = client_at_mtu_9000(
        &lab,
        key_arg,
        &["--mtu", "9000,4000", "--sizes", "1k,2k,4k", "-t", "1"],
    );
    let _ = child.kill();
    let _ = child.wait();
    let t1 = Instant::now();
    while settings(&lab.0, "listener") != before {
        assert!(
            t1.elapsed() < Duration::from_secs(10),
            "the server did not restore"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The talker's end, set by the killed client itself, is not: that is the client's
    // host, which a SIGKILL leaves as it was at that moment.
    let _ = server.kill();
    let _ = server.wait();

    // A server without --allow-tuning refuses, saying how to allow it.
    let mut plain = tuning_server(&lab, &key, false, "5302");
    let out = run(&[
        "nicmatrix",
        "198.18.0.2",
        "-p",
        "5302",
        "--auth-key-file",
        key_arg,
        "--lab",
        &lab.0,
        "--end",
        "talker:eth0",
        "--mtu",
        "9000",
        "--sizes",
        "1k",
        "-t",
        "0.3",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("--allow-tuning"),
        "{err}"
    );
    let _ = plain.kill();
    let _ = plain.wait();
    let _ = std::fs::remove_file(key);
}

/// This module's tests and what each needs from the machine ([`crate::harness`]).
pub(crate) fn cases() -> Vec<crate::harness::Case> {
    use crate::harness::Need::Root;
    vec![
        crate::harness::case!(
            the_matrix_runs_every_combination_and_puts_every_setting_back,
            Root
        ),
        crate::harness::case!(
            a_stop_in_the_middle_of_the_matrix_puts_every_setting_back,
            Root
        ),
        crate::harness::case!(
            jumbo_frames_cross_a_lab_built_with_mtu_9000_and_oversize_frames_are_refused,
            Root
        ),
        crate::harness::case!(blocksize_takes_connections_and_writes_netio_units),
        crate::harness::case!(nicmatrix_refuses_what_it_cannot_do, Root),
        crate::harness::case!(
            ethtools_feature_names_and_groups_set_what_ethtool_sets,
            Root
        ),
        crate::harness::case!(
            a_tuning_server_stopped_by_sigterm_puts_its_interface_back,
            Root
        ),
        crate::harness::case!(
            a_server_started_with_allow_tuning_has_its_interface_set_and_put_back,
            Root
        ),
    ]
}
