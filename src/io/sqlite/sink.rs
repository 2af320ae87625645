//! Where SQLite's calls are counted, on every system: the calling
//! thread's sink, armed while a database of kbxscope's is open on it, and
//! the bookkeeping of one call (its file, its outcome, the system's error
//! code — errno, or Windows' last error — kept as the call left it).
//!
//! The hooks of each system's VFS (`syscalls` on Unix, `win32` on
//! Windows) call [`counted`] around SQLite's original; descriptors and
//! handles are [`Fd`]s here, paths [`RawPath`]s.

#![allow(unsafe_code)]
// SINK's initializer is `const` already: clippy 1.95 says otherwise for
// x86_64-pc-windows-gnu built with -Zbuild-std (its thread_local! expands
// to the OS-key form there), a false positive.
#![allow(clippy::missing_const_for_thread_local)]

use std::rc::Rc;
use std::time::Duration;

use crate::events::{FileOp, IoStats};
use crate::io::event::Stopwatch;

/// Where the calling thread's events go while a database is open on it.
#[derive(Debug, Default)]
pub(super) struct Sink {
    /// Open descriptors (handles) and the files they are on.
    fds: Vec<(Fd, Rc<str>)>,
    /// Per file, in the order first touched.
    pub(super) files: Vec<(Rc<str>, IoStats)>,
    /// A fresh `IoStats` for a new file (histograms or not, buffer size).
    template: IoStats,
    /// Whether event spans are wanted.
    pub(super) trace: bool,
    /// The first call refused because it would have written: what and on what.
    pub(super) refused: Option<String>,
    /// Whether calls that write are counted and made (a private copy
    /// kbxscope writes) rather than refused.
    pub(super) writes: bool,
    /// While SQLite syncs a file: the directory it opens to sync too.
    pub(super) syncing: Option<SyncWatch>,
}

/// What one `xSync` did beside the file's own `fsync`: SQLite opens the
/// directory of a journal it has just made, syncs it and closes it.
#[derive(Default)]
pub(super) struct SyncWatch {
    /// The directory opened to be synced, until it is closed.
    pub(super) dir: Option<DirSync>,
    /// The directory's sync: its name and its time (from its open's end to
    /// its close's start).
    pub(super) dir_synced: Option<(Rc<str>, Duration)>,
    /// The time of the directory's open and close.
    pub(super) around: Duration,
}

/// A directory SQLite opened while syncing: its descriptor and name, a
/// watch started when its open returned, and the span of its sync (while
/// traced).
pub(super) struct DirSync {
    fd: Fd,
    name: Rc<str>,
    watch: Option<Stopwatch>,
    span: Option<tracing::span::EnteredSpan>,
}

impl std::fmt::Debug for SyncWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncWatch").field("dir_synced", &self.dir_synced).finish_non_exhaustive()
    }
}

impl Sink {
    pub(super) fn new(template: IoStats, trace: bool, writes: bool) -> Self {
        Self { template, trace, writes, ..Self::default() }
    }

    /// The buffer size events are labelled with (the unix VFS's syncs).
    #[cfg(unix)]
    pub(super) fn template_buffer_size(&self) -> u64 {
        self.template.buffer_size
    }

    pub(super) fn name_of_fd(&self, fd: Fd) -> Option<Rc<str>> {
        self.fds.iter().rev().find(|(f, _)| *f == fd).map(|(_, n)| n.clone())
    }

    pub(super) fn stats_of(&mut self, name: &Rc<str>) -> &mut IoStats {
        let i = match self.files.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                self.files.push((name.clone(), self.template.clone()));
                self.files.len() - 1
            }
        };
        &mut self.files[i].1
    }
}

thread_local! {
    pub(super) static SINK: std::cell::RefCell<Option<Sink>> = const { std::cell::RefCell::new(None) };
}

/// A sink armed on this thread; disarmed (and handed back) by [`Armed::disarm`].
pub(super) struct Armed(());

impl Armed {
    /// Arm `sink` on this thread. `None` if one is armed already (one
    /// database at a time per thread).
    pub(super) fn arm(sink: Sink) -> Option<Armed> {
        SINK.with(|s| {
            let mut s = s.borrow_mut();
            if s.is_some() {
                return None;
            }
            *s = Some(sink);
            Some(Armed(()))
        })
    }

    /// Look at the sink (the refusal so far, say).
    pub(super) fn with<R>(&self, f: impl FnOnce(&Sink) -> R) -> R {
        SINK.with(|s| f(s.borrow().as_ref().expect("armed")))
    }

    /// Disarm: the sink with everything counted.
    pub(super) fn disarm(self) -> Sink {
        SINK.with(|s| s.borrow_mut().take().expect("armed"))
    }
}

/// A descriptor (Unix) or a handle (Windows), as a number.
pub(super) type Fd = isize;

/// A path as SQLite hands it to the system: NUL-terminated bytes on Unix,
/// UTF-16 on Windows.
#[cfg(unix)]
pub(super) type RawPath = *const std::ffi::c_char;
/// A path as SQLite hands it to the system: NUL-terminated bytes on Unix,
/// UTF-16 on Windows.
#[cfg(windows)]
pub(super) type RawPath = *const u16;

/// What one call touched, for the books.
#[derive(Clone, Copy)]
pub(super) enum Target {
    /// A descriptor or handle.
    Fd(Fd),
    /// A path.
    Path(RawPath),
    /// A path being opened: the descriptor is the call's result.
    Opened(RawPath),
}

/// How one call ended.
pub(super) struct Outcome {
    pub(super) failed: bool,
    /// For reads, the bytes returned.
    pub(super) bytes: Option<u64>,
    /// For writes, the bytes written.
    pub(super) written: Option<u64>,
    /// For opens, the new descriptor.
    pub(super) fd: Option<Fd>,
}

impl Outcome {
    pub(super) fn ok_if(ok: bool) -> Self {
        Self { failed: !ok, bytes: None, written: None, fd: None }
    }
}

/// The target of a call on the descriptor `fd` (Unix).
#[cfg(unix)]
pub(super) fn on_fd(fd: std::ffi::c_int) -> Target {
    Target::Fd(fd as isize)
}

/// The calling thread's error code: errno on Unix.
#[cfg(unix)]
pub(super) fn errno() -> i32 {
    // SAFETY: __errno_location returns this thread's errno, always valid.
    unsafe { *libc::__errno_location() }
}

/// Set the calling thread's errno.
#[cfg(unix)]
pub(super) fn set_errno(e: i32) {
    // SAFETY: as in errno().
    unsafe { *libc::__errno_location() = e }
}

/// The calling thread's error code: its last error on Windows.
#[cfg(windows)]
pub(super) fn errno() -> i32 {
    // SAFETY: GetLastError reads a thread-local value; no arguments.
    let e = unsafe { windows_sys::Win32::Foundation::GetLastError() };
    e.cast_signed()
}

/// Set the calling thread's last error.
#[cfg(windows)]
pub(super) fn set_errno(e: i32) {
    // SAFETY: SetLastError writes a thread-local value; no pointers.
    unsafe { windows_sys::Win32::Foundation::SetLastError(e.cast_unsigned()) }
}

/// A path's name, for the books.
#[cfg(unix)]
pub(super) fn path_name(p: RawPath) -> Rc<str> {
    if p.is_null() {
        return Rc::from("(null)");
    }
    // SAFETY: SQLite passes NUL-terminated paths that live for the call.
    Rc::from(unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().as_ref())
}

/// A path's name, for the books.
#[cfg(windows)]
pub(super) fn path_name(p: RawPath) -> Rc<str> {
    if p.is_null() {
        return Rc::from("(null)");
    }
    // SAFETY: SQLite passes NUL-terminated UTF-16 paths that live for the
    // call: every unit up to the NUL is readable.
    let wide = unsafe {
        let mut n = 0;
        while *p.add(n) != 0 {
            n += 1;
        }
        std::slice::from_raw_parts(p, n)
    };
    Rc::from(String::from_utf16_lossy(wide).as_str())
}

/// Whether the armed sink knows `fd` (opened while it was armed): Windows
/// closes more than files with `CloseHandle`.
#[cfg(windows)]
pub(super) fn knows(fd: Fd) -> bool {
    SINK.try_with(|s| s.try_borrow().ok().and_then(|s| s.as_ref().map(|s| s.name_of_fd(fd).is_some())))
        .ok()
        .flatten()
        .unwrap_or(false)
}

/// Remember the first call refused because it would have written: `what`
/// on `target`. (The caller fails the call with the system's error.)
pub(super) fn note_refused(what: &str, target: Target) {
    let _ = SINK.try_with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else { return };
        let Some(sink) = s.as_mut() else { return };
        if sink.refused.is_none() {
            let name = match target {
                Target::Fd(fd) => sink.name_of_fd(fd).map_or_else(|| format!("fd {fd}"), |n| n.to_string()),
                Target::Path(p) | Target::Opened(p) => path_name(p).to_string(),
            };
            sink.refused = Some(format!("{what} {name}"));
        }
    });
}

/// Run `call` (one system call) as `op` on `target`, counting it in the
/// armed sink, if any. `result` says whether it failed and, for reads, how
/// many bytes it returned. errno is what the call left.
pub(super) fn counted<T: Copy>(
    op: FileOp,
    target: Target,
    offset: Option<u64>,
    call: impl FnOnce() -> T,
    result: impl Fn(T) -> Outcome,
) -> T {
    let armed =
        SINK.try_with(|s| s.try_borrow().ok().and_then(|s| s.as_ref().map(|s| (s.trace, s.template.buffer_size))));
    let Ok(Some((trace, buffer_size))) = armed else {
        return call();
    };
    if let (FileOp::Close, Target::Fd(fd), true) = (op, target, trace) {
        end_dir_sync_span(fd);
    }
    let span = trace.then(|| crate::io::event::event_span(op, buffer_size, offset));
    let entered = span.as_ref().map(tracing::Span::enter);
    let watch = crate::io::event::Stopwatch::start();
    let r = call();
    let took = watch.map_or(std::time::Duration::ZERO, |w| w.elapsed());
    let saved = errno();
    let Outcome { failed, bytes, written, fd: opened } = result(r);
    let _ = SINK.try_with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else { return };
        let Some(sink) = s.as_mut() else { return };
        let name = match target {
            Target::Fd(fd) => sink.name_of_fd(fd).unwrap_or_else(|| Rc::from(format!("fd {fd}").as_str())),
            Target::Path(p) => path_name(p),
            Target::Opened(p) => {
                let name = path_name(p);
                if let (Some(fd), false) = (opened, failed) {
                    sink.fds.push((fd, name.clone()));
                    if let Some(w) = sink.syncing.as_mut() {
                        // SQLite syncs the directory it opens while syncing
                        // (its span begins once the open's has ended).
                        w.around += took;
                        w.dir = Some(DirSync { fd, name: name.clone(), watch: Stopwatch::start(), span: None });
                    }
                }
                name
            }
        };
        if op == FileOp::Close {
            if let (Target::Fd(fd), Some(w)) = (target, sink.syncing.as_mut()) {
                if w.dir.as_ref().is_some_and(|d| d.fd == fd) {
                    let DirSync { name: dir, watch, .. } = w.dir.take().expect("checked");
                    let synced = watch.map_or(Duration::ZERO, |w| w.elapsed().saturating_sub(took));
                    w.around += took;
                    w.dir_synced = Some((dir, synced));
                }
            }
        }
        if let Some(span) = &span {
            span.record("file", tracing::field::display(name.as_ref()));
        }
        let stats = sink.stats_of(&name);
        stats.record(op, took);
        if let (Some(n), false) = (bytes, failed) {
            stats.record_read(usize::try_from(n).unwrap_or(usize::MAX));
            if let Some(span) = &span {
                span.record("bytes", n);
            }
        }
        if let (Some(n), false) = (written, failed) {
            stats.record_written(usize::try_from(n).unwrap_or(usize::MAX));
            if let Some(span) = &span {
                span.record("bytes", n);
            }
        }
        if failed {
            if let Some(span) = &span {
                span.record("error", tracing::field::display(std::io::Error::from_raw_os_error(saved)));
            }
        }
        if op == FileOp::Close && !failed {
            if let Target::Fd(fd) = target {
                if let Some(i) = sink.fds.iter().rposition(|(f, _)| *f == fd) {
                    sink.fds.remove(i);
                }
            }
        }
    });
    drop(entered);
    drop(span);
    if trace && op == FileOp::Open {
        begin_dir_sync_span(buffer_size);
    }
    set_errno(saved);
    r
}

/// The span of the sync of a directory SQLite just opened while syncing,
/// entered until the directory's close ([`end_dir_sync_span`]).
fn begin_dir_sync_span(buffer_size: u64) {
    let _ = SINK.try_with(|s| {
        let Ok(mut s) = s.try_borrow_mut() else { return };
        let Some(dir) = s.as_mut().and_then(|s| s.syncing.as_mut()).and_then(|w| w.dir.as_mut()) else { return };
        if dir.span.is_none() {
            let span = crate::io::event::event_span(FileOp::Sync, buffer_size, None);
            span.record("file", tracing::field::display(dir.name.as_ref()));
            dir.span = Some(span.entered());
        }
    });
}

/// The span of a directory's sync ends before the directory is closed.
fn end_dir_sync_span(fd: Fd) {
    let span = SINK.try_with(|s| {
        let mut s = s.try_borrow_mut().ok()?;
        let dir = s.as_mut()?.syncing.as_mut()?.dir.as_mut()?;
        (dir.fd == fd).then(|| dir.span.take()).flatten()
    });
    drop(span);
}

/// What becomes of a call that would write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WriteRule {
    /// No database of kbxscope's open on the thread: passed on, uncounted.
    Pass,
    /// A database kbxscope only reads: refused.
    Refuse,
    /// A private copy kbxscope writes: made and counted.
    Count,
}

/// The rule for a call that would write, on this thread now.
pub(super) fn write_rule() -> WriteRule {
    let rule = SINK.try_with(|s| match s.try_borrow() {
        Ok(s) => match s.as_ref() {
            None => WriteRule::Pass,
            Some(sink) if sink.writes => WriteRule::Count,
            Some(_) => WriteRule::Refuse,
        },
        // Borrowed: a hook is running on this thread; refuse to be safe.
        Err(_) => WriteRule::Refuse,
    });
    rule.unwrap_or(WriteRule::Pass)
}
