//! Setting a server's interface for a NIC matrix (`nicmatrix HOST`): an authenticated
//! client of a server started with `--allow-tuning` asks for an MTU and features on the
//! interface its control connection arrived on. The server saves that interface's
//! settings first and puts them back on [`ClientMsg::Restore`] or when the connection
//! ends, however it ends (the server closes it when it is stopped, SIGTERM or Ctrl-C, and
//! waits for the session to put everything back); one session at a time.
//!
//! The settings themselves go through `engine::nic` (the kernel's interfaces).

use std::collections::BTreeMap;
use std::net::{IpAddr, TcpStream};
use std::time::Duration;

use engine::nic;
use model::results::nic::InterfaceState;

use crate::client::Session;
use crate::frame::{read_msg_within, write_msg};
use crate::messages::{ClientMsg, ErrorCode, ServerMsg};
use crate::session::{refuse, Ctx, Slot};
use crate::ProtoError;

/// Longest wait for the next request of a session (one combination's sweep).
const IDLE: Duration = Duration::from_secs(3600);

/// The interface as it was; put back on drop.
struct Saved {
    state: InterfaceState,
    restored: bool,
}

impl Saved {
    fn restore(&mut self) -> Vec<String> {
        self.restored = true;
        let iface = &self.state.name;
        let mut failed = Vec::new();
        if let Some(m) = self.state.mtu {
            if let Err(e) = nic::set_mtu(iface, m) {
                failed.push(e.to_string());
            }
        }
        let now = nic::state("server", iface)
            .map(|s| s.features)
            .unwrap_or_default();
        for (f, on) in &self.state.features {
            if now.get(f) != Some(on) {
                if let Err(e) = nic::set_feature(iface, f, *on) {
                    failed.push(e.to_string());
                }
            }
        }
        failed
    }
}

impl Drop for Saved {
    fn drop(&mut self) {
        if !self.restored {
            for e in self.restore() {
                tracing::warn!("tuning: not restored: {e}");
            }
        }
    }
}

/// Forgets the session's connection when the session ends.
struct Forget<'a>(&'a Ctx);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        *self.0.tuning_conn() = None;
    }
}

/// Applies one request; the first refusal is the answer.
fn apply(iface: &str, mtu: Option<u32>, features: &BTreeMap<String, bool>) -> Result<(), String> {
    if let Some(m) = mtu {
        nic::set_mtu(iface, m).map_err(|e| e.to_string())?;
    }
    for (f, on) in features {
        nic::set_feature(iface, f, *on).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The v4 address of a v4-mapped v6 one, as interfaces hold it.
fn plain(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Serves a tuning session that starts with `Tune { mtu, features }`.
pub(crate) fn serve(
    mut ctrl: TcpStream,
    ctx: &Ctx,
    mtu: Option<u32>,
    features: BTreeMap<String, bool>,
) -> Result<(), ProtoError> {
    if !ctx.allow_tuning {
        return Err(refuse(
            &mut ctrl,
            ErrorCode::BadRequest,
            "this server does not set its interfaces: start it as root with --allow-tuning and --auth-key-file".into(),
        ));
    }
    let Some(_slot) = Slot::take(&ctx.tuning, 1) else {
        return Err(refuse(
            &mut ctrl,
            ErrorCode::Busy,
            "another client is setting this server's interface".into(),
        ));
    };
    let local = plain(ctrl.local_addr().map_err(ProtoError::Io)?.ip());
    let iface = match nic::interface_with_address(local) {
        Ok(Some(i)) => i,
        _ => {
            return Err(refuse(
                &mut ctrl,
                ErrorCode::Internal,
                format!("no interface holds {local}"),
            ))
        }
    };
    let state = nic::state("server", &iface)
        .map_err(|e| refuse(&mut ctrl, ErrorCode::Internal, format!("{iface}: {e}")))?;
    let mut saved = Saved {
        state,
        restored: false,
    };
    // A stopping server closes it, and this session restores before the process ends.
    *ctx.tuning_conn() = ctrl.try_clone().ok();
    let _forget = Forget(ctx);
    let mut request = (mtu, features);
    loop {
        let refused = apply(&iface, request.0, &request.1).err();
        let interface = nic::state("server", &iface).ok().map(Box::new);
        write_msg(&mut ctrl, &ServerMsg::Tuned { interface, refused })?;
        match read_msg_within(&ctrl, IDLE, &*ctx.clock) {
            Ok(ClientMsg::Tune { mtu, features }) => request = (mtu, features),
            Ok(ClientMsg::Restore) => {
                let failed = saved.restore();
                let interface = nic::state("server", &iface).ok().map(Box::new);
                let refused = (!failed.is_empty()).then(|| failed.join("; "));
                write_msg(&mut ctrl, &ServerMsg::Tuned { interface, refused })?;
                return Ok(());
            }
            // Closed, timed out, garbage: the guard puts everything back.
            Ok(other) => {
                return Err(refuse(
                    &mut ctrl,
                    ErrorCode::Protocol,
                    format!("expected tune or restore, got {other:?}"),
                ))
            }
            Err(e) => return Err(e),
        }
    }
}

/// The client's side of a tuning session: a control connection kept open while the
/// sweeps run on others. Dropping it ends the session (the server restores).
pub struct Tuner {
    ctrl: TcpStream,
    /// The session's clock.
    clock: std::sync::Arc<dyn model::clock::Clock>,
}

/// What the server said to one request.
pub type Tuned = (Option<InterfaceState>, Option<String>);

impl Tuner {
    /// Turns a connected, authenticated session into a tuning session.
    pub fn new(session: Session) -> Self {
        Self {
            clock: std::sync::Arc::clone(&session.clock),
            ctrl: session.into_stream(),
        }
    }

    fn ask(&mut self, msg: &ClientMsg) -> Result<Tuned, ProtoError> {
        write_msg(&mut self.ctrl, msg)?;
        match read_msg_within(&self.ctrl, Duration::from_secs(30), &*self.clock)? {
            ServerMsg::Tuned { interface, refused } => Ok((interface.map(|i| *i), refused)),
            ServerMsg::Error { code, message } => Err(ProtoError::Refused { code, message }),
            other => Err(ProtoError::Unexpected(format!(
                "expected the tuning answer, got {other:?}"
            ))),
        }
    }

    /// Sets the server's interface: its state after, or why a setting was refused.
    ///
    /// # Errors
    /// The server does not allow tuning, another session runs, or the connection failed.
    pub fn apply(
        &mut self,
        mtu: Option<u32>,
        features: &BTreeMap<String, bool>,
    ) -> Result<Tuned, ProtoError> {
        self.ask(&ClientMsg::Tune {
            mtu,
            features: features.clone(),
        })
    }

    /// Puts the server's interface back and ends the session.
    ///
    /// # Errors
    /// The connection failed (the server restores on its own when it sees it close).
    pub fn restore(mut self) -> Result<Tuned, ProtoError> {
        self.ask(&ClientMsg::Restore)
    }
}
