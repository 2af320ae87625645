//! The trace span of one of SQLite's system calls: the keybox layer's
//! event spans (target `kbx::event`, the operation as the span's name),
//! with the `file` SQLite named, recorded once the call is known.

use crate::events::FileOp;

/// A span for one system call on a database file (`file`, `bytes` and
/// `error` are recorded after the call).
pub(super) fn event_span(op: FileOp, offset: Option<u64>) -> tracing::Span {
    macro_rules! span {
        ($name:literal) => {
            tracing::info_span!(target: "kbx::event", $name, op = %$name, file = tracing::field::Empty, offset,
                                bytes = tracing::field::Empty, error = tracing::field::Empty)
        };
    }
    match op {
        FileOp::Open => span!("open"),
        FileOp::Read => span!("read"),
        FileOp::Seek => span!("seek"),
        FileOp::Close => span!("close"),
        FileOp::Stat => span!("stat"),
        FileOp::Write => span!("write"),
        FileOp::Mmap => span!("mmap"),
        FileOp::Dup => span!("dup"),
        FileOp::Access => span!("access"),
        FileOp::Truncate => span!("truncate"),
        FileOp::Sync => span!("sync"),
        FileOp::Lock => span!("lock"),
    }
}
