//! Where SQLite's calls are counted: the calling thread's sink, armed
//! while a database of kbxscope's is open on it, and the bookkeeping of
//! one call (its file, its outcome, errno kept as the call left it).

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr};
use std::rc::Rc;

use crate::events::{FileOp, IoStats};

/// Where the calling thread's events go while a database is open on it.
#[derive(Debug, Default)]
pub(in crate::io::sqlite) struct Sink {
    /// Open descriptors and the files they are on.
    fds: Vec<(c_int, Rc<str>)>,
    /// Per file, in the order first touched.
    pub(in crate::io::sqlite) files: Vec<(Rc<str>, IoStats)>,
    /// A fresh `IoStats` for a new file (histograms or not, buffer size).
    template: IoStats,
    /// Whether event spans are wanted.
    trace: bool,
    /// The first call refused because it would have written: what and on what.
    pub(in crate::io::sqlite) refused: Option<String>,
}

impl Sink {
    pub(in crate::io::sqlite) fn new(template: IoStats, trace: bool) -> Self {
        Self { template, trace, ..Self::default() }
    }

    pub(super) fn name_of_fd(&self, fd: c_int) -> Option<Rc<str>> {
        self.fds.iter().rev().find(|(f, _)| *f == fd).map(|(_, n)| n.clone())
    }

    fn stats_of(&mut self, name: &Rc<str>) -> &mut IoStats {
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
    pub(super) static SINK: RefCell<Option<Sink>> = const { RefCell::new(None) };
}

/// A sink armed on this thread; disarmed (and handed back) by [`Armed::disarm`].
pub(in crate::io::sqlite) struct Armed(());

impl Armed {
    /// Arm `sink` on this thread. `None` if one is armed already (one
    /// database at a time per thread).
    pub(in crate::io::sqlite) fn arm(sink: Sink) -> Option<Armed> {
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
    pub(in crate::io::sqlite) fn with<R>(&self, f: impl FnOnce(&Sink) -> R) -> R {
        SINK.with(|s| f(s.borrow().as_ref().expect("armed")))
    }

    /// Disarm: the sink with everything counted.
    pub(in crate::io::sqlite) fn disarm(self) -> Sink {
        SINK.with(|s| s.borrow_mut().take().expect("armed"))
    }
}

/// What one call touched, for the books.
#[derive(Clone, Copy)]
pub(super) enum Target {
    /// A descriptor.
    Fd(c_int),
    /// A path.
    Path(*const c_char),
    /// A path being opened: the descriptor is the call's result.
    Opened(*const c_char),
}

/// How one call ended.
pub(super) struct Outcome {
    pub(super) failed: bool,
    /// For reads, the bytes returned.
    pub(super) bytes: Option<u64>,
    /// For opens, the new descriptor.
    pub(super) fd: Option<c_int>,
}

impl Outcome {
    pub(super) fn ok_if(ok: bool) -> Self {
        Self { failed: !ok, bytes: None, fd: None }
    }
}

pub(super) fn errno() -> c_int {
    // SAFETY: __errno_location returns this thread's errno, always valid.
    unsafe { *libc::__errno_location() }
}

pub(super) fn set_errno(e: c_int) {
    // SAFETY: as in errno().
    unsafe { *libc::__errno_location() = e }
}

pub(super) fn path_name(p: *const c_char) -> Rc<str> {
    if p.is_null() {
        return Rc::from("(null)");
    }
    // SAFETY: SQLite passes NUL-terminated paths that live for the call.
    Rc::from(unsafe { CStr::from_ptr(p) }.to_string_lossy().as_ref())
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
    let span = trace.then(|| crate::io::event::event_span(op, buffer_size, offset));
    let entered = span.as_ref().map(tracing::Span::enter);
    let watch = crate::io::event::Stopwatch::start();
    let r = call();
    let took = watch.map_or(std::time::Duration::ZERO, |w| w.elapsed());
    let saved = errno();
    let Outcome { failed, bytes, fd: opened } = result(r);
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
                }
                name
            }
        };
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
    set_errno(saved);
    r
}

/// Whether a database of kbxscope's is open on this thread (its calls are
/// counted, and those that would write refused).
pub(super) fn armed() -> bool {
    SINK.try_with(|s| s.try_borrow().map_or(true, |s| s.is_some())).unwrap_or(false)
}
