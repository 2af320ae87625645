//! kbxscope reads GnuPG keybox files (`pubring.kbx`) through one
//! instrumented, buffered file layer and shows what the I/O costs.
//!
//! # A tour
//!
//! Folders name what they hold; each module uses only the ones listed
//! after it (`.ci/layers.sh` checks the arrows).
//!
//! * [`kbx`] — the keybox format as pure functions over byte slices (the
//!   `kbx-format` crate): [`kbx::parse_blob`] decodes a blob with every
//!   table bounds-checked, [`kbx::stats`] and [`kbx::dump`] reproduce
//!   `kbxutil`'s output, [`kbx::search`] implements GnuPG's search
//!   patterns, [`kbx::keyblock`] frames OpenPGP packets and
//!   [`kbx::keypacket`] names keys. No I/O.
//! * [`events`] — the vocabulary every producer of file events shares: the
//!   operation ([`events::FileOp`]), one event ([`events::FileEvent`]),
//!   the counters ([`events::IoStats`]) and who else sees them
//!   ([`events::IoObserver`]).
//! * [`io`] — the only code that opens, reads, seeks or closes a keybox.
//!   [`io::BufferedReader`] is the one buffer (sized by
//!   `--kbx-buffer-size`, [`io::BufferSize`]); every system call it issues
//!   is a *file event*, counted and timed; [`io::KeyboxFile`] opens a path
//!   read-only and closes it on drop.
//! * [`telemetry`] — the metrics, fed by [`events`] whatever produced them.
//! * [`crypto`] — the signature arithmetic X.509 and OpenPGP share.
//! * [`lookup`] — the `--lookup` strategies, the lazily opened handle and
//!   the one lookup error.
//! * [`x509`] and [`openpgp`] — each protocol: listing fields, gpgsm's
//!   validation and gpg's signature checks, and each protocol's lookups.
//!   Neither uses the other.
//! * [`workload`] — what a user does: `stats`, `dump`, `list`, `find`,
//!   `list --with-validation`, `--with-sigs`, `--check-sigs`; each a pass
//!   over a [`io::BufferedReader`] that returns values.
//! * [`generate`] — realistic keyboxes (the built-in one among them).
//! * [`record`] — another program's calls on the watched files, from the
//!   records the preloaded interposer (`crates/kbx-preload`, embedded at
//!   build time) leaves, decoded with the record format's crate
//!   (`crates/kbx-record`): summed per process and file onto [`events`]'
//!   types.
//! * [`sweep`] — the seed's table: a workload at each buffer size, beside
//!   the seed's numbers, a GnuPG program's ([`sweep::GnupgProgram`]) or
//!   keyboxd's database's, with exporters ([`sweep::export`], the
//!   terminal's table among them) and an SVG plot ([`sweep::plot`]).
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
//! let outcome = kbxscope::workload::stats::pass(&mut reader);
//! assert_eq!(outcome.stats.header, 1);
//! assert!(outcome.fatal.is_none());
//! // One read fills the buffer with all 32 bytes, one more finds the end.
//! assert_eq!(reader.stats().events.read, 2);
//! ```

#![warn(unreachable_pub)]
pub mod crypto;
pub mod doctor;
pub mod events;
pub mod generate;
pub mod gnupg_version;
pub mod io;
pub use kbx_format as kbx;
pub mod keyboxd;
pub mod lookup;
pub mod openpgp;
pub mod record;
pub mod store;
pub mod sweep;
pub mod telemetry;
pub mod timefmt;
pub mod trustdb;
pub mod units;
pub mod workload;
pub mod x509;
