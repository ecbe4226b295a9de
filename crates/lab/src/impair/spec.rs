//! The impairment a user asks for, per direction, as TOML or as an inline list.
//!
//! ```toml
//! # Keys at the top apply to both directions; [forward] (talker -> listener) and
//! # [reverse] (listener -> talker) override them.
//! loss = "1%"          # percent; a bare number is percent too
//! loss_burst = 1       # mean frames per loss burst; 1 = independent losses
//! delay = "5ms"        # ns, us, ms or s
//! jitter = "1ms"       # delay varies uniformly by +- this much (never reorders)
//! duplicate = "0.1%"
//! reorder = "0.5%"     # fraction of frames sent after their successor (<= 50 %)
//! rate = "100M"        # bit/s of L2 frames, k/M/G suffixes
//! limit = 10000        # frames waiting at most (delay + rate queue)
//! seed = 1             # random decisions are reproducible per seed
//! fast = true          # loss, duplicate and rate in the kernel when nothing holds frames
//!                      # back (no delay, jitter or reorder); false: always in user space
//!
//! [forward]
//! delay = "20ms"
//! ```
//!
//! The inline form says the same on one line: `loss=1%,forward.delay=20ms,seed=3`.

use serde::{Deserialize, Serialize};

use super::model::Params;
use crate::shaper::{si, QuantityError};

/// An impairment that does not parse or is out of range. A key of one direction is
/// named with its prefix (`forward.delay`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ImpairError {
    /// TOML syntax, an unknown key or a value of the wrong type; the text names the key
    /// (and the line, in a file).
    #[error("{0}")]
    Syntax(String),
    /// An inline item without `=`.
    #[error("'{0}' is not key=value (e.g. loss=1%)")]
    NotKeyValue(String),
    /// An inline `DIR.key` whose `DIR` names a key that is not a table.
    #[error("'{0}' is not forward or reverse")]
    NotADirection(String),
    /// A switch that is not on or off.
    #[error("{key} '{value}' is not on or off")]
    NotOnOff {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
    },
    /// A percentage that does not read.
    #[error("{key} '{value}' is not a percentage (e.g. \"1%\" or 0.5)")]
    NotAPercentage {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
    },
    /// A percentage outside 0..=`max`.
    #[error("{key} must be between 0 and {max} %")]
    PercentOutOfRange {
        /// The key.
        key: String,
        /// The largest percentage the key takes.
        max: f64,
    },
    /// A time given as a bare number.
    #[error("{key} needs a unit: e.g. \"5ms\", \"200us\", \"1s\"")]
    TimeWithoutUnit {
        /// The key.
        key: String,
    },
    /// A time string that does not end in a unit.
    #[error("{key} '{value}' needs a unit: ns, us, ms or s")]
    TimeUnitMissing {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
    },
    /// A time with an unknown unit or no number.
    #[error("{key} '{value}': unknown unit or not a number (ns, us, ms, s)")]
    NotATime {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
    },
    /// A time outside 0..=60 s.
    #[error("{key} '{value}' must be between 0 and 60 s")]
    TimeOutOfRange {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
    },
    /// A rate that does not read.
    #[error("{key}: {problem}")]
    Rate {
        /// The key.
        key: String,
        /// What is wrong with the rate.
        problem: QuantityError,
    },
    /// A mean loss burst below one frame.
    #[error("{key} must be at least 1 frame")]
    LossBurst {
        /// The key.
        key: String,
    },
    /// A queue limit outside 1..=1000000 frames.
    #[error("{key} must be 1..=1000000 frames")]
    Limit {
        /// The key.
        key: String,
    },
}

/// A percentage or duration as written: a number or a string with a unit.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Value {
    Num(f64),
    Str(String),
}

/// On or off, as a TOML boolean or as written inline (`on`, `off`, `true`, `false`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Switch {
    Bool(bool),
    Str(String),
}

impl Switch {
    fn get(&self, what: &str) -> Result<bool, ImpairError> {
        match self {
            Self::Bool(b) => Ok(*b),
            Self::Str(s) => match s.as_str() {
                "on" | "true" | "yes" => Ok(true),
                "off" | "false" | "no" => Ok(false),
                _ => Err(ImpairError::NotOnOff {
                    key: what.to_owned(),
                    value: s.clone(),
                }),
            },
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct DirToml {
    loss: Option<Value>,
    loss_burst: Option<f64>,
    delay: Option<Value>,
    jitter: Option<Value>,
    duplicate: Option<Value>,
    reorder: Option<Value>,
    rate: Option<Value>,
    limit: Option<usize>,
}

/// The TOML form as written, before validation (see [`ImpairSpec::from_toml`]); a table of
/// a larger file (a topology file) can hold it. It repeats the per-direction keys because
/// serde cannot combine `flatten` with `deny_unknown_fields`, and unknown keys must fail.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImpairToml {
    loss: Option<Value>,
    loss_burst: Option<f64>,
    delay: Option<Value>,
    jitter: Option<Value>,
    duplicate: Option<Value>,
    reorder: Option<Value>,
    rate: Option<Value>,
    limit: Option<usize>,
    seed: Option<u64>,
    fast: Option<Switch>,
    forward: Option<DirToml>,
    reverse: Option<DirToml>,
}

/// Both directions of an impairment stage, validated.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ImpairSpec {
    /// Talker -> listener (interface a to interface b).
    pub forward: Params,
    /// Listener -> talker.
    pub reverse: Params,
    /// Seed of the random decisions (the reverse direction uses seed + 1).
    pub seed: u64,
    /// Loss, duplication and rate in the kernel fast path ([`super::fast`]) when the
    /// settings and the kernel allow; false keeps every frame in user space.
    #[serde(default = "on")]
    pub fast: bool,
}

fn on() -> bool {
    true
}

impl Default for ImpairSpec {
    /// No impairment in either direction.
    fn default() -> Self {
        Self {
            forward: Params::default(),
            reverse: Params::default(),
            seed: 1,
            fast: true,
        }
    }
}

fn percent(v: &Value, what: &str, max: f64) -> Result<f64, ImpairError> {
    let pct = match v {
        Value::Num(n) => *n,
        Value::Str(s) => model::units::percent(s).ok_or_else(|| ImpairError::NotAPercentage {
            key: what.to_owned(),
            value: s.clone(),
        })?,
    };
    if !(0.0..=max).contains(&pct) {
        return Err(ImpairError::PercentOutOfRange {
            key: what.to_owned(),
            max,
        });
    }
    Ok(pct / 100.0)
}

fn duration_ns(v: &Value, what: &str) -> Result<u64, ImpairError> {
    let key = what.to_owned();
    let s = match v {
        Value::Num(_) => return Err(ImpairError::TimeWithoutUnit { key }),
        Value::Str(s) => s.trim(),
    };
    let value = s.to_owned();
    if !s.ends_with(|c: char| c.is_alphabetic()) {
        return Err(ImpairError::TimeUnitMissing { key, value });
    }
    let Some(ns) = model::units::time_ns(s) else {
        return Err(ImpairError::NotATime { key, value });
    };
    if !(0.0..=60e9).contains(&ns) {
        return Err(ImpairError::TimeOutOfRange { key, value });
    }
    Ok(ns.round() as u64)
}

fn rate(v: &Value) -> Result<f64, QuantityError> {
    let s = match v {
        Value::Num(n) => n.to_string(),
        Value::Str(s) => s.clone(),
    };
    Ok(si(&s, 1000.0, "rate")? as f64)
}

impl DirToml {
    /// `self` over `base`: a key set here wins.
    fn apply(&self, base: &mut Params, side: &str) -> Result<(), ImpairError> {
        let name = |k: &str| {
            if side.is_empty() {
                k.to_owned()
            } else {
                format!("{side}.{k}")
            }
        };
        if let Some(v) = &self.loss {
            base.loss = percent(v, &name("loss"), 100.0)?;
        }
        if let Some(b) = self.loss_burst {
            if !(1.0..=1e6).contains(&b) {
                return Err(ImpairError::LossBurst {
                    key: name("loss_burst"),
                });
            }
            base.loss_burst = b;
        }
        if let Some(v) = &self.delay {
            base.delay_ns = duration_ns(v, &name("delay"))?;
        }
        if let Some(v) = &self.jitter {
            base.jitter_ns = duration_ns(v, &name("jitter"))?;
        }
        if let Some(v) = &self.duplicate {
            base.duplicate = percent(v, &name("duplicate"), 100.0)?;
        }
        if let Some(v) = &self.reorder {
            base.reorder = percent(v, &name("reorder"), 50.0)?;
        }
        if let Some(v) = &self.rate {
            base.rate_bps = Some(rate(v).map_err(|problem| ImpairError::Rate {
                key: name("rate"),
                problem,
            })?);
        }
        if let Some(l) = self.limit {
            if !(1..=1_000_000).contains(&l) {
                return Err(ImpairError::Limit { key: name("limit") });
            }
            base.limit = l;
        }
        Ok(())
    }
}

impl ImpairSpec {
    /// Parses the TOML form; errors name the field (and the line, for syntax and unknown
    /// keys).
    ///
    /// # Errors
    /// [`ImpairError::Syntax`], or a value [`ImpairSpec::from_toml`] refuses.
    pub fn parse(text: &str) -> Result<Self, ImpairError> {
        let t: ImpairToml = toml::from_str(text).map_err(|e| ImpairError::Syntax(e.to_string()))?;
        Self::from_toml(t)
    }

    /// Parses the inline form `key=value,...` (keys as in the TOML, `forward.` /
    /// `reverse.` prefixes for one direction).
    ///
    /// # Errors
    /// An item that is not `key=value`, and what [`ImpairSpec::parse`] refuses.
    pub fn parse_inline(text: &str) -> Result<Self, ImpairError> {
        let mut table = toml::Table::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item
                .split_once('=')
                .ok_or_else(|| ImpairError::NotKeyValue(item.to_owned()))?;
            let (k, v) = (k.trim(), v.trim());
            let value = if let Ok(i) = v.parse::<i64>() {
                toml::Value::Integer(i)
            } else if let Ok(f) = v.parse::<f64>() {
                toml::Value::Float(f)
            } else {
                toml::Value::String(v.to_owned())
            };
            let target = match k.split_once('.') {
                Some((dir, key)) => {
                    let sub = table
                        .entry(dir.to_owned())
                        .or_insert_with(|| toml::Value::Table(toml::Table::new()));
                    match sub {
                        toml::Value::Table(t) => (t, key),
                        _ => return Err(ImpairError::NotADirection(dir.to_owned())),
                    }
                }
                None => (&mut table, k),
            };
            target.0.insert(target.1.to_owned(), value);
        }
        let t: ImpairToml = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| ImpairError::Syntax(e.to_string().trim().to_owned()))?;
        Self::from_toml(t)
    }

    /// Validates the TOML form.
    ///
    /// # Errors
    /// The first value out of its unit or range, naming its key.
    pub fn from_toml(t: ImpairToml) -> Result<Self, ImpairError> {
        let both = DirToml {
            loss: t.loss,
            loss_burst: t.loss_burst,
            delay: t.delay,
            jitter: t.jitter,
            duplicate: t.duplicate,
            reorder: t.reorder,
            rate: t.rate,
            limit: t.limit,
        };
        let mut forward = Params::default();
        both.apply(&mut forward, "")?;
        let mut reverse = forward;
        if let Some(f) = &t.forward {
            f.apply(&mut forward, "forward")?;
        }
        if let Some(r) = &t.reverse {
            r.apply(&mut reverse, "reverse")?;
        }
        Ok(Self {
            forward,
            reverse,
            seed: t.seed.unwrap_or(1),
            fast: match &t.fast {
                Some(f) => f.get("fast")?,
                None => true,
            },
        })
    }

    /// One line per direction, for `lab up` and `lab status`.
    pub fn describe(p: &Params) -> String {
        let mut parts = Vec::new();
        if p.loss > 0.0 {
            if p.loss_burst > 1.0 {
                parts.push(format!(
                    "loss {}% (bursts of {})",
                    p.loss * 100.0,
                    p.loss_burst
                ));
            } else {
                parts.push(format!("loss {}%", p.loss * 100.0));
            }
        }
        if p.delay_ns > 0 || p.jitter_ns > 0 {
            parts.push(format!(
                "delay {} ms ± {} ms",
                p.delay_ns as f64 / 1e6,
                p.jitter_ns as f64 / 1e6
            ));
        }
        if p.duplicate > 0.0 {
            parts.push(format!("duplicate {}%", p.duplicate * 100.0));
        }
        if p.reorder > 0.0 {
            parts.push(format!("reorder {}%", p.reorder * 100.0));
        }
        if let Some(r) = p.rate_bps {
            parts.push(format!("rate {} Mbit/s", r / 1e6));
        }
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn toml_with_both_directions_and_overrides() {
        let s = ImpairSpec::parse(
            "loss = \"1%\"\ndelay = \"5ms\"\nseed = 4\n[forward]\ndelay = \"20ms\"\nduplicate = 0.5\n[reverse]\nrate = \"10M\"\n",
        )
        .unwrap();
        assert_eq!(s.seed, 4);
        assert_eq!(s.forward.loss, 0.01);
        assert_eq!(s.forward.delay_ns, 20_000_000);
        assert_eq!(s.forward.duplicate, 0.005);
        assert_eq!(s.reverse.delay_ns, 5_000_000);
        assert_eq!(s.reverse.loss, 0.01);
        assert_eq!(s.reverse.rate_bps, Some(10e6));
        assert_eq!(s.forward.rate_bps, None);
    }

    #[test]
    fn inline_form_matches_the_toml_form() {
        let a =
            ImpairSpec::parse_inline("loss=5%, reorder=1%,forward.jitter=200us,seed=9").unwrap();
        let b = ImpairSpec::parse(
            "loss = \"5%\"\nreorder = \"1%\"\nseed = 9\n[forward]\njitter = \"200us\"\n",
        )
        .unwrap();
        assert_eq!(a, b);
        assert_eq!(a.forward.jitter_ns, 200_000);
        assert_eq!(a.reverse.jitter_ns, 0);
        assert!(a.fast);
        let off = ImpairSpec::parse_inline("loss=1%,fast=off").unwrap();
        assert!(!off.fast);
        assert_eq!(off, ImpairSpec::parse("loss = 1\nfast = false\n").unwrap());
        let e = ImpairSpec::parse_inline("fast=maybe").unwrap_err();
        assert_eq!(
            e,
            ImpairError::NotOnOff {
                key: "fast".into(),
                value: "maybe".into()
            }
        );
        assert_eq!(e.to_string(), "fast 'maybe' is not on or off");
    }

    #[test]
    fn bad_values_name_the_field() {
        for (text, needle) in [
            ("loss = \"110%\"", "loss must be between 0 and 100"),
            ("reorder = 60", "reorder must be between 0 and 50"),
            ("delay = 5", "delay needs a unit"),
            ("[forward]\njitter = \"5 parsecs\"", "forward.jitter"),
            ("rate = \"fast\"", "rate"),
            ("loss_burst = 0.5", "loss_burst"),
            ("lose = \"1%\"", "unknown field `lose`"),
            ("[sideways]\nloss = 1", "unknown field `sideways`"),
        ] {
            let e = ImpairSpec::parse(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text:?}: {e}");
        }
        let e = ImpairSpec::parse("lose = 1").unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
        let e = ImpairSpec::parse_inline("loss").unwrap_err().to_string();
        assert!(e.contains("key=value"), "{e}");
        let e = ImpairSpec::parse_inline("delay=5parsec")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown unit"), "{e}");
    }

    #[test]
    fn errors_keep_their_words() {
        for (inline, text) in [
            ("loss=110%", "loss must be between 0 and 100 %"),
            ("reorder=60", "reorder must be between 0 and 50 %"),
            (
                "loss=lots",
                "loss 'lots' is not a percentage (e.g. \"1%\" or 0.5)",
            ),
            (
                "delay=5",
                "delay needs a unit: e.g. \"5ms\", \"200us\", \"1s\"",
            ),
            (
                "forward.delay=5x",
                "forward.delay '5x': unknown unit or not a number (ns, us, ms, s)",
            ),
            ("jitter=61s", "jitter '61s' must be between 0 and 60 s"),
            (
                "reverse.rate=fast",
                "reverse.rate: rate 'fast' is not a number with an optional k/M/G suffix",
            ),
            ("loss_burst=0.5", "loss_burst must be at least 1 frame"),
            (
                "forward.limit=0",
                "forward.limit must be 1..=1000000 frames",
            ),
            ("loss", "'loss' is not key=value (e.g. loss=1%)"),
            ("seed=1,seed.x=2", "'seed' is not forward or reverse"),
        ] {
            assert_eq!(
                ImpairSpec::parse_inline(inline).unwrap_err().to_string(),
                text,
                "{inline}"
            );
        }
        assert!(matches!(
            ImpairSpec::parse_inline("rate=0"),
            Err(ImpairError::Rate {
                problem: QuantityError::NotPositive { .. },
                ..
            })
        ));
    }
}
