//! What every session a server serves shares, whatever it serves (a test, an echo session,
//! a lent raw port, tuning, a third-party test): the server's context and configuration
//! ([`ctx`]), and admission ([`admit`]): the gate's handshake places, slots of
//! `--max-tests`, each address's share, `--max-memory`, and refusals sent to the client.
//!
//! The decisions themselves are made without I/O ([`crate::gate`], [`crate::limits`],
//! counters here); the listener and the dispatcher are [`crate::server`]'s, which the
//! services never import.

pub(crate) mod admit;
pub(crate) mod ctx;

pub(crate) use admit::{admit, Slot};
pub(crate) use ctx::{refuse, Ctx};
