//! Which system calls glibc's stdio made inside one call, deduced from the
//! FILE state before and after it and the kernel offset moved (`r` bytes).
//! Pure functions, modelled on glibc 2.36's libio (`_IO_new_file_underflow`,
//! `_IO_file_xsgetn`) for a regular file, where a read returns
//! min(requested, remaining) bytes.

/// How the call ended its reading: `None` — it got what it wanted; `Some(false)`
/// — a read returned 0 (EOF newly set); `Some(true)` — a read failed (error set).
pub type End = Option<bool>;

/// Reads done by calls that refill only through `__underflow` (fgets, getc,
/// getline, getdelim, __uflow): `b`-byte requests until `r` bytes came in,
/// plus the final 0 or -1 read if the call hit the end. `emit(bytes, failed)`
/// is called for each read.
pub fn underflow_reads(b: u64, r: u64, end: End, mut emit: impl FnMut(u64, bool)) {
    let b = b.max(1);
    let mut rem = r;
    while rem > 0 {
        let got = rem.min(b);
        emit(got, false);
        rem -= got;
    }
    if let Some(failed) = end {
        emit(0, failed);
    }
}

/// Reads done by `fread` of `want` bytes with `have` bytes buffered and a
/// `b`-byte buffer: requests smaller than the buffer refill it; larger ones
/// read directly into the caller's memory, rounded down to a multiple of the
/// buffer size when it is at least 128 bytes. `sticky_eof`: EOF was already
/// set, so refills return at once (glibc ≥ 2.28) but direct reads still go to
/// the kernel.
pub fn fread_reads(have: u64, want: u64, b: u64, r: u64, end: End, sticky_eof: bool, mut emit: impl FnMut(u64, bool)) {
    let mut want = want - have.min(want);
    let mut rem = r;
    while want > 0 {
        let direct = b == 0 || want >= b;
        if !direct && sticky_eof {
            return;
        }
        let count = if direct {
            if b >= 128 {
                want - want % b
            } else {
                want
            }
        } else {
            b
        };
        let got = count.min(rem);
        if got == 0 {
            if let Some(failed) = end {
                emit(0, failed);
            }
            return;
        }
        emit(got, false);
        rem -= got;
        want -= got.min(want);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn under(b: u64, r: u64, end: End) -> Vec<u64> {
        let mut v = Vec::new();
        underflow_reads(b, r, end, |n, _| v.push(n));
        v
    }

    fn fr(have: u64, want: u64, b: u64, r: u64, end: End, sticky: bool) -> Vec<u64> {
        let mut v = Vec::new();
        fread_reads(have, want, b, r, end, sticky, |n, _| v.push(n));
        v
    }

    #[test]
    fn underflow() {
        assert_eq!(under(4096, 4096, None), vec![4096]);
        assert_eq!(under(4096, 0, None), Vec::<u64>::new());
        assert_eq!(under(4096, 8192, None), vec![4096, 4096]);
        assert_eq!(under(4096, 5000, Some(false)), vec![4096, 904, 0]);
        assert_eq!(under(4096, 0, Some(false)), vec![0]);
        let mut failed = Vec::new();
        underflow_reads(4096, 0, Some(true), |n, f| failed.push((n, f)));
        assert_eq!(failed, vec![(0, true)]);
    }

    #[test]
    fn fread_small_from_buffer_and_refill() {
        // gpg: fread 4 bytes from a fresh stream: one 4096-byte refill.
        assert_eq!(fr(0, 4, 4096, 4096, None, false), vec![4096]);
        // satisfied from the buffer
        assert_eq!(fr(100, 4, 4096, 0, None, false), Vec::<u64>::new());
        // 10 bytes left, want 20: one refill
        assert_eq!(fr(10, 20, 4096, 4096, None, false), vec![4096]);
    }

    #[test]
    fn fread_direct() {
        // want 10000 with an empty 4096 buffer: direct 8192, then refill for 1808.
        assert_eq!(fr(0, 10000, 4096, 8192 + 4096, None, false), vec![8192, 4096]);
        // file ends: 3000 bytes left for a 10000-byte fread: direct 8192 gets 3000,
        // then 7000 >= 4096: direct 4096 gets 0.
        assert_eq!(fr(0, 10000, 4096, 3000, Some(false), false), vec![3000, 0]);
        // exactly a multiple of the buffer
        assert_eq!(fr(0, 8192, 4096, 8192, None, false), vec![8192]);
    }

    #[test]
    fn fread_at_eof() {
        assert_eq!(fr(0, 100, 4096, 50, Some(false), false), vec![50, 0]);
        // sticky EOF: small freads make no system call
        assert_eq!(fr(0, 100, 4096, 0, None, true), Vec::<u64>::new());
        // but large ones do
        assert_eq!(fr(0, 8192, 4096, 0, Some(false), true), vec![0]);
    }
}
