//! What can stop a generation, and how it reports progress.

use super::{openpgp, x509};

/// Errors while generating.
#[derive(Debug, thiserror::Error)]
pub enum GenError {
    /// A certificate could not be made.
    #[error(transparent)]
    Cert(#[from] x509::CertError),
    /// An OpenPGP key could not be made.
    #[error("cannot make an OpenPGP key: {0}")]
    OpenPgp(#[from] openpgp::KeyError),
}

/// Progress: a step name, units done and units in the step.
pub type Progress<'a> = &'a mut dyn FnMut(&str, usize, usize);
