//! What the lab's kernel fast paths share: their error, and the lookups of programs and
//! maps in an object from `bpf/` (loaded with aya). The fast paths themselves are
//! [`crate::relay::fast`] and [`crate::impair::fast`]; the map types' mirrors are in
//! `engine::sys::bpf`.

use aya::programs::links::LinkOrder;
use aya::programs::tc::TcAttachOptions;
use aya::programs::{SchedClassifier, TcAttachType, TestRun, TestRunOptions};
use aya::Ebpf;

/// tc verdicts of the programs (`linux/pkt_cls.h`): left to the host's stack.
pub const TC_ACT_OK: i32 = 0;
/// Dropped.
pub const TC_ACT_SHOT: i32 = 2;
/// Sent on (to another interface).
pub const TC_ACT_REDIRECT: i32 = 7;

/// `BPF_F_LOCK`: map reads and writes under the value's `bpf_spin_lock`.
pub const BPF_F_LOCK: u64 = 4;

/// Why a fast path cannot run.
#[derive(Debug, thiserror::Error)]
pub enum FastError {
    /// The configuration needs the userspace data path.
    #[error("{0}")]
    Unsupported(String),
    /// The relay's configuration does not check.
    #[error(transparent)]
    Config(#[from] crate::relay::config::ConfigError),
    /// The kernel refused to load or attach the program, or a map operation failed.
    #[error("{what}: {source}")]
    Kernel {
        /// What was being done.
        what: String,
        /// The kernel's (aya's) error.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl FastError {
    /// The first line, at most 200 characters: the kernel's answer may carry a whole
    /// verifier log, which belongs in the log, not in a state file.
    pub fn summary(&self) -> String {
        let why = self.to_string();
        why.lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(200)
            .collect()
    }
}

/// The data path a process runs when its fast path would not start (`e`): the whole
/// answer goes to the log (a verifier log can be long), its first line into the state.
pub fn userspace_because(what: &str, e: &FastError) -> String {
    tracing::warn!("{what} fast path not used ({e}): user space forwards");
    format!("userspace (fast path not used: {})", e.summary())
}

/// Maps an aya error to [`FastError::Kernel`] saying what was being done.
pub(crate) fn kernel<E: std::error::Error + Send + Sync + 'static>(
    what: &str,
) -> impl FnOnce(E) -> FastError + '_ {
    move |e| FastError::Kernel {
        what: what.to_owned(),
        source: Box::new(e),
    }
}

/// The kernel counts the run time of BPF programs while a process holds this
/// (`BPF_ENABLE_STATS`, Linux 5.8): a fast path's own CPU cost. Counting adds a clock read
/// per program run, for every program of the host, until the last holder goes.
pub struct RunTimeStats(Option<std::os::fd::OwnedFd>);

impl RunTimeStats {
    /// Asks the kernel to count; without it (older kernel, no privileges) nothing is
    /// counted and the run times read stay where they were.
    pub fn enable() -> Self {
        match aya::sys::enable_stats(aya::sys::Stats::RunTime) {
            Ok(fd) => Self(Some(fd)),
            Err(e) => {
                tracing::info!("the kernel does not count BPF run times: {e}");
                Self(None)
            }
        }
    }

    /// Whether the kernel counts.
    pub fn counting(&self) -> bool {
        self.0.is_some()
    }
}

/// A loaded object from `bpf/`, named for errors.
pub(crate) struct Object {
    pub(crate) ebpf: Ebpf,
    name: &'static str,
}

impl Object {
    /// Loads `bytes` (the object `bpf/NAME`).
    pub(crate) fn load(bytes: &[u8], name: &'static str) -> Result<Self, FastError> {
        let ebpf = aya::EbpfLoader::new()
            .load(bytes)
            .map_err(kernel(&format!("loading bpf/{name}")))?;
        Ok(Self { ebpf, name })
    }

    /// The tc program `name`.
    pub(crate) fn program(&mut self, name: &str) -> Result<&mut SchedClassifier, FastError> {
        let object = self.name;
        let p = self
            .ebpf
            .program_mut(name)
            .ok_or_else(|| missing(object, format!("program {name}")))?;
        p.try_into().map_err(kernel(name))
    }

    /// How long the kernel has run the programs `names` (loaded), summed, since it began
    /// counting (see [`RunTimeStats`]); `None` when a program cannot be read.
    pub(crate) fn run_time(&mut self, names: &[&str]) -> Option<std::time::Duration> {
        let mut total = std::time::Duration::ZERO;
        for name in names {
            total += self.program(name).ok()?.info().ok()?.run_time();
        }
        Some(total)
    }

    /// The map `name`, to change.
    pub(crate) fn map_mut(&mut self, name: &str) -> Result<&mut aya::maps::Map, FastError> {
        let object = self.name;
        self.ebpf
            .map_mut(name)
            .ok_or_else(|| missing(object, format!("map {name}")))
    }

    /// Loads the tc programs `names` into the kernel (the verifier runs here).
    pub(crate) fn load_programs(&mut self, names: &[&str]) -> Result<(), FastError> {
        for name in names {
            self.program(name)?.load().map_err(kernel(name))?;
        }
        Ok(())
    }

    /// Attaches program `name` to the ingress of every interface in `ifaces` (of this
    /// network namespace, by name) through TCX links (Linux 6.6 and later), which the
    /// kernel removes with the last descriptor: with this value, or with the process
    /// however it ends. No netlink (cls_bpf) attachment, which would outlive a killed
    /// process.
    pub(crate) fn attach_ingress(
        &mut self,
        name: &str,
        ifaces: &[String],
    ) -> Result<(), FastError> {
        let p = self.program(name)?;
        for iface in ifaces {
            let order = TcAttachOptions::TcxOrder(LinkOrder::default());
            p.attach_with_options(iface, TcAttachType::Ingress, order)
                .map_err(kernel(&format!(
                    "a TCX link on {iface} (Linux 6.6 or later)"
                )))?;
        }
        Ok(())
    }

    /// Runs program `name` on `frame` as if it arrived on interface `ingress_ifindex`
    /// (which need not exist: the programs use it only as a key), with BPF_PROG_TEST_RUN,
    /// which sends nothing: the verdict and the frame as the program left it.
    pub(crate) fn run_frame(
        &mut self,
        name: &str,
        ingress_ifindex: u32,
        frame: &[u8],
    ) -> Result<(i32, Vec<u8>), FastError> {
        let p = self.program(name)?;
        // struct __sk_buff up to and including `ifindex`: ingress_ifindex at byte 36.
        let mut ctx = [0u8; 44];
        ctx[36..40].copy_from_slice(&ingress_ifindex.to_ne_bytes());
        let mut out = vec![0u8; frame.len() + 64];
        let r = p
            .test_run(TestRunOptions {
                data_in: Some(frame),
                data_out: Some(&mut out),
                ctx_in: Some(&ctx),
                ..TestRunOptions::default()
            })
            .map_err(kernel(&format!("{name} test run")))?;
        out.truncate(r.data_size_out as usize);
        Ok((r.return_value as i32, out))
    }

    /// The map `name`, to read.
    pub(crate) fn map(&self, name: &str) -> Result<&aya::maps::Map, FastError> {
        self.ebpf
            .map(name)
            .ok_or_else(|| missing(self.name, format!("map {name}")))
    }
}

/// A program or map the object `bpf/OBJECT` should hold and does not.
fn missing(object: &str, what: String) -> FastError {
    FastError::Kernel {
        what,
        source: format!("not in bpf/{object}").into(),
    }
}

/// True as root; otherwise says that `test` is skipped (loading BPF programs needs root).
#[cfg(test)]
pub(crate) fn root_or_skip(test: &str) -> bool {
    let root = crate::cmd::is_root();
    if !root {
        eprintln!("SKIPPED {test}: loading BPF programs needs root");
    }
    root
}
