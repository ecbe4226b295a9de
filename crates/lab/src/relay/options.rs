//! The FRER settings of a lab's relay pair (`lab up frer --frer ...`, a topology file's
//! `frer = "..."` on a relay node): history, reset time, elimination on or off, the plain
//! control group, the kernel fast path. It does not build the relays' configuration: that
//! is the topology's.

use serde::{Deserialize, Serialize};

/// Settings of the `frer` topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrerLabOptions {
    /// frerSeqRcvyHistoryLength of both eliminating relays (default 1024: covers a path
    /// skew of 10 ms at 100 kframes/s).
    #[serde(default = "default_frer_history")]
    pub history: u16,
    /// frerSeqRcvyResetMSec (default 2000).
    #[serde(default = "default_frer_reset")]
    pub reset_ms: u64,
    /// Elimination on (default); off passes every copy, as a broken eliminator would.
    #[serde(default = "default_true")]
    pub elimination: bool,
    /// The control group: the same relays forward plainly over path A, no R-TAG, no
    /// replication, no elimination.
    #[serde(default)]
    pub plain: bool,
    /// The relays forward in the kernel (the BPF fast path) when it allows (default); off
    /// runs the userspace relays.
    #[serde(default = "default_true")]
    pub fast: bool,
}

fn default_frer_history() -> u16 {
    1024
}

fn default_frer_reset() -> u64 {
    2000
}

fn default_true() -> bool {
    true
}

impl Default for FrerLabOptions {
    fn default() -> Self {
        Self {
            history: default_frer_history(),
            reset_ms: default_frer_reset(),
            elimination: true,
            plain: false,
            fast: true,
        }
    }
}

/// Settings of the `frer` topology that do not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrerOptionsError {
    /// An item without `=`.
    #[error("'{0}' is not key=value")]
    NotKeyValue(String),
    /// A switch that is not on or off.
    #[error("{key}: '{value}' is not on or off")]
    NotOnOff {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
    },
    /// A history length the relays do not take.
    #[error("history: '{0}' is not 2..=2048")]
    History(String),
    /// A reset time that is not a number of milliseconds.
    #[error("reset_ms: '{0}' is not a number of ms")]
    ResetMs(String),
    /// A mode other than `frer` and `plain`.
    #[error("mode: '{0}' is not frer or plain")]
    Mode(String),
    /// A key the topology does not have.
    #[error("unknown key '{0}' (history, reset_ms, elimination, mode, fast)")]
    UnknownKey(String),
}

impl FrerLabOptions {
    /// `history=1024,reset_ms=2000,elimination=off,mode=plain,fast=off` (any subset).
    ///
    /// # Errors
    /// An unknown key or a bad value, named.
    pub fn parse_inline(text: &str) -> Result<Self, FrerOptionsError> {
        let mut o = Self::default();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| FrerOptionsError::NotKeyValue(item.to_owned()))?;
            let (k, v) = (k.trim(), v.trim());
            let flag = |v: &str| match v {
                "on" | "true" | "yes" => Ok(true),
                "off" | "false" | "no" => Ok(false),
                _ => Err(FrerOptionsError::NotOnOff {
                    key: k.to_owned(),
                    value: v.to_owned(),
                }),
            };
            match k {
                "history" => {
                    o.history = v
                        .parse()
                        .ok()
                        .filter(|h| (2..=frer::recovery::MAX_HISTORY).contains(h))
                        .ok_or_else(|| FrerOptionsError::History(v.to_owned()))?;
                }
                "reset_ms" | "reset" => {
                    o.reset_ms = v
                        .trim_end_matches("ms")
                        .parse()
                        .map_err(|_| FrerOptionsError::ResetMs(v.to_owned()))?;
                }
                "elimination" => o.elimination = flag(v)?,
                "fast" => o.fast = flag(v)?,
                "mode" => {
                    o.plain = match v {
                        "plain" => true,
                        "frer" => false,
                        _ => return Err(FrerOptionsError::Mode(v.to_owned())),
                    }
                }
                _ => return Err(FrerOptionsError::UnknownKey(k.to_owned())),
            }
        }
        Ok(o)
    }
}
