//! The trait every export format implements.

use crate::sweep::Sweep;

/// One export format's renderer.
pub trait Exporter {
    /// The sweep in this format.
    fn render(&self, sweep: &Sweep) -> Vec<u8>;
}
