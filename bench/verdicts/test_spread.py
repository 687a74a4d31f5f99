#!/usr/bin/env python3
"""bench/verdicts/test_spread.py: how much each test's share of the suite varies over the base
branch's runs of a kept bench/verdicts run, against what Poisson sampling alone would give.

    bench/verdicts/test_spread.py DIR CIPROF

DIR is what `run.py --keep DIR` left. For every test in at least 10 of the main runs (`ciprof
show RUN --by test --format json`): the runs, its median samples a run, the robust spread of
its log share (1.4826 times the median absolute deviation), Poisson's 1/sqrt(samples), and
their variance ratio (spread^2 x samples: 1 when sampling is Poisson, far less when the count
is the test's CPU time over the period).
"""
import json
import math
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from shares import ciprof_json  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    repo, ciprof = os.path.join(sys.argv[1], "repo"), os.path.abspath(sys.argv[2])
    runs = ciprof_json(ciprof, repo, "runs", "--limit", "100000", "--format", "json")["runs"]
    rows = {}
    for run in (r for r in runs if r["branch"] == "main"):
        tests = ciprof_json(ciprof, repo, "show", str(run["id"]), "--by", "test", "--format",
                            "json")["tests"]
        total = sum(t["samples"] for t in tests)
        for t in tests:
            if t["samples"] > 0 and total > 0:
                rows.setdefault(t["name"], []).append((t["samples"], total))
    for name, v in sorted(rows.items(), key=lambda kv: -statistics.median(a for a, _ in kv[1])):
        if len(v) < 10:
            continue
        logs = [math.log(a / b) for a, b in v]
        med = statistics.median(logs)
        sd = 1.4826 * statistics.median(abs(x - med) for x in logs)
        count = statistics.median(a for a, _ in v)
        print(f"{name or '(outside tests)':<20} runs {len(v):3d}  samples {count:6.0f}  "
              f"spread {sd:.3f}  Poisson {1 / math.sqrt(count):.3f}  ratio {sd * sd * count:.2f}")


if __name__ == "__main__":
    main()
