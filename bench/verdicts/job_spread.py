#!/usr/bin/env python3
"""bench/verdicts/job_spread.py: how far functions vary within earlier jobs against across the
base branch's history, before one head of a kept bench/verdicts run.

    bench/verdicts/job_spread.py DIR HEAD CIPROF FUNCTION...

DIR is what `run.py --head-runs 3 --keep DIR` left. For each FUNCTION, its log share of the
run's samples (self samples over the run's, from `ciprof show RUN --format json`: shares.py):
the variance over the 30 newest main runs stored before run HEAD, and the variance within the
20 newest earlier jobs (runs of one commit and branch, at most 3 each, not HEAD's commit),
pooled over them. docs/benchmarks.md ("A likeness of one job's runs learned from earlier jobs")
reads these for the tried branch s35.
"""
import collections
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from shares import ciprof_json, run_counts  # noqa: E402


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__.split("\n\n")[1])
    repo, head, ciprof = os.path.join(sys.argv[1], "repo"), int(sys.argv[2]), sys.argv[3]
    runs = ciprof_json(ciprof, repo, "runs", "--format", "json", "--limit", "100000")["runs"]
    runs.sort(key=lambda r: -r["id"])
    commit = {r["id"]: r["commit"] for r in runs}[head]
    jobs = collections.OrderedDict()
    for r in runs:
        if r["id"] < head and r["commit"] != commit:
            jobs.setdefault((r["commit"], r["branch"]), []).append(r["id"])
    jobs = [j[:3] for j in jobs.values() if len(j) >= 2][:20]
    main_runs = [r["id"] for r in runs if r["branch"] == "main" and r["id"] < head][:30]
    cache = {}
    def log_share(run, fn):
        if run not in cache:
            cache[run] = run_counts(ciprof, repo, run, True)
        counts = cache[run]
        return math.log((counts.get(fn, 0) + 0.5) / sum(counts.values()))
    print(f"{len(main_runs)} main runs, {len(jobs)} earlier jobs ({sum(map(len, jobs))} runs) "
          f"before run {head}")
    for fn in sys.argv[4:]:
        across = statistics.variance([log_share(r, fn) for r in main_runs])
        ss = df = 0
        for j in jobs:
            y = [log_share(r, fn) for r in j]
            m = statistics.mean(y)
            ss += sum((v - m) ** 2 for v in y)
            df += len(y) - 1
        print(f"{fn}: across the history {across:.5f}, within jobs {ss / df:.5f} "
              f"({df} degrees of freedom)")


if __name__ == "__main__":
    main()
