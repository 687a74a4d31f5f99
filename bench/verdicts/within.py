#!/usr/bin/env python3
"""bench/verdicts/within.py: how alike the runs of one commit are, item by item, beyond chance.

    bench/verdicts/within.py DIR CIPROF [--top N] [--calm]

DIR is a bench/verdicts run kept with `run.py --head-runs 3 --keep DIR` (three runs of every
head). Each run of every A/A head (nothing planted) is judged alone against the base branch
(`ciprof report --head ID --base main --head-runs 1 --format json`); each judged item's
two-sided p becomes a signed normal score z (the sign of its change). Per item, over the A/A
heads, the correlation of z between the runs of one head (pairs 1-2, 1-3, 2-3). `ciprof report`
combines a commit's runs as if only their shared baseline made them alike (5-15 % of an item's
variance with 5 base runs, docs/report.md step 7); a correlation well above that is a term
the runs of one job share: the machine, or a slow spell of it that outlasts the job. Prints
the items with the highest correlation and the median over items (those judged in 10 heads
or more). --calm: only the heads run without the bench's CPU hog.
"""
import argparse
import json
import os
import statistics
import sys
from statistics import NormalDist

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as bench  # noqa: E402


def judged(ciprof, repo, run):
    """({(name, measure): (p, change)} of the items one run judged alone, its history runs)."""
    rep = json.loads(bench.report(ciprof, repo, "--head", str(run), "--head-runs", "1",
                                  "--format", "json")[1])
    return ({(x["name"], x.get("measure", "test")): (x["p_value"], x["delta"])
             for x in rep["functions"] + rep["tests"]
             if x.get("tested") and x.get("p_value") is not None and x.get("delta") is not None},
            rep["summary"]["history_runs"])


def score(p, change):
    """A two-sided p as a normal score, signed as the change."""
    return (1 if change > 0 else -1) * -NormalDist().inv_cdf(min(max(p, 1e-300), 1.0) / 2)


def correlations(triples):
    """{item: correlation of its score between runs of one head} from {item: [[z1, z2, z3],
    ...]} (one list per head), for items seen in 10 heads or more."""
    rho = {}
    for k, v in triples.items():
        if len(v) < 10:
            continue
        x = [t[i] for t in v for i, _ in ((0, 1), (0, 2), (1, 2))]
        y = [t[j] for t in v for _, j in ((0, 1), (0, 2), (1, 2))]
        try:
            rho[k] = statistics.correlation(x, y)
        except statistics.StatisticsError:
            continue
    return rho


def aa_triples(runs_of_heads, calm=False):
    """{item: [[z1, z2, z3], ...]} over the A/A heads of three_runs()."""
    per = {}
    for h, runs, _ in runs_of_heads:
        if h["kind"] != "aa" or (calm and h.get("hog")):
            continue
        zs = [{k: score(*v) for k, v in r.items()} for r in runs]
        for k in zs[0]:
            if all(k in z for z in zs):
                per.setdefault(k, []).append([z[k] for z in zs])
    return per


def three_runs(ciprof, repo, heads, keep=lambda h: True):
    """[(head, [items of each run judged alone] * 3, the newest run's history runs)] for the
    heads keep() takes."""
    out = []
    for h in heads:
        if keep(h):
            got = [judged(ciprof, repo, run) for run in (h["id"] - 2, h["id"] - 1, h["id"])]
            out.append((h, [g[0] for g in got], got[2][1]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("ciprof")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--calm", action="store_true", help="only the A/A heads without a CPU hog")
    a = ap.parse_args()
    repo = os.path.join(a.dir, "repo")
    heads = json.load(open(os.path.join(a.dir, "heads.json")))
    ciprof = os.path.abspath(a.ciprof)
    data = three_runs(ciprof, repo, heads,
                      lambda h: h["kind"] == "aa" and not (a.calm and h.get("hog")))
    triples = aa_triples(data, a.calm)
    rows = sorted(((r, k, len(triples[k])) for k, r in correlations(triples).items()),
                  reverse=True)
    if not rows:
        sys.exit("within.py: no item judged in 10 A/A heads (was DIR kept with --head-runs 3?)")
    for rho, k, n in rows[:a.top]:
        print(f"{rho:+.2f} {k[0]} {k[1]} ({n} heads)")
    print(f"median {statistics.median(r[0] for r in rows):+.2f} over {len(rows)} items")
    return 0


if __name__ == "__main__":
    sys.exit(main())
