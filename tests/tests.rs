//! The integration tests: one binary (one link step), one module per concern.

mod bad_input;
mod common;
mod corruption;
mod dashboard;
mod fixtures_cli;
mod gen;
mod gnupg_live;
mod strace;
mod sweep;
mod telemetry;
mod trace;
mod trustlist_forms;
mod validation;
mod x509_algorithms;
