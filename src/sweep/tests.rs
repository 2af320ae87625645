//! The sweep's assembly, with a mock GnuPG program: the rows it fills,
//! the sizes it cannot run, runs and warm-ups, the seed's rows, the
//! database's sweep and the progress it reports.

use std::path::{Path, PathBuf};

use super::*;
use crate::lookup::Strategy;
use crate::openpgp::Mode;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn sizes(labels: &[&str]) -> Vec<SweepSize> {
    labels
        .iter()
        .map(|l| SweepSize {
            label: l.to_string(),
            size: l
                .parse::<u64>()
                .map_or_else(|_| l.parse().unwrap(), |k| crate::io::BufferSize::from_gnupg_kib(k).unwrap()),
            api: None,
        })
        .collect()
}

/// A GnuPG program that cannot read unbuffered, and says what it was asked.
#[derive(Default)]
struct Mock {
    /// Each question: the size's label, and warm-ups and runs for `program_row`.
    asked: Vec<(String, Option<(usize, usize)>)>,
    /// Fail at this size.
    fail_at: Option<&'static str>,
}

impl Mock {
    fn check(&mut self, s: &SweepSize, runs: Option<(usize, usize)>) -> Result<bool, ProgramError> {
        self.asked.push((s.label.clone(), runs));
        if self.fail_at == Some(s.label.as_str()) {
            return Err("gpgsm -k --with-validation --disable-dirmngr failed: exit status: 2".into());
        }
        Ok(s.label != "unbuffered")
    }
}

impl GnupgProgram for Mock {
    fn gnupg_row(&mut self, s: &SweepSize) -> Result<Option<GnupgRow>, ProgramError> {
        let runs = self.check(s, None)?;
        let events = 1000 + s.size.bytes() as u64;
        Ok(runs.then_some(GnupgRow { tool: "gpgsm", events, time_s: 0.5, counted_with: "record" }))
    }

    fn program_row(&mut self, s: &SweepSize, warmup: usize, runs: usize) -> Result<ProgramRow, ProgramError> {
        if !self.check(s, Some((warmup, runs)))? {
            return Ok(ProgramRow::not_run("gpgsm", "it cannot read unbuffered".into()));
        }
        let times = || Times::new(vec![0.25; runs]);
        Ok(ProgramRow { tool: "gpgsm", not_run: None, events: 2000, wall_s: times(), user_s: times(), sys_s: times() })
    }

    fn describe(&self) -> String {
        "gpgsm -k (a mock), counted with nothing".into()
    }
}

/// A plan on `sizes` of a workload, 2 timed runs and 1 warm-up each.
fn plan<'a>(sizes: &'a [SweepSize], workload: &'a Workload, trust: &'a crate::x509::TrustList) -> Plan<'a> {
    Plan {
        sizes,
        workload,
        runs: 2,
        warmup: 1,
        trust,
        at: 1_767_225_600,
        version: crate::gnupg_version::GnupgVersion::V2_4,
        keyboxd: false,
        builtin: false,
        compare: None,
        probe: None,
        incoming: &NOTHING,
    }
}

/// No keys: the workloads here read.
static NOTHING: crate::workload::import::Incoming = crate::workload::import::Incoming::Keys(Vec::new());

/// Run a plan on `path`, with what progress said.
fn sweep_of(path: &Path, plan: Plan<'_>) -> (Result<Sweep, SweepError>, Vec<Progress>) {
    let mut said = Vec::new();
    let sweep = run(path, plan, &mut |p| said.push(p));
    (sweep, said)
}

#[test]
fn gnupg_beside_our_rows_where_it_can_read() {
    let (sizes, workload, trust) = (sizes(&["0", "64", "unbuffered"]), Workload::Stats, Default::default());
    let mut mock = Mock::default();
    let plan = Plan { compare: Some(Comparison::Gnupg(&mut mock)), ..plan(&sizes, &workload, &trust) };
    let (sweep, said) = sweep_of(&fixture("gnupg-mixed.kbx"), plan);
    let sweep = sweep.unwrap();
    let gnupg: Vec<Option<u64>> = sweep.results.iter().map(|r| r.gnupg.map(|g| g.events)).collect();
    assert_eq!(gnupg, [Some(1000 + 8192), Some(1000 + 65536), None]);
    assert_eq!(mock.asked, [("0".into(), None), ("64".into(), None), ("unbuffered".into(), None)]);
    assert!(sweep.results.iter().all(|r| r.seed.is_none() && r.program.is_none() && r.total_events() > 0));
    assert!(sweep.results.iter().all(|r| r.wall_s.runs.len() == 2), "our runs");
    assert_eq!((sweep.runs, sweep.warmup, sweep.program.as_deref()), (2, 1, None));
    assert!(sweep.versus.is_none() && sweep.verdict().is_none() && sweep.probe_events.is_none());
    // A warm-up and two timed runs per size, then the end of our runs.
    let steps: Vec<Step> = said.iter().filter_map(|p| if let Progress::Run(s) = p { Some(*s) } else { None }).collect();
    assert_eq!(steps.len(), 9);
    assert_eq!(steps.iter().map(|s| s.done).collect::<Vec<_>>(), (0..9).collect::<Vec<_>>());
    assert_eq!(steps[4].to_string(), "64 KiB (2/3): timed run 1/2");
    assert_eq!(said.last(), Some(&Progress::Done));
}

#[test]
fn program_rows_with_the_plans_runs_and_one_model_run() {
    let (sizes, workload, trust) = (sizes(&["0", "unbuffered"]), Workload::List, Default::default());
    let mut mock = Mock::default();
    let plan =
        Plan { runs: 3, warmup: 2, compare: Some(Comparison::Program(&mut mock)), ..plan(&sizes, &workload, &trust) };
    let (sweep, said) = sweep_of(&fixture("gnupg-mixed.kbx"), plan);
    let sweep = sweep.unwrap();
    assert_eq!(mock.asked, [("0".into(), Some((2, 3))), ("unbuffered".into(), Some((2, 3)))]);
    assert_eq!(sweep.program.as_deref(), Some("gpgsm -k (a mock), counted with nothing"));
    assert_eq!((sweep.runs, sweep.warmup), (3, 2), "the program's runs, in the result");
    // kbxscope's run is the model: one run per size, no warm-up.
    assert!(sweep.results.iter().all(|r| r.wall_s.runs.len() == 1));
    assert_eq!(said.iter().filter(|p| matches!(p, Progress::Run(_))).count(), 2);
    let rows: Vec<&ProgramRow> = sweep.results.iter().map(|r| r.program.as_ref().unwrap()).collect();
    assert_eq!((rows[0].events, rows[0].wall_s.runs.len(), rows[0].not_run.as_deref()), (2000, 3, None));
    assert_eq!(rows[1].not_run.as_deref(), Some("it cannot read unbuffered"));
    assert!(sweep.results.iter().all(|r| r.gnupg.is_none() && r.seed.is_none()));
}

#[test]
fn a_failed_program_stops_the_sweep_in_its_own_words() {
    let (sizes, workload, trust) = (sizes(&["0", "64"]), Workload::Stats, Default::default());
    let mut mock = Mock { fail_at: Some("64"), ..Mock::default() };
    let plan = Plan { compare: Some(Comparison::Gnupg(&mut mock)), ..plan(&sizes, &workload, &trust) };
    let e = sweep_of(&fixture("gnupg-mixed.kbx"), plan).0.unwrap_err();
    assert!(matches!(e, SweepError::Program(_)), "{e:?}");
    assert_eq!(e.to_string(), "gpgsm -k --with-validation --disable-dirmngr failed: exit status: 2");
}

#[test]
fn seed_rows_only_on_the_built_in_keybox_and_not_for_signatures() {
    let (sizes, trust) = (sizes(&["0", "64", "3"]), Default::default());
    let seeds = |workload: &Workload, builtin: bool| {
        let plan = Plan { runs: 1, warmup: 0, builtin, ..plan(&sizes, workload, &trust) };
        let sweep = sweep_of(&fixture("gnupg-mixed.kbx"), plan).0.unwrap();
        sweep.results.iter().map(|r| r.seed.map(|s| s.events)).collect::<Vec<_>>()
    };
    // The seed measured 0 and 64 KiB, not 3.
    assert_eq!(seeds(&Workload::List, true), [Some(4_900_000), Some(622_000), None]);
    assert_eq!(seeds(&Workload::List, false), [None, None, None]);
    assert_eq!(seeds(&Workload::Sigs(Mode::WithSigs, Strategy::Gnupg), true), [None, None, None]);
}

#[test]
fn versus_keyboxd_sweeps_the_database_at_the_cache_sizes() {
    let (sizes, cache, workload, trust) =
        (sizes(&["0", "64"]), sizes(&["64k", "1M"]), Workload::List, Default::default());
    let database = fixture("keyboxd/gnupg-mixed.db");
    let probe = crate::io::IoTally::new(crate::io::BufferSize::default());
    let plan = Plan {
        runs: 1,
        warmup: 0,
        compare: Some(Comparison::Keyboxd { database: &database, sizes: &cache }),
        probe: Some(&probe),
        ..plan(&sizes, &workload, &trust)
    };
    let keybox = fixture("gnupg-mixed.kbx");
    let (sweep, said) = sweep_of(&keybox, plan);
    let sweep = sweep.unwrap();
    let db = sweep.versus.as_deref().unwrap();
    assert_eq!(db.keybox, format!("{} as keyboxd's database (kbxscope convert, a temporary copy)", keybox.display()));
    assert!(db.keyboxd && !sweep.keyboxd);
    assert_eq!(db.results.iter().map(|r| r.label.as_str()).collect::<Vec<_>>(), ["64k", "1M"]);
    assert!(db.results.iter().all(|r| r.total_events() > 0), "SQLite's calls are counted");
    let verdict = sweep.verdict().unwrap();
    assert!(sweep.results.iter().any(|r| std::ptr::eq(r, verdict.keybox)));
    assert!(db.results.iter().any(|r| std::ptr::eq(r, verdict.keyboxd)));
    // The keybox's runs, their end, the database's, their end.
    let versus: Vec<Option<bool>> =
        said.iter().map(|p| if let Progress::Run(s) = p { Some(s.versus) } else { None }).collect();
    assert_eq!(versus, [Some(false), Some(false), None, Some(true), Some(true), None]);
    let Progress::Run(last) = said[4] else { unreachable!() };
    assert_eq!(last.to_string(), "keyboxd: 1 MiB (2/2): timed run 1/1");
    // The probe counted nothing here.
    assert!(sweep.probe_events.is_none());
}

#[test]
fn the_verdict_names_the_faster_store() {
    let row = |label: &str, mean: f64| SizeResult {
        label: label.into(),
        buffer_size: 8192,
        file_api: None,
        bulk_import: false,
        events: Default::default(),
        bytes_read: 0,
        logical_reads: 0,
        wall_s: Times::new(vec![mean]),
        user_s: Times::new(vec![]),
        sys_s: Times::new(vec![]),
        mean_read_ns: 0.0,
        seed: None,
        gnupg: None,
        program: None,
        keybox_changed: Vec::new(),
        other_events: 0,
    };
    let sweep = |rows: Vec<SizeResult>, versus: Option<Sweep>| Sweep {
        keybox: "k".into(),
        workload: Workload::List,
        lookup: None,
        warmup: 0,
        runs: 1,
        results: rows,
        program: None,
        keyboxd: versus.is_none(),
        versus: versus.map(Box::new),
        probe_events: None,
    };
    let db = sweep(vec![row("64k", 0.4), row("1M", 0.2)], None);
    let both = sweep(vec![row("0", 0.5), row("64", 0.1), row("512", 0.1)], Some(db.clone()));
    let v = both.verdict().unwrap();
    assert_eq!((v.keybox.label.as_str(), v.keyboxd.label.as_str()), ("64", "1M"), "the first of the fastest");
    assert_eq!(v.faster, crate::store::StoreKind::Keybox);
    assert!((v.ratio - 2.0).abs() < 1e-9);
    let tie = sweep(vec![row("0", 0.2)], Some(db));
    assert_eq!(tie.verdict().unwrap().faster, crate::store::StoreKind::Keyboxd, "keyboxd on a tie");
    assert!(sweep(vec![row("0", 0.2)], None).verdict().is_none());
}

/// A size's label and its file events: open, read, seek, stat, close.
type SizeOps = (&'static str, [u64; 5]);

/// The buffer, not the system, decides when to read: every file API this
/// system has (POSIX here on Linux; Win32 and the C runtime on Windows,
/// under Wine in CI) makes the file events Linux makes, which `strace`
/// confirms there (tests/strace.rs), per operation and buffer size.
#[test]
fn every_file_api_makes_linuxs_file_events() {
    let trust = crate::x509::TrustList::read(
        &crate::io::read_text(&fixture("gnupg-mixed.trustlist.txt"), 1 << 20).unwrap(),
        None,
    );
    // (workload, [(size, [open, read, seek, stat, close])]), as Linux gives them.
    let linux: [(Workload, [SizeOps; 3]); 3] = [
        (Workload::List, [("8", [1, 78, 0, 1, 1]), ("64", [1, 11, 0, 1, 1]), ("128", [1, 6, 0, 1, 1])]),
        (
            Workload::Validate(Strategy::Gnupg),
            [("8", [5, 81, 0, 5, 5]), ("64", [5, 14, 0, 5, 5]), ("128", [5, 9, 0, 5, 5])],
        ),
        (
            Workload::Sigs(Mode::CheckSigs, Strategy::Gnupg),
            [
                ("8", [122, 18_333, 117, 122, 122]),
                ("64", [122, 2_588, 117, 122, 122]),
                ("128", [122, 1_413, 117, 122, 122]),
            ],
        ),
    ];
    for &api in crate::io::FileApi::on_this_system() {
        for (workload, expected) in &linux {
            let labels: Vec<&str> = expected.iter().map(|(l, _)| *l).collect();
            let sizes: Vec<SweepSize> = sizes(&labels).iter().map(|s| s.with_api(api)).collect();
            let plan = Plan { runs: 1, warmup: 0, ..plan(&sizes, workload, &trust) };
            let sweep = sweep_of(&fixture("gnupg-mixed.kbx"), plan).0.unwrap();
            let got: Vec<(&str, [u64; 5])> = sweep
                .results
                .iter()
                .map(|r| {
                    (r.label.as_str(), [r.events.open, r.events.read, r.events.seek, r.events.stat, r.events.close])
                })
                .collect();
            assert_eq!(got, expected, "{api}, {}", workload.command());
        }
    }
}
