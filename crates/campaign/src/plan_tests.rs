//! Unit tests of plans: parsing, checks with their lines, hosts, command lines, verdicts.

use super::*;
use crate::request::{ClientRequest, Server};
use crate::verdicts::{evaluate, Outcome};
use model::results::{RunResult, Summary};

/// A stand-in for the binary's parser: every command is a client test, a flag value
/// `fast` is refused as clap would, and `lab up` takes only `--path-a VALUE`.
struct Fake;

impl Commands for Fake {
    fn test(&self, argv: &[String]) -> Result<TestRequest, CommandError> {
        if let Some(bad) = argv.iter().find(|a| a.as_str() == "fast") {
            return Err(CommandError::Refused(format!("invalid value '{bad}'")));
        }
        let client = &crate::methods::client::Client;
        Ok(TestRequest::new(
            client,
            ClientRequest {
                server: Server {
                    host: argv.get(2).cloned().unwrap_or_default(),
                    port: 5301,
                    key_file: None,
                    allow_unauthenticated: false,
                },
                spec: crate::trials::base_spec(model::spec::Protocol::Tcp),
                interval: None,
                cpu: None,
                round_trip: false,
                iperf3: false,
                connect: Default::default(),
                get_server_output: false,
                title: None,
            },
        ))
    }

    fn lab(&self, topology: &str, args: &[String]) -> Result<lab::topology::Request, CommandError> {
        match args {
            [] => {}
            [flag, _] if flag == "--path-a" => {}
            _ => return Err(CommandError::Refused(format!("unexpected {args:?}"))),
        }
        Ok(lab::topology::Request {
            topology: topology.into(),
            path_a: args.get(1).cloned(),
            ..Default::default()
        })
    }
}

const PLAN: &str = r#"
[plan]
title = "FRER"
metadata = { device = "relay" }

[target]
lab = "frer"
lab_args = "--path-a loss=1%"

[[test]]
name = "tcp"
kind = "client"
args = "-t 2"

[[test]]
kind = "rfc2544"
args = "--sizes 64,1518 -t 1 --tests throughput,latency"

[[threshold]]
test = "tcp"
metric = "received_bps"
min = "500M"

[[threshold]]
metric = "latency_p999"
max = "300us"
"#;

#[test]
fn a_plan_parses_and_each_test_gets_its_target() {
    let p = Plan::parse(PLAN, &Fake).unwrap();
    assert_eq!(p.title, "FRER");
    assert_eq!(p.metadata["device"], "relay");
    assert_eq!(p.tests[1].name, "rfc2544 2");
    assert!(p.needs_root());
    let Target::Lab { request, args } = &p.target else {
        panic!("{:?}", p.target)
    };
    assert_eq!(request.path_a.as_deref(), Some("loss=1%"));
    assert_eq!(args, &["--path-a", "loss=1%"]);
    let ctx = Context {
        host: "198.18.30.2".into(),
        port: 5301,
        lab: Some("r1".into()),
        raw: Some(("talker:eth0".into(), "listener:eth0".into())),
        key_file: None,
        hosts: vec![],
        labs: "r".into(),
    };
    assert_eq!(
        p.tests[0].argv(&ctx).join(" "),
        "wirebench client 198.18.30.2 -p 5301 -i 0.2 -t 2 -J"
    );
    assert_eq!(
        p.tests[1].argv(&ctx).join(" "),
        "wirebench rfc2544 --tx talker:eth0 --rx listener:eth0 --lab r1 --sizes 64,1518 -t 1 --tests throughput,latency -J"
    );
    // A client test reports at a tenth of its time (1 s at most) unless it says -i; a
    // comparison's labs are named after the run's.
    let more = PLAN.replace("args = \"-t 2\"", "args = \"-t 60\"\n[[test]]\nkind = \"client\"\nargs = \"-i 0.5 -t 2\"\n[[test]]\nkind = \"frer-compare\"\nargs = \"-t 1\"");
    let p = Plan::parse(&more, &Fake).unwrap();
    let line = |i: usize| p.tests[i].argv(&ctx).join(" ");
    assert_eq!(
        line(0),
        "wirebench client 198.18.30.2 -p 5301 -i 1 -t 60 -J"
    );
    assert_eq!(
        line(1),
        "wirebench client 198.18.30.2 -p 5301 -i 0.5 -t 2 -J"
    );
    assert_eq!(line(2), "wirebench frer compare --name r -t 1 -J");
    assert_eq!(p.thresholds[0].min, Some(500e6));
    assert_eq!(p.thresholds[1].max, Some(300.0));
    // A loopback plan runs rfc2544 over UDP through the server, with its port.
    let lo = Plan::parse(
        "[target]\nloopback = true\n[[test]]\nkind = \"rfc2544\"\nargs = \"-p 9\"\n",
        &Fake,
    )
    .unwrap();
    assert!(!lo.needs_root());
    let ctx = Context::stand_in(&lo.target);
    assert_eq!(
        lo.tests[0].argv(&ctx).join(" "),
        "wirebench rfc2544 127.0.0.1 -p 9 -J"
    );
}

#[test]
fn bad_plans_name_the_field_and_line() {
    let cases: &[(&str, &str)] = &[
        ("[[test]]\nkind = \"client\"\n", "no [target]"),
        (
            "[target]\nloopback = true\n[[test]]\nkind = \"iperf\"\n",
            "line 4: test 1: unknown kind 'iperf'",
        ),
        (
            "[target]\nloopback = true\n[[test]]\nkind = \"client\"\nargs = \"-b fast\"\n",
            "line 5: test 'client 1': invalid value 'fast'",
        ),
        (
            "[target]\nloopback = true\n[[test]]\nkind = \"client\"\n[[threshold]]\nmetric = \"latency_p999\"\nmax = \"300\"\n",
            "line 7: threshold max: '300' is not a time",
        ),
        (
            "[target]\nloopback = true\n[[test]]\nkind = \"client\"\n[[threshold]]\nmetric = \"speed\"\nmin = \"1\"\n",
            "line 6: unknown metric 'speed'",
        ),
        (
            "[target]\nloopback = true\nhost = \"x\"\n[[test]]\nkind = \"client\"\n",
            "exactly one of",
        ),
        (
            "[target]\nloopback = true\n[[test]]\nkind = \"streams\"\nargs = \"p.toml\"\n",
            "needs raw ports or a lab",
        ),
        (
            "[target]\nloopback = true\n[[test]]\nkind = \"client\"\ncolour = 1\n",
            "unknown field `colour`",
        ),
        (
            "[target]\nlab = \"frer\"\nlab_args = \"--path-b x y\"\n[[test]]\nkind = \"client\"\n",
            "line 1: lab_args",
        ),
        ("[target]\nloopback = true\n", "no [[test]]"),
        (
            "[target]\nloopback = true\n[[test]]\nkind = \"client\"\n[[threshold]]\ntest = \"nope\"\nmetric = \"loss\"\nmax = \"1%\"\n",
            "names no test 'nope'",
        ),
        (
            "[target]\nloopback = true\n[[test]]\nkind = \"client\"\nargs = \"-t '2\"\n",
            "line 5: test 'client 1': args has an unclosed quote",
        ),
    ];
    for (text, want) in cases {
        let e = Plan::parse(text, &Fake).unwrap_err().to_string();
        assert!(e.contains(want), "{text:?}: {e}");
    }
}

const HOSTS: &str = r#"
[[host]]
name = "a"
address = "198.18.40.1"
key_file = "/k"

[[host]]
name = "b"
address = "198.18.40.2:7000"
key_file = "/k"

[[host]]
name = "c"
address = "[fd00::3]"
key_file = "/k"

[[test]]
kind = "mesh"
parallel = 2
args = "-t 1"

[[test]]
name = "ab"
kind = "mesh"
hosts = ["b", "a"]

[[test]]
kind = "client"
hosts = ["b"]
args = "-t 2"
"#;

#[test]
fn hosts_are_named_by_tests_and_a_mesh_takes_them_all() {
    // Without a target, tests that use their own ports need no host.
    let own = HOSTS.to_owned() + "[[test]]\nkind = \"streams\"\nargs = \"p.toml\"\n";
    assert!(Plan::parse(&own, &Fake).is_ok());
    let p = Plan::parse(HOSTS, &Fake).unwrap();
    assert_eq!(p.target, Target::Hosts);
    assert!(!p.needs_root());
    let Some(HostSource::Listed(hosts)) = &p.hosts else {
        panic!("{:?}", p.hosts)
    };
    let mut ctx = Context::stand_in(&p.target);
    ctx.hosts.clone_from(hosts);
    let argv = |i: usize| p.tests[i].argv(&ctx).join(" ");
    assert_eq!(
        argv(0),
        "wirebench mesh a=198.18.40.1:5301 b=198.18.40.2:7000 c=[fd00::3]:5301 --auth-key-file /k --pairs-at-once 2 -t 1 -J"
    );
    assert_eq!(
        argv(1),
        "wirebench mesh b=198.18.40.2:7000 a=198.18.40.1:5301 --auth-key-file /k -J"
    );
    assert_eq!(
        argv(2),
        "wirebench client 198.18.40.2 -p 7000 --auth-key-file /k -i 0.2 -t 2 -J"
    );
    // With DNS, the hosts are known when the run starts; before, two stand-ins.
    let dns = Plan::parse(
        "hosts_from = \"dns:agents.wb:7000\"\nhosts_key_file = \"/k\"\n[[test]]\nkind = \"mesh\"\n",
        &Fake,
    )
    .unwrap();
    let Some(HostSource::Dns {
        name,
        port,
        key_file,
    }) = &dns.hosts
    else {
        panic!("{:?}", dns.hosts)
    };
    assert_eq!((name.as_str(), *port), ("agents.wb", 7000));
    assert_eq!(key_file.as_deref(), Some(std::path::Path::new("/k")));
}

#[test]
fn bad_hosts_name_the_test_and_line() {
    // Each name its own address, unless two share the first letter.
    let host = |name: &str, key: &str| {
        let last = name.bytes().next().unwrap_or(0);
        format!("[[host]]\nname = \"{name}\"\naddress = \"198.18.40.{last}\"\n{key}\n")
    };
    let two = host("a", "") + &host("b", "");
    let cases: Vec<(String, &str)> = vec![
        (
            two.clone() + "[[test]]\nkind = \"client\"\nhosts = [\"z\"]\n",
            "line 10: test 'client 1': hosts: the plan has no host 'z'",
        ),
        (
            two.clone() + "[[test]]\nkind = \"client\"\nhosts = [\"a\", \"b\"]\n",
            "runs against one host, not 2",
        ),
        (
            two.clone() + "[[test]]\nkind = \"client\"\n",
            "name the host it runs against",
        ),
        (
            two.clone() + "[[test]]\nkind = \"client\"\nparallel = 2\nhosts = [\"a\"]\n",
            "parallel belongs to a mesh",
        ),
        (
            two.clone() + "[[test]]\nkind = \"mesh\"\nparallel = 0\n",
            "parallel = 0",
        ),
        (
            two.clone() + "[[test]]\nkind = \"mesh\"\nhosts = [\"a\"]\n",
            "at least two hosts",
        ),
        (
            two.clone() + "[[test]]\nkind = \"mesh\"\nhosts = [\"a\", \"a\"]\n",
            "'a' twice",
        ),
        (
            two.clone() + "[[test]]\nkind = \"streams\"\nhosts = [\"a\"]\nargs = \"p.toml\"\n",
            "a streams test names no hosts",
        ),
        (
            two.clone() + "[[test]]\nkind = \"mesh\"\n",
            "a mesh needs the hosts' key",
        ),
        (
            two.clone() + "[[test]]\nkind = \"mesh\"\nlab = \"frer\"\n",
            "no lab of its own",
        ),
        (
            host("a", "") + &host("ab", "") + "[[test]]\nkind = \"mesh\"\n",
            "hosts 'a' and 'ab' have one address",
        ),
        (
            host("a", "key_file = \"/k\"")
                + &host("b", "key_file = \"/j\"")
                + "[[test]]\nkind = \"mesh\"\n",
            "need one key_file",
        ),
        (
            host("a", "") + &host("a", "") + "[[test]]\nkind = \"mesh\"\n",
            "line 5: two hosts are named 'a'",
        ),
        (
            host("a=b", "") + "[[test]]\nkind = \"mesh\"\n",
            "line 1: host name 'a=b'",
        ),
        (
            "[[host]]\nname = \"a\"\naddress = \"h:x\"\n[[test]]\nkind = \"mesh\"\n".into(),
            "host 'a': address 'h:x' is not HOST[:PORT]",
        ),
        (
            "[target]\nloopback = true\n[[test]]\nkind = \"mesh\"\n".into(),
            "a mesh needs the plan's hosts",
        ),
        (
            "[target]\nloopback = true\n[[test]]\nkind = \"client\"\nhosts = [\"a\"]\n".into(),
            "hosts: the plan has no [[host]]",
        ),
        (
            "hosts_from = \"dns:x\"\n[[test]]\nkind = \"mesh\"\nhosts = [\"a\", \"b\"]\n".into(),
            "hosts from DNS have no names",
        ),
        (
            "hosts_from = \"x\"\n[[test]]\nkind = \"mesh\"\n".into(),
            "line 1: hosts_from = 'x': give dns:NAME",
        ),
        (
            "hosts_from = \"dns:x\"\n".to_owned() + &host("a", "") + "[[test]]\nkind = \"mesh\"\n",
            "not both",
        ),
        (
            "hosts_key_file = \"/k\"\n".to_owned() + &two + "[[test]]\nkind = \"mesh\"\n",
            "hosts_key_file belongs to hosts_from",
        ),
    ];
    for (text, want) in &cases {
        let e = Plan::parse(text, &Fake).unwrap_err().to_string();
        assert!(e.contains(want), "{text:?}: {e}");
    }
}

fn result(command: &str) -> RunResult {
    RunResult::new(
        command,
        serde_json::json!({}),
        String::new(),
        Default::default(),
    )
}

#[test]
fn thresholds_become_verdicts_and_missing_figures_fail() {
    let p = Plan::parse(PLAN, &Fake).unwrap();
    let mut tcp = result("client");
    tcp.summary = Some(Summary {
        received_bps: Some(400e6),
        ..Default::default()
    });
    let outcome = |id, name, kind, result| Outcome {
        id,
        name,
        kind,
        result,
    };
    let v = evaluate(
        &p.thresholds,
        &[
            outcome("t1", "tcp", "client", Some(&tcp)),
            outcome("t2", "rfc2544 2", "rfc2544", None),
        ],
    );
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(!v[0].passed);
    assert_eq!(v[0].name, "received_bps of tcp (t1)");
    assert_eq!(
        v[0].detail,
        "measured 400.00 Mbit/s, required >= 500.00 Mbit/s"
    );
    // The rfc2544 test that would have measured the latency did not run: a failed
    // verdict, not a silent pass.
    assert!(!v[1].passed);
    assert_eq!(v[1].name, "latency_p999 of rfc2544 2 (t2)");
    assert!(v[1].detail.starts_with("not measured"), "{v:?}");
    // A threshold no test can measure fails by its line.
    let v = evaluate(
        &p.thresholds[1..],
        &[outcome("t1", "tcp", "client", Some(&tcp))],
    );
    assert_eq!(v[0].name, "latency_p999 (line 25)");
    assert!(!v[0].passed && v[0].detail.starts_with("no test measured it"));
}

#[test]
fn a_plan_error_is_typed_with_its_line_and_test() {
    let parse = |text: &str| Plan::parse(text, &Fake).unwrap_err();
    let e = parse("[target]\nloopback = true\n[[test]]\nkind = \"client\"\nargs = \"-b fast\"\n");
    assert_eq!((e.line(), e.test()), (Some(5), Some("client 1")));
    assert!(
        matches!(e.kind(), PlanErrorKind::Command(CommandError::Refused(m)) if m == "invalid value 'fast'"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "line 5: test 'client 1': invalid value 'fast'"
    );
    let e = parse("[target]\nloopback = true\n[[test]]\nkind = \"iperf\"\n");
    assert_eq!((e.line(), e.test()), (Some(4), None));
    assert!(
        matches!(e.kind(), PlanErrorKind::UnknownKind { number: 1, kind, .. } if kind == "iperf"),
        "{e:?}"
    );
    let e = parse("[target]\nloopback = true\n[[test]]\nkind = \"client\"\n[[threshold]]\nmetric = \"latency_p999\"\nmax = \"300\"\n");
    assert!(
        matches!(
            e.kind(),
            PlanErrorKind::Bound {
                key: "max",
                error: model::units::UnitError::NotATime(_)
            }
        ),
        "{e:?}"
    );
    let e = parse("[target]\nloopback = true\n");
    assert!(matches!(e.kind(), PlanErrorKind::NoTests), "{e:?}");
    assert_eq!(e.line(), None);
    let e = parse("[target]\nloopback = true\n[[test]]\nkind = \"client\"\ncolour = 1\n");
    assert!(matches!(e.kind(), PlanErrorKind::Toml(_)), "{e:?}");
    // A host's bad name and address keep the host error.
    let e = parse("[[host]]\nname = \"a b\"\naddress = \"x\"\n[[test]]\nkind = \"mesh\"\n");
    assert!(
        matches!(e.kind(), PlanErrorKind::Host(crate::hosts::HostError::BadName(n)) if n == "a b"),
        "{e:?}"
    );
    let e = parse("[[host]]\nname = \"a\"\naddress = \"x:y\"\n[[test]]\nkind = \"mesh\"\n");
    assert!(
        matches!(
            e.kind(),
            PlanErrorKind::HostAddress { host, error: crate::hosts::HostError::BadAddress(a) }
                if host == "a" && a == "x:y"
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "line 1: host 'a': address 'x:y' is not HOST[:PORT] (IPv6: [ADDR]:PORT)"
    );
    // Every plan error is a usage error (exit code 2).
    assert!(crate::Error::from(e).is_usage());
}
