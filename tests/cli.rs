//! Command-line errors: clear message, exit code 2, nothing started.

use crate::util::*;

fn fails_with(args: &[&str], needle: &str) {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "wirebench {args:?}: {err}");
    assert!(
        err.contains(needle),
        "wirebench {args:?}: expected '{needle}' in: {err}"
    );
}

fn bad_values_name_the_problem() {
    fails_with(&["client", "127.0.0.1", "-u", "-b", "fast"], "500M");
    fails_with(
        &["client", "127.0.0.1", "-u", "-l", "10"],
        "len 10 out of range",
    );
    fails_with(&["client", "127.0.0.1", "-t", "0"], "out of range");
    fails_with(&["client", "127.0.0.1", "-P", "0"], "0");
    fails_with(
        &[
            "sweep",
            "127.0.0.1",
            "--from",
            "500M",
            "--to",
            "100M",
            "--step",
            "10M",
        ],
        "below --from",
    );
    let sweep = [
        "sweep",
        "127.0.0.1",
        "--from",
        "100M",
        "--to",
        "200M",
        "--step",
        "10M",
    ];
    let with = |extra: &[&'static str]| [&sweep[..], extra].concat();
    fails_with(&with(&["--marginal", "2%", "--high", "1%"]), "below --high");
    fails_with(&with(&["--repeat", "0"]), "--repeat 0: give 1..=100");
    fails_with(&with(&["--points", "0"]), "give positive rates");
    fails_with(
        &["blocksize", "127.0.0.1", "--sizes", "1k,0"],
        "block size 0",
    );
    fails_with(&["latency", "127.0.0.1", "-l", "8"], "outside 18");
    fails_with(
        &["latency", "127.0.0.1", "--marginal-band", "90%"],
        "--latency-limit",
    );
    fails_with(
        &["server", "--auth-key-file", "/nonexistent/key"],
        "cannot read key file",
    );
}

fn unreachable_server_is_exit_1_with_the_address() {
    // A port nothing listens on: bind one, note it, close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = run(&["client", "127.0.0.1", "-p", &port.to_string(), "-t", "1"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");
}

fn help_lists_the_commands_and_exit_codes() {
    let out = run(&["--help"]);
    let s = String::from_utf8_lossy(&out.stdout);
    for c in [
        "server",
        "client",
        "latency",
        "sweep",
        "blocksize",
        "demo",
        "Exit codes",
    ] {
        assert!(s.contains(c), "{c} missing from --help:\n{s}");
    }
    // wirebench alone, -h and --help begin with a sentence for users (once they began with
    // the command-line crate's own description), and end with examples.
    let bare = run(&[]);
    assert_eq!(bare.status.code(), Some(2));
    for (what, text) in [
        (
            "wirebench",
            String::from_utf8_lossy(&bare.stderr).into_owned(),
        ),
        (
            "-h",
            String::from_utf8_lossy(&run(&["-h"]).stdout).into_owned(),
        ),
        ("--help", s.clone().into_owned()),
    ] {
        assert!(
            text.starts_with("Benchmarks links and network devices"),
            "{what}: {text}"
        );
        assert!(!text.contains("clap"), "{what}: {text}");
    }
    assert!(s.contains("Examples:\n  wirebench demo"), "{s}");
}

/// Every output ends cleanly when its reader has gone away (`wirebench report F | head`):
/// no panic, no message, exit 0.
fn a_reader_that_went_away_ends_the_output_quietly() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/campaign-v1.json");
    let cases: [&[&str]; 5] = [
        &["report", data],
        &["report", data, "--format", "csv"],
        &["compare", data, data],
        &["lab", "up", "frer", "--name", "pipe", "--dry-run"],
        &["--help"],
    ];
    for args in cases {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let out = std::process::Command::new(bin())
            .args(args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .expect("run wirebench");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.is_empty(), "wirebench {args:?}: {err}");
        assert_eq!(out.status.code(), Some(0), "wirebench {args:?}");
    }
}

/// A user's templates render the report (`--template DIR`): text escaped in HTML, a file
/// the directory lacks stays built in, and a broken template is named with its line.
fn report_templates_from_a_directory() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/campaign-v1.json");
    let dir = std::env::temp_dir().join(format!("wb-templates-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let dir_arg = dir.to_str().unwrap();
    std::fs::write(
        dir.join("report.html"),
        "<img alt=\"lab logo\" src=\"data:,\">{{ title }}|{{ 'a<b' }}|{% for t in tests %}{{ t.id }} {% endfor %}\n",
    )
    .unwrap();
    let out = run(&["report", data, "--format", "html", "--template", dir_arg]);
    let html = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(html.starts_with("<img alt=\"lab logo\""), "{html}");
    assert!(html.contains("|a&lt;b|t1 t2 "), "{html}");
    // No report.md in the directory: the built-in one.
    let md = run(&["report", data, "--template", dir_arg]);
    let builtin = run(&["report", data]);
    assert!(md.status.success());
    assert_eq!(md.stdout, builtin.stdout);
    // A syntax error, an unknown name, an empty directory: each named, nothing rendered.
    std::fs::write(
        dir.join("report.md"),
        "# {{ title }}\n\n{% for t in tests %}\n{{ t.id }\n",
    )
    .unwrap();
    let bad = run(&["report", data, "--template", dir_arg]);
    assert_fails(&bad, 2, "template report.md line 4");
    assert!(bad.stdout.is_empty());
    std::fs::write(
        dir.join("report.md"),
        "# {{ title }}\n{{ no_such_thing }}\n",
    )
    .unwrap();
    assert_fails(
        &run(&["report", data, "--template", dir_arg]),
        1,
        "template report.md line 2: undefined value",
    );
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    assert_fails(
        &run(&["report", data, "--template", empty.to_str().unwrap()]),
        2,
        "holds neither report.md nor report.html",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Completion scripts come from the clap definitions and load in their shells; bash's
/// registers wirebench.
fn completion_scripts_load_in_their_shells() {
    for (shell, needle) in [
        ("bash", "_wirebench"),
        ("zsh", "#compdef wirebench"),
        ("fish", "complete -c wirebench"),
    ] {
        let out = run(&["completions", shell]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains(needle),
            "{shell}: {text}"
        );
        // Every command is offered.
        assert!(
            text.contains("rrul") && text.contains("completions"),
            "{shell}"
        );
    }
    let script = std::env::temp_dir().join(format!("wb-compl-{}.bash", std::process::id()));
    std::fs::write(&script, run(&["completions", "bash"]).stdout).unwrap();
    let out = std::process::Command::new("bash")
        .args([
            "-c",
            &format!("source {} && complete -p wirebench", script.display()),
        ])
        .output()
        .expect("bash");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && said.contains("wirebench"),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_file(script);
    assert_fails(&run(&["completions", "tcsh"]), 2, "tcsh");
}

/// `man DIR` writes a page per command from the same definitions; `man -l` renders them.
fn man_pages_render() {
    let dir = std::env::temp_dir().join(format!("wb-man-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = run(&["man", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for page in [
        "wirebench.1",
        "wirebench-client.1",
        "wirebench-rrul.1",
        "wirebench-lab-up.1",
    ] {
        let text = std::fs::read_to_string(dir.join(page)).unwrap_or_default();
        assert!(
            text.starts_with(".ie \\n(.g .ds Aq") || text.contains(".TH"),
            "{page}: {text}"
        );
    }
    // Without DIR: wirebench.1 on standard output.
    let page = run(&["man"]);
    assert!(String::from_utf8_lossy(&page.stdout).contains(".TH wirebench 1"));
    match std::process::Command::new("man")
        .args(["-l", dir.join("wirebench-client.1").to_str().unwrap()])
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100")
        .output()
    {
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stdout);
            assert!(o.status.success() && text.contains("--udp"), "{text}");
        }
        Err(e) => eprintln!("no man here ({e}): the pages are written but not rendered"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The server's arguments in the container image and in the package's
/// /etc/default/wirebench-server are ones the server takes, and the image publishes the
/// ports the server listens on by default.
fn the_deployed_server_arguments_are_taken() {
    let root = env!("CARGO_MANIFEST_DIR");
    let read = |p: &str| std::fs::read_to_string(format!("{root}/{p}")).unwrap();
    let container = read("deploy/container/Containerfile");
    let default = read("deploy/debian/wirebench-server.default");
    let help = String::from_utf8_lossy(&run(&["server", "--help"]).stdout).into_owned();
    let exposed = container
        .lines()
        .find_map(|l| l.strip_prefix("EXPOSE "))
        .expect("EXPOSE");
    for (flag, port) in [("--port", "5301"), ("--iperf3-port", "5201")] {
        let line = help.lines().skip_while(|l| !l.contains(flag)).take(6);
        assert!(
            line.clone()
                .any(|l| l.contains(&format!("[default: {port}]"))),
            "{flag} {port}: {help}"
        );
        assert!(
            exposed.contains(&format!("{port}/tcp")),
            "{port}: {exposed}"
        );
    }
    assert!(exposed.contains("5201/udp") && exposed.contains("9464/tcp"));
    // CMD's arguments, and the default file's, start a server (on free ports here).
    let cmd: Vec<String> = container
        .lines()
        .find_map(|l| l.strip_prefix("CMD "))
        .and_then(|j| serde_json::from_str(j).ok())
        .expect("CMD as a JSON list");
    let args = default
        .lines()
        .find_map(|l| l.strip_prefix("WIREBENCH_SERVER_ARGS="))
        .expect("WIREBENCH_SERVER_ARGS")
        .trim_matches('"')
        .to_owned();
    for given in [cmd.join(" "), args] {
        let port = free_port().to_string();
        let given = given.replace("9464", &port);
        let mut argv = vec!["server"];
        argv.extend(given.split_whitespace());
        argv.extend(["-p", "0", "--no-iperf3", "--run-for", "0.3"]);
        let out = run(&argv);
        assert!(
            out.status.success(),
            "{argv:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// This module's tests and what each needs from the machine ([`crate::harness`]).
pub(crate) fn cases() -> Vec<crate::harness::Case> {
    vec![
        crate::harness::case!(bad_values_name_the_problem),
        crate::harness::case!(unreachable_server_is_exit_1_with_the_address),
        crate::harness::case!(help_lists_the_commands_and_exit_codes),
        crate::harness::case!(a_reader_that_went_away_ends_the_output_quietly),
        crate::harness::case!(report_templates_from_a_directory),
        crate::harness::case!(completion_scripts_load_in_their_shells),
        crate::harness::case!(man_pages_render),
        crate::harness::case!(the_deployed_server_arguments_are_taken),
    ]
}
