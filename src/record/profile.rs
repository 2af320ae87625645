//! `record --stacks`: the call stacks the interposer sampled (every Nth
//! watched call, `KBXSCOPE_RECORD_STACKS=N`; see
//! `crates/kbx-record/PROTOCOL.md`) as a speedscope profile: per process
//! three "sampled" profiles, weighted by file events, bytes and time, whose
//! stacks end in the operation (`read`, `open`, …) and begin at the
//! program's outermost frame, so a flame graph shows which of the
//! program's functions cause its calls.
//!
//! Frames are named through the memory map the interposer copied when the
//! process's record was made: the module that holds each return address,
//! then the function symbol (`.symtab`, else `.dynsym`) that contains it;
//! where the module has no symbol there (a stripped binary's own
//! functions) the frame is `module+0xOFFSET`, the offset in the file, which
//! `addr2line -e MODULE` resolves once debug symbols are at hand. The
//! interposer's own frames are dropped. With N > 1 every weight is
//! multiplied by N (an estimate, and the profile's name says so).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use kbx_record::Stacks;
use object::{Object, ObjectSegment, ObjectSymbol, SymbolKind};
use serde_json::{json, Value};

/// The sampled stacks of one process image.
#[derive(Debug, Clone)]
pub struct ProcessStacks {
    /// Process id.
    pub pid: u32,
    /// Program name.
    pub program: String,
    /// The decoded stack region.
    pub stacks: Stacks,
}

/// One executable mapping of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mapping {
    start: u64,
    end: u64,
    offset: u64,
    path: String,
}

/// The executable mappings of a `/proc/PID/maps` text.
fn parse_maps(text: &[u8]) -> Vec<Mapping> {
    let text = String::from_utf8_lossy(text);
    text.lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let (range, perms, offset) = (f.next()?, f.next()?, f.next()?);
            let path = f.nth(2).unwrap_or("").to_string();
            let (a, b) = range.split_once('-')?;
            perms.contains('x').then_some(())?;
            Some(Mapping {
                start: u64::from_str_radix(a, 16).ok()?,
                end: u64::from_str_radix(b, 16).ok()?,
                offset: u64::from_str_radix(offset, 16).ok()?,
                path,
            })
        })
        .collect()
}

/// A module's function symbols and load segments.
#[derive(Debug, Default)]
struct Module {
    /// (file offset, file size, virtual address) of each segment.
    segments: Vec<(u64, u64, u64)>,
    /// (address, size, name), by address.
    symbols: Vec<(u64, u64, String)>,
}

impl Module {
    fn parse(data: &[u8]) -> Option<Module> {
        let file = object::File::parse(data).ok()?;
        let segments = file
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                (off, size, s.address())
            })
            .collect();
        let mut symbols: Vec<(u64, u64, String)> = file
            .symbols()
            .chain(file.dynamic_symbols())
            .filter(|s| s.kind() == SymbolKind::Text && s.is_definition() && s.address() != 0)
            .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
            .collect();
        symbols.sort();
        symbols.dedup_by_key(|s| s.0);
        Some(Module { segments, symbols })
    }

    /// The function containing file offset `off`.
    fn function_at(&self, off: u64) -> Option<&str> {
        let &(seg_off, _, seg_addr) =
            self.segments.iter().find(|&&(o, size, _)| (o..o.saturating_add(size)).contains(&off))?;
        let addr = off - seg_off + seg_addr;
        let i = self.symbols.partition_point(|s| s.0 <= addr).checked_sub(1)?;
        let (start, size, name) = &self.symbols[i];
        (size == &0 || addr < start + size).then_some(name.as_str())
    }
}

/// Reads a module's bytes (the command line's job: this module does no I/O).
pub(crate) type ReadModule<'a> = Box<dyn FnMut(&Path) -> Option<Vec<u8>> + 'a>;

/// Names frames, reading each module once through its reader.
pub struct Symbolizer<'a> {
    read: ReadModule<'a>,
    modules: HashMap<PathBuf, Option<Module>>,
}

impl<'a> Symbolizer<'a> {
    /// A symbolizer that reads modules with `read` (None: unreadable).
    pub fn new(read: ReadModule<'a>) -> Symbolizer<'a> {
        Symbolizer { read, modules: HashMap::new() }
    }

    /// The frame's name and its module (`None`: not in any mapping).
    fn name(&mut self, maps: &[Mapping], addr: u64) -> (String, Option<String>) {
        let Some(m) = maps.iter().find(|m| (m.start..m.end).contains(&addr)) else {
            return (format!("0x{addr:x}"), None);
        };
        let off = addr - m.start + m.offset;
        let base = Path::new(&m.path).file_name().map_or(m.path.clone(), |n| n.to_string_lossy().into_owned());
        let read = &mut self.read;
        let module = self
            .modules
            .entry(PathBuf::from(&m.path))
            .or_insert_with(|| read(Path::new(&m.path)).and_then(|data| Module::parse(&data)));
        match module.as_ref().and_then(|md| md.function_at(off)) {
            Some(f) => (f.to_string(), Some(m.path.clone())),
            None => (format!("{base}+0x{off:x}"), Some(m.path.clone())),
        }
    }
}

/// Whether a mapping is the interposer itself.
fn is_interposer(path: &str) -> bool {
    Path::new(path).file_name().is_some_and(|n| n.to_string_lossy().starts_with("libkbx_preload"))
}

/// Totals of a profile, for the command line's one-line note.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StackTotals {
    /// Samples taken.
    pub samples: u64,
    /// Samples whose stack found no room in the table.
    pub lost: u64,
    /// Distinct stacks.
    pub stacks: usize,
}

/// The speedscope profile (file format schema) of every process's
/// stacks, and its totals.
pub fn profile(processes: &[ProcessStacks], sym: &mut Symbolizer<'_>) -> (Value, StackTotals) {
    let mut frames: Vec<Value> = Vec::new();
    let mut index: HashMap<(String, Option<String>), usize> = HashMap::new();
    let mut frame = |key: (String, Option<String>)| -> usize {
        *index.entry(key.clone()).or_insert_with(|| {
            frames.push(match &key.1 {
                Some(file) => json!({ "name": key.0, "file": file }),
                None => json!({ "name": key.0 }),
            });
            frames.len() - 1
        })
    };
    let mut profiles = Vec::new();
    let mut totals = StackTotals::default();
    for p in processes {
        let maps = parse_maps(&p.stacks.maps);
        let every = p.stacks.every.max(1);
        totals.samples += p.stacks.samples;
        totals.lost += p.stacks.lost;
        totals.stacks += p.stacks.stacks.len();
        let mut samples = Vec::new();
        let mut weights: [Vec<u64>; 3] = Default::default();
        for s in &p.stacks.stacks {
            let named: Vec<(String, Option<String>)> = s
                .frames
                .iter()
                // A return address points after its call: name the call.
                .map(|&a| sym.name(&maps, a.saturating_sub(1)))
                .skip_while(|(_, module)| module.as_deref().is_some_and(is_interposer))
                .collect();
            let mut stack: Vec<usize> = named.into_iter().rev().map(&mut frame).collect();
            stack.push(frame((s.op.name().to_string(), None)));
            samples.push(stack);
            weights[0].push(s.calls * every);
            weights[1].push(s.bytes * every);
            weights[2].push(s.ns * every);
        }
        let sampled = if every > 1 { format!(", 1 call in {every} sampled, weights ×{every}") } else { String::new() };
        for (w, (what, unit)) in
            weights.into_iter().zip([("file events", "none"), ("bytes", "bytes"), ("time", "nanoseconds")])
        {
            let total: u64 = w.iter().sum();
            profiles.push(json!({
                "type": "sampled",
                "name": format!("{} (pid {}): {what}{sampled}", p.program, p.pid),
                "unit": unit,
                "startValue": 0,
                "endValue": total,
                "samples": samples,
                "weights": w,
            }));
        }
    }
    let doc = json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "name": "kbxscope record --stacks",
        "exporter": concat!("kbxscope ", env!("CARGO_PKG_VERSION")),
        "activeProfileIndex": 0,
        "shared": { "frames": frames },
        "profiles": profiles,
    });
    (doc, totals)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kbx_record::{Op, Stack};

    #[test]
    fn maps_keep_executable_mappings() {
        let text = b"55d000-55e000 r--p 00000000 08:01 12 /usr/bin/gpg\n\
                     55e000-560000 r-xp 00001000 08:01 12 /usr/bin/gpg\n\
                     7f00-7f10 r-xp 00000000 00:00 0 \n";
        let m = parse_maps(text);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0], Mapping { start: 0x55e000, end: 0x560000, offset: 0x1000, path: "/usr/bin/gpg".into() });
        assert_eq!(m[1].path, "");
    }

    #[test]
    fn frames_are_named_by_module_and_ordered_root_first() {
        let stacks = Stacks {
            every: 2,
            samples: 3,
            lost: 0,
            maps: b"1000-2000 r-xp 00000000 00:00 1 /nonexistent/libkbx_preload-ab.so\n\
                    5000-6000 r-xp 00002000 00:00 2 /nonexistent/gpg\n"
                .to_vec(),
            stacks: vec![Stack {
                op: Op::Read,
                frames: vec![0x1010, 0x5011, 0x5101, 0x9999],
                calls: 3,
                bytes: 30,
                ns: 7,
            }],
        };
        let (doc, totals) = profile(
            &[ProcessStacks { pid: 9, program: "gpg".into(), stacks }],
            &mut Symbolizer::new(Box::new(|_| None)),
        );
        assert_eq!(totals, StackTotals { samples: 3, lost: 0, stacks: 1 });
        let frames: Vec<&str> =
            doc["shared"]["frames"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
        let sample: Vec<&str> = doc["profiles"][0]["samples"][0]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| frames[i.as_u64().unwrap() as usize])
            .collect();
        // The interposer's frame is gone; unreadable modules give offsets.
        assert_eq!(sample, ["0x9998", "gpg+0x2100", "gpg+0x2010", "read"]);
        assert_eq!(doc["profiles"][0]["weights"][0], 6, "×every");
        assert_eq!(doc["profiles"][1]["weights"][0], 60);
        assert!(doc["profiles"][2]["name"].as_str().unwrap().contains("1 call in 2 sampled"));
    }
}
