#!/usr/bin/env python3
"""The manual pages and --help must agree: every option a command's --help
lists is in that command's section of shmguard(1) and the other way round,
their exit-status paragraphs say the same, and libshmguard(7) documents
exactly the SHMGUARD_* variables that `shmguard run --help` sets.  Every
--help line fits in 80 columns, and every long option a --help names in its
text is one that some command's --help lists.

Usage: man_help.py SHMGUARD DOC_DIR [COMMAND...]
The COMMANDs named are left out: this build has only a stand-in for them
(audit without the auditor), which says so instead of listing options.
Prints each disagreement; exits 1 if there is one."""
import re
import subprocess
import sys

COMMANDS = ["run", "abort", "audit", "ls", "sweep", "watch", "doctor"]
# Every command takes these; the page lists them once, in its own section.
COMMON = {"-h", "--help", "-V", "--version"}
OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")
LONG_OPTION = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")
COLUMNS = 80


def help_text(shmguard, command=None):
    argv = [shmguard, command, "--help"] if command else [shmguard, "--help"]
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def help_options(text):
    """The options of the lines that describe one: '  -a, --abort-dir DIR   text'."""
    found = set()
    for line in text.splitlines():
        stripped = line.strip()
        if line[:1].isspace() and stripped.startswith("-"):
            found |= set(OPTION.findall(re.split(r"\s{2,}", stripped)[0]))
    return found


def man_sections(page):
    """{name: text} of the page's '## name' sections, and '# name' ones."""
    sections, name, lines = {}, None, []
    for line in page.splitlines():
        m = re.match(r"#{1,2} (.+)", line)
        if m:
            if name:
                sections[name] = "\n".join(lines)
            name, lines = m.group(1).strip(), []
        else:
            lines.append(line)
    if name:
        sections[name] = "\n".join(lines)
    return sections


def man_options(text):
    """The options of the section's option headers: '*-a, --abort-dir* _DIR_'."""
    found = set()
    for line in text.splitlines():
        if line.startswith("*-"):
            found |= set(OPTION.findall(line.replace("*", " ").replace("_", " ")))
    return found


def normalise(text):
    text = text.replace("\\_", "\x00").replace("*", "")
    text = re.sub(r"(?<!\w)_|_(?!\w)", "", text).replace("\x00", "_")
    return " ".join(text.split())


def exit_paragraphs(text):
    paragraphs = re.split(r"\n\s*\n", text)
    return [normalise(p) for p in paragraphs if p.strip().startswith("Exit status")]


def main():
    shmguard, doc, left_out = sys.argv[1], sys.argv[2], set(sys.argv[3:])
    page = open(f"{doc}/shmguard.1.scd").read()
    sections = man_sections(page)
    problems = []
    common = man_options(sections.get("OPTIONS OF EVERY COMMAND", ""))
    if common != COMMON:
        problems.append(f"shmguard(1) 'OPTIONS OF EVERY COMMAND' lists {sorted(common)}, not {sorted(COMMON)}")
    texts = {c: help_text(shmguard, c) for c in COMMANDS if c not in left_out}
    listed = COMMON.union(*(help_options(t) for t in texts.values()))
    for command in [None] + COMMANDS:
        text = texts.get(command) or help_text(shmguard, command)
        name = f"shmguard {command} --help" if command else "shmguard --help"
        for n, line in enumerate(text.splitlines(), 1):
            if len(line) > COLUMNS:
                problems.append(f"{name} line {n} is {len(line)} columns: {line}")
        for o in sorted(set(LONG_OPTION.findall(text)) - listed):
            problems.append(f"{name} names {o}, which no command's --help lists")
    for command, text in texts.items():
        in_help = help_options(text) - COMMON
        if command not in sections:
            problems.append(f"shmguard(1) has no section '## {command}'")
            continue
        in_man = man_options(sections[command]) - COMMON
        for o in sorted(in_help - in_man):
            problems.append(f"{command}: {o} is in --help, not in shmguard(1)")
        for o in sorted(in_man - in_help):
            problems.append(f"{command}: {o} is in shmguard(1), not in --help")
        for missing in COMMON - help_options(text):
            problems.append(f"{command}: --help does not list {missing}")
        ours, theirs = exit_paragraphs(text), exit_paragraphs(sections[command])
        if ours != theirs:
            problems.append(f"{command}: the exit status differs:\n  --help: {ours}\n  man:    {theirs}")

    # libshmguard(7): the variables `shmguard run` sets.
    run_vars = set(re.findall(r"\(?(SHMGUARD_[A-Z_]+)\)", help_text(shmguard, "run")))
    env = man_sections(open(f"{doc}/libshmguard.7.scd").read()).get("ENVIRONMENT", "")
    man_vars = {v.replace("\\_", "_") for v in re.findall(r"^\*(SHMGUARD[\w\\]+)\*$", env, re.M)}
    for v in sorted(run_vars - man_vars):
        problems.append(f"run sets {v}, which libshmguard(7) does not document")
    for v in sorted(man_vars - run_vars):
        problems.append(f"libshmguard(7) documents {v}, which no option of run sets")
    if not run_vars or not man_vars:
        problems.append(f"no variables found (--help: {sorted(run_vars)}, libshmguard(7): {sorted(man_vars)})")

    for p in problems:
        print(p)
    print(f"man_help: {len(problems)} disagreement(s)" if problems else "man_help: the pages and --help agree")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
