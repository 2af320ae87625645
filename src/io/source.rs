//! Where handles come from: strategies that open the keybox several times
//! (as GnuPG does) ask an [`Opener`] for each new handle.

use std::cell::RefCell;
use std::io::Cursor;
use std::ops::DerefMut;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use super::buffer_size::BufferSize;
use super::buffered::BufferedReader;
use super::keybox_file::{KeyboxFile, OpenError};
use super::tally::IoTally;

/// Makes new read handles on one keybox.
pub trait Opener {
    /// What a handle reads from.
    type File: super::raw_read::RawRead;
    /// A handle: a buffered reader, closed when dropped.
    type Handle: DerefMut<Target = BufferedReader<Self::File>>;

    /// Open a new handle, positioned at offset 0.
    ///
    /// # Errors
    /// Why the keybox cannot be opened.
    fn open(&self) -> Result<Self::Handle, OpenError>;
}

/// Opens a keybox file; every handle's events go to the tally.
#[derive(Debug, Clone)]
pub struct PathOpener {
    /// The keybox.
    pub path: PathBuf,
    /// Where the handles' counters go.
    pub tally: IoTally,
    /// A handle opened already (to look at the file's first bytes), handed
    /// out by the first [`Opener::open`] instead of opening again.
    first: Rc<RefCell<Option<KeyboxFile>>>,
}

impl PathOpener {
    /// An opener on `path` whose handles count into `tally`.
    pub fn new(path: PathBuf, tally: IoTally) -> Self {
        Self { path, tally, first: Rc::default() }
    }

    /// The same, whose first handle is `file`, opened on `path` already
    /// (and at most [peeked](BufferedReader::peek_start) at): it stands
    /// for the open the first handle would make.
    pub(crate) fn with_first(path: PathBuf, tally: IoTally, file: KeyboxFile) -> Self {
        Self { path, tally, first: Rc::new(RefCell::new(Some(file))) }
    }
}

impl Opener for PathOpener {
    type File = super::sys::SysFile;
    type Handle = KeyboxFile;

    fn open(&self) -> Result<KeyboxFile, OpenError> {
        if let Some(f) = self.first.borrow_mut().take() {
            return Ok(f);
        }
        KeyboxFile::open(&self.path, &self.tally)
    }
}

/// Bytes shared between in-memory handles.
#[derive(Debug, Clone)]
pub struct SharedBytes(pub Arc<[u8]>);

impl AsRef<[u8]> for SharedBytes {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// Opens in-memory "files" (a database read into memory, tests, fuzzing);
/// handles count their own events, which are no system calls: they report
/// to nobody and are not traced.
#[derive(Debug, Clone)]
pub struct MemoryOpener {
    /// The keybox bytes.
    pub bytes: SharedBytes,
    /// Buffer size of each handle.
    pub buffer_size: BufferSize,
    /// The bytes are blobs made from another store's rows (see
    /// `BufferedReader::made_from_rows`).
    pub from_store: bool,
}

impl MemoryOpener {
    /// An opener over a copy of `bytes`.
    pub fn new(bytes: &[u8], buffer_size: BufferSize) -> Self {
        Self { bytes: SharedBytes(Arc::from(bytes)), buffer_size, from_store: false }
    }
}

impl Opener for MemoryOpener {
    type File = Cursor<SharedBytes>;
    type Handle = Box<BufferedReader<Cursor<SharedBytes>>>;

    fn open(&self) -> Result<Self::Handle, OpenError> {
        let len = self.bytes.0.len() as u64;
        let reader = BufferedReader::new(Cursor::new(self.bytes.clone()), self.buffer_size).with_limit(len).untraced();
        Ok(Box::new(if self.from_store { reader.made_from_rows() } else { reader }))
    }
}
