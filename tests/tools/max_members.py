#!/usr/bin/env python3
"""Fails when a struct in the headers of the given directories has more
than LIMIT members: a struct that large belongs to more than one part.

Usage: max_members.py LIMIT DIR...  A member is a declarator (int a, b; is
two); a nested struct or union counts as one."""
import glob, os, re, sys

limit, dirs = int(sys.argv[1]), sys.argv[2:]
failed = False
for d in dirs:
    for h in sorted(glob.glob(os.path.join(d, '*.h'))):
        text = re.sub(r'//[^\n]*', '', re.sub(r'/\*.*?\*/', '', open(h).read(), flags=re.S))
        for m in re.finditer(r'struct (\w+) \{', text):
            depth, j = 1, m.end()
            while depth:
                depth += {'{': 1, '}': -1}.get(text[j], 0)
                j += 1
            body = text[m.end():j - 1]
            while re.search(r'\{[^{}]*\}', body):
                body = re.sub(r'\{[^{}]*\}', '', body)
            n = 0
            for decl in filter(None, (d.strip() for d in body.split(';'))):
                n += 1 if '(' in decl else re.sub(r'\[[^\]]*\]', '', decl).count(',') + 1
            if n > limit:
                print(f'{h}: struct {m.group(1)} has {n} members (at most {limit})', file=sys.stderr)
                failed = True
sys.exit(1 if failed else 0)
