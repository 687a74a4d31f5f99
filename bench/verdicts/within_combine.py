#!/usr/bin/env python3
"""bench/verdicts/within_combine.py: what a learned per-item likeness of one commit's runs would
do to the verdicts of three runs a head (a feasibility check, not ciprof's own statistics).

    bench/verdicts/within_combine.py DIR CIPROF

DIR is a bench/verdicts run kept with `run.py --head-runs 3 --keep DIR`. Every run of every
head is judged alone (`ciprof report --head ID --base main --head-runs 1 --format json`); each
head's three runs are then combined here as `ciprof report` combines them, an item's p =
max(p over the runs)^(3 / (1 + 2 rho)) when every run moved it the same way, with
Benjamini-Hochberg per family (tests, functions) at 0.1 % and --min-change 5 %, in two arms:
rho = 0.08 for every item (about the shared baseline's share), and rho = the item's own
correlation between runs of one A/A head (bench/verdicts/within.py; the median for items seen
in fewer than 10 heads), at least 0.08. Heads with fewer than 20 history runs are left out
(their runs are not combined). Printed per scenario and arm: heads, the planted item found,
and other items flagged (on a planted head these include its test and callers, which did get
slower). An approximation: the report's two judgements (totals without flagged functions) and
each item's own baseline share are not redone; compare the arms, not the absolute counts.
"""
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import within  # noqa: E402

BASELINE_RHO = 0.08
ALPHA = 0.001
MIN_CHANGE = 0.05


def bh(ps):
    """Benjamini-Hochberg q-values of ps."""
    n = len(ps)
    order = sorted(range(n), key=lambda i: ps[i])
    q, running = [1.0] * n, 1.0
    for rank in range(n, 0, -1):
        i = order[rank - 1]
        running = min(running, ps[i] * n / rank)
        q[i] = running
    return q


def flagged(runs, rho_of):
    """[(item, change)] the newest run's items flagged when the three runs are combined with
    each item's rho_of(item)."""
    items = list(runs[2])
    comb = []
    for k in items:
        got = [r.get(k) for r in runs]
        if any(v is None for v in got) or len({v[1] > 0 for v in got}) > 1:
            comb.append(1.0)
            continue
        comb.append(max(v[0] for v in got) ** (3 / (1 + 2 * rho_of(k))))
    out = []
    for fam in (False, True):
        idx = [i for i, k in enumerate(items) if (k[1] == "test") == fam]
        for j, q in zip(idx, bh([comb[i] for i in idx])):
            if q <= ALPHA and abs(runs[2][items[j]][1]) >= MIN_CHANGE:
                out.append((items[j], runs[2][items[j]][1]))
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    top, ciprof = sys.argv[1], os.path.abspath(sys.argv[2])
    repo = os.path.join(top, "repo")
    heads = json.load(open(os.path.join(top, "heads.json")))
    data = within.three_runs(ciprof, repo, heads)
    rho = within.correlations(within.aa_triples(data))
    med = statistics.median(rho.values())
    arms = {"baseline": lambda k: BASELINE_RHO,
            "learned": lambda k: max(BASELINE_RHO, rho.get(k, med))}
    table, order = {}, []
    for h, runs, history in data:
        if history < 20:
            continue
        if h["scenario"] not in order:
            order.append(h["scenario"])
        planted = h.get("planted")
        for arm, rho_of in arms.items():
            got = flagged(runs, rho_of)
            st = table.setdefault((h["scenario"], arm), {"n": 0, "found": 0, "items": 0,
                                                         "heads": 0})
            st["n"] += 1
            if planted:
                want = "self" if planted[0] == "self" else "test"
                st["found"] += any(k == (planted[1], want) and c > 0 for k, c in got)
            others = [k for k, _ in got if not (planted and k[0] == planted[1])]
            st["items"] += len(others)
            st["heads"] += bool(others)
    print(f"median rho over items {med:+.2f}")
    for sc in order:
        for arm in arms:
            st = table[(sc, arm)]
            print(f"{sc:40s} {arm:8s} heads {st['n']:3d} found {st['found']:3d} "
                  f"other items {st['items']:3d} in {st['heads']} heads")
    return 0


if __name__ == "__main__":
    sys.exit(main())
