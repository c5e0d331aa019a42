#!/usr/bin/env python3
"""Fails when the object files in DIR call each other in a circle.

The shim's parts are layered (docs/architecture.md): the entry points, then
start-up and the fork handlers (init.c), the modules, and state.c at the
bottom; so are the auditor's (its front door and loop, the events, the
review, the abort set, the kept records and attribution, the root table).  An object's undefined symbol that another object of DIR defines is
an arrow; any arrow that can be followed back to where it started is
printed, with the symbols it stands for."""
import collections, glob, os, subprocess, sys

objs = glob.glob(os.path.join(sys.argv[1], '*.o'))
if not objs:
    sys.exit(f'no object files in {sys.argv[1]}')
defs, uses = {}, collections.defaultdict(set)
for o in objs:
    part = os.path.basename(o).split('.c.o')[0]
    for line in subprocess.run(['nm', o], capture_output=True, text=True, check=True).stdout.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in 'TDBRVW':
            defs.setdefault(f[2], part)
        elif len(f) == 2 and f[0] == 'U':
            uses[part].add(f[1])
arrows = collections.defaultdict(set)
for part, syms in uses.items():
    for s in syms:
        if defs.get(s, part) != part:
            arrows[(part, defs[s])].add(s)
succ = collections.defaultdict(set)
for a, b in arrows:
    succ[a].add(b)

def reaches(a, b):
    todo, seen = [a], set()
    while todo:
        n = todo.pop()
        if n == b:
            return True
        if n not in seen:
            seen.add(n)
            todo.extend(succ[n])
    return False

back = sorted((a, b) for a, b in arrows if reaches(b, a))
for a, b in back:
    print(f'{a} -> {b}: {", ".join(sorted(arrows[(a, b)]))} (and back)', file=sys.stderr)
sys.exit(1 if back else 0)
