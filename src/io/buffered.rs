//! The one buffer between kbxscope and the operating system.
//!
//! [`BufferedReader`] wraps anything that reads and seeks (a real file or,
//! in tests and fuzzing, a `Cursor`) and counts every call it makes on it:
//! those calls are the *file events*. Its rules follow GnuPG's estream
//! layer where that matters for the counts:
//!
//! * an empty buffer is refilled with exactly **one** `read(2)` of the
//!   buffer's full capacity; a large logical read does not bypass the
//!   buffer but loops refill + copy, so a sequential pass over `S` bytes
//!   costs `⌈S/B⌉ + 1` reads (the last one returns 0 at end of file);
//! * a seek whose target lies inside the buffered bytes is served from
//!   the buffer without a system call (estream would `lseek` and discard
//!   the buffer here); any other seek is one `lseek(2)` and empties the
//!   buffer;
//! * unbuffered, every logical read goes to the operating system: one
//!   `read(2)` per call, more only if the system returns less than asked.
//!
//! Reads served from memory are *logical reads*, counted apart from file
//! events. Counting is a few integer adds per call on the reader's own
//! [`IoStats`]: no lock, no allocation.

use std::io::{self, SeekFrom};

use super::buffer_size::BufferSize;
use super::event::{timed, tracing_events};
use super::raw_read::RawRead;
use crate::events::Reporter;
use crate::events::{FileOp, IoStats};
use crate::kbx::BlobType;

/// The file under the buffer and everything counted on it: each system
/// call goes through [`timed`], then to the reporter, if any.
#[derive(Debug)]
struct Counted<F> {
    inner: F,
    stats: IoStats,
    reporter: Option<Reporter>,
    /// Whether a trace wants event spans (asked once, at creation).
    trace: bool,
    /// The file's size when it was opened: bytes beyond it (appended while
    /// reading) are not handed out, so one handle sees one consistent file.
    limit: u64,
}

impl<F: RawRead> Counted<F> {
    /// After each event: let the reporter hand on a batch.
    #[inline]
    fn ticked(&mut self) {
        if let Some(r) = &mut self.reporter {
            r.tick(&self.stats);
        }
    }

    /// One timed `read(2)` into `into` at file offset `at` (retried, and
    /// counted again, if interrupted); what lies beyond `limit` is cut off.
    /// Inlined down to the system call (see [`RawRead`]).
    #[inline(always)]
    fn read(&mut self, into: &mut [u8], at: u64) -> io::Result<usize> {
        loop {
            let inner = &mut self.inner;
            let r = timed(&mut self.stats, self.trace, FileOp::Read, Some(at), || inner.read_once(into), |n| Some(*n));
            self.ticked();
            match r {
                Ok(n) => {
                    let allowed = usize::try_from(self.limit.saturating_sub(at)).unwrap_or(usize::MAX);
                    if n > allowed {
                        self.stats.beyond_end += (n - allowed) as u64;
                        return Ok(allowed);
                    }
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// One timed `lseek(2)` to an absolute offset.
    fn seek(&mut self, to: u64) -> io::Result<()> {
        let inner = &mut self.inner;
        let r =
            timed(&mut self.stats, self.trace, FileOp::Seek, Some(to), || inner.seek(SeekFrom::Start(to)), |_| None);
        self.ticked();
        r.map(|_| ())
    }
}

/// A counting, buffered reader over `F`.
#[derive(Debug)]
pub struct BufferedReader<F> {
    file: Counted<F>,
    buf: Box<[u8]>,
    /// Next byte to hand out, as an index into `buf`.
    pos: usize,
    /// Valid bytes in `buf`.
    filled: usize,
    /// File offset of `buf[0]` (unbuffered: the current position).
    buf_start: u64,
    /// Unbuffered only: bytes [`peek_start`](Self::peek_start) read that no
    /// logical read has taken yet (they come first, with no system call).
    head: Vec<u8>,
    /// The bytes are blobs made from another store's rows, not a file.
    from_store: bool,
    /// Whether a trace wants a span per blob (asked once, at creation).
    trace_blobs: bool,
}

/// What a closing handle hands back to its owner.
pub(crate) struct Parts<F> {
    pub(crate) inner: F,
    pub(crate) stats: IoStats,
    pub(crate) reporter: Option<Reporter>,
    pub(crate) trace: bool,
}

impl<F: RawRead> BufferedReader<F> {
    /// Wrap `inner`, positioned at offset 0, with a buffer of `size`.
    ///
    /// The buffer is allocated here, once (at most 1 GiB, see
    /// [`BufferSize`]).
    pub fn new(inner: F, size: BufferSize) -> Self {
        let stats = IoStats::new(size.bytes() as u64);
        Self::from_parts(inner, vec![0u8; size.bytes()].into_boxed_slice(), stats, None, tracing_events())
    }

    /// Wrap `inner` with a buffer that is already there (its contents are
    /// never handed out before a read fills them), counters that may hold
    /// the owner's events so far, and an optional reporter.
    pub(crate) fn from_parts(
        inner: F,
        buf: Box<[u8]>,
        stats: IoStats,
        reporter: Option<Reporter>,
        trace: bool,
    ) -> Self {
        Self {
            file: Counted { inner, stats, reporter, trace, limit: u64::MAX },
            buf,
            pos: 0,
            filled: 0,
            buf_start: 0,
            head: Vec::new(),
            from_store: false,
            trace_blobs: tracing::enabled!(target: "kbx::blob", tracing::Level::INFO),
        }
    }

    /// Treat `len` as the end of the file: what `read(2)` returns beyond it
    /// (a writer appending meanwhile) is counted in
    /// [`IoStats::beyond_end`] and not handed out. The system calls stay
    /// the same: the read that would have found the end of the file is the
    /// one that finds the appended bytes.
    #[must_use]
    pub fn with_limit(mut self, len: u64) -> Self {
        self.file.limit = len;
        self
    }

    /// Mark the bytes as blobs made from another store's rows (a keyboxd
    /// database): no file to check — none at all is an empty store.
    #[must_use]
    pub(crate) fn made_from_rows(mut self) -> Self {
        self.from_store = true;
        self
    }

    /// Whether the bytes are blobs made from another store's rows.
    pub(crate) fn is_from_store(&self) -> bool {
        self.from_store
    }

    /// No trace spans for this handle's reads: it reads memory, and a
    /// `kbx::event` span is a system call.
    #[must_use]
    pub(crate) fn untraced(mut self) -> Self {
        self.file.trace = false;
        self
    }

    /// Whether a trace wants a span for each blob read on this handle.
    pub(crate) fn traces_blobs(&self) -> bool {
        self.trace_blobs
    }

    /// The end of the file as this handle sees it: its size at open
    /// ([`with_limit`](Self::with_limit)), or `u64::MAX` when unknown.
    pub fn limit(&self) -> u64 {
        self.file.limit
    }

    /// The logical position: the offset of the next byte [`read`](Self::read) returns.
    pub fn position(&self) -> u64 {
        self.buf_start + self.pos as u64
    }

    /// The counters so far.
    pub fn stats(&self) -> &IoStats {
        &self.file.stats
    }

    /// Count one blob read completely (the blob reader calls this).
    #[inline]
    pub(crate) fn count_blob(&mut self, ty: BlobType) {
        self.file.stats.record_blob(ty);
    }

    /// Unwrap into the file, the counters, the reporter and the buffer.
    pub(crate) fn into_parts(self) -> Parts<F> {
        let Counted { inner, stats, reporter, trace, .. } = self.file;
        Parts { inner, stats, reporter, trace }
    }

    /// Refill the empty buffer with one `read(2)` of its whole capacity;
    /// `false` at end of file.
    #[inline(always)]
    fn refill(&mut self) -> io::Result<bool> {
        self.buf_start += self.filled as u64;
        self.pos = 0;
        self.filled = 0;
        let n = self.file.read(&mut self.buf, self.buf_start)?;
        self.filled = n;
        Ok(n > 0)
    }

    /// One logical read: fill `out` completely unless the end of the file
    /// comes first. Returns the number of bytes copied.
    ///
    /// # Errors
    /// The operating system's error from `read(2)`.
    pub fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        self.file.stats.logical_reads += 1;
        let mut done = 0;
        if self.buf.is_empty() {
            done = self.take_head(out.len(), |from, at| out[at..at + from.len()].copy_from_slice(from));
            while done < out.len() {
                let n = self.file.read(&mut out[done..], self.buf_start)?;
                if n == 0 {
                    break;
                }
                done += n;
                self.buf_start += n as u64;
            }
            return Ok(done);
        }
        while done < out.len() {
            if self.pos == self.filled && !self.refill()? {
                break;
            }
            let take = (out.len() - done).min(self.filled - self.pos);
            out[done..done + take].copy_from_slice(&self.buf[self.pos..self.pos + take]);
            self.pos += take;
            done += take;
        }
        Ok(done)
    }

    /// One logical read of `n` bytes appended to `out`: the same system
    /// calls as [`read`](Self::read) into a slice of `n` bytes, without
    /// zeroing that slice first. Returns the number of bytes appended
    /// (less than `n` only at end of file).
    ///
    /// # Errors
    /// The operating system's error from `read(2)`.
    pub(crate) fn read_append(&mut self, out: &mut Vec<u8>, n: usize) -> io::Result<usize> {
        if self.buf.is_empty() {
            let start = out.len();
            out.resize(start + n, 0);
            let got = self.read(&mut out[start..]);
            out.truncate(start + *got.as_ref().unwrap_or(&0));
            return got;
        }
        self.file.stats.logical_reads += 1;
        out.reserve(n);
        let mut done = 0;
        while done < n {
            if self.pos == self.filled && !self.refill()? {
                break;
            }
            let take = (n - done).min(self.filled - self.pos);
            out.extend_from_slice(&self.buf[self.pos..self.pos + take]);
            self.pos += take;
            done += take;
        }
        Ok(done)
    }

    /// Consume `n` bytes without copying them anywhere: the same system
    /// calls as [`read`](Self::read) of `n` bytes (the buffer is refilled
    /// the same way), minus the copy. Unbuffered, the bytes are read into a
    /// small scratch buffer, as many `read(2)` calls as that takes. Returns
    /// the number of bytes consumed (less than `n` only at end of file).
    ///
    /// # Errors
    /// The operating system's error from `read(2)`.
    pub fn consume(&mut self, n: u64) -> io::Result<u64> {
        self.file.stats.logical_reads += 1;
        let mut done = 0u64;
        if self.buf.is_empty() {
            done = self.take_head(usize::try_from(n).unwrap_or(usize::MAX), |_, _| {}) as u64;
            let mut scratch = [0u8; 8192];
            while done < n {
                let want = (n - done).min(scratch.len() as u64) as usize;
                let got = self.file.read(&mut scratch[..want], self.buf_start)?;
                if got == 0 {
                    break;
                }
                done += got as u64;
                self.buf_start += got as u64;
            }
            return Ok(done);
        }
        while done < n {
            if self.pos == self.filled && !self.refill()? {
                break;
            }
            let take = (n - done).min((self.filled - self.pos) as u64);
            self.pos += take as usize;
            done += take;
        }
        Ok(done)
    }

    /// Move to an absolute offset: from the buffer if the target is among
    /// the buffered bytes, else with one `lseek(2)`.
    ///
    /// # Errors
    /// The operating system's error from `lseek(2)`.
    pub(crate) fn seek_to(&mut self, target: u64) -> io::Result<()> {
        if !self.buf.is_empty() && target >= self.buf_start && target <= self.buf_start + self.filled as u64 {
            self.pos = (target - self.buf_start) as usize;
            return Ok(());
        }
        self.seek_file(target)
    }

    /// One `lseek(2)` to `target`, the buffer emptied.
    fn seek_file(&mut self, target: u64) -> io::Result<()> {
        self.file.seek(target)?;
        self.buf_start = target;
        self.pos = 0;
        self.filled = 0;
        self.head.clear();
        Ok(())
    }

    /// Skip `n` bytes forward (GnuPG's `fseek(n, SEEK_CUR)`): free when
    /// the target lies strictly inside the buffered bytes; estream seeks
    /// with `lseek(2)` to one at their very end, as to any beyond them.
    ///
    /// # Errors
    /// An offset past `u64::MAX`, or the error from `lseek(2)`.
    pub fn skip(&mut self, n: u64) -> io::Result<()> {
        let target = self
            .position()
            .checked_add(n)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "seek past the largest file offset"))?;
        if n > 0 && self.filled > 0 && target == self.buf_start + self.filled as u64 {
            return self.seek_file(target);
        }
        self.seek_to(target)
    }

    /// Pass over `n` bytes that nobody needs, the cheapest way: within the
    /// buffer; else by [consuming](Self::consume) them when they end less
    /// than three buffers beyond the buffered bytes; else with one
    /// `lseek(2)` (always, unbuffered). Never more system calls than
    /// reading them. Returns the bytes passed (less than `n` only when a
    /// consume met the end of the file; a seek may go past it).
    ///
    /// # Errors
    /// The operating system's error from `read(2)` or `lseek(2)`.
    pub(crate) fn pass_over(&mut self, n: u64) -> io::Result<u64> {
        let buffered = (self.filled - self.pos) as u64;
        let beyond = n.saturating_sub(buffered);
        if beyond > 0 && (self.buf.is_empty() || beyond >= 3 * self.buf.len() as u64) {
            self.skip(n)?;
            return Ok(n);
        }
        self.consume(n)
    }

    /// Go back to the start of the file.
    ///
    /// # Errors
    /// The error from `lseek(2)`.
    pub fn rewind(&mut self) -> io::Result<()> {
        self.seek_to(0)
    }

    /// Unbuffered: hand the first `want` bytes of what [`peek_start`]
    /// kept to `copy` (with their offset into the caller's buffer), and
    /// move past them. Returns how many there were.
    ///
    /// [`peek_start`]: Self::peek_start
    fn take_head(&mut self, want: usize, mut copy: impl FnMut(&[u8], usize)) -> usize {
        let k = want.min(self.head.len());
        if k > 0 {
            copy(&self.head[..k], 0);
            self.head.drain(..k);
            self.buf_start += k as u64;
        }
        k
    }

    /// The first bytes of the file (up to `n`), without consuming them:
    /// what a caller looks at to tell what the file is before reading it.
    ///
    /// Buffered, this is the first buffer fill; unbuffered, one `read(2)`
    /// of `n` bytes, kept for the logical reads that follow. Either way
    /// the pass that follows uses those bytes as they are: when its first
    /// read asks for the same bytes (a keybox pass's first read is the
    /// 5-byte prefix of the first blob) no event more is issued than that
    /// pass issues anyway. Call it before anything else is read.
    ///
    /// # Errors
    /// The operating system's error from `read(2)` or `lseek(2)`.
    pub(crate) fn peek_start(&mut self, n: usize) -> io::Result<Vec<u8>> {
        if self.buf.is_empty() {
            if self.buf_start != 0 || !self.head.is_empty() {
                self.rewind_unbuffered()?;
            }
            let mut head = vec![0u8; n];
            let got = self.file.read(&mut head, 0)?;
            head.truncate(got);
            self.head = head;
            return Ok(self.head.clone());
        }
        if self.position() != 0 || self.buf_start != 0 {
            self.rewind()?;
        }
        if self.filled == 0 {
            self.refill()?;
        }
        Ok(self.buf[..self.filled.min(n)].to_vec())
    }

    /// Go back to the start of the file the way GnuPG's estream
    /// `es_fseeko(fp, 0, SEEK_SET)` does: always one `lseek(2)`, and the
    /// buffer is dropped, even when it still holds offset 0.
    ///
    /// # Errors
    /// The error from `lseek(2)`.
    pub(crate) fn rewind_unbuffered(&mut self) -> io::Result<()> {
        self.file.seek(0)?;
        self.head.clear();
        self.buf_start = 0;
        self.pos = 0;
        self.filled = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Cursor;

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    #[test]
    fn sequential_pass_costs_ceil_plus_one_reads() {
        for (size, buf) in [(10_000usize, 4096usize), (8192, 4096), (1, 8192), (0, 8192)] {
            let mut r = BufferedReader::new(Cursor::new(data(size)), BufferSize::Bytes(buf));
            let mut out = vec![0u8; 1000];
            let mut total = 0;
            loop {
                let n = r.read(&mut out).unwrap();
                total += n;
                if n < out.len() {
                    break;
                }
            }
            assert_eq!(total, size);
            assert_eq!(r.stats().events.read, size.div_ceil(buf) as u64 + 1, "size {size} buf {buf}");
            assert_eq!(r.stats().bytes_read, size as u64);
            assert_eq!(r.stats().events.seek, 0);
        }
    }

    #[test]
    fn seek_inside_buffer_is_free_and_outside_costs_one() {
        let mut r = BufferedReader::new(Cursor::new(data(100_000)), BufferSize::Bytes(8192));
        let mut out = [0u8; 10];
        r.read(&mut out).unwrap();
        r.seek_to(8000).unwrap();
        r.seek_to(8192).unwrap();
        r.seek_to(0).unwrap();
        assert_eq!(r.stats().events.seek, 0);
        r.seek_to(50_000).unwrap();
        assert_eq!(r.stats().events.seek, 1);
        r.read(&mut out).unwrap();
        assert_eq!(out[0], data(100_000)[50_000]);
        assert_eq!(r.stats().events.read, 2);
        assert_eq!(r.stats().logical_reads, 2);
    }

    #[test]
    fn unbuffered_reads_go_to_the_os() {
        let mut r = BufferedReader::new(Cursor::new(data(100)), BufferSize::Unbuffered);
        let mut out = [0u8; 5];
        r.read(&mut out).unwrap();
        r.read(&mut out).unwrap();
        r.seek_to(50).unwrap();
        r.read(&mut out).unwrap();
        assert_eq!(r.stats().events.read, 3);
        assert_eq!(r.stats().events.seek, 1);
        assert_eq!(r.position(), 55);
    }

    #[test]
    fn consume_issues_the_same_reads_as_read() {
        for size in [BufferSize::Bytes(4096), BufferSize::Bytes(1000), BufferSize::Unbuffered] {
            let mut a = BufferedReader::new(Cursor::new(data(50_000)), size);
            let mut b = BufferedReader::new(Cursor::new(data(50_000)), size);
            let mut sink = vec![0u8; 30_000];
            for n in [5usize, 30_000, 17, 0, 19_978] {
                a.read(&mut sink[..n]).unwrap();
                assert_eq!(b.consume(n as u64).unwrap(), n as u64);
            }
            if size != BufferSize::Unbuffered {
                assert_eq!(a.stats().events, b.stats().events);
            }
            assert_eq!(a.position(), b.position());
            assert_eq!(b.consume(10).unwrap(), 0, "at the end");
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Read(usize),
        Seek(u64),
        Skip(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0usize..20_000).prop_map(Op::Read),
            (0u64..40_000).prop_map(Op::Seek),
            (0u64..10_000).prop_map(Op::Skip),
        ]
    }

    fn size() -> impl Strategy<Value = BufferSize> {
        prop_oneof![Just(BufferSize::Unbuffered), (1usize..20_000).prop_map(BufferSize::Bytes)]
    }

    proptest! {
        #[test]
        fn same_bytes_as_direct_reads(len in 0usize..30_000, size in size(), ops in proptest::collection::vec(op(), 1..40)) {
            let file = data(len);
            let mut r = BufferedReader::new(Cursor::new(file.clone()), size);
            let mut pos = 0u64;
            for op in ops {
                match op {
                    Op::Read(n) => {
                        let mut out = vec![0u8; n];
                        let got = r.read(&mut out).unwrap();
                        let start = (pos as usize).min(file.len());
                        let want = &file[start..(start + n).min(file.len())];
                        prop_assert_eq!(&out[..got], want);
                        pos += got as u64;
                    }
                    Op::Seek(to) => { r.seek_to(to).unwrap(); pos = to; }
                    Op::Skip(n) => { r.skip(n).unwrap(); pos += n; }
                }
                prop_assert_eq!(r.position(), pos);
            }
            let s = r.stats();
            prop_assert!(s.bytes_read <= s.events.read * size.bytes().max(20_000) as u64);
        }
    }
}
