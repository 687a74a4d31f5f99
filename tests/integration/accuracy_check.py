#!/usr/bin/env python3
"""Compares a folded profile of examples/accuracy/accuracy_workload with the truth file the
workload wrote: each burn_* function's inclusive share of samples within TOL points of its
true share, complete call chains (below burn_X only spin_X), the process name as root frame, and a
sample total matching the CPU time used. Used by test_accuracy.sh (perf backend),
test_preload_accuracy.sh and test_fallback.sh (the LD_PRELOAD backend).

    accuracy_check.py FOLDED TRUTH HZ EXE_NAME TOLERANCE_POINTS
"""
import sys

folded, truth_path, hz, exe, tol = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
names = {exe, exe[:15]}
ROLES = ["burn_parent", "burn_child", "burn_thread", "burn_exec"]
errors = []

truth = {}
for line in open(truth_path):
    name, secs = line.split()
    truth[name] = truth.get(name, 0.0) + float(secs)
missing = [r for r in ROLES if r not in truth]
if missing:
    sys.exit(f"the truth file lacks {missing}: the workload failed")
truth_total = sum(truth.values())

stacks = []
for line in open(folded):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    stacks.append((stack.split(";"), int(count)))
all_samples = sum(c for _, c in stacks)

incl = {r: 0 for r in ROLES}          # samples whose stack holds burn_X anywhere
wrong_below = {r: 0 for r in ROLES}   # ... and whose next frame down is not spin_X
own = {r: 0 for r in ROLES}           # ... and which end in burn_X: its own code
bad_root = {r: 0 for r in ROLES}      # ... and whose root frame is not the process name
orphan_spin = {r: 0 for r in ROLES}   # spin_X samples whose caller burn_X was lost
for frames, c in stacks:
    for r in ROLES:
        spin = "spin_" + r[len("burn_"):]
        if r in frames:
            incl[r] += c
            i = frames.index(r)
            if i + 1 == len(frames):
                own[r] += c
            elif frames[i + 1] != spin:
                wrong_below[r] += c
            if frames[0] not in names:
                bad_root[r] += c
        elif spin in frames:
            orphan_spin[r] += c

burn_total = sum(incl.values())
print(f"{'function':<12} {'truth s':>8} {'truth %':>8} {'samples':>8} {'profile %':>9} {'diff':>6} {'own':>5}")
for r in ROLES:
    ts = 100.0 * truth[r] / truth_total
    ps = 100.0 * incl[r] / burn_total if burn_total else 0.0
    print(f"{r:<12} {truth[r]:8.3f} {ts:8.2f} {incl[r]:8d} {ps:9.2f} {ps - ts:+6.2f} {own[r]:5d}")
    if incl[r] == 0:
        errors.append(f"{r} is missing from the profile")
        continue
    if abs(ps - ts) > tol:
        errors.append(f"{r}: profile share {ps:.2f}% vs true share {ts:.2f}% "
                      f"(more than {tol:g} points apart)")
    # A sample in burn_X's own code (its loop, the CPU-time check) is no broken chain: under
    # the LD_PRELOAD backend one timer 90 ms of CPU late once put 90 periods
    # there, a fifth of burn_exec, under twice CI's load.
    if wrong_below[r] > 0.02 * incl[r]:
        errors.append(f"{r}: {wrong_below[r]} of its {incl[r]} samples have a frame other than "
                      f"its spin_ helper right below it: call chains are broken")
    if orphan_spin[r] > 0.02 * incl[r]:
        errors.append(f"spin_{r[len('burn_'):]}: {orphan_spin[r]} samples without its caller "
                      f"{r}: call chains lose frames")
    if bad_root[r]:
        roots = sorted({f[0] for f, _ in stacks if r in f})
        errors.append(f"{r}: {bad_root[r]} samples do not start with the process name "
                      f"'{exe}' (roots seen: {roots})")

cpu_profile = all_samples / hz
print(f"all samples: {all_samples} = {cpu_profile:.3f} CPU-s at {hz} Hz; "
      f"truth: {truth_total:.3f} CPU-s in burn_*")
if abs(cpu_profile - truth_total) > 0.15 * truth_total + 0.05:
    errors.append(f"samples/hz = {cpu_profile:.3f} s is not within 15% of the "
                  f"{truth_total:.3f} CPU-s the workload used")
if burn_total < 0.9 * all_samples:
    errors.append(f"only {burn_total} of {all_samples} samples are in burn_* functions")
for e in errors:
    print("  mismatch:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
