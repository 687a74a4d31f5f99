#!/usr/bin/env python3
"""bench/verdicts/plain_time.py: how well a head's items stand out in plain CPU time, against
the suite's total, or against part of the suite-wide level, on kept bench/verdicts runs.

    bench/verdicts/plain_time.py CIPROF DIR [DIR...]

For every run in each DIR/repo (what `run.py --keep DIR` left) the CPU time per test and per
leaf function is read (`ciprof export --format speedscope`). For each head with at least 10
main runs before it, each item holding 20 ms or more a run (tests, and functions' self time)
gets z = (y_head - mean) / sd over the newest 30 of those main runs, where y is the item's log
CPU time minus w times the run's level (the median over the functions of their log time
against their history mean), for w = 0, 0.25, 0.5, 0.75, 1 (0: plain CPU time; 1: the whole
level taken out). Printed per w: the 95th percentile over calm A/A heads of the largest z of
any item (one bar for every scenario: 1 calm A/A head in 20 flags something at it), and per
scenario how often the planted item's z passed that bar and its median z. A crude model of
ciprof report (no per-item tails, no robust weighting), meant only to compare normalisations
side by side on identical runs; no verdict of ciprof's comes from it.
"""
import json
import math
import os
import sqlite3
import statistics as st
import subprocess
import sys

HIST = 30
WEIGHTS = [0, 0.25, 0.5, 0.75, 1.0]


def run_items(ciprof, repo, rid):
    r = subprocess.run([ciprof, "export", "--run", str(rid), "--format", "speedscope"],
                       cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                       check=True)
    j = json.loads(r.stdout)
    names = [f["name"] for f in j["shared"]["frames"]]
    items = {}
    profiles = j["profiles"][1:] if len(j["profiles"]) > 1 else j["profiles"]
    for p in profiles:
        total = 0
        for stack, w in zip(p["samples"], p["weights"]):
            total += w / 1e6
            if stack:
                k = "F:" + names[stack[-1]]
                items[k] = items.get(k, 0) + w / 1e6
        if p["name"] != "(outside tests)":
            items["T:" + p["name"]] = total
    return items


def session(ciprof, d, out):
    repo = os.path.join(d, "repo")
    heads = json.load(open(os.path.join(d, "heads.json")))
    db = sqlite3.connect(os.path.join(repo, ".ciprof", "ciprof.db"))
    runs = db.execute("select id, branch from runs order by id").fetchall()
    db.close()
    mains = [r for r, b in runs if b == "main"]
    items = {r: run_items(ciprof, repo, r) for r, _ in runs}

    def lg(x):
        return math.log(x + 0.5)

    for h in heads:
        hist = [r for r in mains if r < h["id"]][-HIST:]
        if len(hist) < 10:
            continue
        kind = "A/A, CPU hog" if h["hog"] else ("A/A" if h["kind"] == "aa" else h["scenario"])
        keys = [k for k in items[hist[-1]] if st.mean(items[r].get(k, 0) for r in hist) >= 20]
        mu = {k: st.mean(lg(items[r].get(k, 0)) for r in hist) for k in keys}
        funcs = [k for k in keys if k.startswith("F:")]

        def level(r):
            return st.median(lg(items[r].get(k, 0)) - mu[k] for k in funcs)

        lh = {r: level(r) for r in hist}
        lv = level(h["id"])
        planted = None
        if h["planted"]:
            planted = ("T:" if h["planted"][0] == "test" else "F:") + h["planted"][1]
        for w in WEIGHTS:
            z = {}
            for k in keys:
                ys = [lg(items[r].get(k, 0)) - w * lh[r] for r in hist]
                z[k] = (lg(items[h["id"]].get(k, 0)) - w * lv - st.mean(ys)) / max(st.stdev(ys), 1e-3)
            zt = z.get(planted, float("nan")) if planted else float("nan")
            other = max((z[k] for k in keys if k != planted), default=0)
            out.setdefault((kind, w), []).append((zt, other))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out = {}
    for d in sys.argv[2:]:
        session(sys.argv[1], d, out)
    kinds = sorted({k for k, _ in out})
    for w in WEIGHTS:
        aa = sorted(x[1] for x in out.get(("A/A", w), []))
        if not aa:
            sys.exit("plain_time.py: no calm A/A head with 10 history runs")
        bar = aa[int(0.95 * len(aa))]
        print(f"w = {w}: calm A/A heads {len(aa)}, bar (95th percentile of the largest z) {bar:.2f}")
        for k in kinds:
            if k.startswith("A/A"):
                continue
            zt = [x[0] for x in out[(k, w)] if not math.isnan(x[0])]
            if zt:
                print(f"    {k:34s} {sum(z > bar for z in zt):4d} of {len(zt):4d} past the bar, "
                      f"median z {st.median(zt):5.1f}")


if __name__ == "__main__":
    main()
