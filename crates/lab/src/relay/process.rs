//! The relay as a process: either the kernel fast path on its ports ([`super::fast`];
//! this process then only runs the reset timers and publishes), or one promiscuous
//! AF_PACKET socket per port and a single-threaded loop (`ppoll` on all ports, drain in batches with recvmmsg, send with sendmmsg), the
//! timers of [`Relay::tick`] every pass, and the counters published to a state file (JSON,
//! replaced atomically every 200 ms) that `wirebench frer stats` and `wirebench lab status`
//! read. It stops when asked, or by itself when its network namespace is removed. A link
//! set down mid-test is counted, not fatal.

use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Duration;

use engine::clock::RealClock;
use engine::frameio::PacketSocket;
use engine::sys::{wait_readable, RecvBatch, SendBatch};
use model::clock::Clock;
use model::stop::Stop;
use model::wait::{Poll, Wait};
use serde::{Deserialize, Serialize};

use super::config::RelayConfig;
use super::core::{Relay, RelayCounters, MAX_FRAME};
use super::fast::{FastError, FastRelay};
use crate::managed::{read_json, send_all, write_json_atomic};
use crate::wait::Every;

const BATCH: usize = 64;
pub(crate) const PUBLISH_EVERY: Duration = Duration::from_millis(200);
/// The loop wakes at least this often to run the reset and latent-error timers.
const TICK: Duration = Duration::from_millis(10);

/// What a relay publishes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RelayState {
    /// Process id.
    pub pid: u32,
    /// False once it stopped.
    pub running: bool,
    /// Seconds it has been running.
    pub uptime_s: f64,
    /// The configuration it runs.
    pub config: Option<RelayConfig>,
    /// Its counters.
    pub counters: RelayCounters,
    /// Latent errors signalled, as (seconds since start, stream, drift), the last 100.
    pub latent_alarms: Vec<(f64, String, i64)>,
    /// Why it stopped, once it has.
    pub stopped: Option<String>,
    /// `kernel` (the BPF fast path) or `userspace`, with the reason the fast path did not
    /// run when it was asked for.
    #[serde(default)]
    pub data_path: String,
    /// Seconds the kernel has run the fast path's programs since the relay started;
    /// absent with the userspace data path or when the kernel does not count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_cpu_s: Option<f64>,
}

impl RelayState {
    /// The state of a relay starting now in this process on `data_path`; the state
    /// file's directory is made.
    fn starting(
        cfg: &RelayConfig,
        data_path: String,
        state_file: Option<&Path>,
    ) -> io::Result<Self> {
        if let Some(dir) = state_file.and_then(Path::parent) {
            std::fs::create_dir_all(dir)?;
        }
        Ok(RelayState {
            pid: std::process::id(),
            running: true,
            config: Some(cfg.clone()),
            data_path,
            ..RelayState::default()
        })
    }

    /// Takes `counters` and the time it has run, `uptime`, and writes the state to
    /// `state_file` (atomically) when there is one.
    fn publish(
        &mut self,
        counters: RelayCounters,
        uptime: Duration,
        state_file: Option<&Path>,
    ) -> io::Result<()> {
        self.counters = counters;
        self.uptime_s = uptime.as_secs_f64();
        match state_file {
            Some(p) => write_json_atomic(p, self),
            None => Ok(()),
        }
    }

    /// Reads a state file.
    ///
    /// # Errors
    /// Missing, unreadable or not a relay's state.
    pub fn read(path: &Path) -> io::Result<Self> {
        read_json(path)
    }
}

/// Adds what the sockets counted to the relay's port counters.
fn socket_counters(
    relay: &mut Relay,
    socks: &[PacketSocket],
    send_errors: &[u64],
    link_down: &[u64],
) {
    for (i, s) in socks.iter().enumerate() {
        let drops = s.take_statistics().map(|(_, d)| u64::from(d)).unwrap_or(0);
        if let Some(pc) = relay.port_counters_mut(i) {
            pc.kernel_drops += drops;
            pc.send_errors = send_errors[i];
            pc.link_down_events = link_down[i];
        }
    }
}

/// Runs the relay until `stop` is raised or the namespace file `netns` disappears; publishes
/// to `state_file` when given, and returns the final state. With `fast` the kernel fast
/// path ([`super::fast`]) forwards the frames when the kernel and the configuration allow;
/// otherwise (and without `fast`) the userspace loop does, and the state says why.
///
/// # Errors
/// The configuration does not check, a port is missing, or the sockets cannot be opened
/// (needs `CAP_NET_RAW`).
pub fn run(
    cfg: &RelayConfig,
    state_file: Option<&Path>,
    netns: Option<&Path>,
    stop: &Stop,
    fast: bool,
) -> io::Result<RelayState> {
    let mut relay =
        Relay::new(cfg, 0).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let data_path = if fast {
        match start_fast(cfg) {
            Ok(f) => return run_fast(f, cfg, state_file, netns, stop),
            Err(e) => crate::bpf::userspace_because("FRER", &e),
        }
    } else {
        "userspace".to_owned()
    };
    let socks: Vec<PacketSocket> = relay
        .ports()
        .iter()
        .map(|p| {
            let s = PacketSocket::open(p, true)
                .map_err(|e| io::Error::new(e.kind(), format!("port {p}: {e}")))?;
            // Room for bursts while the loop serves the other ports.
            let _ = s.set_receive_buffer(8 << 20);
            Ok(s)
        })
        .collect::<io::Result<_>>()?;
    let fds: Vec<_> = socks.iter().map(AsRawFd::as_raw_fd).collect();
    // Its monotonic time is the time since the relay started.
    let clock = RealClock::new();
    let now_ms = || clock.mono().as_millis() as u64;
    let mut state = RelayState::starting(cfg, data_path, state_file)?;
    let publish = |state: &mut RelayState, relay: &Relay| {
        state.publish(relay.counters(), clock.mono(), state_file)
    };
    publish(&mut state, &relay)?;
    let mut rx = RecvBatch::frames(BATCH, MAX_FRAME + 1);
    let mut tx: Vec<SendBatch> = socks
        .iter()
        .map(|_| SendBatch::new(BATCH, MAX_FRAME + frer::rtag::LEN))
        .collect();
    let mut pending = vec![0usize; socks.len()];
    let mut send_errors = vec![0u64; socks.len()];
    let mut link_down = vec![0u64; socks.len()];
    let mut logged = false;
    let mut publish_every = Every::new(PUBLISH_EVERY, clock.mono());
    let mut flush =
        |port: usize, tx: &mut [SendBatch], pending: &mut [usize], send_errors: &mut [u64]| {
            if let Some(e) = send_all(
                &socks[port],
                &mut tx[port],
                pending[port],
                &mut send_errors[port],
            ) {
                if !logged {
                    eprintln!("send on {}: {e}", socks[port].name);
                    logged = true;
                }
            }
            pending[port] = 0;
        };
    let stopped = loop {
        if stop.is_raised() {
            break "stopped".to_owned();
        }
        let ready = wait_readable(&fds, TICK)?;
        for from in 0..socks.len() {
            if ready & (1 << from) == 0 {
                continue;
            }
            for _ in 0..16 {
                let n = match rx.recv(&socks[from], true) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) if e.kind() == io::ErrorKind::NetworkDown => {
                        link_down[from] += 1;
                        break;
                    }
                    Err(e) => return Err(e),
                };
                let now = now_ms();
                for i in 0..n {
                    let Some((data, _)) = rx.get(i) else { break };
                    relay.on_frame(now, from, data, &mut |out, frame| {
                        if pending[out] == BATCH {
                            flush(out, &mut tx, &mut pending, &mut send_errors);
                        }
                        tx[out]
                            .slot_mut(pending[out], frame.len())
                            .copy_from_slice(frame);
                        pending[out] += 1;
                    });
                }
                for out in 0..socks.len() {
                    if pending[out] > 0 {
                        flush(out, &mut tx, &mut pending, &mut send_errors);
                    }
                }
                if n < BATCH {
                    break;
                }
            }
        }
        for (stream, drift) in relay.tick(now_ms()) {
            eprintln!("latent error on stream {stream}: drift {drift}");
            state
                .latent_alarms
                .push((clock.mono().as_secs_f64(), stream, drift));
            let excess = state.latent_alarms.len().saturating_sub(100);
            state.latent_alarms.drain(..excess);
        }
        if publish_every.due(clock.mono()) {
            socket_counters(&mut relay, &socks, &send_errors, &link_down);
            publish(&mut state, &relay)?;
            if netns.is_some_and(|n| !n.exists()) {
                break "its network namespace was removed".to_owned();
            }
        }
    };
    socket_counters(&mut relay, &socks, &send_errors, &link_down);
    state.running = false;
    state.stopped = Some(stopped);
    publish(&mut state, &relay)?;
    Ok(state)
}

/// The fast path loaded and attached to the ports of this network namespace.
fn start_fast(cfg: &RelayConfig) -> Result<FastRelay, FastError> {
    let ifindex = cfg
        .ports()
        .iter()
        .map(|p| {
            engine::sys::interface_index(p).map_err(|e| FastError::Kernel {
                what: format!("port {p}"),
                source: Box::new(e),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut f = FastRelay::load(cfg, &ifindex)?;
    f.attach()?;
    Ok(f)
}

/// The relay with the kernel fast path forwarding: this process only runs the reset
/// timers (every [`TICK`]) and publishes the counters. The programs leave the ports with
/// the process (their links close with it, however it ends).
fn run_fast(
    mut fast: FastRelay,
    cfg: &RelayConfig,
    state_file: Option<&Path>,
    netns: Option<&Path>,
    stop: &Stop,
) -> io::Result<RelayState> {
    // Its monotonic time is the time since the relay started.
    let clock = RealClock::new();
    let stats = crate::bpf::RunTimeStats::enable();
    let mut state = RelayState::starting(cfg, "kernel".to_owned(), state_file)?;
    let publish = |state: &mut RelayState, fast: &mut FastRelay| {
        let counters = fast
            .counters()
            .map_err(|e| io::Error::other(e.to_string()))?;
        if stats.counting() {
            state.kernel_cpu_s = fast.run_time().map(|t| t.as_secs_f64());
        }
        state.publish(counters, clock.mono(), state_file)
    };
    publish(&mut state, &mut fast)?;
    let mut publish_every = Every::new(PUBLISH_EVERY, clock.mono());
    let mut tick_warned = false;
    let ran = Wait::on(&clock).or_stop(stop).poll(|| {
        // A refused timer run is retried at the next tick (the frames keep flowing).
        if let Err(e) = fast.tick() {
            if !tick_warned {
                tick_warned = true;
                tracing::warn!("FRER fast path: the reset timers did not run: {e}");
            }
        }
        if publish_every.due(clock.mono()) {
            if let Err(e) = publish(&mut state, &mut fast) {
                return Poll::Ready(Err(e));
            }
            if netns.is_some_and(|n| !n.exists()) {
                return Poll::Ready(Ok("its network namespace was removed".to_owned()));
            }
        }
        Poll::Wait(TICK)
    });
    let stopped = ran
        .ready()
        .transpose()?
        .unwrap_or_else(|| "stopped".to_owned());
    state.running = false;
    state.stopped = Some(stopped);
    publish(&mut state, &mut fast)?;
    Ok(state)
}
