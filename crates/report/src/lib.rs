//! Renderers of the results model. They only read [`model::results`]; none measures.
//!
//! - [`units`]: SI formatting of rates, sizes and times;
//! - [`text`]: the terminal output (interval lines, summary tables, sweep, block-size and
//!   latency tables), deterministic bytes for a given result;
//! - [`json`]: the JSON document;
//! - [`campaign`]: the report of a whole run (`wirebench run`): Markdown, self-contained
//!   HTML with [`svg`] charts, and CSV, from `results.json` alone.
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

pub mod campaign;
pub mod json;
pub mod svg;
pub mod table;
pub mod text;
pub mod units;
