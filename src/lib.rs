//! kbxscope reads GnuPG keybox files (`pubring.kbx`) through one
//! instrumented, buffered file layer and shows what the I/O costs.
//!
//! # A tour
//!
//! The crate has three layers; each uses only the ones below it.
//!
//! * [`kbx`] — the keybox format as pure functions over byte slices:
//!   [`kbx::parse_blob`] decodes a blob with every table bounds-checked,
//!   [`kbx::stats`] and [`kbx::dump`] reproduce `kbxutil`'s output, and
//!   [`kbx::search`] implements GnuPG's search patterns. No I/O.
//! * [`io`] — the only code that opens, reads, seeks or closes a keybox.
//!   [`io::BufferedReader`] is the one buffer (sized by
//!   `--kbx-buffer-size`, [`io::BufferSize`]); every system call it issues
//!   is a *file event*, counted and timed in [`io::IoStats`];
//!   [`io::KeyboxFile`] opens a path read-only and closes it on drop.
//! * [`workload`] — what a user does: `stats`, `dump`, `list`, `find`, each
//!   a pass over a [`io::BufferedReader`] that returns values.
//!
//! * [`telemetry`] — the metrics: [`telemetry::IoMetrics`] receives each
//!   handle's counters as deltas (an [`io::IoObserver`]; `io` never
//!   imports telemetry) and renders the file-event families itself; the
//!   rare families go through the `metrics` facade (no-ops until the
//!   binary installs the Prometheus exporter).
//! * [`gen`] and [`validate`] — realistic keyboxes, and gpgsm-like X.509
//!   validation with three lookup strategies (signature checks on worker
//!   threads, [`validate::pool`]).
//! * [`sweep`] — the seed's table: a workload at each buffer size, with
//!   pure exporters ([`sweep::export`]) and an SVG plot ([`sweep::plot`]).
//!
//! The `kbxscope` binary adds a thin command line on top; it is the only
//! code that prints.
//!
//! # Example
//!
//! Count the blobs of an in-memory keybox and see what it cost:
//!
//! ```
//! use std::io::Cursor;
//! use kbxscope::io::{BufferSize, BufferedReader};
//!
//! // A header blob as GnuPG writes it: 32 bytes, type 1, version 1, "KBXf".
//! let mut header = vec![0u8; 32];
//! header[3] = 32;
//! header[4] = 1;
//! header[5] = 1;
//! header[8..12].copy_from_slice(b"KBXf");
//!
//! let mut reader = BufferedReader::new(Cursor::new(header), BufferSize::Bytes(8192));
//! let outcome = kbxscope::workload::stats::run(&mut reader);
//! assert_eq!(outcome.stats.header, 1);
//! assert!(outcome.error.is_none());
//! // One read fills the buffer with all 32 bytes, one more finds the end.
//! assert_eq!(reader.stats().events.read, 2);
//! ```

pub mod gen;
pub mod io;
pub use kbx_format as kbx;
pub mod sigs;
pub mod sweep;
pub mod telemetry;
pub mod timefmt;
pub mod units;
pub mod validate;
pub mod workload;
