#!/usr/bin/env python3
"""Validates every ```mermaid block of a Markdown file as a well-formed Mermaid xychart-beta
chart, by the grammar GitHub's Mermaid accepts for what ciprof writes: a title string, an
x-axis of quoted categories, a numeric y-axis range, one line of numbers, one per category.
Prints one line per chart; exits 1 naming the file, chart and line of the first problem."""
import re
import sys

STR = r'"[^"\n]*"'
NUM = r"-?\d+(?:\.\d+)?"


def check(path, text):
    blocks = re.findall(r"^(`{3,})mermaid\n(.*?)^\1$", text, re.S | re.M)
    if not blocks:
        return [f"{path}: no mermaid block"]
    errors = []
    for k, (_, body) in enumerate(blocks, 1):
        lines = [l.strip() for l in body.strip("\n").split("\n")]
        where = f"{path}: chart {k}"
        if lines[0] != "xychart-beta":
            errors.append(f"{where}, line 1: expected 'xychart-beta', got {lines[0]!r}")
            continue
        rules = {
            "title": re.compile(rf"title {STR}$"),
            "x-axis": re.compile(rf"x-axis \[{STR}(?:, {STR})*\]$"),
            "y-axis": re.compile(rf"y-axis {STR} {NUM} --> {NUM}$"),
            "line": re.compile(rf"line \[{NUM}(?:, {NUM})*\]$"),
        }
        seen = {}
        for n, line in enumerate(lines[1:], 2):
            key = line.split(" ", 1)[0]
            if key not in rules or not rules[key].match(line) or key in seen:
                errors.append(f"{where}, line {n}: not a well-formed statement: {line!r}")
            seen[key] = line
        if len(seen) != 4:
            errors.append(f"{where}: expected title, x-axis, y-axis and line, got {sorted(seen)}")
            continue
        cats = re.findall(STR, seen["x-axis"])
        vals = [float(v) for v in re.findall(NUM, seen["line"][5:])]
        lo, hi = (float(v) for v in re.findall(NUM, seen["y-axis"].split('"')[2]))
        if len(cats) != len(vals):
            errors.append(f"{where}: {len(cats)} categories but {len(vals)} values")
        if not all(lo <= v <= hi for v in vals):
            errors.append(f"{where}: values {vals} outside the y-axis {lo} --> {hi}")
        print(f"{where}: {seen['title'][6:]}, {len(vals)} points")
    return errors


def main():
    errors = []
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as f:
            errors += check(path, f.read())
    for e in errors:
        print(e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
