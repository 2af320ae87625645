//! [`IoTally`]: the running total of every handle's file events, and the
//! link from handles to the observer and to the change watch.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use super::buffer_size::BufferSize;
use super::change::{KeyboxChange, Watch};
use super::sys::FileApi;
use crate::events::{observer, FileStats, IoObserver, IoStats, Reporter};

/// The running total of the file events of every handle opened with it.
///
/// Cloning gives another reference to the same total. Handles add their
/// counters when they close, so the per-event cost stays in the handle.
/// Closed handles leave their buffers here for the next handle: a lookup
/// that opens thousands of handles allocates as many buffers as it ever
/// had open at once, not one per open.
#[derive(Clone)]
pub struct IoTally {
    buffer_size: BufferSize,
    api: FileApi,
    shared: Rc<RefCell<Shared>>,
    /// The process-wide observer when [`IoTally::new`] ran (telemetry on):
    /// without one the hot path does no metrics work at all.
    pub(super) observer: Option<Arc<dyn IoObserver>>,
    pub(super) watch: Rc<RefCell<Watch>>,
}

impl std::fmt::Debug for IoTally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IoTally")
            .field("buffer_size", &self.buffer_size)
            .field("api", &self.api)
            .field("total", &self.shared.borrow().total)
            .field("observed", &self.observer.is_some())
            .finish_non_exhaustive()
    }
}

#[derive(Debug)]
struct Shared {
    total: IoStats,
    /// The read handles' counters since the last keybox update settled
    /// ([`IoTally::settle_update`]): the keybox's share of its row.
    handles: IoStats,
    /// Per file, for producers that touch several (SQLite: the database,
    /// its journal, the directories on its path), in the order first seen.
    files: Vec<FileStats>,
}

impl IoTally {
    /// A zeroed tally for handles with buffers of `buffer_size`. Its handles
    /// report to the process-wide observer set now, if any
    /// ([`crate::events::set_observer`]).
    pub fn new(buffer_size: BufferSize) -> Self {
        Self::with_observer(buffer_size, observer())
    }

    /// A zeroed tally whose handles report to `observer` (or to nobody).
    pub fn with_observer(buffer_size: BufferSize, observer: Option<Arc<dyn IoObserver>>) -> Self {
        let total = IoStats::new(buffer_size.bytes() as u64);
        let handles = IoStats::new(buffer_size.bytes() as u64);
        let shared = Shared { total, handles, files: Vec::new() };
        let api = FileApi::current();
        Self { buffer_size, api, shared: Rc::new(RefCell::new(shared)), observer, watch: Rc::default() }
    }

    /// The same tally, its handles opened with `api` instead of the
    /// process's default ([`FileApi::current`]); only before it counts.
    pub fn with_file_api(mut self, api: FileApi) -> Self {
        self.api = api;
        self
    }

    /// The file API its handles open, read, seek and close with.
    pub fn file_api(&self) -> FileApi {
        self.api
    }

    /// A zeroed tally for another buffer size that compares the files its
    /// handles open with the same first file as this one (a sweep's sizes).
    pub(crate) fn sibling(&self, buffer_size: BufferSize) -> Self {
        Self { watch: self.watch.clone(), api: self.api, ..Self::with_observer(buffer_size, self.observer.clone()) }
    }

    /// How the keybox changed while it was read: another file renamed into
    /// place, a new size or modification time seen by a later open (each
    /// once, in the order found), then bytes appended while a handle was
    /// reading. Empty when every handle saw the same file.
    pub fn changes(&self) -> Vec<KeyboxChange> {
        let mut out = self.watch.borrow().changes.clone();
        let beyond = self.shared.borrow().total.beyond_end;
        if beyond > 0 {
            out.push(KeyboxChange::Grew { unused_bytes: beyond });
        }
        out
    }

    /// The buffer size of the handles this tally opens.
    pub fn buffer_size(&self) -> BufferSize {
        self.buffer_size
    }

    /// The counters of every handle closed so far.
    pub fn snapshot(&self) -> IoStats {
        self.shared.borrow().total.clone()
    }

    /// Counters for a new handle: with histograms when it is observed.
    pub(super) fn fresh_stats(&self) -> IoStats {
        let size = self.buffer_size.bytes() as u64;
        if self.observer.is_some() {
            IoStats::with_histograms(size)
        } else {
            IoStats::new(size)
        }
    }

    /// A new buffer for a new handle. (Handing closed handles' buffers on
    /// was tried: at 512 KiB it made every read(2) into a reused buffer
    /// about four times dearer in system time, so each handle gets its own.)
    pub(super) fn new_buffer(&self) -> Box<[u8]> {
        vec![0u8; self.buffer_size.bytes()].into_boxed_slice()
    }

    /// The counters per file, where a producer keeps them (databases);
    /// empty for keyboxes, whose one file is the total.
    pub fn files(&self) -> Vec<FileStats> {
        self.shared.borrow().files.clone()
    }

    /// Add a closed database's counters per file (its total was settled).
    pub(super) fn settle_files(&self, files: Vec<FileStats>) {
        let mut shared = self.shared.borrow_mut();
        for f in files {
            match shared.files.iter_mut().find(|g| g.path == f.path) {
                Some(g) => g.stats.merge(&f.stats),
                None => shared.files.push(f),
            }
        }
    }

    /// A keybox update's counters per file: every read handle's events so
    /// far are the store's, with what the update did to it; the other
    /// files follow. All of them count in the total. The keybox's
    /// replacements the update made itself are not changes from outside:
    /// they are forgotten.
    /// `renamed`: the update renamed files into the keybox's place (its
    /// own changes, forgotten); a replay that only reads the user's
    /// keybox keeps what the watch saw of it.
    pub(super) fn settle_update(&self, rows: Vec<FileStats>, store: &str, renamed: bool) {
        if renamed {
            self.watch.borrow_mut().changes.clear();
        }
        // The keybox's row starts with its read handles' events (in the
        // total already); the update's own row for it merges into it.
        let handles =
            std::mem::replace(&mut self.shared.borrow_mut().handles, IoStats::new(self.buffer_size.bytes() as u64));
        self.settle_files(vec![FileStats { path: store.to_string(), stats: handles }]);
        self.settle_written(rows);
    }

    /// Counters of a replay's own calls on files, apart from its read
    /// handles (an update's files, a wait for another process's lock):
    /// reported, added to the total and to the files' rows.
    pub(super) fn settle_written(&self, rows: Vec<FileStats>) {
        for r in &rows {
            if let Some(o) = &self.observer {
                Reporter::new(o.clone(), r.stats.buffer_size).report(&r.stats);
            }
            self.shared.borrow_mut().total.merge(&r.stats);
        }
        self.settle_files(rows);
    }

    /// The handles from now on read another file than those before them
    /// (a replay's private copy): the change watch starts over.
    pub(super) fn rebase_watch(&self) {
        self.watch.borrow_mut().rebase();
    }

    /// A handle closed: add its counters, report the rest of them.
    pub(super) fn settle(&self, stats: &IoStats, reporter: Option<Reporter>) {
        if let Some(mut r) = reporter {
            r.report(stats);
        }
        let mut shared = self.shared.borrow_mut();
        shared.total.merge(stats);
        shared.handles.merge(stats);
    }
}
