//! A client's listing through keyboxd as a stream of keybox blobs: the
//! first read sends `SEARCH` (every key of the client's type, in `ubid`
//! order), each further blob one `NEXT`, the end one last `NEXT` that
//! finds nothing — gpg's and gpgsm's `-k` loop. Each row becomes its blob
//! as it arrives, so the workloads read it as they read a keybox and the
//! lookups they make between two blobs run while the listing's statement
//! is pending, as in keyboxd.

use std::cell::RefCell;
use std::io::{self, Read, Seek, SeekFrom};
use std::rc::Rc;

use super::image::RowMap;
use super::rows::ubid_hex;
use super::server::{Search, Server, Session};
use crate::io::{BufferSize, BufferedReader, OpenError, Opener, RawRead};

/// The listing's bytes: the blobs of the rows handed back so far.
pub(crate) struct Listing<'s, 'db> {
    server: &'s Server<'db>,
    session: Session,
    started: bool,
    done: bool,
    blob: Vec<u8>,
    pos: usize,
    /// Stream offset of `blob`'s first byte.
    blob_start: u64,
    map: Rc<RefCell<RowMap>>,
}

impl std::fmt::Debug for Listing<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listing").field("blob_start", &self.blob_start).finish_non_exhaustive()
    }
}

impl Listing<'_, '_> {
    /// The next row's blob, from keyboxd; `false` at the end.
    fn fetch(&mut self) -> io::Result<bool> {
        if self.done {
            return Ok(false);
        }
        let found = if self.started {
            self.server.next(self.session)
        } else {
            self.started = true;
            self.server.search(self.session, &Search::First)
        }
        .map_err(io::Error::other)?;
        self.blob_start += self.blob.len() as u64;
        self.pos = 0;
        match found {
            Some(f) => {
                let mut map = self.map.borrow_mut();
                let index = map.rows.len() as u64;
                map.rows.push((index, ubid_hex(&f.row.ubid)));
                self.blob = f.blob;
                Ok(true)
            }
            None => {
                self.done = true;
                self.blob.clear();
                Ok(false)
            }
        }
    }

    fn position(&self) -> u64 {
        self.blob_start + self.pos as u64
    }
}

impl Read for Listing<'_, '_> {
    /// At most the rest of one blob per call, so that a row is fetched
    /// only when its bytes are wanted.
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.blob.len() && !self.fetch()? {
            return Ok(0);
        }
        let n = out.len().min(self.blob.len() - self.pos);
        out[..n].copy_from_slice(&self.blob[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// Read through `Read` (the requests' bytes, no system call).
impl RawRead for Listing<'_, '_> {}

impl Seek for Listing<'_, '_> {
    /// Forward only (a stream of requests cannot go back): to where it
    /// stands, or further by reading on.
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => n,
            SeekFrom::Current(d) => {
                self.position().checked_add_signed(d).ok_or_else(|| io::Error::other("bad seek"))?
            }
            SeekFrom::End(_) => return Err(io::Error::other("a keyboxd listing has no end to seek from")),
        };
        if target < self.position() {
            return Err(io::Error::other("a keyboxd listing cannot go back"));
        }
        while self.position() < target {
            if self.pos == self.blob.len() && !self.fetch()? {
                break;
            }
            let step = (target - self.position()).min((self.blob.len() - self.pos) as u64);
            self.pos += step as usize;
        }
        Ok(self.position())
    }
}

/// Opens listings on a server: each handle a new client session.
#[derive(Clone)]
pub(crate) struct ListingOpener<'s, 'db> {
    server: &'s Server<'db>,
    map: Rc<RefCell<RowMap>>,
}

impl std::fmt::Debug for ListingOpener<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListingOpener").finish_non_exhaustive()
    }
}

impl<'s, 'db> ListingOpener<'s, 'db> {
    /// Listings of `server`'s client.
    pub(crate) fn new(server: &'s Server<'db>) -> Self {
        Self { server, map: Rc::default() }
    }

    /// The rows the listings handed back (by blob index), and the rows
    /// the server could not make into a blob.
    pub(crate) fn map(&self) -> RowMap {
        let mut map = self.map.borrow().clone();
        map.problems = self.server.problems();
        map
    }
}

impl<'s, 'db> Opener for ListingOpener<'s, 'db> {
    type File = Listing<'s, 'db>;
    type Handle = Box<BufferedReader<Listing<'s, 'db>>>;

    fn open(&self) -> Result<Self::Handle, OpenError> {
        let listing = Listing {
            server: self.server,
            session: self.server.connect(),
            started: false,
            done: false,
            blob: Vec::new(),
            pos: 0,
            blob_start: 0,
            map: self.map.clone(),
        };
        Ok(Box::new(BufferedReader::new(listing, BufferSize::Bytes(1 << 16)).untraced().made_from_rows()))
    }
}
