#!/usr/bin/env python3
"""Structure checks that keep the untangled crates untangled; .ci/run runs it, and it exits
1 on any finding.

- No import cycle among the files of crates/control/src and crates/campaign/src. Each
  file's `use crate::` / `super::` / `self::` imports, its inline `crate::` / `super::`
  paths and its paths through a child module (comments left out; test modules count) are
  followed to the file that defines the module; a cycle is a strongly connected set of two
  or more files.
- No file over 1,000 lines in those crates.
- No public function of a library crate (crates/*/src) returns `Result<_, String>`: errors
  are typed.

`python3 .ci/structure.py -v` also prints each file's imports.
"""
import os
import re
import sys

CRATES = ["crates/control/src", "crates/campaign/src"]
MAX_LINES = 1000


def read_crate(root):
    files = {}
    for d, _, names in os.walk(root):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(d, name)
                files[os.path.relpath(path, root)] = open(path, encoding="utf-8").read()
    return files


def module_of(path):
    """`trials/raw.rs` -> ["trials", "raw"]; `lib.rs` and `x/mod.rs` name their folder."""
    parts = path[:-3].split("/")
    if parts[-1] in ("lib", "mod"):
        parts = parts[:-1]
    return parts


def without_comments(src):
    src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    return "\n".join(re.sub(r"//.*", "", line) for line in src.splitlines())


def use_paths(body):
    """`a::{b, c::{d}}` -> [[a, b], [a, c, d]]."""
    body = re.sub(r"\s+", "", body)
    out = []

    def walk(prefix, text):
        depth, cur, items = 0, "", []
        for ch in text:
            depth += {"{": 1, "}": -1}.get(ch, 0)
            if ch == "," and depth == 0:
                items.append(cur)
                cur = ""
            else:
                cur += ch
        if cur:
            items.append(cur)
        for item in items:
            m = re.match(r"^([^{]*?)(?:::)?\{(.*)\}$", item)
            if m:
                walk(prefix + [x for x in m.group(1).split("::") if x], m.group(2))
            else:
                item = re.sub(r"as\w+$", "", item)
                out.append(prefix + [x for x in item.split("::") if x])

    walk([], body)
    return out


def imports(files):
    mods = {tuple(module_of(p)): p for p in files}

    def resolve(segs):
        for n in range(len(segs), 0, -1):
            if tuple(segs[:n]) in mods:
                return mods[tuple(segs[:n])]
        return mods[()]

    edges = {p: set() for p in files}
    for p, src in files.items():
        me = module_of(p)
        src = without_comments(src)
        inline = []  # (start, end, name) of `mod name { ... }`, for `super` inside them
        for m in re.finditer(r"\bmod\s+(\w+)\s*\{", src):
            depth, i = 1, m.end()
            while depth and i < len(src):
                depth += {"{": 1, "}": -1}.get(src[i], 0)
                i += 1
            inline.append((m.end(), i, m.group(1)))

        def scope(pos):
            return me + [name for (a, b, name) in inline if a <= pos < b]

        paths = [(m.start(), s) for m in re.finditer(r"\buse\s+([^;]+);", src)
                 for s in use_paths(m.group(1))]
        paths += [(m.start(), m.group(1).split("::")) for m in re.finditer(
            r"(?<![\w:])((?:crate|super)(?:::(?:super|[A-Za-z_][A-Za-z0-9_]*))+)", src)]
        for pos, segs in paths:
            if not segs:
                continue
            if segs[0] == "crate":
                target = segs[1:]
            elif segs[0] == "super":
                target, i = scope(pos), 0
                while i < len(segs) and segs[i] == "super":
                    target, i = target[:-1], i + 1
                target = target + segs[i:]
            elif segs[0] == "self":
                target = scope(pos) + segs[1:]
            elif tuple(me + [segs[0]]) in mods:
                target = me + segs
            else:
                continue
            t = resolve(target) if target else mods[()]
            if t != p:
                edges[p].add(t)
        # A child module named inline (`throughput::serve` in server.rs).
        for m in re.finditer(r"(?<![\w:])([a-z_][a-z0-9_]*)((?:::[A-Za-z_][A-Za-z0-9_]*)+)", src):
            segs = [m.group(1)] + [x for x in m.group(2).split("::") if x]
            if segs[0] in ("crate", "super", "self", "std", "core", "alloc"):
                continue
            if tuple(scope(m.start()) + [segs[0]]) in mods:
                t = resolve(scope(m.start()) + segs)
                if t != p:
                    edges[p].add(t)
    return edges


def cycles(edges):
    """Strongly connected sets of two or more files (Tarjan)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


PUB_FN = re.compile(r"\bpub\s+fn\s+(\w+)[^{;]*?->\s*([^{;]*)[{;]", re.S)


def string_errors(root):
    """(file, line, function) of every `pub fn` returning `Result<_, String>`."""
    out = []
    for crate in sorted(os.listdir(os.path.join(root, "crates"))):
        src = os.path.join(root, "crates", crate, "src")
        for path, text in sorted(read_crate(src).items()):
            text = without_comments(text)
            for m in PUB_FN.finditer(text):
                ret = re.sub(r"\s+", " ", m.group(2))
                if re.search(r"Result<.*, ?String>\s*$", ret.strip()):
                    line = text[: m.start()].count("\n") + 1
                    out.append((f"crates/{crate}/src/{path}", line, m.group(1)))
    return out


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    findings = 0
    stringly = string_errors(root)
    for path, line, name in stringly:
        print(f"{path}:{line}: pub fn {name} returns Result<_, String> (use a typed error)")
    findings += len(stringly)
    print(f"crates/*/src: {len(stringly)} public functions returning Result<_, String>")
    for crate in CRATES:
        files = read_crate(os.path.join(root, crate))
        edges = imports(files)
        if "-v" in sys.argv:
            for p in sorted(edges):
                print(f"{crate}/{p}: {', '.join(sorted(edges[p])) or '-'}")
        found = cycles(edges)
        for group in found:
            print(f"{crate}: import cycle among {', '.join(group)}")
        long = [(p, s.count("\n")) for p, s in sorted(files.items()) if s.count("\n") > MAX_LINES]
        for p, n in long:
            print(f"{crate}/{p}: {n} lines (at most {MAX_LINES})")
        findings += len(found) + len(long)
        print(f"{crate}: {len(files)} files, {sum(map(len, edges.values()))} imports, "
              f"{len(found)} cycles, {len(long)} files over {MAX_LINES} lines")
    sys.exit(1 if findings else 0)


if __name__ == "__main__":
    main()
