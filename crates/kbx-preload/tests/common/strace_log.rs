//! Counting an `strace -f -y` log per process (shared by this crate's tests
//! and the main crate's `tests/record.rs`, which includes this file with
//! `#[path]`): the calls naming a file (by its path in quotes, or by `-y`'s
//! `<path>` after a descriptor), threads folded into their process (from
//! `clone(…CLONE_THREAD…)`), `<unfinished …>`/`resumed>` pairs joined.

use std::collections::{BTreeMap, HashMap};

/// Per-operation counts of one process.
pub type Counts = BTreeMap<String, u64>;

/// Count the calls on files whose path ends with `name`, per process
/// (sorted), naming each call with `op(syscall, args)` (None: not counted).
pub fn count(text: &str, name: &str, op: fn(&str, &str) -> Option<&'static str>) -> Vec<Counts> {
    let mut pending: HashMap<u32, String> = HashMap::new();
    let mut group: HashMap<u32, u32> = HashMap::new(); // thread -> process
    let mut counts: BTreeMap<u32, Counts> = BTreeMap::new();
    let needle_q = format!("{name}\"");
    let needle_y = format!("{name}>");
    for line in text.lines() {
        let Some((tid, rest)) = line.split_once(' ') else { continue };
        let Ok(tid) = tid.trim().parse::<u32>() else { continue };
        let rest = rest.trim_start();
        let full = if let Some(head) = rest.strip_suffix("<unfinished ...>") {
            pending.insert(tid, head.to_string());
            continue;
        } else if rest.starts_with("<...") {
            let tail = rest.split_once("resumed>").map_or("", |(_, t)| t);
            format!("{}{}", pending.remove(&tid).unwrap_or_default(), tail)
        } else {
            rest.to_string()
        };
        let Some((sys, args)) = full.split_once('(') else { continue };
        if (sys == "clone" || sys == "clone3") && full.contains("CLONE_THREAD") {
            if let Some(child) = full.rsplit("= ").next().and_then(|r| r.trim().parse::<u32>().ok()) {
                let p = *group.get(&tid).unwrap_or(&tid);
                group.insert(child, p);
            }
            continue;
        }
        if !(full.contains(&needle_q) || full.contains(&needle_y)) {
            continue;
        }
        if let Some(op) = op(sys, args) {
            let p = *group.get(&tid).unwrap_or(&tid);
            *counts.entry(p).or_default().entry(op.to_string()).or_default() += 1;
        }
    }
    let mut v: Vec<Counts> = counts.into_values().collect();
    v.sort();
    v
}
