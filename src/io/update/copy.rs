//! The copy of a keybox update through two buffered streams, as GnuPG's
//! estream makes it: the source refilled with one `read(2)` of the buffer
//! size whenever it is empty (a request it cannot fill reads again, so
//! the end of the file costs a read returning 0, and the next request
//! another), the copy written in full buffers and the rest at close.
//! GnuPG copies in requests of 4096 bytes; the system calls depend only on
//! the buffers, but the requests decide when the end is reached.

use std::io;

use super::files::{Files, Open, Role};

/// GnuPG's copy loop's request size.
const REQUEST: usize = 4096;

/// The source and the temporary file of an update, with their buffers.
pub(super) struct Streams<'a> {
    files: &'a mut Files,
    source: Option<Open>,
    target: Option<Open>,
    /// The source's buffer and how much of it is still to hand out.
    inbuf: Vec<u8>,
    in_at: usize,
    in_len: usize,
    /// The target's buffer, filled up to its length.
    outbuf: Vec<u8>,
    capacity: usize,
}

type Result<T> = std::result::Result<T, (Role, io::Error)>;

impl<'a> Streams<'a> {
    pub(super) fn new(files: &'a mut Files, source: Open, target: Option<Open>, buffer: usize) -> Self {
        Self {
            files,
            source: Some(source),
            target,
            inbuf: vec![0; buffer],
            in_at: 0,
            in_len: 0,
            outbuf: Vec::with_capacity(buffer),
            capacity: buffer,
        }
    }

    /// One request of up to `want` bytes from the source (GnuPG's
    /// `fread`): served from the buffer, refilled while it is empty and
    /// the request is not met; 0 bytes means end of file.
    fn request(&mut self, into: &mut [u8]) -> Result<usize> {
        let mut got = 0;
        while got < into.len() {
            if self.in_at == self.in_len {
                let Some(src) = self.source.as_mut() else { break };
                let n = self.files.read(src, &mut self.inbuf).map_err(|e| (Role::Store, e))?;
                if n == 0 {
                    break;
                }
                (self.in_at, self.in_len) = (0, n);
            }
            let n = (self.in_len - self.in_at).min(into.len() - got);
            into[got..got + n].copy_from_slice(&self.inbuf[self.in_at..self.in_at + n]);
            self.in_at += n;
            got += n;
        }
        Ok(got)
    }

    /// The target, once it is made.
    pub(super) fn set_target(&mut self, target: Open) {
        self.target = Some(target);
    }

    /// The files, to make the target with.
    pub(super) fn files(&mut self) -> &mut Files {
        self.files
    }

    /// estream's `fseek`: one `lseek(2)` (to `to`) and the buffer dropped.
    pub(super) fn seek_to(&mut self, to: u64) -> Result<()> {
        if let Some(src) = self.source.as_mut() {
            self.files.seek(src, to).map_err(|e| (Role::Store, e))?;
        }
        (self.in_at, self.in_len) = (0, 0);
        Ok(())
    }

    /// One request of exactly `into.len()` bytes, or fewer at end of file.
    pub(super) fn fill(&mut self, into: &mut [u8]) -> Result<usize> {
        self.request(into)
    }

    /// Write `bytes` into the target's buffer, each full buffer with one
    /// `write(2)`.
    pub(super) fn put(&mut self, mut bytes: &[u8]) -> Result<()> {
        while !bytes.is_empty() {
            let n = (self.capacity - self.outbuf.len()).min(bytes.len());
            self.outbuf.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if self.outbuf.len() == self.capacity {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.outbuf.is_empty() {
            return Ok(());
        }
        let Some(t) = self.target.as_mut() else { return Ok(()) };
        self.files.write(t, &self.outbuf).map_err(|e| (Role::Tmp, e))?;
        self.outbuf.clear();
        Ok(())
    }

    /// Copy to the end of the source in requests of 4096 bytes; `insert`
    /// sets the header blob's "OpenPGP data" flag as GnuPG's insert does.
    pub(super) fn copy_rest(&mut self, insert: bool) -> Result<()> {
        let mut chunk = [0u8; REQUEST];
        let mut first = insert;
        loop {
            let n = self.request(&mut chunk)?;
            if n == 0 {
                return Ok(());
            }
            if std::mem::take(&mut first) && n > 7 && chunk[4] == 1 {
                chunk[7] |= 0x02;
            }
            self.put(&chunk[..n])?;
        }
    }

    /// Copy the source's first `upto` bytes.
    pub(super) fn copy_upto(&mut self, upto: u64) -> Result<()> {
        let mut chunk = [0u8; REQUEST];
        let mut at = 0u64;
        while at < upto {
            let want = usize::try_from(upto - at).map_or(REQUEST, |r| r.min(REQUEST));
            let n = self.request(&mut chunk[..want])?;
            if n == 0 {
                break;
            }
            self.put(&chunk[..n])?;
            at += n as u64;
        }
        Ok(())
    }

    /// Pass over the blob being replaced, which starts where the source
    /// stands (at `at`) and is `len` bytes long, as GnuPG does: its first
    /// five bytes read (length and type), then one `lseek(2)` past it
    /// (estream's `fseek`, which also drops the buffer).
    pub(super) fn skip(&mut self, at: u64, len: u64) -> Result<()> {
        let mut head = [0u8; 5];
        if self.request(&mut head)? < head.len() {
            return Err((Role::Store, io::ErrorKind::UnexpectedEof.into()));
        }
        self.seek_to(at + len)
    }

    /// Close the source, write what the target's buffer holds and close
    /// the target (whose close may report a full disk).
    pub(super) fn close(mut self) -> Result<()> {
        let src = self.source.take().map(|s| self.files.close(s).map_err(|e| (Role::Store, e)));
        let flushed = self.flush();
        let tgt = self.target.take().map(|t| self.files.close(t).map_err(|e| (Role::Tmp, e)));
        flushed.and(tgt.unwrap_or(Ok(()))).and(src.unwrap_or(Ok(())))
    }
}

impl Drop for Streams<'_> {
    fn drop(&mut self) {
        // On an error path the descriptors are closed (and counted) too.
        if let Some(s) = self.source.take() {
            let _ = self.files.close(s);
        }
        if let Some(t) = self.target.take() {
            let _ = self.files.close(t);
        }
    }
}
