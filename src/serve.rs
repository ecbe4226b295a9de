//! The long-running commands: `server` (serves tests to many clients at once),
//! `exporter` (tests on demand for Prometheus) and `frer relay` (a software 802.1CB relay
//! on this host's interfaces). Each runs until killed, Ctrl-C or its time is up.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use control::messages::Limits;
use control::server::{Server, ServerConfig};
use lab::relay::config::RelayConfig;

use crate::cli::{ExporterArgs, FrerRelayArgs, ServerArgs};
use crate::output::errln;
use crate::output::{print, stop_on_signals, usage};
use model::stop::Stop;

/// The host has no IPv6 (disabled, or not built in).
fn no_ipv6(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EAFNOSUPPORT | libc::EADDRNOTAVAIL | libc::EPROTONOSUPPORT)
    )
}

/// Sets `stop` after `d`.
fn stop_after(stop: &Stop, d: Duration) {
    let stop = stop.clone();
    std::thread::spawn(move || {
        std::thread::sleep(d);
        stop.raise();
    });
}

/// `wirebench server`.
pub fn server(a: &ServerArgs) -> Result<()> {
    let key = match &a.auth_key_file {
        Some(p) => Some(control::auth::load_key(p).map_err(|e| usage(e.to_string()))?),
        None => None,
    };
    if a.max_streams == 0 || a.max_tests == 0 {
        return Err(usage("--max-streams and --max-tests must be at least 1"));
    }
    // Clients say they are there every second: a shorter idle timeout ends every test.
    if a.idle_timeout < Duration::from_secs(2) {
        return Err(usage(format!(
            "--idle-timeout {} s: at least 2 s (clients speak every second)",
            a.idle_timeout.as_secs_f64()
        )));
    }
    let limits = Limits {
        max_rate_bps: a.max_rate.filter(|r| *r > 0.0),
        max_duration_s: a.max_duration.as_secs_f64(),
        max_streams: a.max_streams,
        max_tests: a.max_tests,
    };
    let auth = key.is_some();
    if a.allow_tuning && !auth {
        return Err(usage(
            "--allow-tuning lets clients change this host's interface: it needs --auth-key-file",
        ));
    }
    if !a.raw_ports.is_empty() {
        if !auth {
            return Err(usage(
                "--raw-ports lets clients send and receive raw frames on this host: it needs --auth-key-file",
            ));
        }
        if !campaign::is_root() {
            return Err(usage("--raw-ports needs root (CAP_NET_RAW)"));
        }
        for p in &a.raw_ports {
            if engine::sys::interface_index(p).is_err() {
                return Err(usage(format!("--raw-ports: no interface '{p}' here")));
            }
        }
    }
    if !(a.raw_max_rate.is_finite() && a.raw_max_rate > 0.0) {
        return Err(usage("--raw-max-rate must be above 0"));
    }
    if !a.third_party_peers.is_empty() && !a.allow_third_party {
        return Err(usage(
            "--third-party-peers limits --allow-third-party: give both",
        ));
    }
    if a.allow_third_party && !auth {
        return Err(usage(
            "--allow-third-party has this host send tests toward other servers for clients: it needs --auth-key-file (it authenticates to them with that key)",
        ));
    }
    if a.allow_tuning && !campaign::is_root() {
        return Err(usage(
            "--allow-tuning needs root (CAP_NET_ADMIN) to set MTUs and features",
        ));
    }
    // With -1 the first test that ends stops the server; so do SIGINT and SIGTERM, after
    // a tuned interface is put back.
    let stop = stop_on_signals()?;
    let finished = a.one_off.then(|| stop.clone());
    let limits = Limits {
        max_tests: if a.one_off { 1 } else { limits.max_tests },
        ..limits
    };
    // The metrics endpoint is bound before the server says it listens.
    let metrics = match a.metrics {
        Some(addr) => {
            let listener = std::net::TcpListener::bind(addr)
                .with_context(|| format!("--metrics {addr}: cannot listen"))?;
            let m = Arc::new(control::metrics::ServerMetrics::new());
            let (m2, s2) = (Arc::clone(&m), stop.clone());
            std::thread::Builder::new()
                .name("wb-metrics".into())
                .spawn(move || control::metrics::serve_http(listener, m2, &s2))?;
            Some(m)
        }
        None => None,
    };
    let bind_cfg = |ip: IpAddr| ServerConfig {
        bind: SocketAddr::new(ip, a.port),
        limits,
        key: key.clone(),
        handshake_timeout: a.handshake_timeout,
        allow_tuning: a.allow_tuning,
        finished: finished.clone(),
        metrics: metrics.clone(),
        gate: control::gate::GateConfig {
            per_source_handshakes: usize::from(a.max_handshakes_per_source),
            per_source_tests: usize::from(a.max_tests_per_source),
            spin_burst: a.max_spin_per_source,
            ipv6_prefix: a.ipv6_source_prefix,
            ..control::gate::GateConfig::default()
        },
        idle_timeout: a.idle_timeout,
        max_memory: a
            .max_memory
            .map_or_else(control::server::default_max_memory, |m| m as u64),
        rx_xdp: a.rx_backend == crate::cli::RxBackend::Xdp,
        raw_ports: a.raw_ports.clone(),
        raw_policy: control::server::RawPortPolicy {
            max_rate_bps: a.raw_max_rate,
            allow_spoof: a.raw_allow_spoof,
            allow_broadcast: a.raw_allow_broadcast,
            destinations: a.raw_destinations.clone(),
        },
        third_party: a.allow_third_party,
        third_party_peers: a.third_party_peers.clone(),
    };
    // Every IPv6 and IPv4 address by default; IPv4 alone where the host has no IPv6.
    let (server, ip) = match a.bind {
        Some(ip) => (Server::bind(bind_cfg(ip)), ip),
        None => match Server::bind(bind_cfg(Ipv6Addr::UNSPECIFIED.into())) {
            Err(e) if no_ipv6(&e) => (
                Server::bind(bind_cfg(Ipv4Addr::UNSPECIFIED.into())),
                Ipv4Addr::UNSPECIFIED.into(),
            ),
            r => (r, Ipv6Addr::UNSPECIFIED.into()),
        },
    };
    let server = server.with_context(|| format!("cannot listen on port {}", a.port))?;
    // Both ports are bound before the first line says the server listens.
    let iperf3_line = if a.no_iperf3 {
        None
    } else {
        Some(iperf3(a, ip, auth, &server, &stop)?)
    };
    errln!(
        "wirebench server listening on {} ({}{})",
        server.local_addr()?,
        if a.one_off {
            "one test, then it exits".to_owned()
        } else {
            format!("up to {} tests at once", a.max_tests)
        },
        match (auth, a.allow_tuning) {
            (true, true) => ", authentication required, tuning allowed",
            (true, false) => ", authentication required",
            _ => "",
        }
    );
    if let Some(line) = iperf3_line {
        errln!("{line}");
    }
    if let Some(addr) = a.metrics {
        errln!("metrics at http://{addr}/metrics");
    }
    if let Some(d) = a.run_for {
        stop_after(&stop, d);
    }
    server.serve(&stop)?;
    Ok(())
}

/// `wirebench exporter`: serves probes until Ctrl-C, SIGTERM or `--run-for`.
pub fn exporter(a: &ExporterArgs) -> Result<()> {
    if let Some(p) = &a.auth_key_file {
        control::auth::load_key(p).map_err(|e| usage(e.to_string()))?;
    }
    let cfg = campaign::exporter::Config {
        max_concurrent: usize::from(a.max_concurrent),
        max_secs: a.max_secs.as_secs_f64(),
        max_rate: a.max_rate.filter(|r| *r > 0.0),
        auth_key_file: a.auth_key_file.clone(),
        allow_targets: a.allow_target.clone(),
    };
    let listener = std::net::TcpListener::bind(a.listen)
        .with_context(|| format!("--listen {}: cannot listen", a.listen))?;
    let exporter = Arc::new(campaign::exporter::Exporter::new(
        cfg,
        Box::new(crate::requests::Parser),
    ));
    let stop = stop_on_signals()?;
    if let Some(d) = a.run_for {
        stop_after(&stop, d);
    }
    errln!(
        "wirebench exporter listening on http://{}/ (/probe, /metrics; {} probes at once)",
        listener.local_addr()?,
        a.max_concurrent
    );
    // The probes and scrapes of /metrics besides; the exporter answers extra probes 503.
    let open = usize::from(a.max_concurrent) + 16;
    let handler: Arc<control::http::Handler> = Arc::new(move |r| exporter.handle(r));
    control::http::serve(listener, &stop, open, handler)?;
    Ok(())
}

/// The iperf3 side: its own port under `server`'s admission; a port already taken (a
/// running `iperf3 -s`) is said, not fatal. A server with a key opens it only with
/// `--iperf3-open` (iperf3 clients cannot authenticate).
fn iperf3(a: &ServerArgs, ip: IpAddr, auth: bool, server: &Server, stop: &Stop) -> Result<String> {
    if auth && !a.iperf3_open {
        return Ok(format!(
            "no iperf3 clients: this server requires a key, which iperf3 cannot give (--iperf3-open serves them without one on port {})",
            a.iperf3_port
        ));
    }
    let listener = match control::iperf3::server::bind(SocketAddr::new(ip, a.iperf3_port)) {
        Ok(l) => l,
        Err(e) => {
            return Ok(format!(
                "wirebench server: no iperf3 clients on port {}: {e} (--iperf3-port N, or --no-iperf3)",
                a.iperf3_port
            ));
        }
    };
    server.serve_iperf3(listener, stop)?;
    Ok(format!(
        "serving iperf3 clients on port {}{}",
        a.iperf3_port,
        if auth {
            " (without a key: --iperf3-open)"
        } else {
            ""
        }
    ))
}

/// The relay's configuration: a TOML file, the JSON a lab hands over, or the flags.
fn relay_config(a: &FrerRelayArgs) -> Result<RelayConfig> {
    if let Some(path) = &a.config {
        let shown = path.display();
        let text = std::fs::read_to_string(path)
            .map_err(|e| usage(format!("cannot read {shown}: {e}")))?;
        return RelayConfig::from_toml(&text).map_err(|e| usage(format!("{shown}: {e}")));
    }
    if let Some(json) = &a.config_json {
        let c: RelayConfig =
            serde_json::from_str(json).map_err(|e| usage(format!("--config-json: {e}")))?;
        c.check()
            .map_err(|e| usage(format!("--config-json: {e}")))?;
        return Ok(c);
    }
    RelayConfig::from_flags(&crate::requests::relay_flags(a)).map_err(|e| usage(e.to_string()))
}

/// `wirebench frer relay`: runs until Ctrl-C, SIGTERM or `-t`, then prints its counters.
pub fn relay(a: &FrerRelayArgs) -> Result<()> {
    let cfg = relay_config(a)?;
    if let Some(t) = a.time {
        if !(t.is_finite() && t > 0.0 && t <= 1e9) {
            return Err(usage(format!(
                "-t {t}: give a number of seconds above 0 (at most 1e9)"
            )));
        }
    }
    if !campaign::is_root() {
        return Err(usage(
            "raw frames need root (CAP_NET_RAW): run it with sudo",
        ));
    }
    let state: PathBuf = match &a.state {
        Some(p) => p.clone(),
        None => {
            lab::naming::check(&a.name).map_err(|e| usage(format!("--name: {e}")))?;
            lab::relay::state::standalone_state(&a.name)
        }
    };
    let stop = stop_on_signals()?;
    if let Some(t) = a.time {
        stop_after(&stop, Duration::from_secs_f64(t));
    }
    let ports = cfg.ports().join(", ");
    if a.state.is_none() && a.netns_file.is_none() {
        errln!(
            "FRER relay on {ports}; counters: wirebench frer stats --state {}; Ctrl-C stops it",
            state.display()
        );
    }
    let end = lab::relay::process::run(&cfg, Some(&state), a.netns_file.as_deref(), &stop, a.fast)
        .with_context(|| format!("FRER relay on {ports}"))?;
    let params = serde_json::json!({ "ports": cfg.ports(), "state": state.display().to_string() });
    let mut doc = engine::env::result("frer relay", params);
    doc.relays = vec![end.report("relay".into())];
    print(&doc, a.json, report::text::relays);
    Ok(())
}
