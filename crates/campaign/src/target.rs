//! What a plan's tests run against, set up and torn down: a wirebench server of this run
//! on loopback, a given host, or a lab built through `lab` with a server of this run in
//! its listener's namespace (both removed when the [`Setup`] is dropped).

use control::server::{Server, ServerConfig, ServerHandle};
use engine::frameio::in_netns;
use model::results::campaign::InterfaceFacts;

use crate::hosts::PlanHost;
use crate::Error;

/// What a plan's tests run against.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// A server of this run on 127.0.0.1 (no root needed).
    Loopback,
    /// A running `wirebench server`; raw tests use `tx`/`rx` of this host.
    Host {
        /// Address.
        host: String,
        /// Control port.
        port: u16,
        /// Raw sending port of this host.
        tx: Option<String>,
        /// Raw receiving port of this host.
        rx: Option<String>,
    },
    /// No target of its own: every test names the plan's hosts it uses (or has a lab).
    Hosts,
    /// A lab built before the tests and removed after.
    Lab {
        /// What `lab up` builds.
        request: lab::topology::Request,
        /// Its flags as written (for the description).
        args: Vec<String>,
    },
}

/// Where the tests of a set-up target are pointed.
#[derive(Debug, Clone, PartialEq)]
pub struct Context {
    /// Server address for server-based tests.
    pub host: String,
    /// Its control port.
    pub port: u16,
    /// The lab's name, when the target is a lab.
    pub lab: Option<String>,
    /// Raw ports for rfc2544 (`talker:eth0` in a lab).
    pub raw: Option<(String, String)>,
    /// The key file of the server, when it asks for one (a plan's host).
    pub key_file: Option<std::path::PathBuf>,
    /// The plan's hosts, as resolved for this run (tests that name hosts use them).
    pub hosts: Vec<PlanHost>,
    /// The run's lab name: the prefix of the labs a test builds of its own (`frer
    /// compare`'s PREFIXc and PREFIXf) unless its flags name them.
    pub labs: String,
}

impl Context {
    /// The context a plan is checked with before anything exists (without hosts).
    pub fn stand_in(target: &Target) -> Self {
        let server = |host: &str, port: u16| Self {
            host: host.into(),
            port,
            lab: None,
            raw: None,
            key_file: None,
            hosts: Vec::new(),
            labs: "plan".into(),
        };
        match target {
            Target::Loopback => server("127.0.0.1", control::DEFAULT_PORT),
            Target::Hosts => server("", control::DEFAULT_PORT),
            Target::Host { host, port, tx, rx } => Self {
                raw: tx.clone().zip(rx.clone()),
                ..server(host, *port)
            },
            Target::Lab { .. } => Self {
                lab: Some("plan".into()),
                raw: Some(("talker:eth0".into(), "listener:eth0".into())),
                ..server("198.18.0.2", control::DEFAULT_PORT)
            },
        }
    }

    /// Tests against the plan's host `h`, in a run whose labs are named `labs`.
    pub fn on_host(h: &PlanHost, labs: &str) -> Self {
        Self {
            host: h.host.clone(),
            port: h.port,
            lab: None,
            raw: None,
            key_file: h.key_file.clone(),
            hosts: Vec::new(),
            labs: labs.to_owned(),
        }
    }
}

/// A target that is set up; dropping it stops the server of this run and removes the lab.
pub struct Setup {
    /// Where tests are pointed.
    pub ctx: Context,
    /// How the target is described in the results.
    pub described: String,
    /// The server of this run (loopback, or in the lab's listener).
    server: Option<ServerHandle>,
    /// The lab, when this set-up built one.
    lab: Option<String>,
    /// Its talker node (named `talker`, or marked `talker = true`), if it has one.
    talker: Option<String>,
}

impl Drop for Setup {
    fn drop(&mut self) {
        self.server.take();
        if let Some(l) = &self.lab {
            let _ = lab::Lab::down(l, &mut lab::SystemRunner);
        }
    }
}

/// A server of this run, bound now (it accepts once this returns).
pub(crate) fn serve(bind: std::net::SocketAddr) -> std::io::Result<ServerHandle> {
    Server::bind(ServerConfig {
        bind,
        limits: control::messages::Limits::default(),
        key: None,
        handshake_timeout: control::server::HANDSHAKE_TIMEOUT,
        allow_tuning: false,
        finished: None,
        metrics: None,
        gate: control::gate::GateConfig::default(),
        idle_timeout: control::server::IDLE_TIMEOUT,
        max_memory: control::server::default_max_memory(),
        rx_xdp: false,
        raw_ports: Vec::new(),
        raw_policy: control::server::RawPortPolicy::default(),
        third_party: false,
        third_party_peers: Vec::new(),
    })?
    .spawn()
}

impl Setup {
    /// Sets up `target`; a lab is built as `lab_name`.
    ///
    /// # Errors
    /// The loopback server cannot listen, the lab cannot be built (it is removed again), or
    /// the lab's topology has no listener with an address.
    pub fn new(target: &Target, lab_name: &str) -> Result<Setup, Error> {
        match target {
            Target::Loopback => {
                let handle = serve(
                    "127.0.0.1:0"
                        .parse()
                        .map_err(|_| Error::Failed("bad address".into()))?,
                )
                .map_err(|e| Error::Failed(format!("cannot start the loopback server: {e}")))?;
                let port = handle.addr().port();
                Ok(Setup {
                    ctx: Context {
                        port,
                        ..Context::stand_in(target)
                    },
                    described: format!(
                        "loopback (a wirebench server of this run on 127.0.0.1:{port})"
                    ),
                    server: Some(handle),
                    lab: None,
                    talker: None,
                })
            }
            Target::Host { host, port, .. } => Ok(Setup {
                ctx: Context::stand_in(target),
                described: format!("host {host} (wirebench server on port {port})"),
                server: None,
                lab: None,
                talker: None,
            }),
            Target::Hosts => Ok(Setup {
                ctx: Context::stand_in(target),
                described: "the plan's hosts".into(),
                server: None,
                lab: None,
                talker: None,
            }),
            Target::Lab { request, args } => {
                // As a run sees it, a lab that cannot be built is a run that could not
                // start, whatever the reason: the command says which lab.
                let failed = |e: lab::LabError| {
                    let line = format!(
                        "lab up {} --name {lab_name} {}",
                        request.topology,
                        args.join(" ")
                    );
                    Error::Failed(format!("`wirebench {}` failed: {e}", line.trim_end()))
                };
                let topo = request.resolve().map_err(failed)?;
                let node = topo.listener_node().unwrap_or("listener").to_owned();
                let listener = topo.address_of(&node).ok_or_else(|| {
                    Error::Usage(format!(
                        "topology '{}' has no listener node with an address (a node named \
                         listener, or one a topology file marks listener = true): the plan's \
                         server runs there",
                        request.topology
                    ))
                })?;
                // Owned by this run: left behind by a killed run, it is stale, and the
                // next run of the name removes it first.
                lab::Lab::up_owned(lab_name, &topo, &mut lab::SystemRunner, false, None)
                    .map_err(failed)?;
                let mut setup = Setup {
                    ctx: Context {
                        host: listener.to_string(),
                        lab: Some(lab_name.into()),
                        ..Context::stand_in(target)
                    },
                    described: format!("lab '{lab_name}': {} {}", request.topology, args.join(" "))
                        .trim_end()
                        .to_owned(),
                    server: None,
                    lab: Some(lab_name.into()),
                    talker: topo.talker_node().map(str::to_owned),
                };
                // The server and every thread it starts live in the listener's namespace.
                let ns = lab::naming::namespace(lab_name, &node);
                let bind = std::net::SocketAddr::new(listener.into(), control::DEFAULT_PORT);
                let handle = in_netns(Some(&ns), || serve(bind))?
                    .map_err(|e| Error::Failed(format!("cannot start the lab's server: {e}")))?;
                setup.server = Some(handle);
                Ok(setup)
            }
        }
    }

    /// The lab this set-up built.
    pub fn lab(&self) -> Option<&str> {
        self.lab.as_deref()
    }

    /// The namespace server-based tests run in: the lab's talker, or this host's (`None`).
    ///
    /// # Errors
    /// The lab has no talker node.
    pub fn client_ns(&self) -> Result<Option<String>, Error> {
        match (&self.lab, &self.talker) {
            (None, _) => Ok(None),
            (Some(l), Some(t)) => Ok(Some(lab::naming::namespace(l, t))),
            (Some(l), None) => Err(Error::Usage(format!(
                "lab '{l}' has no talker node (a node named talker, or one its topology file \
                 marks talker = true): a plan's server-based tests run there"
            ))),
        }
    }

    /// Where server-based tests run, as the results name it.
    pub fn client_node(&self) -> String {
        match (&self.lab, &self.talker) {
            (Some(l), Some(t)) if t == "talker" => format!("talker of lab {l}"),
            (Some(l), Some(t)) => format!("{t} (talker) of lab {l}"),
            (Some(l), None) => format!("lab {l}, which has no talker"),
            (None, _) => "this host".into(),
        }
    }

    /// The interfaces that took part: every node of the lab, or this host's (only `lo`
    /// for a loopback run).
    pub fn interfaces(&self) -> Vec<InterfaceFacts> {
        let runner = &mut lab::SystemRunner;
        match &self.lab {
            Some(l) => {
                let nodes = lab::lifecycle::lab_namespaces(runner).unwrap_or_default();
                nodes
                    .into_iter()
                    .filter(|(_, lab, _)| lab == l)
                    .flat_map(|(ns, _, node)| {
                        lab::probe::interfaces(runner, &node, Some(&ns), |n| n != "lo")
                    })
                    .collect()
            }
            None => {
                let only_lo = self.ctx.host == "127.0.0.1";
                lab::probe::interfaces(runner, "host", None, |n| !only_lo || n == "lo")
            }
        }
    }
}
