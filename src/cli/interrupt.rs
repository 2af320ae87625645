//! Ctrl-C (SIGINT) and SIGTERM while kbxscope writes files: finish what
//! can be finished (the trace), remove every temporary file, exit with
//! 128 + the signal's number (130, 143) as shells expect.
//!
//! The watcher (`kbxscope::io::watch_stops`: a thread of signal-hook's on
//! Unix, the console's handler on Windows, where Ctrl-C exits 130) starts only when the
//! first temporary file or hook is registered: a command that writes
//! nothing stays single-threaded, so its `read(2)` calls cost what they
//! cost (a second thread makes each one dearer).
//!
//! The registry's lock is held while a temporary file is moved into place
//! or removed ([`settle`]), and by the watcher while it removes what is
//! left, so a file is either in place or gone, never half of each.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Mutex, MutexGuard, Once, PoisonError};
use std::time::Duration;

use kbxscope::io::Stop;

/// Run when a signal ends the process, before temporary files are removed;
/// given the signal's name.
pub type Hook = Box<dyn FnOnce(&'static str) + Send>;

struct Registry {
    temps: Vec<PathBuf>,
    hooks: Vec<Hook>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry { temps: Vec::new(), hooks: Vec::new() });
static WATCHER: Once = Once::new();
/// Who waits for a signal to end a wait instead of the process.
static WAITER: Mutex<Option<Sender<&'static str>>> = Mutex::new(None);

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Start the watcher (once): before the first temporary file or private
/// directory is made.
pub fn watch() {
    WATCHER.call_once(|| {
        // Without a watcher the default actions stay: the process ends
        // and the temporary files stay behind, as before.
        kbxscope::io::watch_stops(|stop| {
            let waiter = WAITER.lock().unwrap_or_else(PoisonError::into_inner).take();
            match waiter {
                Some(waiter) if waiter.send(stop.name).is_ok() => {}
                _ => interrupted(stop),
            }
        });
    });
}

/// Create a temporary file with `make` and remember it (its path by
/// `path_of`): it is removed if a signal ends the process before
/// [`settle`] is called for it. The watcher is running before the file
/// exists, and the registry is locked from its creation until it is known,
/// so no signal falls in between.
///
/// # Errors
/// `make`'s.
pub fn create<T>(make: impl FnOnce() -> std::io::Result<T>, path_of: impl Fn(&T) -> &Path) -> std::io::Result<T> {
    watch();
    let mut registry = registry();
    let made = make()?;
    registry.temps.push(path_of(&made).to_path_buf());
    Ok(made)
}

/// Run `finish` (which moves the temporary file at `path` into place or
/// removes it) with the registry locked, then forget `path`.
pub fn settle<T>(path: &Path, finish: impl FnOnce() -> T) -> T {
    let mut registry = registry();
    let result = finish();
    registry.temps.retain(|p| p != path);
    result
}

/// Run `hook` if a signal ends the process.
pub fn on_interrupt(hook: Hook) {
    watch();
    registry().hooks.push(hook);
}

/// SIGINT and SIGTERM caught for a wait instead of ending the process,
/// from [`catch_stops`] on: a signal that comes before [`Caught::wait`]
/// is kept for it. Dropped, the signals end the process again.
pub struct Caught(Receiver<&'static str>);

/// Catch the next SIGINT or SIGTERM (Ctrl-C) for a [`Caught::wait`]: the
/// first one ends that wait instead of the process (a second one ends the
/// process as usual). Armed before a command says it is ready, so a
/// signal sent as soon as it says so is never lost. (`record --pid` waits
/// so, on Linux.)
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub fn catch_stops() -> Caught {
    watch();
    let (tx, rx) = channel();
    *WAITER.lock().unwrap_or_else(PoisonError::into_inner) = Some(tx);
    Caught(rx)
}

impl Caught {
    /// Wait until `limit` has passed (with `None`, forever) or the signal
    /// has come; its name, if it came.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub fn wait(self, limit: Option<Duration>) -> Option<&'static str> {
        match limit {
            Some(d) => self.0.recv_timeout(d).ok(),
            None => self.0.recv().ok(),
        }
    }
}

impl Drop for Caught {
    fn drop(&mut self) {
        WAITER.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}

fn interrupted(stop: Stop) -> ! {
    let name = stop.name;
    let hooks = std::mem::take(&mut registry().hooks);
    for hook in hooks {
        hook(name);
    }
    // Held until exit: no file is moved into place meanwhile.
    let registry = registry();
    for path in &registry.temps {
        let _ = std::fs::remove_file(path);
    }
    // The replays' private directories, with all in them.
    kbxscope::io::update::PrivateCopy::remove_all();
    eprintln!("kbxscope: interrupted ({name})");
    std::process::exit(stop.exit_code);
}
