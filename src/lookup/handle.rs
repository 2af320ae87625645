//! A keybox handle as GnuPG's keybox handles behave: the file is opened
//! by the first search, not when the handle is made, and closed when the
//! handle is dropped or [`closed`](Handle::close).

use super::{LookupError, Sought};
use crate::io::{BufferedReader, Opener};

/// A lazily opened handle on the keybox.
pub(crate) struct Handle<O: Opener> {
    opener: O,
    file: Option<O::Handle>,
    sought: Sought,
}

impl<O: Opener> Handle<O> {
    /// A handle that opens its file with `opener` when first searched;
    /// its errors say they came from a lookup for `sought`.
    pub(crate) fn new(opener: O, sought: Sought) -> Self {
        Self { opener, file: None, sought }
    }

    /// The opener (for handles of its own a strategy opens beside this one).
    pub(crate) fn opener(&self) -> &O {
        &self.opener
    }

    /// The reader where it stands, opened first if needed.
    ///
    /// # Errors
    /// The file could not be opened.
    pub(crate) fn reader(&mut self) -> Result<&mut BufferedReader<O::File>, LookupError> {
        let file = match self.file.take() {
            Some(f) => f,
            None => self.opener.open()?,
        };
        Ok(&mut **self.file.insert(file))
    }

    /// The reader rewound to the start (kept buffer where it still holds
    /// the start), opened first if needed.
    ///
    /// # Errors
    /// The file could not be opened or rewound.
    pub(crate) fn rewound(&mut self) -> Result<&mut BufferedReader<O::File>, LookupError> {
        let sought = self.sought;
        let r = self.reader()?;
        r.rewind().map_err(|source| LookupError::Seek { sought, source })?;
        Ok(r)
    }

    /// GnuPG's `keybox_search_reset`: if the file is open, one `lseek(2)`
    /// to its start and the buffer dropped; nothing if it is not.
    ///
    /// # Errors
    /// The rewind failed.
    pub(crate) fn reset(&mut self) -> Result<(), LookupError> {
        if let Some(f) = self.file.as_mut() {
            f.rewind_unbuffered().map_err(|source| LookupError::Seek { sought: self.sought, source })?;
        }
        Ok(())
    }

    /// Close the file (a later search opens it again).
    pub(crate) fn close(&mut self) {
        self.file = None; // dropping the handle closes the file
    }
}
