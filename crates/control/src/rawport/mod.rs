//! Raw ports lent by a server (`wirebench server --raw-ports eth1,eth2`, which needs
//! `--auth-key-file`, so every session here is authenticated): a controller on another
//! host opens one of them for sending and/or receiving ([`ClientMsg::RawOpen`]) and runs
//! trials through it, the receive half ([`ClientMsg::RawReceive`] ...
//! [`ClientMsg::RawDone`]) and the send half ([`ClientMsg::RawSend`]) of
//! `engine::raw`'s trials, each answered with the same counters and histograms a local
//! port gives (as the protocol's [`RawReception`](crate::messages::raw::RawReception) and
//! [`RawSending`](crate::messages::raw::RawSending); the controller's [`RawAgent`] hands
//! them on as the engine's `Reception` and `Sending`).
//!
//! The server side is [`serve`]; the controller's side is [`RawAgent`]. What the trial
//! means (which port sends, settling received against sent, latency only on a shared or
//! synchronised clock) is the controller's. A port can also reflect ([`ClientMsg::RawReflect`]):
//! turn a test's frames around and send them back, for round-trip latency on one clock.
//!
//! [`ClientMsg::RawOpen`]: crate::messages::ClientMsg::RawOpen
//! [`ClientMsg::RawReceive`]: crate::messages::ClientMsg::RawReceive
//! [`ClientMsg::RawDone`]: crate::messages::ClientMsg::RawDone
//! [`ClientMsg::RawSend`]: crate::messages::ClientMsg::RawSend
//! [`ClientMsg::RawReflect`]: crate::messages::ClientMsg::RawReflect
//!
//! What a lent port may send is the server's [`RawPortPolicy`](crate::server::RawPortPolicy) (issue 33: its own source
//! MAC and addresses, unicast destinations nearby, at most `--raw-max-rate`), checked in
//! `check` before a send and metered while it runs.
//!
//! The request checks are in `check` (pure), the server's side in `server`, the
//! controller's in `agent`; the stream payloads are message types
//! ([`crate::messages::raw`]). This module holds no code of its own.

mod agent;
mod check;
mod server;

pub use crate::messages::raw::{RawStream, RawStreamSent};
pub use agent::{PortFacts, RawAgent, RawOpenRequest};
pub(crate) use server::serve;
