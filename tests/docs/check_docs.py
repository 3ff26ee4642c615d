#!/usr/bin/env python3
"""Holds README.md and docs/*.md to the program: every command they show runs, or is checked.

Modes (one per CTest entry):

  check_docs.py commands --source DIR --build DIR [--shared DIR] [--doc FILE ...] [--work DIR]
                         [--print-output]
      Reads every fenced block of README.md and docs/*.md (or of the --doc files) and
      - runs the ```sh blocks of a page in order, each with `bash -euo pipefail` (a block starts with
        the `NAME=value` lines of the page's earlier blocks, so `R=build/app/routepack` carries on),
        and each ```python block with the interpreter running this script, in a scratch folder of
        the page's own that holds the clone's top-level entries as links, `build/` the build folder,
        and `../shared` the shared data; `build/app` is first on PATH and `build/python` is PYTHONPATH;
      - compares what such a block prints (stdout and stderr as one stream, as `2>&1` gives) with the
        ```text block that follows it (only prose between them), by the output rules below;
      - for a block under a line `> Not run by the tests: REASON` checks that every `--flag` of each
        command is named by that command's help (`routepack CMD --help`, a benchmark's usage text,
        `setup.sh`'s modes, `python3 -m routepack.run CMD --help`, `python3 -m
        routepack.torch.measure --help`, `check_docs.py MODE --help`) and
        compiles a Python block;
      - for a block under a line starting `> Run by `TEST``, the test that runs it, checks that the
        test exists (a file of the clone, or a CTest name of tests/) and the flags as above;
      - refuses a ```text block that is neither the output of a block it runs nor marked by the line
        above it: `> Not an output: REASON` (a file listing, a diagram, a formula) or
        `> Measured on YYYY-MM-DD, load L: REASON` (figures a loaded machine cannot reproduce:
        timings, benchmarks; the date and the load average they were measured at). A measured
        block is not compared, but the block before it still runs. The same `Measured` line dates a
        table of measured figures; it stands right above a ```text block or a table (one blank line
        between them at most);
      - checks the flags of every ```usage block (command synopses) the same way, parses every
        ```json block, refuses an indented code block and a fence without a known language, and
        checks that every image a page shows exists.
      Prints `check_docs: FILE:LINE: ...` per failure and exits 1; `check_docs: OK (...)` otherwise.
      --print-output prints what each block printed, to refresh a page's ```text blocks.

      Output rules (a shown line and a printed line match when):
      - trailing whitespace and trailing blank lines are ignored; a run of spaces inside a line
        matches any run of spaces; indentation is compared;
      - a shown line `...` stands for one or more printed lines;
      - a number shown with k decimals matches a printed number with at least k decimals that
        rounds to it (|printed - shown| <= 0.5 x 10^-k); a number shown without decimals matches
        the same digits only; thousands separators (`1,286,231`) are ignored on both sides;
      - masked, so any value matches any value of the same unit: durations (`0.42 s`, `12 ms`; not
        on a line that says `modelled`, whose seconds the cost model computes), rates (`0.21 GB/s`,
        `tokens/s`), dates and times (`2026-12-04`, `2026-12-04 09:41:22`), the numbers in a
        column headed `time_s` (from its header to the first line without a number under it), and
        the scratch folder's absolute path (shown as the path relative to the clone's root:
        `ds-run`, `../shared/...`).
  check_docs.py readme-length --source DIR [--max N]
      The README holds at most N lines (300).
  check_docs.py architecture --source DIR [--pretend-header PATH ...]
      Every public header under core/, storage/, gpu/, views/ and app/ is named in
      docs/ARCHITECTURE.md: by its path, or by its file name on a line that names its folder in
      backticks (a module table's row). --pretend-header adds a header that does not exist: the
      test that proves a missing one is caught.
"""
import argparse
import datetime
import functools
import glob
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from decimal import Decimal

LANGS = {"sh", "python", "text", "usage", "json"}
NOT_RUN = re.compile(r"^> Not run by the tests: (.+)$")
RUN_BY = re.compile(r"^> Run by `([^`]+)`")
NOT_OUTPUT = re.compile(r"^> Not an output: (.+)$")
MEASURED = re.compile(r"^> Measured on ")
MEASURED_FULL = re.compile(r"^> Measured on (\d{4}-\d{2}-\d{2}), load ([^:]+): (\S.*)$")
FLAG = re.compile(r"(?<![\w-])(--[A-Za-z][\w-]*)")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")
ROUTEPACK = {"routepack", "$R", "build/app/routepack", "./build/app/routepack"}
STUDIO = {"routepack-studio", "build/app/routepack-studio", "./build/app/routepack-studio"}
REWRITE = {"routepack-rewrite", "build/app/routepack-rewrite", "./build/app/routepack-rewrite"}


class Block:
    def __init__(self, path, line, lang, body, marker):
        self.path, self.line, self.lang, self.body, self.marker = path, line, lang, body, marker
        self.output = None  # the ```text block showing what this block prints

    def where(self):
        return f"{self.path}:{self.line}"


def read_blocks(path, rel, errors):
    """The fenced blocks of one page, with the marker line above each; indented code blocks and
    fences without a known language are errors."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, i, prev = [], 0, ""
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            lang = line[3:].strip()
            start, body = i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if lang not in LANGS:
                errors.append(f"{rel}:{start}: a code block says what it is: ```{' | '.join(sorted(LANGS))} "
                              f"(got '```{lang}')")
            marker = None
            for pattern, kind in ((NOT_RUN, "not-run"), (RUN_BY, "run-by"), (NOT_OUTPUT, "not-output"),
                                  (MEASURED, "measured")):
                m = pattern.match(prev)
                if m:
                    marker = (kind, m.group(1) if m.groups() else prev)
            blocks.append(Block(rel, start, lang, "\n".join(body), marker))
            prev = ""
        elif (line.startswith("    ") or line.startswith("\t")) and i > 0 and lines[i - 1].strip() == "" \
                and line.strip() and not in_list(lines, i):
            errors.append(f"{rel}:{i + 1}: indented code block: fence it with its language (```sh, ```text, ...)")
            while i + 1 < len(lines) and (lines[i + 1].startswith("    ") or lines[i + 1].strip() == ""):
                i += 1
        elif MEASURED.match(line):
            errors += measured_errors(lines, i, rel)
        if line.strip():
            prev = line
        i += 1
    return blocks


def measured_errors(lines, i, rel):
    """A `> Measured on DATE, load L: REASON` line names a real date and a load, and stands directly
    above the ```text block or the table it dates."""
    m = MEASURED_FULL.match(lines[i])
    errs = []
    if not m:
        errs.append(f"{rel}:{i + 1}: write the marker as `> Measured on YYYY-MM-DD, load L: REASON` "
                    f"(L the machine's load average then)")
    else:
        try:
            datetime.date.fromisoformat(m.group(1))
        except ValueError:
            errs.append(f"{rel}:{i + 1}: {m.group(1)} is not a date")
    j = i + 2 if i + 2 < len(lines) and not lines[i + 1].strip() else i + 1
    if j >= len(lines) or not (lines[j].startswith("```text") or lines[j].startswith("|")):
        errs.append(f"{rel}:{i + 1}: a `> Measured on` line stands right above the ```text block or the "
                    f"table it dates")
    return errs


def pair_outputs(blocks, errors):
    """Attaches each ```text block to the block it shows the output of: the fenced block right before
    it, when that block runs here. Any other ```text block says what it is by its marker."""
    for k, b in enumerate(blocks):
        if b.lang != "text" or (b.marker and b.marker[0] in ("not-output", "measured")):
            continue
        before = blocks[k - 1] if k > 0 else None
        if before is not None and before.lang in ("sh", "python") and not before.marker and before.output is None:
            before.output = b
            continue
        errors.append(f"{b.where()}: a ```text block shows what the ```sh or ```python block right before "
                      f"it prints, and none runs here: mark it `> Not an output: REASON` or "
                      f"`> Measured on YYYY-MM-DD, load L: REASON`")


NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
TOKEN = re.compile(r"(?P<mask>\x00(?P<unit>[^\x00]*)\x00)|(?P<num>" + NUMBER + r")|(?P<space>[ \t]+)|(?P<text>.)")
DATE = re.compile(r"(?<!\d)\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?!\d)")
DURATION = re.compile(r"(?<![\w.,])\d+(?:\.\d+)?( ?)(s|ms|us|min)(?![\w/])")
RATE = re.compile(r"(?<![\w.,])\d+(?:\.\d+)?( ?)([A-Za-z-]*/s)(?!\w)")
TIMING_COLUMN = re.compile(r"(?<!\S)time_s(?!\S)")
ELLIPSIS = "..."


def timing_field(line, column):
    """The span of the whitespace-separated field of `line` under a `time_s` header spanning `column`,
    when that field is a plain number; else None."""
    for m in re.finditer(r"\S+", line):
        if m.start() < column[1] and m.end() > column[0]:
            return m.span() if re.fullmatch(r"\d+(?:\.\d+)?", m.group(0)) else None
    return None


def masked_lines(text):
    """The lines of an output with what differs between runs replaced by a mask of its unit. The rows
    of a table with a `time_s` column run from its header to the first line without a number there
    (a shown `...` line stands for rows)."""
    out, column = [], None
    if not text.strip():
        return out
    for line in text.rstrip().split("\n"):
        line = line.rstrip()
        header = TIMING_COLUMN.search(line)
        if header:
            column = header.span()
        elif column and line.strip() != ELLIPSIS:
            field = timing_field(line, column)
            if field:
                line = line[:field[0]] + "\x00time_s\x00" + line[field[1]:]
            else:
                column = None
        line = DATE.sub("\x00date\x00", line)
        if "modelled" not in line:
            line = DURATION.sub(lambda m: f"\x00{m.group(2)}\x00", line)
        line = RATE.sub(lambda m: f"\x00{m.group(2)}\x00", line)
        out.append(line)
    return out


def tokens(line):
    toks = []
    for k, m in enumerate(TOKEN.finditer(line)):
        if m.group("mask") is not None:
            toks.append(("mask", m.group("unit")))
        elif m.group("num") is not None:
            toks.append(("num", m.group("num").replace(",", "")))
        elif m.group("space") is not None:
            toks.append(("space", m.group("space") if k == 0 else " "))
        elif toks and toks[-1][0] == "text":
            toks[-1] = ("text", toks[-1][1] + m.group("text"))
        else:
            toks.append(("text", m.group("text")))
    return toks


def number_matches(shown, printed):
    if "." not in shown:
        return shown == printed
    k = len(shown.split(".")[1])
    if "." not in printed or len(printed.split(".")[1]) < k:
        return False
    return abs(Decimal(printed) - Decimal(shown)) <= Decimal(5) / (Decimal(10) ** (k + 1))


def line_matches(shown, printed):
    a, b = tokens(shown), tokens(printed)
    return len(a) == len(b) and all(
        x[0] == y[0] and (number_matches(x[1], y[1]) if x[0] == "num" else x[1] == y[1]) for x, y in zip(a, b))


def output_difference(shown_text, printed_text, roots):
    """None when the printed output matches the shown one; else (line of the shown block, shown line,
    printed line) where the match stops (the furthest it gets)."""
    for root, relative in roots:
        printed_text = printed_text.replace(root, relative)
    shown, printed = masked_lines(shown_text), masked_lines(printed_text)
    shown_raw = shown_text.rstrip().split("\n") if shown else []
    printed_raw = printed_text.rstrip().split("\n") if printed else []
    furthest = [(-1, 0)]

    @functools.lru_cache(maxsize=None)
    def match(i, j):
        if i == len(shown):
            if j == len(printed):
                return True
        elif shown[i].strip() == ELLIPSIS:
            return any(match(i + 1, j2) for j2 in range(j + 1, len(printed) + 1))
        elif j < len(printed) and line_matches(shown[i], printed[j]):
            return match(i + 1, j + 1)
        if (i, -j) > (furthest[0][0], -furthest[0][1]):
            furthest[0] = (i, j)
        return False

    if match(0, 0):
        return None
    i, j = furthest[0]
    show = lambda lines, k, end: lines[k].rstrip() if k < len(lines) else end
    return i, show(shown_raw, i, "(end of the block)"), show(printed_raw, j, "(end of the output)")


def in_list(lines, i):
    """Whether line i continues a list item (the last non-blank line above is an item or indented)."""
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    return j >= 0 and re.match(r"^(\s+|[-*] |\d+\. )", lines[j]) is not None


def logical_lines(text, usage=False):
    """Command lines of a block: `\\` continuations joined; in a usage block an indented line
    continues the synopsis above it; comments and blank lines dropped."""
    out = []
    for raw in text.split("\n"):
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if out and (out[-1].endswith("\\") or (usage and raw[:1] in (" ", "\t"))):
            out[-1] = out[-1].rstrip("\\") + " " + line.strip()
        else:
            out.append(line.strip())
    return out


class Checker:
    def __init__(self, source, build, python):
        self.source, self.build, self.python = source, build, python
        self.helps = {}

    def help_text(self, argv, env=None):
        key = tuple(argv)
        if key not in self.helps:
            try:
                r = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
                self.helps[key] = (r.returncode, r.stdout + r.stderr)
            except OSError as e:
                self.helps[key] = (127, str(e))
        return self.helps[key]

    def py_env(self):
        env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
        env["PYTHONPATH"] = os.path.join(self.build, "python")
        return env

    def check_line(self, line, strict):
        """Flag errors of one command line (empty: fine). strict: an unknown program is an error."""
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            words = line.split()
        while words and (words[0] == "env" or ASSIGN.match(words[0])):
            words = words[1:]
        if not words:
            return []
        prog, flags = words[0], [f for f in FLAG.findall(line) if f != "--help"]
        app = os.path.join(self.build, "app")
        if prog in ROUTEPACK:
            sub = next((w for w in words[1:] if not w.startswith("-")), None)
            if sub is None:
                return [f"'{line}': no command after {prog}"]
            rc, text = self.help_text([os.path.join(app, "routepack"), sub, "--help"])
            if rc != 0:
                return [f"'{line}': routepack has no command '{sub}'"]
            return [f"'{line}': {f} is not an option of routepack {sub} (routepack {sub} --help)"
                    for f in flags if not re.search(r"(?<![\w-])" + re.escape(f) + r"(?![\w-])", text)]
        for names, exe in ((STUDIO, "routepack-studio"), (REWRITE, "routepack-rewrite")):
            if prog in names:
                rc, text = self.help_text([os.path.join(app, exe), "--help"])
                return [f"'{line}': {f} is not an option of {exe} ({exe} --help)"
                        for f in flags if not re.search(r"(?<![\w-])" + re.escape(f) + r"(?![\w-])", text)]
        if prog == "bash" and len(words) >= 2 and words[1] == "setup.sh":
            setup = open(os.path.join(self.source, "setup.sh"), encoding="utf-8").read()
            modes = re.search(r'case "\$mode" in ([\w|]+)\)', setup).group(1).split("|")
            if len(words) != 3 or words[2] not in modes:
                return [f"'{line}': setup.sh takes one of {', '.join(modes)}"]
            return []
        if "/tests/bench/" in "/" + prog or any(w.startswith("tests/bench/") for w in words[:2]):
            script = prog if prog.startswith("tests/bench/") or "/tests/bench/" in prog else words[1]
            name = os.path.basename(script)
            src = os.path.join(self.source, "tests", "bench", name if name.endswith(".py") else name + ".cpp")
            if not os.path.exists(src):
                return [f"'{line}': no benchmark {src}"]
            text = open(src, encoding="utf-8").read()
            return [f"'{line}': {f} is not an option of {name} ({os.path.relpath(src, self.source)})"
                    for f in flags if f not in text]
        if os.path.basename(prog).startswith("python3") and len(words) > 1 and \
                words[1].endswith("tests/docs/check_docs.py"):
            mode = words[2] if len(words) > 2 else ""
            script = os.path.join(self.source, "tests", "docs", "check_docs.py")
            rc, text = self.help_text([self.python, script, mode, "--help"])
            if rc != 0:
                return [f"'{line}': check_docs.py has no mode '{mode}'"]
            return [f"'{line}': {f} is not an option of check_docs.py {mode}"
                    for f in flags if not re.search(r"(?<![\w-])" + re.escape(f) + r"(?![\w-])", text)]
        if os.path.basename(prog).startswith("python3") and words[1:3] == ["-m", "routepack.run"]:
            sub = words[3] if len(words) > 3 else ""
            rc, text = self.help_text([self.python, "-m", "routepack.run", sub, "--help"], self.py_env())
            if rc != 0:
                return [f"'{line}': python3 -m routepack.run has no command '{sub}'"]
            return [f"'{line}': {f} is not an option of routepack.run {sub}" for f in flags if f not in text]
        if os.path.basename(prog).startswith("python3") and words[1:3] == ["-m", "routepack.torch.measure"]:
            rc, text = self.help_text([self.python, "-m", "routepack.torch.measure", "--help"], self.py_env())
            if rc != 0:
                return [f"'{line}': python3 -m routepack.torch.measure --help failed"]
            return [f"'{line}': {f} is not an option of routepack.torch.measure"
                    for f in flags if not re.search(r"(?<![\w-])" + re.escape(f) + r"(?![\w-])", text)]
        return [f"'{line}': no syntax check for '{prog}' (run it, or teach tests/docs/check_docs.py its help)"] \
            if strict else []

    def check_block_syntax(self, b, strict):
        if b.lang == "python":
            try:
                compile(b.body, b.where(), "exec")
            except SyntaxError as e:
                return [f"{b.path}:{b.line + (e.lineno or 1) - 1}: {e.msg}"]
            return []
        errs = []
        for line in logical_lines(b.body, usage=b.lang == "usage"):
            errs += [f"{b.where()}: {e}" for e in self.check_line(line, strict)]
        return errs

    def run_by_exists(self, name):
        if os.path.exists(os.path.join(self.source, name)):
            return True
        for cm in glob.glob(os.path.join(self.source, "tests", "**", "CMakeLists.txt"), recursive=True):
            if re.search(r"add_test\(NAME " + re.escape(name) + r"\s", open(cm, encoding="utf-8").read()):
                return True
        return False


def scratch_clone(source, build, shared, root):
    """root/clone: links to the clone's top-level entries (build/ the build folder), root/shared:
    the shared data, so the pages' relative paths hold."""
    clone = os.path.join(root, "clone")
    os.makedirs(clone)
    for name in os.listdir(source):
        if name in (".git",) or name.startswith("build"):
            continue
        os.symlink(os.path.join(source, name), os.path.join(clone, name))
    os.symlink(build, os.path.join(clone, "build"))
    if shared:
        os.symlink(shared, os.path.join(root, "shared"))
    return clone


def scratch_roots(clone, source, build, shared):
    """The scratch folder's absolute paths (and what they link to) as an output shows them: relative
    to the clone's root. Longest first, so that a path inside another is replaced whole."""
    roots = {os.path.join(clone, ""): "", clone: ".", build: "build", os.path.join(source, ""): ""}
    if shared:
        roots[os.path.join(os.path.dirname(clone), "shared")] = "../shared"
        roots[shared] = "../shared"
    return sorted(roots.items(), key=lambda kv: -len(kv[0]))


def run_page(checker, blocks, clone, roots, errors, print_output=False):
    """Runs a page's blocks in order, comparing each with the output it shows; returns the counts run
    and compared."""
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    env["PATH"] = os.path.join(clone, "build", "app") + os.pathsep + env.get("PATH", "")
    env["PYTHONPATH"] = os.path.join(clone, "build", "python")
    env["QT_QPA_PLATFORM"] = "offscreen"
    assigns, ran, compared = [], 0, 0
    for b in blocks:
        if b.marker or b.lang not in ("sh", "python"):
            continue
        t0 = time.monotonic()
        if b.lang == "sh":
            argv = ["bash", "-euo", "pipefail", "-c", "\n".join(assigns + [b.body])]
            assigns += [l for l in b.body.split("\n") if ASSIGN.match(l.strip())]
        else:
            argv = [checker.python, "-c", b.body]
        try:
            r = subprocess.run(argv, cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, errors="replace", timeout=600)
            rc, out = r.returncode, r.stdout
        except subprocess.TimeoutExpired:
            rc, out = -1, "timed out after 600 s"
        ran += 1
        print(f"check_docs: {b.where()}: {b.lang} block: exit {rc} in {time.monotonic() - t0:.1f} s", flush=True)
        if print_output:
            for root, shown in roots:
                out = out.replace(root, shown)
            print(f"check_docs: {b.where()}: {b.lang} block prints:\n{out.rstrip()}", flush=True)
        if rc != 0:
            tail = "\n".join(out.strip().split("\n")[-15:])
            errors.append(f"{b.where()}: the {b.lang} block exits {rc}:\n{tail}")
        elif b.output is not None:
            compared += 1
            diff = output_difference(b.output.body, out, roots)
            if diff is not None:
                k, shown, printed = diff
                errors.append(f"{b.output.path}:{b.output.line + 1 + k}: the output shown is not what the {b.lang} "
                              f"block at line {b.line} prints (rules: tests/docs/check_docs.py):\n"
                              f"  shown:   {shown}\n  printed: {printed}")
    return ran, compared


def pages(source, docs):
    if docs:
        return [os.path.abspath(d) for d in docs]
    return [os.path.join(source, "README.md")] + sorted(glob.glob(os.path.join(source, "docs", "*.md")))


def cmd_commands(a):
    checker = Checker(a.source, a.build, sys.executable)
    errors, ran, compared, checked = [], 0, 0, 0
    work = a.work or tempfile.mkdtemp(prefix="check_docs-")
    shared = a.shared if a.shared and os.path.isdir(a.shared) else None
    if not shared and os.environ.get("CI"):
        errors.append(f"the shared data folder {a.shared} is missing (CI is set)")
    for path in pages(a.source, a.doc):
        rel = os.path.relpath(path, a.source)
        blocks = read_blocks(path, rel, errors)
        pair_outputs(blocks, errors)
        text = open(path, encoding="utf-8").read()
        for k, line in enumerate(text.split("\n"), 1):
            for img in IMAGE.findall(line):
                if not re.match(r"^[a-z]+://", img) and not os.path.exists(os.path.join(os.path.dirname(path), img)):
                    errors.append(f"{rel}:{k}: image {img} does not exist")
        for b in blocks:
            if b.lang == "json":
                try:
                    json.loads(b.body)
                except ValueError as e:
                    errors.append(f"{b.where()}: json block does not parse: {e}")
            elif b.lang == "usage":
                errors += checker.check_block_syntax(b, strict=True)
                checked += 1
            elif b.lang in ("sh", "python") and b.marker:
                kind, what = b.marker
                if kind == "run-by" and not checker.run_by_exists(what):
                    errors.append(f"{b.where()}: 'Run by `{what}`' names no file and no CTest entry")
                errors += checker.check_block_syntax(b, strict=kind == "not-run")
                checked += 1
        if any(b.lang in ("sh", "python") and not b.marker for b in blocks):
            if not shared:
                print(f"check_docs: {rel}: SKIP running its blocks: no shared data folder", flush=True)
                continue
            root = os.path.join(work, re.sub(r"[^\w.-]", "_", rel))
            if os.path.exists(root):
                shutil.rmtree(root)
            build = os.path.abspath(a.build)
            clone = scratch_clone(a.source, build, os.path.abspath(shared), root)
            roots = scratch_roots(clone, a.source, build, os.path.realpath(shared))
            page_ran, page_compared = run_page(checker, blocks, clone, roots, errors, a.print_output)
            ran, compared = ran + page_ran, compared + page_compared
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    for e in errors:
        print(f"check_docs: {e}")
    if errors:
        print(f"check_docs: FAILED ({len(errors)} problems)")
        return 1
    print(f"check_docs: OK ({ran} blocks run, {compared} outputs compared, {checked} checked against --help)")
    return 0


def cmd_readme_length(a):
    n = len(open(os.path.join(a.source, "README.md"), encoding="utf-8").read().rstrip("\n").split("\n"))
    if n > a.max:
        print(f"check_docs: README.md has {n} lines, more than {a.max}: move detail to docs/")
        return 1
    print(f"check_docs: OK (README.md has {n} lines, at most {a.max})")
    return 0


def public_headers(source):
    out = []
    for top in ("core", "storage", "gpu", "views", "app"):
        for root, _, files in os.walk(os.path.join(source, top)):
            out += [os.path.relpath(os.path.join(root, f), source) for f in files if f.endswith((".h", ".cuh"))]
    return sorted(out)


def cmd_architecture(a):
    text = open(os.path.join(a.source, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
    lines = text.split("\n")
    missing = []
    headers = public_headers(a.source) + list(a.pretend_header)
    for h in headers:
        folder, name = os.path.dirname(h), os.path.basename(h)
        if h in text:
            continue
        named = re.compile(r"(?<![\w/.-])" + re.escape(name) + r"(?![\w.])")
        if any(f"`{folder}`" in line and named.search(line) for line in lines):
            continue
        missing.append(h)
    for h in missing:
        print(f"check_docs: docs/ARCHITECTURE.md does not name {h} (its path, or its file name on the row of `{os.path.dirname(h)}`)")
    if missing:
        print(f"check_docs: FAILED ({len(missing)} headers not named)")
        return 1
    print(f"check_docs: OK ({len(headers)} headers named in docs/ARCHITECTURE.md)")
    return 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("commands")
    c.add_argument("--source", required=True)
    c.add_argument("--build", required=True)
    c.add_argument("--shared", default="")
    c.add_argument("--doc", action="append", default=[])
    c.add_argument("--work", default="")
    c.add_argument("--print-output", action="store_true")
    r = sub.add_parser("readme-length")
    r.add_argument("--source", required=True)
    r.add_argument("--max", type=int, default=300)
    h = sub.add_parser("architecture")
    h.add_argument("--source", required=True)
    h.add_argument("--pretend-header", action="append", default=[])
    a = ap.parse_args()
    a.source = os.path.abspath(a.source)
    return {"commands": cmd_commands, "readme-length": cmd_readme_length, "architecture": cmd_architecture}[a.mode](a)


if __name__ == "__main__":
    sys.exit(main())
