#!/usr/bin/env python3
"""No circle of imports between the files of src/: no two files that use
each other, directly or round a loop.

A file uses another when it names an item through a path that reaches the
other's module: `use crate::a::b::C`, `use super::x::Y`, `self::…`, or the
same paths written inline (`super::x::f()`). A path ends at the deepest
module it names (an item's path `crate::io::sqlite::Database` is a use of
src/io/sqlite/mod.rs). `mod x;` is no use, and neither is a re-export
(`pub use x::Y`, `pub(crate) use …`): it makes a folder's face, where its
files' items are named from outside. Test code (files named
tests.rs, and everything from a file's `#[cfg(test)]` on) is left out, as
in layers.sh. The library (src/lib.rs) and the binary (src/main.rs with
src/cli/) are two crates; `kbxscope::` in the binary is the library, whose
arrows never point back, so it cannot close a circle.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")


def module_files():
    """Map (crate, module path tuple) -> file, for both crates."""
    mods = {}
    for dirpath, _, files in os.walk(ROOT):
        for f in files:
            if not f.endswith(".rs") or f == "tests.rs":
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, ROOT)
            parts = rel[:-3].split(os.sep)
            if parts == ["lib"]:
                mods[("lib", ())] = path
                continue
            if parts == ["main"]:
                mods[("bin", ())] = path
                continue
            if parts[-1] == "mod":
                parts = parts[:-1]
            crate = "bin" if parts[0] == "cli" else "lib"
            mods[(crate, tuple(parts))] = path
    return mods


def code_of(path):
    text = open(path, encoding="utf-8").read()
    cut = text.find("#[cfg(test)]")
    if cut >= 0:
        text = text[:cut]
    # A visibility (`pub(in crate::a)`) names a module but uses nothing.
    text = re.sub(r"\bpub\(in [\w:]+\)", "pub", text)
    # Comments out (doc comments name paths too).
    return "\n".join(line for line in text.split("\n") if not line.lstrip().startswith("//"))


def expand_use(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = re.sub(r"\s+", "", tree)
    out = []

    def walk(prefix, t):
        depth, start, items = 0, 0, []
        for i, ch in enumerate(t):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                items.append(t[start:i])
                start = i + 1
        items.append(t[start:])
        for item in items:
            if not item:
                continue
            brace = item.find("{")
            if brace >= 0 and item.endswith("}"):
                walk(prefix + item[:brace], item[brace + 1 : -1])
            else:
                out.append(prefix + item.split(" as ")[0])

    walk("", tree)
    return out


def main():
    mods = module_files()
    by_file = {v: k for k, v in mods.items()}
    edges = {}
    for path, (crate, here) in by_file.items():
        code = code_of(path)
        # A file's own module path; a non-mod.rs file's `super` is its parent.
        paths = []
        for m in re.finditer(r"(\bpub(?:\([\w:]+\))?\s+)?\buse\s+([^;]+);", code):
            if not m.group(1):
                paths += expand_use(m.group(2))
        # Re-exports (`pub use`) are a module's face, not a use: left out.
        inline = re.sub(r"\bpub(?:\([\w:]+\))?\s+use\s+[^;]+;", "", code)
        inline = re.sub(r"\buse\s+[^;]+;", "", inline)
        paths += re.findall(r"(?<![:\w])((?:crate|super|self)(?:::\w+)+)", inline)
        targets = set()
        for p in paths:
            segs = p.split("::")
            if segs[0] == "crate":
                base, rest = (), segs[1:]
            elif segs[0] in ("super", "self"):
                base = here
                rest = segs
                while rest and rest[0] in ("super", "self"):
                    if rest[0] == "super":
                        base = base[:-1]
                    rest = rest[1:]
            else:
                # A child module of this one (`use child::X` in a mod.rs or lib.rs).
                base, rest = here, segs
                if (crate, base + (rest[0],)) not in mods:
                    continue
            cur = base
            for s in rest:
                if (crate, cur + (s,)) in mods:
                    cur = cur + (s,)
                else:
                    break
            target = mods.get((crate, cur))
            if target and target != path:
                targets.add(target)
        edges[path] = targets
    # Tarjan's strongly connected components.
    index, low, stack, on, circles = {}, {}, [], set(), []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                circles.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            strong(v)
    for c in circles:
        names = [os.path.relpath(f, os.path.join(ROOT, "..")) for f in c]
        print("circles: these files use each other: " + ", ".join(names), file=sys.stderr)
        for f in c:
            used = sorted(os.path.relpath(t, os.path.join(ROOT, "..")) for t in edges[f] if t in c)
            print(f"  {os.path.relpath(f, os.path.join(ROOT, '..'))} uses {', '.join(used)}", file=sys.stderr)
    return 1 if circles else 0


if __name__ == "__main__":
    sys.exit(main())
