//! `--export-json`: the sweep as pretty JSON, its serde form.

use super::exporter::Exporter;
use crate::sweep::Sweep;

/// The JSON exporter.
#[derive(Debug, Clone, Copy)]
pub(super) struct Json;

impl Exporter for Json {
    fn render(&self, sweep: &Sweep) -> Vec<u8> {
        json(sweep)
    }
}

/// The sweep as pretty JSON: [`Sweep`]'s serde form, nothing added.
pub(super) fn json(sweep: &Sweep) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(sweep).unwrap_or_default();
    out.push(b'\n');
    out
}
