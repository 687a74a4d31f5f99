#!/usr/bin/env python3
"""bench/verdicts/unsampled.py: the runs of kept bench/verdicts sessions whose CPU time went
largely unsampled, the sign of the runner fault docs/run.md ("Limits") describes.

    bench/verdicts/unsampled.py CIPROF DIR [DIR...] [--over F]

For each DIR (what `run.py --keep DIR` left), every stored run's unsampled share: 1 - samples
/ (CPU seconds x rate), from `ciprof runs --format json`. Printed per session: how many runs,
the median share, and the runs over F (default 0.10) with their share. Normally 2-4 % on the
bench's workloads (time in the kernel, which the sampler excludes). Also the runs `ciprof run`
tagged host.unseen_processes (processes the kernel did not follow; runs stored since 7d2e44a),
with the count: a run over F without the tag is one the detection missed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run import clean_env  # noqa: E402


def shares(ciprof, repo):
    """[(run id, unsampled share, unseen processes or None)] of every run stored in repo's
    database."""
    out = subprocess.run([ciprof, "-q", "runs", "--limit", "100000", "--format", "json"],
                         cwd=repo, env=clean_env(), text=True, stdout=subprocess.PIPE,
                         check=True).stdout
    rows = []
    for r in json.loads(out)["runs"]:
        if r.get("cpu_seconds") and r.get("hz"):
            rows.append((r["id"], 1 - r["samples"] / (r["cpu_seconds"] * r["hz"]),
                         r.get("tags", {}).get("host.unseen_processes")))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ciprof")
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--over", type=float, default=0.10)
    a = ap.parse_args()
    total = bad = tagged = 0
    for d in a.dirs:
        rows = shares(a.ciprof, os.path.join(d, "repo"))
        over = [(i, f, u) for i, f, u in rows if f > a.over]
        unseen = [(i, f, u) for i, f, u in rows if u]
        med = statistics.median(f for _, f, _ in rows) if rows else 0
        print(f"{d}: {len(rows)} runs, median unsampled {100 * med:.1f} %, over "
              f"{100 * a.over:.0f} %: " +
              (", ".join(f"run {i} {100 * f:.1f} %" + (f" (unseen {u})" if u else " (no tag)")
                         for i, f, u in over) or "none") +
              "; tagged unseen: " +
              (", ".join(f"run {i} ({u}, {100 * f:.1f} %)" for i, f, u in unseen) or "none"))
        total += len(rows)
        bad += len(over)
        tagged += len(unseen)
    print(f"all: {bad} of {total} runs over {100 * a.over:.0f} %, {tagged} tagged "
          f"host.unseen_processes")


if __name__ == "__main__":
    main()
