//! Meshes of servers (`mesh`, `[[host]]`, `hosts_from = "dns:..."`): hosts in namespaces
//! of their own on one bridge, one agent each (`server --allow-third-party`), and the
//! controller in the bridge's namespace, which answers DNS for the fleet's name from a
//! fixture (root: namespaces).

use std::net::UdpSocket;
use std::process::Command;

use model::stop::Stop;

use crate::util::*;

/// The fleet's DNS name, as a headless Service's would be.
const FLEET: &str = "agents.mesh.test";

/// Namespaces `wbmesh-TAG-hub` (a bridge at 198.18.40.254 and a DNS fixture on
/// 127.0.0.1:53) and `wbmesh-TAG-hN` (198.18.40.N on the bridge), and the hub's
/// resolv.conf for `ip netns exec`; all removed on drop.
struct Star {
    tag: String,
    hosts: usize,
    dns_stop: Stop,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("ip");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Star {
    fn up(hosts: usize) -> Self {
        let tag = format!("{:x}", std::process::id() & 0xffff);
        let star = Star {
            tag,
            hosts,
            dns_stop: Stop::new(),
        };
        let hub = star.ns("hub");
        ip(&["netns", "add", &hub]);
        ip(&["-n", &hub, "link", "set", "lo", "up"]);
        ip(&["-n", &hub, "link", "add", "br0", "type", "bridge"]);
        ip(&["-n", &hub, "addr", "add", "198.18.40.254/24", "dev", "br0"]);
        ip(&["-n", &hub, "link", "set", "br0", "up"]);
        for i in 1..=hosts {
            let ns = star.ns(&format!("h{i}"));
            let port = format!("p{i}");
            ip(&["netns", "add", &ns]);
            ip(&["-n", &ns, "link", "set", "lo", "up"]);
            ip(&[
                "-n", &hub, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns",
                &ns,
            ]);
            ip(&["-n", &hub, "link", "set", &port, "master", "br0", "up"]);
            ip(&[
                "-n",
                &ns,
                "addr",
                "add",
                &format!("198.18.40.{i}/24"),
                "dev",
                "eth0",
            ]);
            ip(&["-n", &ns, "link", "set", "eth0", "up"]);
        }
        let dir = format!("/etc/netns/{hub}");
        std::fs::create_dir_all(&dir).expect("/etc/netns");
        std::fs::write(format!("{dir}/resolv.conf"), "nameserver 127.0.0.1\n")
            .expect("resolv.conf");
        star
    }

    fn ns(&self, node: &str) -> String {
        format!("wbmesh-{}-{node}", self.tag)
    }

    /// Answers A queries for [`FLEET`] with 198.18.40.1..=`hosts` from the hub's
    /// 127.0.0.1:53, until the star goes.
    fn serve_dns(&self, hosts: usize) {
        let hub = self.ns("hub");
        let sock = engine::frameio::in_netns(Some(&hub), || UdpSocket::bind("127.0.0.1:53"))
            .expect("enter the hub")
            .expect("bind 127.0.0.1:53 in the hub");
        sock.set_read_timeout(Some(std::time::Duration::from_millis(100)))
            .unwrap();
        let stop = self.dns_stop.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            while !stop.is_raised() {
                let Ok((n, from)) = sock.recv_from(&mut buf) else {
                    continue;
                };
                if let Some(answer) = dns_answer(&buf[..n], hosts) {
                    let _ = sock.send_to(&answer, from);
                }
            }
        });
    }

    /// `wirebench server --allow-third-party` on host `i`, stopped on drop.
    fn agent(&self, i: usize, key: &std::path::Path) -> ServerProc {
        let ns = self.ns(&format!("h{i}"));
        let addr = format!("198.18.40.{i}");
        ServerProc::start_program(
            "ip",
            &[
                "netns",
                "exec",
                &ns,
                bin(),
                "server",
                "--bind",
                &addr,
                "-p",
                "5301",
                "--auth-key-file",
                &key.to_string_lossy(),
                "--allow-third-party",
                "--run-for",
                "600",
            ],
        )
    }

    /// `wirebench run PLAN --out DIR` in the hub (its resolv.conf in place).
    fn run_plan(&self, plan: &std::path::Path, out: &std::path::Path) -> std::process::Output {
        let hub = self.ns("hub");
        let (plan, out) = (plan.to_string_lossy(), out.to_string_lossy());
        let args = ["netns", "exec", &hub, bin(), "run", &plan, "--out", &out];
        let child = Command::new("ip").args(args).output();
        child.expect("ip netns exec ... run")
    }
}

impl Drop for Star {
    fn drop(&mut self) {
        self.dns_stop.raise();
        for i in 1..=self.hosts {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(&format!("h{i}"))])
                .output();
        }
        let hub = self.ns("hub");
        let _ = Command::new("ip").args(["netns", "del", &hub]).output();
        let _ = std::fs::remove_dir_all(format!("/etc/netns/{hub}"));
    }
}

/// The fixture's answer to one DNS query (RFC 1035 §4.1): A records 198.18.40.1..=`hosts`
/// for [`FLEET`], no record of another type for it (NOERROR), NXDOMAIN for other names.
fn dns_answer(q: &[u8], hosts: usize) -> Option<Vec<u8>> {
    if q.len() < 12 {
        return None;
    }
    // The question: labels to the root, then type and class.
    let mut i = 12;
    let mut labels = Vec::new();
    loop {
        let len = usize::from(*q.get(i)?);
        i += 1;
        if len == 0 {
            break;
        }
        labels.push(String::from_utf8_lossy(q.get(i..i + len)?).to_lowercase());
        i += len;
    }
    let qtype = u16::from_be_bytes([*q.get(i)?, *q.get(i + 1)?]);
    let question = q.get(12..i + 4)?;
    let ours = labels.join(".") == FLEET;
    let answers: Vec<[u8; 4]> = if ours && qtype == 1 {
        (1..=hosts).map(|h| [198, 18, 40, h as u8]).collect()
    } else {
        vec![]
    };
    let rcode = if ours { 0 } else { 3 };
    let mut r = vec![q[0], q[1], 0x81, 0x80 | rcode, 0, 1];
    r.extend((answers.len() as u16).to_be_bytes());
    r.extend([0, 0, 0, 0]);
    r.extend(question);
    for a in answers {
        // A pointer to the question's name, type A, class IN, TTL 30 s, 4 bytes.
        r.extend([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 30, 0, 4]);
        r.extend(a);
    }
    Some(r)
}

/// A fresh directory of this test process.
fn tempdir(tag: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("wb-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The "Mesh" section of a report.md.
fn mesh_section(md: &str) -> &str {
    md.split("\n## ")
        .find(|s| s.starts_with("Mesh\n"))
        .expect("the mesh section of report.md")
}

fn results(dir: &std::path::Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("results.json")).expect("results.json");
    serde_json::from_str(&text).expect("JSON")
}

/// The mesh of a run's only test: (from, to, received bit/s or None, error).
fn cells(r: &serde_json::Value) -> Vec<(String, String, Option<f64>, Option<String>)> {
    let mesh = &r["tests"][0]["result"]["mesh"];
    mesh["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .map(|c| {
            (
                c["from"].as_str().unwrap_or_default().to_owned(),
                c["to"].as_str().unwrap_or_default().to_owned(),
                c["summary"]["received_bps"].as_f64(),
                c["error"].as_str().map(str::to_owned),
            )
        })
        .collect()
}

fn a_mesh_of_four_agents_and_a_fleet_from_dns_with_one_host_down() {
    // Five hosts; the fifth has an address but no agent (down).
    let star = Star::up(5);
    let dir = tempdir("mesh");
    let key = dir.join("fleet.key");
    key_file(&key, "0123456789abcdef0123456789abcdef");
    let agents: Vec<ServerProc> = (1..=4).map(|i| star.agent(i, &key)).collect();
    let k = key.to_string_lossy();

    // Four listed hosts: every ordered pair measured, two at a time.
    let listed = dir.join("listed.toml");
    let mut plan = String::new();
    for (i, name) in ["a", "b", "c", "d"].iter().enumerate() {
        plan.push_str(&format!(
            "[[host]]\nname = \"{name}\"\naddress = \"198.18.40.{}\"\nkey_file = \"{k}\"\n\n",
            i + 1
        ));
    }
    plan.push_str("[[test]]\nname = \"four\"\nkind = \"mesh\"\nparallel = 2\nargs = \"-t 1\"\n");
    std::fs::write(&listed, plan).unwrap();
    let out_a = dir.join("run-listed");
    let run = star.run_plan(&listed, &out_a);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let r = results(&out_a);
    let c = cells(&r);
    assert_eq!(c.len(), 12, "{c:?}");
    for (from, to, bps, err) in &c {
        assert!(err.is_none(), "{from} -> {to}: {err:?}");
        // Veth through a bridge on this machine carries gigabits; a pair that got less
        // than 50 Mbit/s did not run its test.
        assert!(bps.is_some_and(|b| b > 50e6), "{from} -> {to}: {bps:?}");
    }
    // The source's server ran each test (not the controller at .254): the test's
    // connection is from the source's address to the destination's.
    let address = |name: &str| {
        let i = ["a", "b", "c", "d"]
            .iter()
            .position(|n| *n == name)
            .expect("a host")
            + 1;
        format!("198.18.40.{i}:")
    };
    let cells_json = r["tests"][0]["result"]["mesh"]["cells"]
        .as_array()
        .expect("cells");
    for cell in cells_json {
        let (from, to) = (cell["from"].as_str().unwrap(), cell["to"].as_str().unwrap());
        let conn = &cell["connection"];
        let local = conn["local"].as_str().unwrap_or_default();
        let remote = conn["remote"].as_str().unwrap_or_default();
        assert!(local.starts_with(&address(from)), "{from} -> {to}: {conn}");
        assert!(remote.starts_with(&address(to)), "{from} -> {to}: {conn}");
    }
    // The report: a 4 x 4 matrix (diagonal '-') and a heat map beside it.
    let md = std::fs::read_to_string(out_a.join("report.md")).expect("report.md");
    let section: Vec<&str> = mesh_section(&md).lines().collect();
    let header = section
        .iter()
        .find(|l| l.contains("from \\ to"))
        .expect("the mesh matrix in report.md");
    for name in ["a", "b", "c", "d"] {
        assert!(header.contains(&format!("| {name} ")), "{header}");
    }
    let rows: Vec<&&str> = section
        .iter()
        .filter(|l| l.starts_with("| [t1](#t1) |"))
        .collect();
    assert_eq!(rows.len(), 4, "{md}");
    assert!(
        rows.iter().all(|l| l.matches("| - |").count() == 1),
        "{rows:?}"
    );
    let html = std::fs::read_to_string(out_a.join("report.html")).expect("report.html");
    assert!(html.contains("t1: mesh heat map"), "no heat map");
    assert!(html.contains("Mesh: received Mbit/s, from (row) to (column) (t1)"));
    assert!(out_a.join("mesh.csv").exists());
    assert!(
        md.contains("4 hosts, 12 of 12 pairs measured; lowest "),
        "{md}"
    );
    // All four agents run on this machine, and the results say so.
    let notes = r["tests"][0]["result"]["notes"].to_string();
    assert!(
        notes.contains("hosts on one machine (one boot id): a, b, c, d"),
        "{notes}"
    );

    // The fleet from DNS: five addresses, one of them down. Its cells fail with the
    // reason; the other twelve are measured.
    star.serve_dns(5);
    let dns = dir.join("dns.toml");
    std::fs::write(
        &dns,
        format!(
            "hosts_from = \"dns:{FLEET}\"\nhosts_key_file = \"{k}\"\n\n[[test]]\nname = \"fleet\"\nkind = \"mesh\"\nparallel = 2\nargs = \"-t 1\"\n"
        ),
    )
    .unwrap();
    let out_b = dir.join("run-dns");
    let run = star.run_plan(&dns, &out_b);
    let r = results(&out_b);
    assert_eq!(
        r["tests"][0]["status"],
        "done",
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let target = r["target"].as_str().unwrap_or_default();
    assert!(
        target.contains("198.18.40.5 (198.18.40.5:5301)"),
        "{target}"
    );
    let c = cells(&r);
    assert_eq!(c.len(), 20, "{c:?}");
    let down = "198.18.40.5";
    for (from, to, bps, err) in &c {
        if from == down || to == down {
            let e = err.as_deref().unwrap_or_default();
            assert!(
                bps.is_none() && e.contains("198.18.40.5"),
                "{from} -> {to}: {e}"
            );
        } else {
            assert!(err.is_none(), "{from} -> {to}: {err:?}");
            assert!(bps.is_some_and(|b| b > 50e6), "{from} -> {to}: {bps:?}");
        }
    }
    // The failed pairs make the mesh's verdict fail, and the run's exit code says so.
    let verdict = &r["tests"][0]["result"]["verdicts"][0];
    assert_eq!(verdict["passed"], false, "{verdict}");
    assert_eq!(verdict["detail"], "12 of 20 pairs measured");
    let md = std::fs::read_to_string(out_b.join("report.md")).expect("report.md");
    let section = mesh_section(&md);
    assert_eq!(section.matches("| failed ").count(), 8, "{section}");
    drop(agents);
    drop(star);
    let _ = std::fs::remove_dir_all(&dir);
}

fn third_party_tests_need_the_servers_consent_and_a_key() {
    // On loopback: no root needed.
    let dir = tempdir("mesh-consent");
    let key = dir.join("k");
    key_file(&key, "0123456789abcdef0123456789abcdef");
    let k = key.to_string_lossy().into_owned();
    // --allow-third-party without a key is refused at start.
    let out = run(&["server", "-p", "0", "--allow-third-party"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs --auth-key-file"));
    // A server without --allow-third-party refuses the pair; the mesh says which and why.
    let willing = ServerProc::start(&["--auth-key-file", &k, "--allow-third-party"]);
    let unwilling = ServerProc::start(&["--auth-key-file", &k]);
    let (w, u) = (
        format!("w=127.0.0.1:{}", willing.port),
        format!("u=127.0.0.1:{}", unwilling.port),
    );
    let out = run(&["mesh", &w, &u, "--auth-key-file", &k, "-t", "0.5", "-J"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let cells = r["mesh"]["cells"].as_array().expect("cells");
    let cell = |from: &str| cells.iter().find(|c| c["from"] == from).expect("cell");
    assert!(cell("w")["summary"]["received_bps"]
        .as_f64()
        .is_some_and(|b| b > 0.0));
    let e = cell("u")["error"].as_str().unwrap_or_default();
    assert!(e.contains("--allow-third-party"), "{e}");
    // A mesh needs the key: servers run tests toward each other only with one.
    let out = run(&["mesh", &w, &u, "-t", "0.5", "-J"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--auth-key-file"));
    // Bad host lists are usage errors: a bad port, a name twice, one server twice, a name
    // that would be a flag.
    let same = format!("v=127.0.0.1:{}", willing.port);
    for hosts in [
        ["a=127.0.0.1:x", u.as_str()],
        [w.as_str(), w.as_str()],
        [w.as_str(), same.as_str()],
        ["-x=127.0.0.1", u.as_str()],
    ] {
        let out = run(&["mesh", hosts[0], hosts[1], "--auth-key-file", &k]);
        assert_eq!(out.status.code(), Some(2), "{hosts:?}: {out:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// This module's tests and what each needs from the machine ([`crate::harness`]).
pub(crate) fn cases() -> Vec<crate::harness::Case> {
    use crate::harness::Need::Root;
    vec![
        crate::harness::case!(
            a_mesh_of_four_agents_and_a_fleet_from_dns_with_one_host_down,
            Root
        ),
        crate::harness::case!(third_party_tests_need_the_servers_consent_and_a_key),
    ]
}
