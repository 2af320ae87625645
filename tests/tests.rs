//! The integration tests: one binary (one link step), one module per concern.
//!
//! The harness is libtest-mimic's, so that a test whose external tool
//! (gpgsm, strace, prometheus, …) is missing is reported as ignored with the
//! tool's name instead of passing: each module lists its tests with
//! [`tests!`], naming the tools they need. Under `CI=true` a missing tool
//! fails the test.

mod common;

#[cfg(unix)]
mod attach;
mod bad_input;
mod corruption;
mod dashboard;
mod doctor;
mod dump_v2;
mod fixtures_cli;
mod gen;
mod gnupg_live;
mod gpg_live;
mod import;
mod import_x509;
mod keyboxd;
mod keyboxd_import;
mod one_line_errors;
mod openpgp_wild;
mod real_keyrings;
#[cfg(unix)]
mod record;
mod rules;
mod startup;
#[cfg(unix)]
mod strace;
mod sweep;
mod telemetry;
mod trace;
mod trustdb;
mod trustlist_forms;
mod validation;
mod x509_algorithms;

use std::process::ExitCode;

fn main() -> ExitCode {
    // Before the harness starts any thread: no test may see the user's
    // GnuPG state, locale or time zone.
    let _home = common::hermetic();
    let mut args = libtest_mimic::Arguments::from_args();
    // Two tests per core: much of a test's time is spent waiting on the
    // programs it runs (gpg, strace, Prometheus), which leaves a core idle
    // at one test per core.
    if args.test_threads.is_none() && std::env::var_os("RUST_TEST_THREADS").is_none() {
        args.test_threads = std::thread::available_parallelism().ok().map(|n| 2 * n.get());
    }
    #[cfg_attr(not(unix), allow(unused_mut))]
    let mut tests = vec![
        bad_input::TESTS,
        corruption::TESTS,
        dashboard::TESTS,
        doctor::TESTS,
        dump_v2::TESTS,
        fixtures_cli::TESTS,
        gen::TESTS,
        gnupg_live::TESTS,
        gpg_live::TESTS,
        import::TESTS,
        import_x509::TESTS,
        keyboxd_import::TESTS,
        keyboxd::TESTS,
        one_line_errors::TESTS,
        openpgp_wild::TESTS,
        real_keyrings::TESTS,
        rules::TESTS,
        startup::TESTS,
        sweep::TESTS,
        telemetry::TESTS,
        trace::TESTS,
        trustdb::TESTS,
        trustlist_forms::TESTS,
        validation::TESTS,
        x509_algorithms::TESTS,
        TESTS,
    ];
    // record (the interposer, BPF) and the strace cross-check are Unix's.
    #[cfg(unix)]
    tests.extend([attach::TESTS, record::TESTS, strace::TESTS]);
    let trials = tests.iter().flat_map(|t| t.iter()).map(common::Test::trial).collect();
    let conclusion = libtest_mimic::run(&args, trials);
    common::print_partly_skipped();
    common::print_slowest();
    conclusion.exit_code()
}

/// Every test is registered: with this harness a `#[test]` attribute would
/// make a test that never runs.
fn no_test_attributes() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                let marker = concat!("#", "[test]");
                assert!(
                    !text.lines().any(|l| l.trim() == marker),
                    "{}: a {marker} function never runs here; list it in the module's tests![…]",
                    path.display()
                );
            }
        }
    }
}

tests![no_test_attributes];
