#!/usr/bin/env python3
"""bench/verdicts/shares.py: one test's (or function's) share of each run, by scenario, in a
kept bench/verdicts run.

    bench/verdicts/shares.py DIR CIPROF NAME [--function]

DIR is what `run.py --keep DIR` left. Every stored run is put under "main" (the base branch's
history) or under the scenario of the head whose commit it ran (every run of a head's job);
printed per scenario: how many runs, the median share of NAME (a test's samples over the run's,
from `ciprof show RUN --by test --format json`; with --function a function's self samples over
the run's) and the shares sorted, in %. It shows an item's own slow mode (a few runs well above
the rest) next to what a planted change moved it to.
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


def ciprof_json(ciprof, repo, *args):
    """A ciprof command's JSON output, run in the kept repository."""
    return json.loads(subprocess.run([ciprof, "-q", *args], cwd=repo, env=clean_env(), text=True,
                                     stdout=subprocess.PIPE, check=True).stdout)


def run_counts(ciprof, repo, run, function):
    """{name: samples} of one run: its functions' self samples (function) or its tests'."""
    if function:
        rows = ciprof_json(ciprof, repo, "show", str(run), "--format", "json")["functions"]
        return {x["name"]: x["self"] for x in rows}
    rows = ciprof_json(ciprof, repo, "show", str(run), "--by", "test", "--format", "json")["tests"]
    return {x["name"]: x["samples"] for x in rows}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("ciprof")
    ap.add_argument("name")
    ap.add_argument("--function", action="store_true",
                    help="NAME is a function (its self samples), not a test")
    a = ap.parse_args()
    repo = os.path.join(a.dir, "repo")

    def share(run):
        counts = run_counts(a.ciprof, repo, run, a.function)
        total = sum(counts.values())
        return 100 * counts.get(a.name, 0) / total if total else 0

    runs = ciprof_json(a.ciprof, repo, "runs", "--format", "json", "--limit", "100000")["runs"]
    heads = json.load(open(os.path.join(a.dir, "heads.json")))
    job = {(r["commit"], r["branch"]): [] for r in runs}
    for r in runs:
        job[(r["commit"], r["branch"])].append(r["id"])
    key = {r["id"]: (r["commit"], r["branch"]) for r in runs}
    groups = {"main": [r["id"] for r in runs if r["branch"] == "main"]}
    for h in heads:
        groups.setdefault(h["scenario"], []).extend(job[key[h["id"]]])
    for scenario, ids in groups.items():
        v = sorted(share(i) for i in ids)
        print(f"{scenario}: {len(v)} runs, median {statistics.median(v):.2f} %: "
              f"{' '.join(f'{x:.1f}' for x in v)}")


if __name__ == "__main__":
    main()
