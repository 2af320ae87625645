//! How the keybox changed while kbxscope read it: each open's
//! [`FileIdentity`] (from the `fstat` every open makes anyway) compared
//! with the first, and the changes found, as [`KeyboxChange`]s.

use serde::Serialize;

/// What identifies the file a handle opened: device, inode, size and
/// modification time, from the stat every open makes anyway (on Windows:
/// volume serial number, file index, size, last write time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileIdentity {
    /// Device.
    pub dev: u64,
    /// Inode: a new file renamed into place has another one.
    pub ino: u64,
    /// Size in bytes.
    pub len: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i128,
}

/// How the keybox changed while kbxscope read it. Serializes with a
/// `kind` field and the numbers, for machine-readable reports; the
/// command line words it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum KeyboxChange {
    /// Another file was renamed into place (new device or inode).
    Replaced {
        /// Size of the first file seen, in bytes.
        old_len: u64,
        /// Size of the new file, in bytes.
        new_len: u64,
    },
    /// The same file has another size.
    Resized {
        /// Size at the first open, in bytes.
        old_len: u64,
        /// Size at a later open, in bytes.
        new_len: u64,
    },
    /// The same file, same size, with a new modification time.
    ModifiedInPlace,
    /// Bytes were appended while a handle read it; they were not used.
    Grew {
        /// Bytes `read(2)` returned past the file's size at open.
        unused_bytes: u64,
    },
}

/// How the keybox changed, as the rest of a sentence starting "the
/// keybox": `was replaced by another file (renamed into place): 10 → 20 bytes`.
impl std::fmt::Display for KeyboxChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            KeyboxChange::Replaced { old_len, new_len } => {
                write!(f, "was replaced by another file (renamed into place): {old_len} → {new_len} bytes")
            }
            KeyboxChange::Resized { old_len, new_len } => write!(f, "changed size: {old_len} → {new_len} bytes"),
            KeyboxChange::ModifiedInPlace => f.write_str("was modified in place (same size, new modification time)"),
            KeyboxChange::Grew { unused_bytes } => {
                write!(f, "grew while being read: {unused_bytes} byte(s) past its size at open were not used")
            }
        }
    }
}

/// The file the first handle saw, and every change later handles found.
#[derive(Debug, Default)]
pub(super) struct Watch {
    first: Option<FileIdentity>,
    seen: Vec<FileIdentity>,
    pub(super) changes: Vec<KeyboxChange>,
}

impl Watch {
    /// Start over: the handles from now on read another file (a replay's
    /// private copy of the keybox), compared with the first of them.
    pub(super) fn rebase(&mut self) {
        *self = Self::default();
    }

    pub(super) fn observe(&mut self, id: FileIdentity) {
        let Some(first) = self.first else {
            self.first = Some(id);
            return;
        };
        if id == first || self.seen.contains(&id) {
            return;
        }
        self.seen.push(id);
        self.changes.push(if (id.dev, id.ino) != (first.dev, first.ino) {
            KeyboxChange::Replaced { old_len: first.len, new_len: id.len }
        } else if id.len != first.len {
            KeyboxChange::Resized { old_len: first.len, new_len: id.len }
        } else {
            KeyboxChange::ModifiedInPlace
        });
    }
}
