//! Which keybox a command reads: the one given, or the built-in default.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, Result};

use super::output::{ensure_dir, write_file, WriteError};
use super::progress::Bar;
use kbxscope::generate::cache::default_keybox_path;
use kbxscope::generate::{generate, GenConfig, Generated, Preset};
use kbxscope::io::{is_file, read_text};
use kbxscope::x509::TrustList;

/// Where the built-in keybox is cached.
///
/// # Errors
/// No cache directory can be found.
pub fn builtin_path() -> Result<PathBuf> {
    default_keybox_path(|k| std::env::var_os(k))
        .ok_or_else(|| anyhow!("no keybox given, and no cache directory for the built-in one: set HOME, XDG_CACHE_HOME or KBXSCOPE_CACHE_DIR"))
}

/// Generate the built-in keybox into `path` (the cache), saying so.
///
/// # Errors
/// It cannot be written.
pub fn generate_builtin(path: &Path) -> Result<()> {
    let span = tracing::info_span!(target: "kbx::command", "generate", preset = %"seed", bytes = tracing::field::Empty);
    let generating = span.enter();
    eprintln!(
        "kbxscope: no keybox given: generating the built-in default keybox (seed preset: 1294 OpenPGP keys, \
         803 certificates, about 42 MiB) into {} — once; later runs reuse it",
        path.display()
    );
    let started = Instant::now();
    let generated = generate_with_progress(&Preset::Seed.config())?;
    if let Some(dir) = path.parent() {
        ensure_dir(dir)?;
    }
    match write_outputs(path, &generated, false) {
        Ok(()) | Err(WriteError::Exists(_)) => {}
        Err(e) => return Err(e.into()),
    }
    span.record("bytes", generated.keybox.len());
    drop(generating);
    eprintln!(
        "kbxscope: generated {} ({} bytes) in {:.1} s",
        path.display(),
        generated.keybox.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Generate with a progress bar on stderr.
pub fn generate_with_progress(cfg: &GenConfig) -> Result<Generated> {
    let bar = Bar::new();
    Ok(generate(cfg, &mut |step, done, total| bar.update(step, done, total))?)
}

/// The trustlist's path next to a keybox: `OUT.trustlist.txt`.
pub fn trustlist_path(keybox: &Path) -> PathBuf {
    let mut name = keybox.as_os_str().to_owned();
    name.push(".trustlist.txt");
    PathBuf::from(name)
}

/// Write a generated keybox and its trustlist, each through a temporary file.
///
/// # Errors
/// [`WriteError::Exists`] if either exists and `overwrite` is false.
pub fn write_outputs(path: &Path, g: &Generated, overwrite: bool) -> Result<(), WriteError> {
    let trust = trustlist_path(path);
    if !overwrite && trust.exists() {
        return Err(WriteError::Exists(trust));
    }
    write_file(path, &g.keybox, overwrite)?;
    write_file(&trust, g.trustlist.as_bytes(), overwrite)
}

/// gpg-agent's system trustlist (`include-default`), in GnuPG's sysconfdir.
const SYSTEM_TRUSTLIST: &str = "/etc/gnupg/trustlist.txt";

/// The trustlist next to a keybox, if there is one: `KEYBOX.trustlist.txt`
/// (what `gen` writes, `pubring.kbx.trustlist.txt`) or `STEM.trustlist.txt`
/// (`gnupg-mixed.trustlist.txt` beside `gnupg-mixed.kbx`).
pub fn trustlist_next_to(keybox: &Path) -> Option<PathBuf> {
    let stem = keybox.extension().is_some().then(|| keybox.with_extension("trustlist.txt"));
    [Some(trustlist_path(keybox)), stem].into_iter().flatten().find(|p| is_file(p))
}

/// Trusted roots for validating a keybox, and whether any trustlist was found.
pub struct Trust {
    /// The roots (none when no trustlist was found).
    pub list: TrustList,
    /// No trustlist was given or found: say so (after the keybox opened,
    /// so that a missing keybox is reported first).
    pub none_found: bool,
}

impl Trust {
    /// The note for a validation without any trustlist, if that is the case.
    pub fn warn_if_none(&self) {
        if self.none_found {
            eprintln!(
                "kbxscope: no trustlist found (tried KEYBOX.trustlist.txt, STEM.trustlist.txt and the GnuPG \
                 home: $GNUPGHOME, else ~/.gnupg or %APPDATA%\\gnupg): no root is trusted"
            );
        }
    }
}

/// The trustlist for validating `keybox`: the one given, else the one next
/// to it ([`trustlist_next_to`]), else the one in the user's GnuPG home
/// ([`kbxscope::io::gnupg_home`]). Without any, nothing is trusted.
pub fn trustlist_for(keybox: &Path, given: Option<&Path>) -> Result<Trust> {
    let candidates = [trustlist_next_to(keybox), kbxscope::io::gnupg_home().map(|h| h.join("trustlist.txt"))];
    let path = match given {
        Some(p) => Some(p.to_path_buf()),
        None => candidates.into_iter().flatten().find(|p| is_file(p)),
    };
    let Some(path) = path else {
        return Ok(Trust { list: TrustList::default(), none_found: true });
    };
    let text = read_text(&path, 1 << 20)?;
    let mut list = TrustList::read(&text, None);
    if list.includes_default() {
        // gpg-agent reads the system trustlist where `include-default` stands.
        let system = Path::new(SYSTEM_TRUSTLIST);
        let sys = if is_file(system) { Some(read_text(system, 1 << 20)?) } else { None };
        list = TrustList::read(&text, sys.as_deref());
    }
    if let Some(e) = list.broken() {
        let file = if e.in_system_list { SYSTEM_TRUSTLIST.to_string() } else { path.display().to_string() };
        eprintln!(
            "kbxscope: {file}: line {}: {}: gpg-agent rejects the whole trustlist (gpgsm: \"{}\" for every root)",
            e.line, e.reason, e.code
        );
    }
    Ok(Trust { list, none_found: false })
}
