#!/usr/bin/env python3
"""The call graph between the shim's source files, derived from the symbols
each compiled object defines and uses (`nm` on the build's .o files): file A
depends on file B when A's object has an undefined reference that B's object
defines (a function or a variable). Prints each file's dependencies and every
cycle (strongly connected component of more than one file).

usage: scripts/shim_callgraph.py BUILD_DIR [--check]
--check: exit 1 if there is a cycle other than the allowed pairs below.
"""
import glob
import os
import subprocess
import sys

# The one loop the design allows: entrypoints.c's dlsym bootstrap hands real.c
# glibc's dlsym (gt_dlsym_real), and finds real definitions through real.c.
ALLOWED = [{'entrypoints.c', 'real.c'}]


def objects(build):
    objs = sorted(glob.glob(os.path.join(build, 'shim', 'libgputrace.so.p', '*.c.o')))
    if not objs:
        sys.exit('shim_callgraph: no objects under %s/shim/libgputrace.so.p (build first)' % build)
    return objs


def symbols(obj):
    out = subprocess.run(['nm', '--format=posix', obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == 'U':
            used.add(name)
        elif kind.isupper() or kind in ('u', 'v', 'w'):  # global definitions (hidden ones included)
            defined.add(name)
    return defined, used


def exported(build):
    so = os.path.join(build, 'shim', 'libgputrace.so')
    out = subprocess.run(['nm', '-D', '--defined-only', '--format=posix', so], capture_output=True, text=True,
                         check=True).stdout
    return {line.split()[0].split('@')[0] for line in out.splitlines() if line.split()}


def graph(build):
    public = exported(build)
    files = {}
    for obj in objects(build):
        name = os.path.basename(obj)[:-len('.o')]  # e.g. writer.c
        files[name] = symbols(obj)
    owner = {}
    for f, (defined, _) in files.items():
        for s in defined:
            owner[s] = f
    deps = {f: set() for f in files}
    for f, (_, used) in files.items():
        for s in used:
            if s in owner and owner[s] != f and s not in public:
                deps[f].add(owner[s])
    return deps


def sccs(deps):
    """Tarjan's algorithm; returns the components of more than one file."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(deps[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(deps):
        if v not in index:
            visit(v)
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith('--')]
    check = '--check' in sys.argv
    deps = graph(args[0] if args else 'build')
    for f in sorted(deps):
        print('%-20s -> %s' % (f, ', '.join(sorted(deps[f])) or '-'))
    cycles = sccs(deps)
    bad = [c for c in cycles if c not in ALLOWED]
    for c in cycles:
        print('cycle: %s%s' % (' <-> '.join(sorted(c)), ' (allowed)' if c in ALLOWED else ''))
    if not cycles:
        print('no cycles')
    if check and bad:
        sys.exit(1)


if __name__ == '__main__':
    main()
