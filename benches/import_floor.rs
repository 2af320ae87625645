//! The system-call floor of a write replay: the same calls it made, with
//! nothing between them — no parsing, no matching, no blob building —
//! timed on this machine. BENCHMARKS holds the replay's wall against it
//! (the issue's goal: within 1.2× of the floor).
//!
//! ```sh
//! kbxscope --io-summary=json import --out /tmp/made.kbx KEYS 2> /tmp/s.json   # the replay's calls
//! cargo bench --bench import_floor -- /tmp/s.json $(stat -c %s /tmp/made.kbx) [WALL_SECONDS]
//! ```
//!
//! From the summary (every file's events, the bytes read and written, the
//! buffer size) it makes, in a temporary directory: the reads as `pread`s
//! of the buffer's size over a file as large as the keybox at the end
//! (the page cache holds it, as it holds the keybox; the CPU's caches do
//! not), the writes as writes of the same mean size into files of that
//! size, each renamed over the last, and the opens (with their closes),
//! seeks, `fstat`s, `access` checks (as `stat`s of the path), links and
//! unlinks on a small file.
//! The order is not the replay's; the kinds, counts and sizes are. One
//! run, printed: each kind's time and the floor, the time the replay's
//! summary says the same calls took inside it, and with the replay's wall
//! both ratios.

use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::time::{Duration, Instant};

/// `pread(2)` (Windows: `ReadFile` at an offset).
fn pread(file: &File, buf: &mut [u8], off: u64) -> std::io::Result<usize> {
    #[cfg(unix)]
    return std::os::unix::fs::FileExt::read_at(file, buf, off);
    #[cfg(windows)]
    return std::os::windows::fs::FileExt::seek_read(file, buf, off);
}

/// The replay's calls, summed over its files.
#[derive(Debug, Default)]
struct Calls {
    open: u64,
    read: u64,
    write: u64,
    seek: u64,
    stat: u64,
    access: u64,
    rename: u64,
    link: u64,
    unlink: u64,
    bytes_read: u64,
    bytes_written: u64,
    buffer: u64,
}

fn calls(summary: &serde_json::Value) -> Calls {
    let n = |v: &serde_json::Value, k: &str| v.get(k).and_then(serde_json::Value::as_u64).unwrap_or(0);
    let mut c = Calls {
        bytes_read: n(summary, "bytes_read"),
        bytes_written: n(summary, "bytes_written"),
        buffer: n(summary, "buffer_size").max(1),
        ..Calls::default()
    };
    for f in summary["files"].as_array().map(Vec::as_slice).unwrap_or_default() {
        let e = &f["events"];
        c.open += n(e, "open");
        c.read += n(e, "read");
        c.write += n(e, "write");
        c.seek += n(e, "seek");
        c.stat += n(e, "stat");
        c.access += n(e, "access");
        c.rename += n(e, "rename");
        c.link += n(e, "link");
        c.unlink += n(e, "unlink");
    }
    c
}

/// The seconds the replay's summary says its calls took.
fn summary_time(json: &str) -> f64 {
    let v: serde_json::Value = serde_json::from_str(json).expect("parse the summary");
    v["time_ns"]["total"].as_u64().unwrap_or(0) as f64 / 1e9
}

fn timed(f: impl FnOnce()) -> Duration {
    let t = Instant::now();
    f();
    t.elapsed()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let (Some(summary), Some(size)) = (args.first(), args.get(1).and_then(|s| s.parse::<u64>().ok())) else {
        eprintln!("usage: cargo bench --bench import_floor -- SUMMARY.json KEYBOX_BYTES [WALL_SECONDS]");
        std::process::exit(2);
    };
    let wall: Option<f64> = args.get(2).and_then(|s| s.parse().ok());
    let text = std::fs::read_to_string(summary).expect("read the summary");
    // The summary is the line that is one JSON object (stderr holds the
    // replay's other lines too).
    let json = text.lines().rfind(|l| l.starts_with("{\"buffer_size\"")).expect("an --io-summary=json line");
    let c = calls(&serde_json::from_str(json).expect("parse the summary"));
    let dir = tempfile::tempdir().expect("a temporary directory");
    let size = size.max(c.buffer);

    // A file as large as the keybox, in the page cache.
    let big = dir.path().join("keybox");
    {
        let mut f = File::create(&big).expect("create");
        let chunk = vec![0x5a_u8; 1 << 20];
        let mut left = size;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            f.write_all(&chunk[..n]).expect("write");
            left -= n as u64;
        }
    }
    let file = File::open(&big).expect("open");
    let mut buf = vec![0u8; c.buffer as usize];
    let reads = timed(|| {
        let mut off = 0;
        for _ in 0..c.read {
            let got = pread(&file, &mut buf, off).expect("pread");
            off = if got == 0 || off + got as u64 >= size { 0 } else { off + got as u64 };
        }
    });

    // The writes: files of the keybox's size, each renamed over the last.
    let write_size = c.bytes_written.checked_div(c.write).unwrap_or(1).max(1) as usize;
    let out = vec![0xa5_u8; write_size];
    let (tmp, target) = (dir.path().join("keybox.tmp"), dir.path().join("keybox.copy"));
    // Its creates and renames are the replay's own: not made again below.
    let (mut created, mut renamed) = (1u64, 0u64);
    let writes = timed(|| {
        let mut f = File::create(&tmp).expect("create the copy");
        let mut in_file = 0u64;
        for _ in 0..c.write {
            f.write_all(&out).expect("write");
            in_file += write_size as u64;
            if in_file >= size {
                drop(f);
                std::fs::rename(&tmp, &target).expect("rename");
                f = File::create(&tmp).expect("create the copy");
                (created, renamed, in_file) = (created + 1, renamed + 1, 0);
            }
        }
    });

    // The rest, on a small file.
    let small = dir.path().join("small");
    std::fs::write(&small, b"      1\nhost\n").expect("small file");
    let opens = timed(|| {
        for _ in 0..c.open.saturating_sub(created) {
            drop(OpenOptions::new().read(true).open(&small).expect("open"));
        }
    });
    let seeks = timed(|| {
        for _ in 0..c.seek {
            let _ = (&file).seek(SeekFrom::Start(0));
        }
    });
    let stats = timed(|| {
        for _ in 0..c.stat {
            let _ = file.metadata();
        }
    });
    // An `access` check walks the path as a `stat` does (std has no access).
    let access = timed(|| {
        for _ in 0..c.access {
            let _ = std::fs::metadata(&small);
        }
    });
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::write(&a, b"x").expect("a");
    let renames = timed(|| {
        for i in 0..c.rename.saturating_sub(renamed) {
            let (from, to) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
            std::fs::rename(from, to).expect("rename");
        }
    });
    let present = if c.rename.saturating_sub(renamed) % 2 == 0 { a.clone() } else { b.clone() };
    let links = timed(|| {
        let link = dir.path().join("link");
        for _ in 0..c.link.max(c.unlink) {
            let _ = std::fs::hard_link(&present, &link);
            let _ = std::fs::remove_file(&link);
        }
    });

    let parts = [
        ("reads", c.read, reads),
        ("writes", c.write, writes),
        ("opens+closes", c.open, opens),
        ("seeks", c.seek, seeks),
        ("fstats", c.stat, stats),
        ("access", c.access, access),
        ("renames", c.rename, renames),
        ("links+unlinks", c.link.max(c.unlink), links),
    ];
    let floor: Duration = parts.iter().map(|p| p.2).sum();
    println!(
        "the replay's calls at {} B (bytes read {}, written {}), made bare:",
        c.buffer, c.bytes_read, c.bytes_written
    );
    for (name, n, t) in parts {
        println!("  {name:>14}: {n:>11} calls  {:>9.3} s", t.as_secs_f64());
    }
    println!("  {:>14}: {:>9.3} s", "floor", floor.as_secs_f64());
    // The same calls as the replay timed them, in its own rhythm: where
    // the bare floor's costs differ (a rename that waits for the file
    // system to free a backup's blocks, reads beside writeback), these are
    // what they cost there.
    let in_calls = summary_time(json);
    println!("  {:>14}: {in_calls:>9.3} s", "in the replay");
    if let Some(w) = wall {
        println!("  {:>14}: {w:>9.3} s = {:.2}x the floor", "replay's wall", w / floor.as_secs_f64());
        println!("  {:>14}  {:>9}   = {:.2}x its time in them", "", "", w / in_calls);
    }
}
