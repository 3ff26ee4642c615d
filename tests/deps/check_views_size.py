#!/usr/bin/env python3
"""Checks the size of the studio's sources: no file under views/ longer than 700 lines, and the main
window's sources (views/studio_window*.cpp) within 1,000 lines together.

A file that grows past the limit is split by concern (one tab, one dialog, one controller per file),
as the folders of views/ are. Lines are counted as `wc -l` counts them (newline characters).

Usage: check_views_size.py --source DIR [--pretend FILE:LINES ...]
  --pretend counts only the pretended files, FILE (repository-relative, under views/) as LINES long,
  instead of the tree's: the test that proves the check catches the first line over each limit and
  not the limit itself.
Prints `check_views_size: FILE has N lines, more than 700` per file over the limit (sorted by path)
and `check_views_size: views/studio_window*.cpp have N lines together, more than 1000`, then
`check_views_size: FAILED (K problems)` and exits 1; prints `check_views_size: OK (N files, largest
L lines: FILE; studio_window*.cpp W lines)` and exits 0 otherwise.
"""
import argparse
import fnmatch
import os
import sys

FILE_LIMIT = 700
WINDOW_LIMIT = 1000
WINDOW_PATTERN = "views/studio_window*.cpp"
EXTENSIONS = (".h", ".cpp")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--pretend", action="append", default=[])
    a = ap.parse_args()
    sizes = {}
    for d, _, names in [] if a.pretend else os.walk(os.path.join(a.source, "views")):
        for n in names:
            if n.endswith(EXTENSIONS):
                path = os.path.join(d, n)
                with open(path, "rb") as f:
                    sizes[os.path.relpath(path, a.source)] = f.read().count(b"\n")
    for item in a.pretend:
        f, _, n = item.rpartition(":")
        sizes[f] = int(n)
    problems = [f"{f} has {n} lines, more than {FILE_LIMIT}" for f, n in sorted(sizes.items()) if n > FILE_LIMIT]
    window = sum(n for f, n in sizes.items() if fnmatch.fnmatch(f, WINDOW_PATTERN))
    if window > WINDOW_LIMIT:
        problems.append(f"{WINDOW_PATTERN} have {window} lines together, more than {WINDOW_LIMIT}")
    for p in problems:
        print(f"check_views_size: {p}")
    if problems:
        print(f"check_views_size: FAILED ({len(problems)} problems)")
        return 1
    largest = max(sizes, key=lambda f: (sizes[f], f))
    print(f"check_views_size: OK ({len(sizes)} files, largest {sizes[largest]} lines: {largest}; "
          f"studio_window*.cpp {window} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
