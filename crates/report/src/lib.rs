//! Renderers of the results model. They only read `model::results`; none measures.
//!
//! - [`table`]: the one table model and its layouts (terminal, Markdown, HTML, CSV);
//! - [`tables`]: every table, built once by its method's module;
//! - [`text`]: each command's terminal output, deterministic bytes for a given result;
//! - [`json`]: the JSON document;
//! - [`campaign`]: the report of a whole run (`wirebench run`): Markdown, self-contained
//!   HTML with [`svg`] charts, and CSV, from `results.json` alone; and two runs compared;
//! - [`junit`]: a run as JUnit XML for CI systems;
//! - [`iperf3`]: a client test as iperf3's `-J` document;
//! - [`openmetrics`]: a probe's result as metrics (`wirebench exporter`).
//!
//! What it does not do: measure, read files or sockets, or decide verdicts.
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

pub mod campaign;
pub mod iperf3;
pub mod json;
pub mod junit;
pub mod openmetrics;
pub mod svg;
pub mod table;
pub mod tables;
pub mod text;
