//! The commands that read a store and print what they find: `stats`,
//! `dump`, `list`, `list --with-validation` and `find` (`kbxutil`'s,
//! `gpg -k`'s and `gpgsm -k`'s output, or JSON lines).

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use super::args::TrustArgs;
use super::report::{report, reported, say};
use super::{keybox, render, store, validity};
use kbxscope::gnupg_version::GnupgVersion;
use kbxscope::io::IoTally;
use kbxscope::kbx::search::Pattern;
use kbxscope::lookup::Strategy;
use kbxscope::trustdb::Validities;
use kbxscope::workload::stats::StoreStats;
use kbxscope::workload::{self, KeyDetails, ListOutcome, Listed, Places, Ran, TypeFilter};

/// `stats`.
pub(super) fn stats(file: Option<&Path>, json: bool, tally: &IoTally) -> Result<ExitCode> {
    let store = store::open(file, tally)?;
    let path = store.path().to_path_buf();
    let counted = workload::stats::run(&store);
    drop(store);
    let mut out = io::stdout().lock();
    let fatal = match counted? {
        StoreStats::Keybox(outcome) => {
            if json {
                serde_json::to_writer(&mut out, &outcome.stats)?;
                writeln!(out)?;
            } else {
                out.write_all(outcome.stats.render_kbxutil().as_bytes())?;
            }
            outcome.fatal
        }
        StoreStats::Keyboxd(s) => {
            if json {
                serde_json::to_writer(&mut out, &s)?;
                writeln!(out)?;
            } else {
                out.write_all(s.render().as_bytes())?;
            }
            None
        }
    };
    out.flush()?;
    match fatal {
        Some(e) => Err(report(&path, &e, &Places::Keybox).into()),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// `dump`.
pub(super) fn dump(file: Option<&Path>, tally: &IoTally) -> Result<ExitCode> {
    let store = store::open(file, tally)?;
    let path = store.path().to_path_buf();
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut write_err: Option<io::Error> = None;
    let result = workload::dump::run(&store, |number, body| {
        if write_err.is_none() {
            write_err = writeln!(out, "BEGIN-RECORD: {number}")
                .and_then(|_| out.write_all(body))
                .and_then(|_| out.write_all(b"END-RECORD\n"))
                .err();
        }
    });
    drop(store);
    if let Some(e) = write_err {
        return Err(e.into());
    }
    out.flush()?;
    let outcome = result?;
    let rows = outcome.rows.iter().map(|p| say(&path, p));
    let fatal = outcome.fatal.iter().map(|e| report(&path, e, &Places::Keybox));
    reported(&path, rows.chain(fatal).collect())?;
    Ok(ExitCode::SUCCESS)
}

/// Prints listings as they come, remembering the first write error.
struct ListingPrinter<W: Write> {
    out: W,
    json: bool,
    /// The time keys' expiry is judged at.
    now: i64,
    header: Option<String>,
    /// The user ids' validity column, where computed.
    validity: Option<Validities>,
    error: Option<io::Error>,
}

impl<W: Write> ListingPrinter<W> {
    fn new(out: W, json: bool, path: &Path, now: i64) -> Self {
        let title = path.display().to_string();
        let header = (!json).then(|| format!("{title}\n{}\n", "-".repeat(title.chars().count())));
        Self { out, json, now, header, validity: None, error: None }
    }

    /// With the user ids' validity column.
    fn with_validity(mut self, validity: Validities) -> Self {
        self.validity = Some(validity);
        self
    }

    fn print(&mut self, l: &Listed) {
        if self.error.is_some() {
            return;
        }
        let res = (|| {
            if let Some(h) = self.header.take() {
                self.out.write_all(h.as_bytes())?;
            }
            if self.json {
                match json_with_validity(l, self.validity.as_ref(), self.now) {
                    Some(v) => serde_json::to_writer(&mut self.out, &v)?,
                    None => serde_json::to_writer(&mut self.out, l)?,
                }
                writeln!(self.out)
            } else {
                writeln!(self.out, "{}", render::listing(l, self.now, self.validity.as_ref()))
            }
        })();
        self.error = res.err();
    }

    fn finish(mut self) -> io::Result<()> {
        match self.error.take() {
            Some(e) => Err(e),
            None => self.out.flush(),
        }
    }
}

/// An OpenPGP key's JSON object with its validities
/// ([`render::add_validity`]); `None` where there are none to add.
fn json_with_validity(l: &Listed, validity: Option<&Validities>, now: i64) -> Option<serde_json::Value> {
    let (KeyDetails::Openpgp(k), Some(v)) = (&l.key, validity) else { return None };
    let mut value = serde_json::to_value(l).ok()?;
    render::add_validity(&mut value, k, v, now);
    Some(value)
}

/// Report the problems of a pass (and of the database rows it could not
/// take); `Ok` if there were none.
fn conclude(path: &Path, ran: &Ran<ListOutcome>) -> Result<()> {
    let rows = ran.places.row_problems().iter().map(|p| say(path, p));
    let pass = ran.outcome.problems.iter().chain(&ran.outcome.fatal).map(|e| report(path, e, &ran.places));
    reported(path, rows.chain(pass).collect())
}

/// `list`, judging expiry at `now`, the validity column from `trust`.
pub(super) fn list(
    file: Option<&Path>,
    filter: TypeFilter,
    json: bool,
    now: i64,
    (trust, version): (&TrustArgs, GnupgVersion),
    tally: &IoTally,
) -> Result<ExitCode> {
    let store = store::open(file, tally)?;
    let path = store.path().to_path_buf();
    let mut printer = ListingPrinter::new(io::BufWriter::new(io::stdout().lock()), json, &path, now);
    if filter != TypeFilter::X509 {
        printer = printer.with_validity(validity::for_store(&path, store.kind(), trust, now, version)?);
    }
    let ran = workload::list::run(&store, filter, |l| printer.print(&l))?;
    drop(store);
    printer.finish()?;
    conclude(&path, &ran)?;
    Ok(ExitCode::SUCCESS)
}

/// `list --with-validation`.
pub(super) fn validate(
    file: Option<&Path>,
    lookup: Strategy,
    trustlist: Option<&Path>,
    at: i64,
    json: bool,
    version: GnupgVersion,
    tally: &IoTally,
) -> Result<ExitCode> {
    let store = store::open(file, tally)?;
    let path = store.path().to_path_buf();
    let trust = keybox::trustlist_for(&path, trustlist)?;
    let mut printer = ListingPrinter::new(io::BufWriter::new(io::stdout().lock()), json, &path, at);
    let ran = workload::validate::run(&store, lookup, &trust.list, at, version, version == GnupgVersion::V2_2, |l| {
        printer.print(&l)
    })?;
    drop(store);
    printer.finish()?;
    trust.warn_if_none();
    conclude(&path, &ran)?;
    Ok(ExitCode::SUCCESS)
}

/// `find`, judging expiry at `now`.
pub(super) fn find(
    file: Option<&Path>,
    patterns: &[Pattern],
    texts: &[String],
    (all, json): (bool, bool),
    now: i64,
    tally: &IoTally,
) -> Result<ExitCode> {
    let store = store::open(file, tally)?;
    let path = &store.path().to_path_buf();
    let mut printer = ListingPrinter::new(io::BufWriter::new(io::stdout().lock()), json, path, now);
    let ran = workload::find::run(&store, patterns, all, |l| printer.print(&l))?;
    drop(store);
    printer.finish()?;
    conclude(path, &ran)?;
    if ran.outcome.listed == 0 {
        let quoted: Vec<String> = texts.iter().map(|p| format!("'{p}'")).collect();
        anyhow::bail!("{}: no key matches {}", path.display(), quoted.join(" or "));
    }
    Ok(ExitCode::SUCCESS)
}
