//! The integration tests: one binary (one link step), one module per concern.

mod bad_input;
mod common;
mod corruption;
mod dashboard;
mod dump_v2;
mod fixtures_cli;
mod gen;
mod gnupg_live;
mod gpg_live;
mod one_line_errors;
mod openpgp_wild;
mod strace;
mod sweep;
mod telemetry;
mod trace;
mod trustlist_forms;
mod validation;
mod x509_algorithms;
