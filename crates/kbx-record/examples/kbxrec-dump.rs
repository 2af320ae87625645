//! Print the record files of a directory (debugging aid).
//! Usage: `cargo run --release -p kbx-record --example kbxrec-dump -- DIR`
//! (`DUMP_EVENTS=1` lists the events too).

fn main() {
    let dir = std::env::args().nth(1).expect("usage: kbxrec-dump DIR");
    let mut paths: Vec<_> = std::fs::read_dir(&dir).expect("read dir").flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        let bytes = std::fs::read(&p).expect("read record");
        match kbx_record::decode(&bytes) {
            Err(e) => println!("{}: {e}", p.display()),
            Ok(r) => {
                println!("{}: pid {} ppid {} {}", p.display(), r.pid, r.ppid, r.program_name());
                println!(
                    "  lost files {} fds {} events {}; {} events",
                    r.lost_files,
                    r.lost_fds,
                    r.lost_events,
                    r.events.len()
                );
                for e in &r.events {
                    if std::env::var_os("DUMP_EVENTS").is_some() {
                        println!("  ev {:?} fd {} off {} res {} dur {}", e.op, e.fd, e.offset, e.result, e.dur_ns);
                    }
                }
                for f in &r.files {
                    println!("  [{}] {}", f.slot, String::from_utf8_lossy(&f.path));
                    for (op, s) in &f.ops {
                        println!(
                            "    {:12} count {:7} (inferred {}) errors {} bytes {} total {} ns min {:?} max {}",
                            op.name(),
                            s.count,
                            s.inferred,
                            s.errors,
                            s.bytes,
                            s.total_ns,
                            s.min_ns,
                            s.max_ns
                        );
                    }
                }
            }
        }
    }
}
