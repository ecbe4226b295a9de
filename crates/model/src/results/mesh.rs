//! The result of `mesh`: a client test from every host to every other (N × (N − 1)
//! ordered pairs), run by the source host's server toward the destination's, as
//! perfSONAR's mesh dashboards show them. A pair that could not be measured keeps its
//! error and no figures.

use serde::{Deserialize, Serialize};

use super::Summary;

/// One host of the mesh.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MeshHost {
    /// Its name in the plan (or its address).
    pub name: String,
    /// Its server's control address, `HOST:PORT`.
    pub address: String,
}

/// One ordered pair: a client test from `from` to `to`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeshCell {
    /// The source host's name (it runs the client).
    pub from: String,
    /// The destination host's name (its server receives).
    pub to: String,
    /// The test's totals, as the source's client assembled them; `None` when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<Summary>,
    /// Why the pair has no figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The test's connection as the source's client saw it (its addresses show the source
    /// ran it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<super::ConnectionFacts>,
    /// Seconds from asking the source to its answer.
    pub duration_s: f64,
}

impl MeshCell {
    /// What the destination received, bits/s.
    pub fn received_bps(&self) -> Option<f64> {
        self.summary.as_ref().and_then(|s| s.received_bps)
    }
}

/// The whole mesh.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MeshReport {
    /// The hosts, in the order of the matrix's rows and columns.
    pub hosts: Vec<MeshHost>,
    /// `tcp` or `udp`.
    pub protocol: String,
    /// Seconds each pair's test sent.
    pub test_s: f64,
    /// Most pairs tested at once.
    pub parallel: usize,
    /// Every ordered pair, row by row (from the first host to each other, then the next).
    pub cells: Vec<MeshCell>,
}

impl MeshReport {
    /// The cell from `from` to `to`.
    pub fn cell(&self, from: &str, to: &str) -> Option<&MeshCell> {
        self.cells.iter().find(|c| c.from == from && c.to == to)
    }

    /// Pairs that failed.
    pub fn failed(&self) -> usize {
        self.cells.iter().filter(|c| c.error.is_some()).count()
    }
}
