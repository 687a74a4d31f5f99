#!/usr/bin/env python3
"""bench/verdicts/rejudge.py: judge the heads of a kept bench/verdicts run again, with one or
more ciprof binaries, side by side on identical data.

    bench/verdicts/rejudge.py DIR CIPROF [CIPROF...] [--alpha A] [--head-runs N]
    bench/verdicts/rejudge.py DIR CIPROF [CIPROF...] --adaptive K

With --adaptive K (a DIR kept with `run.py --head-runs K`), each head is judged as a CI job
whose suite runs again while `ciprof report --need-run --head-runs K` says another run could
decide something: its first run alone, then with its second if asked, and so on; the last
run judged is the verdict, and the runs it took are counted (the CI time).

DIR is what `run.py --keep DIR` left: DIR/repo (the workload's repository with its
.ciprof/ciprof.db: the base branch's history and every head run) and DIR/heads.json (each
head's run id and scenario). Each head is judged as run.py judged it, `ciprof report --head ID
--base main --format json --fail-on-regression`, by every binary given; printed: per scenario
and binary, comparisons, build failures, flagged anything, found (the planted item flagged as a
regression), other functions flagged (not counting those a planted test holds: run.py); then per binary the A/A build failures, and the A/A
regressions that were advisory because the head shared its machine (-v marks those heads), and
the items the A/A heads flagged (tests and functions; advisory or not) and in how many heads. The
runs are the same for every binary, so the
difference between two columns is the statistics' alone, not the machine's mood.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run as bench  # noqa: E402
from run import clean_env  # noqa: E402


def commit_runs(ciprof, repo):
    """Run id -> commit, of every run in the kept repository's database."""
    r = subprocess.run([ciprof, "-q", "runs", "--limit", "100000", "--format", "json"],
                       cwd=repo, env=clean_env(), text=True, stdout=subprocess.PIPE, check=True)
    return {x["id"]: x["commit"] for x in json.loads(r.stdout)["runs"]}


def options(head, alpha, head_runs=None):
    """report options naming the head, and --alpha / --head-runs when given."""
    args = ["--head", str(head)]
    if alpha:
        args += ["--alpha", str(alpha)]
    if head_runs:
        args += ["--head-runs", str(head_runs)]
    return args


def adaptive(ciprof, repo, head, alpha, k, commits):
    """Judges head's commit as a CI loop asking --need-run would: (rc, report, runs used)."""
    ids = [head - j for j in range(k - 1, -1, -1)]
    if any(commits.get(i) != commits.get(head) for i in ids):
        sys.exit(f"rejudge.py: runs {ids} are not one commit's: was DIR kept with "
                 f"--head-runs {k}?")
    for used, run in enumerate(ids, 1):
        if used == k or not bench.need_run(ciprof, repo, *options(run, alpha, k)):
            rc, r = judge(ciprof, repo, run, alpha, k)
            return rc, r, used


def judge(ciprof, repo, head, alpha, head_runs=None):
    return bench.judge(ciprof, repo, *options(head, alpha, head_runs))


def planted_held(ciprof, repo, heads):
    """held_by (run.py) of every planted test, in main's newest run."""
    r = subprocess.run([ciprof, "-q", "runs", "--limit", "100000", "--format", "json"],
                       cwd=repo, env=clean_env(), text=True, stdout=subprocess.PIPE, check=True)
    main = next(x["id"] for x in json.loads(r.stdout)["runs"] if x["branch"] == "main")
    tests = {h["planted"][1] for h in heads if h.get("planted") and h["planted"][0] == "test"}
    return {t: bench.held_by(ciprof, repo, t, main) for t in tests}


def score(head, rc, r, held):
    planted = head.get("planted")
    funcs = [x for x in r["functions"] if x.get("significant")]
    tests = [x for x in r["tests"] if x.get("significant")]
    if planted and planted[0] == "self":
        hit = any(x["name"] == planted[1] and x.get("measure") == "self" and
                  x["kind"] == "regression" for x in funcs)
    elif planted:
        hit = any(x["name"] == planted[1] and x["kind"] == "regression" for x in tests)
    else:
        hit = False
    others = bench.other_functions(funcs, planted, held)
    shift = r.get("scale", {}).get("shift") == "slower" and not funcs and not tests
    # a regression that did not fail the build because the head shared its machine
    busy = r.get("verdict") == "regression" and "other processes kept" in (
        r.get("advisory_reason") or "")
    return {"fail": rc == 1, "flagged": bool(funcs or tests), "items": len(funcs) + len(tests),
            "found": hit,
            "others": bool(others), "shift": shift, "busy": busy,
            "flags": [f"{x['name']} {x.get('measure', 'test')} "
                      + (f"{x['delta']:+.1%}" if x.get("delta") is not None else "new")
                      for x in funcs + tests]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("ciprof", nargs="+")
    ap.add_argument("--alpha", type=float)
    ap.add_argument("--head-runs", type=int,
                    help="pass --head-runs N to ciprof report (1 for a DIR kept before heads "
                         "had commits of their own, where runs of one commit are several heads')")
    ap.add_argument("--adaptive", type=int, metavar="K",
                    help="judge each head as a CI job that runs its suite again (up to K runs) "
                         "while ciprof report --need-run says so; prints the runs used")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="print every head's flags, its history runs and whether it failed the "
                         "build")
    a = ap.parse_args()
    repo = os.path.join(a.dir, "repo")
    heads = json.load(open(os.path.join(a.dir, "heads.json")))
    bins = [os.path.abspath(c) for c in a.ciprof]
    commits = commit_runs(bins[0], repo) if a.adaptive else None
    held = planted_held(bins[0], repo, heads)
    table = {}  # scenario -> [per binary: counters]
    order = []
    for h in heads:
        if h["scenario"] not in table:
            table[h["scenario"]] = [dict(n=0, fail=0, flagged=0, found=0, others=0, shift=0,
                                         busy=0, runs=0, items=0) for _ in bins]
            order.append(h["scenario"])
        for k, c in enumerate(bins):
            if a.adaptive:
                rc, r, used = adaptive(c, repo, h["id"], a.alpha, a.adaptive, commits)
            else:
                rc, r, used = *judge(c, repo, h["id"], a.alpha, a.head_runs), 1
            s = score(h, rc, r, held)
            st = table[h["scenario"]][k]
            st["n"] += 1
            st["runs"] += used
            for key in ("fail", "flagged", "items", "found", "others", "shift", "busy"):
                st[key] += s[key]
            if a.verbose and s["flags"]:
                hist = r.get("summary", {}).get("history_runs")
                # the runs the report judged together (a runs: auto session's head may
                # have two or three of its commit even without --adaptive)
                judged = 1 + len(r.get("summary", {}).get("confirming_runs") or [])
                print(f"  [{k}] head {h['id']} {h['scenario']} ({hist} history runs, "
                      f"{judged} run{'s' if judged > 1 else ''}"
                      f"{', build failed' if s['fail'] else ''}"
                      f"{', advisory: a busy head' if s['busy'] else ''}): "
                      f"{', '.join(s['flags'])}", flush=True)
    what = "fail / found / others" + (" / runs" if a.adaptive else "")
    names = " | ".join(f"[{k}] {what}" for k in range(len(bins)))
    for k, c in enumerate(bins):
        print(f"[{k}] {c}")
    print(f"| scenario | n | {names} |")
    print("|---|---:|" + "---:|" * len(bins))
    for sc in order:
        row = table[sc]
        cells = []
        for st in row:
            kind = next(h["kind"] for h in heads if h["scenario"] == sc)
            found = (f"{st['found']}" if kind in ("func", "test")
                     else f"shift {st['shift']}" if kind == "shift" else "–")
            runs = f" / {st['runs'] / st['n']:.2f}" if a.adaptive else ""
            cells.append(f"{st['fail']} / {found} / {st['others']}{runs}")
        print(f"| {sc} | {row[0]['n']} | {' | '.join(cells)} |")
    for k in range(len(bins)):
        aa = [table[sc][k] for sc in order
              if next(h["kind"] for h in heads if h["scenario"] == sc) == "aa"]
        print(f"[{k}] A/A: {sum(s['fail'] for s in aa)} build failures in "
              f"{sum(s['n'] for s in aa)} ({sum(s['busy'] for s in aa)} more regressions "
              f"advisory on a busy head); {sum(s['items'] for s in aa)} items flagged in "
              f"{sum(s['flagged'] for s in aa)} heads")
        if a.adaptive:
            allr = [table[sc][k] for sc in order]
            print(f"[{k}] runs a head: {sum(s['runs'] for s in allr) / sum(s['n'] for s in allr):.2f}"
                  f" on average, {sum(s['runs'] for s in aa) / max(1, sum(s['n'] for s in aa)):.2f}"
                  f" on A/A heads (at most {a.adaptive})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
