#!/usr/bin/env python3
"""Checks that no string literal of core/, storage/ or gpu/ names a CLI flag ("--" and a letter).

The libraries name a setting in their own words and carry its key (core/util/errors.h Setting);
the CLI (app/cli_errors.cpp) and the studio (views/widgets/gui_text.cpp) word it from the key. A literal
such as "--layer-map: empty" puts the CLI's words into every front end, so it is refused here.
Comments are skipped; raw string literals are read like any other.

Allowed (not messages; each (file, literal) pair is listed in ALLOWED with its reason):
  core/plan/budgets.cpp: the `flag` column of the budget table, the CLI flag of each budget
  (read by app/ to add the option and by app/cli_errors.cpp to name a budget; no message quotes it).
  core/util/settings.cpp: the `flag` column of the settings table, the CLI's words for each setting
  outside the budgets (a flag, or a request's whole phrase; read only by app/cli_errors.cpp).

Prints "check_message_flags: FILE:LINE: string literal names a CLI flag: "..."" per literal, then
"check_message_flags: FAILED (N literals)" and exits 1; "check_message_flags: OK (N files)" otherwise.

Usage: check_message_flags.py --source DIR [--also FILE...]
  --also scans FILE too (named by its path relative to DIR when inside it): the test that proves a
  flag in a literal is caught.
"""
import argparse
import pathlib
import re
import sys

DIRS = ("core", "storage", "gpu")
SUFFIXES = {".h", ".cpp", ".cu", ".cuh"}
FLAG = re.compile(r"(?<![\w-])--[a-z]")
# The budget table's flag column: "--<name>" literals that are the whole string.
ALLOWED = {
    "core/plan/budgets.cpp": re.compile(r"--[a-z0-9-]+"),
    "core/util/settings.cpp": re.compile(r"--[a-z0-9-]+|(give|use) --.*|routepack export-map --format routepack"),
}


def literals(text):
    """Yields (line, contents) of each string literal of C++ source `text`, comments skipped."""
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
        elif c == "'":
            j = i + 1
            while j < n and text[j] != "'":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        elif c == '"':
            raw = i > 0 and text[i - 1] == "R"
            if raw:
                open_paren = text.find("(", i)
                delim = ")" + text[i + 1:open_paren] + '"'
                j = text.find(delim, open_paren)
                j = n if j < 0 else j
                yield line, text[open_paren + 1:j]
                line += text.count("\n", i, j)
                i = j + len(delim)
            else:
                j = i + 1
                while j < n and text[j] != '"' and text[j] != "\n":
                    j += 2 if text[j] == "\\" else 1
                yield line, text[i + 1:j]
                i = j + 1
        else:
            i += 1


def check(path, rel):
    bad = []
    allowed = ALLOWED.get(rel)
    for line, s in literals(path.read_text(encoding="utf-8", errors="replace")):
        if FLAG.search(s) and not (allowed and allowed.fullmatch(s)):
            bad.append(f'check_message_flags: {rel}:{line}: string literal names a CLI flag: "{s}"')
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--also", nargs="*", default=[])
    a = ap.parse_args()
    root = pathlib.Path(a.source).resolve()
    files = sorted(p for d in DIRS for p in (root / d).rglob("*") if p.suffix in SUFFIXES and p.is_file())
    files += [pathlib.Path(f).resolve() for f in a.also]
    bad = []
    for p in files:
        try:
            rel = p.relative_to(root).as_posix()
        except ValueError:
            rel = p.name
        bad += check(p, rel)
    for b in bad:
        print(b)
    if bad:
        print(f"check_message_flags: FAILED ({len(bad)} literals)")
        return 1
    print(f"check_message_flags: OK ({len(files)} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
