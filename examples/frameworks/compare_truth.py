#!/usr/bin/env python3
"""Compares ciprof's per-test attribution with what the tests measured themselves.

usage: compare_truth.py SHOW_JSON TRUTH [--tolerance POINTS] [--extra-max PERCENT]

SHOW_JSON is `ciprof show --by test --format json`; TRUTH holds "TESTNAME SECONDS" lines that
the example's tests appended (several lines of one name add up). Checks, for the tests named in
TRUTH: each appears under that exact name; its share of those tests' samples is within POINTS
(default 5) of its share of their measured CPU time; their CPU seconds in ciprof add up to
within 25 % of the measured total; and names that are neither expected nor "(outside tests)"
hold at most PERCENT (default 3) of the tests' samples. Prints a table; exits 1 on a mismatch.
"""
import argparse
import json
import sys

OUTSIDE = {"", "(outside tests)"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("show_json")
    ap.add_argument("truth")
    ap.add_argument("--tolerance", type=float, default=5.0)
    ap.add_argument("--extra-max", type=float, default=3.0)
    args = ap.parse_args()

    truth = {}
    with open(args.truth) as f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            if len(parts) != 2:
                sys.exit(f"{args.truth}:{n}: not 'TESTNAME SECONDS': {line!r}")
            truth[parts[0]] = truth.get(parts[0], 0.0) + float(parts[1])
    if not truth:
        sys.exit(f"{args.truth}: empty: the suite ran no test")
    with open(args.show_json) as f:
        try:
            shown = json.load(f)
        except ValueError as e:
            sys.exit(f"{args.show_json}: not JSON ({e})")
    rows = {}
    for t in shown.get("tests", []):
        rows[t["name"]] = rows.get(t["name"], {"samples": 0, "cpu_seconds": 0.0})
        rows[t["name"]]["samples"] += int(t["samples"])
        rows[t["name"]]["cpu_seconds"] += float(t["cpu_seconds"])

    errors = []
    truth_total = sum(truth.values())
    test_samples = sum(rows.get(name, {}).get("samples", 0) for name in truth)
    test_cpu = sum(rows.get(name, {}).get("cpu_seconds", 0.0) for name in truth)
    print(f"{'test':<32} {'truth s':>8} {'truth %':>8} {'samples':>8} {'ciprof %':>8} {'diff':>6}")
    for name in sorted(truth, key=lambda k: -truth[k]):
        ts = 100.0 * truth[name] / truth_total
        got = rows.get(name, {}).get("samples", 0)
        ps = 100.0 * got / test_samples if test_samples else 0.0
        print(f"{name:<32} {truth[name]:8.3f} {ts:8.2f} {got:8d} {ps:8.2f} {ps - ts:+6.2f}")
        if name not in rows:
            errors.append(f"test '{name}' is missing from ciprof's tests")
        elif abs(ps - ts) > args.tolerance:
            errors.append(f"test '{name}': {ps:.2f}% of the tests' samples, but "
                          f"{ts:.2f}% of their measured CPU time "
                          f"(more than {args.tolerance:g} points apart)")
    others = {k: v for k, v in rows.items() if k not in truth}
    for name, v in sorted(others.items(), key=lambda kv: -kv[1]["samples"]):
        label = "(outside tests)" if name in OUTSIDE else name
        print(f"{label:<32} {'-':>8} {'-':>8} {v['samples']:8d}")
        if name in OUTSIDE or not test_samples:
            continue
        share = 100.0 * v["samples"] / test_samples
        if share > args.extra_max:
            errors.append(f"unexpected test '{name}' holds {v['samples']} samples "
                          f"({share:.1f}% of the tests' samples; expected names: "
                          f"{', '.join(sorted(truth))})")
    print(f"tests' CPU: {test_cpu:.3f} s in ciprof, {truth_total:.3f} s measured")
    if test_samples and not 0.75 * truth_total <= test_cpu <= 1.25 * truth_total:
        errors.append(f"the tests hold {test_cpu:.3f} CPU-s in ciprof, not within 25% of "
                      f"the {truth_total:.3f} s they measured: samples are misattributed")
    for e in errors:
        print("  mismatch:", e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
