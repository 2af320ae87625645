//! The instrumented, buffered file layer: the only code that touches a keybox.
//!
//! Every system call issued on a keybox — `openat`, `read`, `lseek`,
//! `close` and one `fstat` per open — is a *file event*: counted and timed
//! with the monotonic clock, per operation, in an [`IoStats`](crate::events::IoStats). Reads the
//! buffer serves are *logical reads*, counted apart. The counts equal what
//! `strace` sees on the keybox's descriptor (the integration tests check
//! this under strace for several buffer sizes).
//!
//! * [`BufferSize`]: `--kbx-buffer-size`, with GnuPG's meaning;
//! * [`BufferedReader`]: the one buffer, over any [`RawRead`] (a file, or
//!   bytes in memory);
//! * [`KeyboxFile`]: a read-only open of a path, closed on drop, adding its
//!   counters to an [`IoTally`] (which also keeps closed handles' buffers
//!   for reuse);
//! * [`FileApi`]: which of the system's calls open, read, seek and close
//!   it (`sys`: POSIX on Unix; Win32 or the C runtime on Windows);
//! * [`IoObserver`](crate::events::IoObserver): who else receives the counters, as deltas (telemetry
//!   implements it; `io` never imports telemetry);
//! * `read_blob`: GnuPG's blob-at-a-time read pattern on top.

mod blob_reader;
mod buffer_size;
mod buffered;
mod change;
mod event;
pub mod home;
mod keybox_file;
mod raw_read;
mod source;
pub mod sqlite;
mod sys;
mod tally;
mod text;
pub mod update;

pub(crate) use blob_reader::{read_blob, Next, Take};

pub use blob_reader::ReadBlobError;
pub use buffer_size::BufferSize;
pub use buffer_size::BufferSizeError;
pub use buffered::BufferedReader;
pub use change::KeyboxChange;
pub use event::time_events;
pub use keybox_file::KeyboxFile;
pub use keybox_file::OpenError;
pub use raw_read::RawRead;
pub use source::MemoryOpener;
pub use source::Opener;
pub use source::PathOpener;
pub use sys::{cpu_times, gnupg_home, monotonic_ns, watch_stops, CpuOf, FileApi, Stop, SysFile, UnavailableApi};
pub use tally::IoTally;
pub use text::ReadTextError;
pub use text::{count_lines_containing, is_file, read_text};
