#!/usr/bin/env python3
"""bench/verdicts/detectable.py: whether the report's "what this report could see" holds on the
planted heads of kept bench/verdicts runs.

    bench/verdicts/detectable.py CIPROF DIR [DIR...]

DIR is what `run.py --keep DIR` left. Each head with a planted change is judged as run.py
judges it (`ciprof report --head ID --base main --format json`, the runs of its commit as
stored); its planted item (the function's self time, or the test) is read: its change against
the suite-wide factor (`delta`), its `detectable_change` and whether it was flagged. Printed
per DIR and in all: of the heads whose planted item moved beyond its detectable change, how
many flagged it; of those that moved less, how many flagged it (the bar is for the item as the
only change; BH flags several changes at once at somewhat smaller sizes).
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as bench  # noqa: E402


def planted_item(report, planted):
    """The report's entry for the planted (measure, name), or None."""
    measure, name = planted
    if measure == "self":
        rows = [f for f in report["functions"] if f.get("measure") == "self"]
    else:
        rows = report["tests"]
    return next((x for x in rows if x["name"] == name), None)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    ciprof, dirs = os.path.abspath(sys.argv[1]), sys.argv[2:]
    total = [0, 0, 0, 0]  # beyond: heads, flagged; below: heads, flagged
    for d in dirs:
        repo = os.path.join(d, "repo")
        heads = json.load(open(os.path.join(d, "heads.json")))
        n = [0, 0, 0, 0]
        for h in heads:
            if not h.get("planted"):
                continue
            _, r = bench.judge(ciprof, repo, "--head", str(h["id"]))
            it = planted_item(r, h["planted"])
            if not it or it.get("detectable_change") is None or it.get("delta") is None:
                continue
            k = 0 if it["delta"] >= it["detectable_change"] else 2
            n[k] += 1
            n[k + 1] += bool(it.get("significant"))
        print(f"{d}: moved beyond its detectable change: flagged in {n[1]} of {n[0]}; "
              f"less: flagged in {n[3]} of {n[2]}", flush=True)
        total = [a + b for a, b in zip(total, n)]
    print(f"all: moved beyond its detectable change: flagged in {total[1]} of {total[0]}; "
          f"less: flagged in {total[3]} of {total[2]}")


if __name__ == "__main__":
    main()
