//! One typed builder for every `ip`/`sysctl` action the lab takes, and the runners that
//! execute or only print them.
//!
//! A [`Cmd`] prints as a shell line a user can paste (`--dry-run`); a [`SystemRunner`] runs
//! it and turns a non-zero exit into [`LabError::Command`] with the tool's stderr.

use std::fmt;
use std::net::Ipv4Addr;
use std::process::Command;

use crate::LabError;

/// One command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cmd {
    /// The program (`ip`, `sysctl`).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// When set, the lab does this through a kernel interface instead of running the
    /// program; the command line is what a user would type for the same (a dry run prints
    /// it).
    pub kernel: Option<KernelCall>,
}

/// What the lab does through a kernel interface rather than a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelCall {
    /// Turns the offloads a user-space stage needs off ([`engine::nic::STAGE_OFFLOADS`])
    /// on `dev` in namespace `ns`, through the ethtool ioctl.
    OffloadsOff {
        /// The namespace.
        ns: String,
        /// The interface.
        dev: String,
    },
    /// Sets bridge `bridge`'s learning limit in namespace `ns` over rtnetlink
    /// ([`engine::bridge::set_learning_limit`]): this host's iproute2 (6.1) has no word for
    /// it.
    LearningLimit {
        /// The namespace.
        ns: String,
        /// The bridge.
        bridge: String,
        /// Most dynamically learned FDB entries (0: no limit).
        limit: u32,
    },
}

impl KernelCall {
    fn apply(&self) -> std::io::Result<()> {
        match self {
            KernelCall::OffloadsOff { ns, dev } => engine::frameio::in_netns(Some(ns), || {
                engine::nic::offloads_off(dev, &engine::nic::STAGE_OFFLOADS)
            })?,
            KernelCall::LearningLimit { ns, bridge, limit } => {
                engine::frameio::in_netns(Some(ns), || {
                    engine::bridge::set_learning_limit(bridge, *limit).map(drop)
                })?
            }
        }
    }
}

impl Cmd {
    /// The process to start.
    fn command(&self) -> Command {
        let mut c = Command::new(&self.program);
        c.args(&self.args);
        c
    }

    /// The error of this command failing with `detail`.
    fn failed(&self, detail: impl fmt::Display) -> LabError {
        LabError::Command {
            cmd: self.to_string(),
            detail: detail.to_string(),
        }
    }

    fn new(program: &str, args: &[&str]) -> Self {
        Self {
            program: program.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            kernel: None,
        }
    }

    /// `tc ARGS...`
    pub fn tc(args: Vec<String>) -> Self {
        Self {
            program: "tc".into(),
            args,
            kernel: None,
        }
    }

    /// `ip netns add NS`
    pub fn netns_add(ns: &str) -> Self {
        Self::new("ip", &["netns", "add", ns])
    }

    /// `ip netns del NS`
    pub fn netns_del(ns: &str) -> Self {
        Self::new("ip", &["netns", "del", ns])
    }

    /// `ip netns list`
    pub fn netns_list() -> Self {
        Self::new("ip", &["netns", "list"])
    }

    /// A veth pair with one end in each namespace, created there directly, each end with
    /// `queues` transmit and receive queues (a generator's threads, or AF_XDP sockets, take
    /// one each, as on a multi-queue NIC).
    pub fn veth(ns_a: &str, if_a: &str, ns_b: &str, if_b: &str, queues: u16) -> Self {
        let q = queues.max(1).to_string();
        Self::new(
            "ip",
            &[
                "link",
                "add",
                if_a,
                "netns",
                ns_a,
                "numtxqueues",
                &q,
                "numrxqueues",
                &q,
                "type",
                "veth",
                "peer",
                "name",
                if_b,
                "netns",
                ns_b,
                "numtxqueues",
                &q,
                "numrxqueues",
                &q,
            ],
        )
    }

    /// `ip -n NS link set DEV address MAC`
    pub fn set_mac(ns: &str, dev: &str, mac: [u8; 6]) -> Self {
        let m = wire::EthernetAddress(mac).to_string();
        Self::new("ip", &["-n", ns, "link", "set", dev, "address", &m])
    }

    /// `ip -n NS link set DEV mtu MTU`
    pub fn set_mtu(ns: &str, dev: &str, mtu: u16) -> Self {
        Self::new(
            "ip",
            &["-n", ns, "link", "set", dev, "mtu", &mtu.to_string()],
        )
    }

    /// `ip -n NS neigh replace ADDR lladdr MAC dev DEV nud permanent`
    pub fn neigh_permanent(ns: &str, dev: &str, addr: Ipv4Addr, mac: [u8; 6]) -> Self {
        let m = wire::EthernetAddress(mac).to_string();
        Self::new(
            "ip",
            &[
                "-n",
                ns,
                "neigh",
                "replace",
                &addr.to_string(),
                "lladdr",
                &m,
                "dev",
                dev,
                "nud",
                "permanent",
            ],
        )
    }

    /// `ip -n NS addr add ADDR/PREFIX dev DEV`
    pub fn addr_add(ns: &str, dev: &str, addr: Ipv4Addr, prefix: u8) -> Self {
        Self::new(
            "ip",
            &[
                "-n",
                ns,
                "addr",
                "add",
                &format!("{addr}/{prefix}"),
                "dev",
                dev,
            ],
        )
    }

    /// `ip -n NS link add NAME type bridge [vlan_filtering 1] [ageing_time CS]`: a Linux
    /// bridge, its FDB ageing time in seconds (`ip` takes centiseconds).
    pub fn bridge_add(ns: &str, name: &str, vlan_filtering: bool, ageing_s: Option<u32>) -> Self {
        let mut c = Self::new("ip", &["-n", ns, "link", "add", name, "type", "bridge"]);
        if vlan_filtering {
            c.args.extend(["vlan_filtering".into(), "1".into()]);
        }
        if let Some(s) = ageing_s {
            c.args
                .extend(["ageing_time".into(), (u64::from(s) * 100).to_string()]);
        }
        c
    }

    /// `ip -n NS link set BRIDGE type bridge SETTINGS...`
    fn bridge_set(ns: &str, bridge: &str, settings: &[&str]) -> Self {
        let mut c = Self::new("ip", &["-n", ns, "link", "set", bridge, "type", "bridge"]);
        c.args.extend(settings.iter().map(|a| (*a).to_owned()));
        c
    }

    /// `ip -n NS link set BRIDGE type bridge fdb_max_learned N`, done over rtnetlink (the
    /// line is what an iproute2 that knows the setting takes).
    pub fn learning_limit(ns: &str, bridge: &str, limit: u32) -> Self {
        let mut c = Self::bridge_set(ns, bridge, &["fdb_max_learned", &limit.to_string()]);
        c.kernel = Some(KernelCall::LearningLimit {
            ns: ns.to_owned(),
            bridge: bridge.to_owned(),
            limit,
        });
        c
    }

    /// `ip -n NS link set BRIDGE type bridge fdb_flush`: forgets every learned address.
    pub fn bridge_flush(ns: &str, bridge: &str) -> Self {
        Self::bridge_set(ns, bridge, &["fdb_flush"])
    }

    /// `ip -n NS link set DEV master BRIDGE`
    pub fn set_master(ns: &str, dev: &str, bridge: &str) -> Self {
        Self::new("ip", &["-n", ns, "link", "set", dev, "master", bridge])
    }

    /// `ip -n NS link set DEV up`
    pub fn link_up(ns: &str, dev: &str) -> Self {
        Self::new("ip", &["-n", ns, "link", "set", dev, "up"])
    }

    /// `ip -n NS route add default via GW`
    pub fn default_route(ns: &str, via: Ipv4Addr) -> Self {
        Self::new(
            "ip",
            &["-n", ns, "route", "add", "default", "via", &via.to_string()],
        )
    }

    /// `ip -n NS route add NET/LEN via GW`
    pub fn route_add(ns: &str, net: Ipv4Addr, len: u8, via: Ipv4Addr) -> Self {
        Self::new(
            "ip",
            &[
                "-n",
                ns,
                "route",
                "add",
                &format!("{net}/{len}"),
                "via",
                &via.to_string(),
            ],
        )
    }

    /// Transmit checksums, TCP and generic segmentation offloads off on `dev` in `ns`, so
    /// the stack computes checksums and cuts segments and a frame seen by a raw socket is
    /// complete and final (a userspace stage on the path could not finish a partial
    /// checksum or split a 64 KB segment). Done through the ethtool ioctl; a dry run
    /// prints the equivalent `ethtool -K` line.
    pub fn offloads_off(ns: &str, dev: &str) -> Self {
        let typed = format!("ethtool -K {dev} tx off tso off gso off");
        let mut c = Self::new("ip", &["netns", "exec", ns]);
        c.args.extend(typed.split(' ').map(str::to_owned));
        c.kernel = Some(KernelCall::OffloadsOff {
            ns: ns.to_owned(),
            dev: dev.to_owned(),
        });
        c
    }

    /// `ip netns pids NS`: the processes living in the namespace.
    pub fn netns_pids(ns: &str) -> Self {
        Self::new("ip", &["netns", "pids", ns])
    }

    /// `kill -SIGNAL PID...`
    pub fn kill(signal: &str, pids: &[u32]) -> Self {
        let mut c = Self::new("kill", &[&format!("-{signal}")]);
        c.args.extend(pids.iter().map(u32::to_string));
        c
    }

    /// `ip netns exec NS sysctl -qw KEY=VALUE`
    pub fn sysctl(ns: &str, key: &str, value: &str) -> Self {
        Self::new(
            "ip",
            &[
                "netns",
                "exec",
                ns,
                "sysctl",
                "-qw",
                &format!("{key}={value}"),
            ],
        )
    }

    /// `ip -n NS -br addr`: one line per interface with its addresses.
    pub fn brief_addrs(ns: &str) -> Self {
        Self::new("ip", &["-n", ns, "-br", "addr"])
    }

    /// `tc -n NS -s qdisc show dev DEV`: the device's qdiscs with their counters.
    pub fn qdisc_stats(ns: &str, dev: &str) -> Self {
        Self::new("tc", &["-n", ns, "-s", "qdisc", "show", "dev", dev])
    }

    /// `tc -n NS -s class show dev DEV`: HTB classes with their counters.
    pub fn class_stats(ns: &str, dev: &str) -> Self {
        Self::new("tc", &["-n", ns, "-s", "class", "show", "dev", dev])
    }

    /// `ip [-n NS] -j ARGS...`: a query answered in JSON.
    pub fn ip_json(ns: Option<&str>, args: &[&str]) -> Self {
        let mut c = Self::new("ip", &[]);
        if let Some(ns) = ns {
            c.args.extend(["-n".to_owned(), ns.to_owned()]);
        }
        c.args.push("-j".into());
        c.args.extend(args.iter().map(|a| (*a).to_owned()));
        c
    }

    /// `ip -n NS link add NAME type ifb`: an intermediate functional block, whose egress
    /// shapes what another interface receives.
    pub fn ifb(ns: &str, name: &str) -> Self {
        Self::new("ip", &["-n", ns, "link", "add", name, "type", "ifb"])
    }

    /// `sh -c LINE`: a command the user wrote (e.g. how to reconfigure a device under test).
    pub fn shell(line: &str) -> Self {
        Self::new("sh", &["-c", line])
    }

    /// `ip netns exec NS ARGV...`
    pub fn exec_in(ns: &str, argv: &[String]) -> Self {
        let mut c = Self::new("ip", &["netns", "exec", ns]);
        c.args.extend(argv.iter().cloned());
        c
    }
}

impl fmt::Display for Cmd {
    /// Shell-quoted, ready to paste.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.program)?;
        for a in &self.args {
            let plain = !a.is_empty()
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b));
            if plain {
                write!(f, " {a}")?;
            } else {
                write!(f, " '{}'", a.replace('\'', r"'\''"))?;
            }
        }
        Ok(())
    }
}

/// Something that carries out commands.
pub trait Runner {
    /// Runs `cmd` and returns its standard output.
    fn run(&mut self, cmd: &Cmd) -> Result<String, LabError>;
    /// Only printing, not acting: queries return nothing and nothing exists.
    fn is_dry(&self) -> bool {
        false
    }
    /// Whether it acts on this machine, so that building or removing a lab takes the
    /// lab name's lock (a file under `/run`); dry runs and test doubles that only record
    /// commands (the default) take none.
    fn acts_on_this_machine(&self) -> bool {
        false
    }
    /// Starts `cmd` in the background, detached from this process and its terminal
    /// (its own process group, so Ctrl-C here does not reach it), with its output in
    /// `log`; returns its pid. The default runs it to completion (for test doubles).
    fn spawn(&mut self, cmd: &Cmd, log: &std::path::Path) -> Result<u32, LabError> {
        let _ = log;
        self.run(cmd).map(|_| 0)
    }
}

/// Runs commands on this machine.
#[derive(Debug, Default)]
pub struct SystemRunner;

impl Runner for SystemRunner {
    fn acts_on_this_machine(&self) -> bool {
        true
    }

    fn run(&mut self, cmd: &Cmd) -> Result<String, LabError> {
        if let Some(k) = &cmd.kernel {
            k.apply().map_err(|e| cmd.failed(e))?;
            return Ok(String::new());
        }
        let out = cmd.command().output().map_err(|e| cmd.failed(e))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(cmd.failed(format!("{}: {}", out.status, stderr.trim())));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn spawn(&mut self, cmd: &Cmd, log: &std::path::Path) -> Result<u32, LabError> {
        use std::os::unix::process::CommandExt;
        let err = |e: std::io::Error| cmd.failed(e);
        let out = std::fs::File::create(log).map_err(err)?;
        let mut child = cmd
            .command()
            .stdin(std::process::Stdio::null())
            .stdout(out.try_clone().map_err(err)?)
            .stderr(out)
            .process_group(0)
            .spawn()
            .map_err(err)?;
        let pid = child.id();
        // Reap it when it ends while this process still runs (no zombie left behind).
        std::thread::spawn(move || {
            let _ = child.wait();
        });
        Ok(pid)
    }
}

/// Records the commands instead of running them.
#[derive(Debug, Default)]
pub struct DryRun {
    /// The commands, in order.
    pub lines: Vec<String>,
}

impl Runner for DryRun {
    fn run(&mut self, cmd: &Cmd) -> Result<String, LabError> {
        self.lines.push(cmd.to_string());
        Ok(String::new())
    }

    fn is_dry(&self) -> bool {
        true
    }

    fn spawn(&mut self, cmd: &Cmd, log: &std::path::Path) -> Result<u32, LabError> {
        self.lines
            .push(format!("setsid {cmd} > {} 2>&1 &", log.display()));
        Ok(0)
    }
}

/// Runs `cmd` attached to this terminal (its output is the user's) and returns its exit
/// code (1 when a signal ended it).
///
/// # Errors
/// It cannot be started.
pub fn run_attached(cmd: &Cmd) -> Result<i32, LabError> {
    let status = cmd.command().status().map_err(|e| cmd.failed(e))?;
    Ok(status.code().unwrap_or(1))
}

/// Whether this process runs as root (effective uid 0): [`engine::sys::is_root`].
pub use engine::sys::is_root;

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn prints_as_pasteable_shell() {
        let c = Cmd::veth("wb-t-a", "eth0", "wb-t-b", "eth0", 2);
        assert_eq!(
            c.to_string(),
            "ip link add eth0 netns wb-t-a numtxqueues 2 numrxqueues 2 type veth peer name eth0 netns wb-t-b numtxqueues 2 numrxqueues 2"
        );
        let c = Cmd::addr_add("wb-t-a", "eth0", Ipv4Addr::new(198, 18, 0, 1), 24);
        assert_eq!(
            c.to_string(),
            "ip -n wb-t-a addr add 198.18.0.1/24 dev eth0"
        );
        let c = Cmd::exec_in(
            "wb-t-a",
            &["sh".into(), "-c".into(), "echo 'hi there'".into()],
        );
        assert_eq!(
            c.to_string(),
            r"ip netns exec wb-t-a sh -c 'echo '\''hi there'\'''"
        );
        assert_eq!(
            Cmd::set_mac("n", "eth0", [2, 0x77, 0x62, 0, 1, 0xa]).to_string(),
            "ip -n n link set eth0 address 02:77:62:00:01:0a"
        );
    }

    #[test]
    fn dry_run_records_in_order() {
        let mut d = DryRun::default();
        d.run(&Cmd::netns_add("x")).unwrap();
        d.run(&Cmd::netns_del("x")).unwrap();
        assert_eq!(d.lines, ["ip netns add x", "ip netns del x"]);
        assert!(d.is_dry());
    }
}
