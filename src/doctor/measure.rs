//! What a change would save, measured: the home's usual commands replayed
//! on a private copy of the keybox as it is and on one per change, side
//! by side. The commands, cheapest first: `gpg -k` (GnuPG's start with its
//! maintenance pass, then the listing), `gpgsm -k --with-validation` and
//! `gpg --check-sigs`; each change is replayed with the commands it
//! changes. Per command: a warm-up of the keybox as it is (which also
//! says what a replay costs), then rounds in which every variant runs
//! once; the median of its rounds is its time. A command whose warm-up
//! shows that its rounds would not fit in what is left of the time budget
//! is not replayed, and said so. The user's keybox is only read (once, to
//! make the copies).

use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::gnupg_version::GnupgVersion;
use crate::io::update::PrivateCopy;
use crate::io::{BufferSize, IoTally};
use crate::lookup::Strategy;
use crate::openpgp::{Judge, Mode};
use crate::store::{Store, StoreError, StoreKind};
use crate::sweep::median;
use crate::workload;
use crate::x509::TrustList;

/// How fast a keybox pass reads from the page cache, about (gpg 2.2.40
/// scans a 2 MiB keybox 5,000 times in 1.05 s here: 10 GB/s of bytes
/// asked for; a quarter of that is the estimate's, to be safe).
pub const SCAN_BYTES_PER_SECOND: f64 = 2.5e9;

/// A command of the home replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Command {
    /// `gpg -k`: the start (maintenance pass) and the listing.
    #[serde(rename = "gpg -k")]
    GpgList,
    /// `gpgsm -k --with-validation`.
    #[serde(rename = "gpgsm -k --with-validation")]
    GpgsmValidate,
    /// `gpg --check-sigs`.
    #[serde(rename = "gpg --check-sigs")]
    GpgCheckSigs,
}

impl Command {
    /// All, cheapest first.
    pub const ALL: [Command; 3] = [Command::GpgList, Command::GpgsmValidate, Command::GpgCheckSigs];

    /// As a user types it.
    pub fn name(self) -> &'static str {
        match self {
            Command::GpgList => "gpg -k",
            Command::GpgsmValidate => "gpgsm -k --with-validation",
            Command::GpgCheckSigs => "gpg --check-sigs",
        }
    }
}

/// One variant of the keybox: the change made, and how it is read.
pub struct Variant {
    /// The finding it answers (`as-is` for the keybox as it is).
    pub kind: &'static str,
    /// The change, in words.
    pub change: String,
    /// The keybox's bytes after the change.
    pub keybox: Vec<u8>,
    /// The buffer GnuPG would read it with.
    pub buffer: BufferSize,
    /// The commands the change changes.
    pub commands: Vec<Command>,
    /// The store the bytes are: a keybox, or keyboxd's database (read
    /// through keyboxd's replay, SQLite's default page cache).
    pub store: StoreKind,
}

/// What one command took on a variant, beside the keybox as it is.
#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    /// The finding it answers.
    pub kind: &'static str,
    /// The change, in words.
    pub change: String,
    /// The command replayed.
    pub command: Command,
    /// The keybox as it is: seconds (median of the rounds).
    pub before_seconds: f64,
    /// After the change.
    pub after_seconds: f64,
    /// `before - after` (negative: slower).
    pub saving_seconds: f64,
    /// File events of one replay as it is.
    pub events_before: u64,
    /// After the change.
    pub events_after: u64,
    /// Timed rounds.
    pub rounds: usize,
}

/// A command not replayed, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    /// The command.
    pub command: Command,
    /// Why.
    pub why: String,
}

/// The replays.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Replays {
    /// What each change saved, per command.
    pub measured: Vec<Measured>,
    /// Commands left out.
    pub skipped: Vec<Skipped>,
}

/// How to replay.
pub struct Plan<'a> {
    /// The keybox holds OpenPGP keys (gpg's commands apply).
    pub gpg: bool,
    /// It holds certificates (gpgsm's command applies, with `trust`).
    pub gpgsm: bool,
    /// gpgsm's trusted roots.
    pub trust: &'a TrustList,
    /// Whose rules and reads.
    pub version: GnupgVersion,
    /// The time GnuPG runs at (its maintenance pass compares it with the stamp).
    pub now: i64,
    /// Timed rounds per command at most (at least 1 is made, where it fits).
    pub rounds: usize,
    /// The time all replays may take.
    pub budget: Duration,
    /// Distinct signers in the keybox: a `--check-sigs` looks each up,
    /// and a look-up may read the whole keybox; signers times a read of
    /// the keybox from the page cache ([`SCAN_BYTES_PER_SECOND`]) is the
    /// estimate that decides, before any replay of it, whether
    /// `--check-sigs` fits in the budget.
    pub signers: u64,
    /// The keybox's size.
    pub bytes: u64,
}

/// One replay of `command` on the keybox at `path`: seconds and file events.
fn replay(path: &Path, v: &Variant, command: Command, plan: &Plan<'_>) -> Result<(f64, u64), StoreError> {
    let tally = IoTally::new(v.buffer);
    let store = Store::open_as(path, v.store, &tally, None)?;
    let started = Instant::now();
    match command {
        Command::GpgList => {
            workload::list::as_gpg(&store, plan.version, plan.now, |_| {})?;
        }
        Command::GpgsmValidate => {
            workload::validate::run(&store, Strategy::Gnupg, plan.trust, plan.now, plan.version, false, |_| {})?;
        }
        Command::GpgCheckSigs => {
            let judge = Judge { version: plan.version, now: plan.now };
            workload::sigs::run(&store, Mode::CheckSigs, Strategy::Gnupg, judge, |_| {})?;
        }
    }
    Ok((started.elapsed().as_secs_f64(), tally.snapshot().events.total()))
}

/// Replay the commands each variant changes (the first variant is the
/// keybox as it is), within the plan's budget; `progress` is told before
/// each replay (what, replays done, replays planned).
///
/// # Errors
/// A private copy cannot be made, or a replay cannot read its copy.
pub fn measure(
    variants: &[Variant],
    plan: &Plan<'_>,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> Result<Replays, StoreError> {
    let copies = variants
        .iter()
        .map(|v| {
            let name = if v.store == StoreKind::Keyboxd { "pubring.db" } else { "pubring.kbx" };
            PrivateCopy::holding(name, &v.keybox).map_err(|error| StoreError::Private { error })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let applies = |c: Command| match c {
        Command::GpgList | Command::GpgCheckSigs => plan.gpg,
        Command::GpgsmValidate => plan.gpgsm,
    };
    let max_rounds = plan.rounds.max(1);
    let wanted: Vec<(Command, Vec<usize>)> = Command::ALL
        .into_iter()
        .filter(|c| applies(*c))
        .map(|c| (c, (1..variants.len()).filter(|i| variants[*i].commands.contains(&c)).collect::<Vec<_>>()))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    let mut total: usize = wanted.iter().map(|(_, v)| 1 + max_rounds * (v.len() + 1)).sum();
    let started = Instant::now();
    let mut out = Replays::default();
    let mut done = 0;
    for (command, which) in wanted {
        let left = plan.budget.saturating_sub(started.elapsed()).as_secs_f64();
        if command == Command::GpgCheckSigs {
            let scan = plan.bytes as f64 / SCAN_BYTES_PER_SECOND;
            let estimate = plan.signers as f64 * scan * (which.len() + 2) as f64;
            if estimate > left {
                out.skipped.push(Skipped {
                    command,
                    why: format!(
                        "{} signers to look up, each up to a read of the keybox: about {estimate:.0} s for {} replays, over the {left:.0} s left of the budget",
                        plan.signers,
                        which.len() + 2
                    ),
                });
                total -= 1 + max_rounds * (which.len() + 1);
                continue;
            }
        }
        progress(&format!("{}: warm-up", command.name()), done, total);
        let (warm, _) = replay(copies[0].store(), &variants[0], command, plan)?;
        done += 1;
        let left = plan.budget.saturating_sub(started.elapsed()).as_secs_f64();
        let runs: Vec<usize> = std::iter::once(0).chain(which.iter().copied()).collect();
        let per_round = warm * runs.len() as f64;
        // As many rounds as fit in what is left, up to the plan's.
        let fit = if per_round > 0.0 { (left / per_round).floor() as usize } else { max_rounds };
        let rounds = fit.min(max_rounds);
        total -= (max_rounds - rounds) * runs.len();
        if rounds == 0 {
            out.skipped.push(Skipped {
                command,
                why: format!(
                    "one replay takes {warm:.1} s: a round of {} would take {per_round:.0} s, over the {left:.0} s left of the budget",
                    runs.len()
                ),
            });
            continue;
        }
        let mut times = vec![Vec::with_capacity(rounds); runs.len()];
        let mut events = vec![0; runs.len()];
        for round in 0..rounds {
            for (slot, &i) in runs.iter().enumerate() {
                let v = &variants[i];
                progress(&format!("{}: {} ({}/{rounds})", command.name(), v.change, round + 1), done, total);
                let (seconds, n) = replay(copies[i].store(), v, command, plan)?;
                done += 1;
                times[slot].push(seconds);
                events[slot] = n;
            }
        }
        let medians: Vec<f64> = times.iter().map(|t| median(t)).collect();
        for (slot, &i) in runs.iter().enumerate().skip(1) {
            out.measured.push(Measured {
                kind: variants[i].kind,
                change: variants[i].change.clone(),
                command,
                before_seconds: medians[0],
                after_seconds: medians[slot],
                saving_seconds: medians[0] - medians[slot],
                events_before: events[0],
                events_after: events[slot],
                rounds,
            });
        }
    }
    Ok(out)
}
