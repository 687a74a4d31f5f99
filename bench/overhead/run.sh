#!/bin/bash
# Overhead of `ciprof run` on a CPU-bound multi-process workload, next to `perf record`.
#
#   bench/overhead/run.sh [--quick] [--rounds N] [--base BUILD]
#
# Uses an existing build ($CIPROF_BUILD, else ./build): build/ciprof and the accuracy
# workload (build/examples/accuracy/accuracy_workload); builds nothing. The workload is a
# shell starting 20 short-lived processes, then the accuracy workload at --scale 2.5
# --fixed-work: a parent, a forked child, a thread and an exec'd program doing a fixed amount
# of work (5 CPU-seconds in all on an idle machine), so a profiler's cost inside the workload
# shows up as more CPU time.
# It runs five ways, alternating within each round (the order rotates every round):
# bare, `ciprof run --hz 99 --no-store`, the same at --hz 999 and at --hz 999 --unwind fp-only
# (without the default's leaf fix-up), `ciprof run --hz 99 --unwind
# dwarf --no-store` and `perf record -g -F 99 -e cpu-clock`. Each round gives ratios to the
# bare run of the same round; the table shows medians. Then the fixed cost per run: `ciprof run --no-store -- true`
# against `true`, medians of 20 runs; and how many samples per second the DWARF unwinder
# handles (examples/nofp at 999 Hz, from `ciprof run -v`); and a process-heavy workload (sh
# starting 300 processes of 3 ms of CPU, build/tests/burn_ms) bare and under ciprof at 99 and
# 999 Hz (and 999 Hz fp-only); and the leaf fix-up's time per sample (from `ciprof run -v`).
# --base BUILD adds BUILD/ciprof at 999 Hz to the process-heavy rows (a before/after check).
# On a noisy machine only the side-by-side ratios mean anything. Not part of ctest.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
build=${CIPROF_BUILD:-$src/build}
rounds=5
fixed_runs=20
scale=2.5
base=
while [ $# -gt 0 ]; do
	case $1 in
	--quick) rounds=3; fixed_runs=10; scale=1 ;;
	--rounds) rounds=$2; shift ;;
	--base) base=$2; shift ;;
	-h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "run.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done

ciprof=$build/ciprof
workload=$build/examples/accuracy/accuracy_workload
nofp=$build/examples/nofp/nofp_workload
for f in "$ciprof" "$workload"; do
	if [ ! -x "$f" ]; then
		echo "run.sh: $f not found: build first (cmake --build $build) or set CIPROF_BUILD" >&2
		exit 1
	fi
done
command -v python3 >/dev/null || { echo "run.sh: python3 is needed" >&2; exit 1; }

if [ -n "$base" ] && [ ! -x "$base/ciprof" ]; then
	echo "run.sh: --base $base: no $base/ciprof" >&2
	exit 1
fi

exec python3 - "$ciprof" "$workload" "$rounds" "$fixed_runs" "$scale" "$nofp" \
	"$build/tests/burn_ms" "${base:+$base/ciprof}" <<'PY'
import os, shutil, statistics, subprocess, sys, tempfile, time
sys.stdout.reconfigure(line_buffering=True)

ciprof, workload, rounds, fixed_runs, scale = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
nofp = sys.argv[6]
burn = sys.argv[7]
base_ciprof = sys.argv[8] if len(sys.argv) > 8 else ""
tmp = tempfile.mkdtemp(prefix="ciprof-bench-")
truth = os.path.join(tmp, "truth.txt")
perf_data = os.path.join(tmp, "perf.data")
script = ('i=0; while [ $i -lt 20 ]; do /bin/true; i=$((i+1)); done; '
          'exec "$0" --truth "$1" --scale "$2" --fixed-work')
work = ["sh", "-c", script, workload, truth, scale]

def measure(cmd):
    """Runs cmd, returns (wall seconds, user+sys CPU seconds of it and all it waited for)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        sys.exit(f"run.sh: {' '.join(cmd[:6])} ... failed with status {p.returncode}:\n"
                 + err.decode(errors="replace")[-2000:])
    return wall, ru.ru_utime + ru.ru_stime

modes = [("bare", work),
         ("ciprof run --hz 99", [ciprof, "run", "--hz", "99", "--no-store", "--"] + work),
         ("ciprof run --hz 999", [ciprof, "run", "--hz", "999", "--no-store", "--"] + work),
         # the kernel's frame-pointer walk alone: what the default's leaf fix-up (a 512-byte
         # stack copy per sample and the leaf's CFI, docs/unwinding.md) costs on top of it
         ("ciprof 999 fp-only", [ciprof, "run", "--hz", "999", "--unwind", "fp-only",
                                 "--no-store", "--"] + work)]
notes = []

# ---- --unwind dwarf: 8 KiB stack copies unwound with libdwfl, side by side with the others ----
modes.append(("ciprof --unwind dwarf",
              [ciprof, "run", "--hz", "99", "--unwind", "dwarf", "--no-store", "--"] + work))
# ---- end of the --unwind dwarf block ----

if shutil.which("perf") is None:
    notes.append("perf is not installed: its column is skipped")
else:
    probe = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-o", perf_data, "--", "true"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if probe.returncode != 0:
        why = (probe.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
        notes.append(f"perf record does not work here ({why}): its column is skipped")
    else:
        modes.append(("perf record -F 99 -g", ["perf", "record", "-q", "-g", "-F", "99", "-e",
                                               "cpu-clock", "-o", perf_data, "--"] + work))

# --- the LD_PRELOAD backend (docs/preload.md): one more mode, `ciprof run --backend preload
# --hz 99`, and its own fixed cost per run (median of fixed_runs, alternating with `true`),
# reported in a note at the end. Skipped with a note when libciprof-preload.so is not built.
probe = subprocess.run([ciprof, "run", "--backend", "preload", "--no-store", "--", "true"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
if probe.returncode != 0:
    why = (probe.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
    notes.append(f"the preload backend does not work here ({why}): its row is skipped")
else:
    modes.append(("ciprof preload --hz 99", [ciprof, "run", "--backend", "preload", "--hz", "99",
                                            "--no-store", "--"] + work))
    pb, pc = [], []
    for i in range(fixed_runs):
        pair = [("bare", ["true"]),
                ("preload", [ciprof, "run", "--backend", "preload", "--no-store", "--", "true"])]
        for name, cmd in (pair if i % 2 == 0 else pair[::-1]):
            (pb if name == "bare" else pc).append(measure(cmd))
    wb, wc = (statistics.median(w for w, _ in x) * 1e3 for x in (pb, pc))
    cb, cc = (statistics.median(c for _, c in x) * 1e3 for x in (pb, pc))
    notes.append(f"fixed cost per run, preload backend (median of {fixed_runs}): "
                 f"'ciprof run --backend preload --no-store -- true' {wc:.1f} ms wall "
                 f"({cc:.1f} ms CPU): +{wc - wb:.1f} ms wall, +{cc - cb:.1f} ms CPU over 'true'")
# --- end of the LD_PRELOAD backend block

probe = subprocess.run([ciprof, "run", "--no-store", "--", "true"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
if probe.returncode != 0:
    sys.exit("run.sh: 'ciprof run --no-store -- true' fails, nothing to measure:\n" +
             probe.stderr.decode(errors="replace"))

print(f"workload: sh starting 20 short-lived processes, then accuracy_workload --scale {scale} "
      f"--fixed-work (parent + forked child + thread + exec'd program)")
print(f"rounds: {rounds}, modes alternating, order rotated each round; {os.cpu_count()} CPUs")
res = {name: [] for name, _ in modes}
for r in range(rounds):
    order = modes[r % len(modes):] + modes[:r % len(modes)]
    for name, cmd in order:
        res[name].append(measure(cmd))
    print(f"  round {r + 1}: " + ", ".join(f"{n} {res[n][-1][0]:.2f}s" for n, _ in modes),
          file=sys.stderr)

print()
print(f"{'mode':<22} {'wall s':>8} {'CPU s':>8} {'wall/bare':>10} {'CPU/bare':>9}")
bare = res["bare"]
for name, _ in modes:
    runs = res[name]
    wall = statistics.median(w for w, _ in runs)
    cpu = statistics.median(c for _, c in runs)
    wr = statistics.median(runs[i][0] / bare[i][0] for i in range(rounds))
    cr = statistics.median(runs[i][1] / bare[i][1] for i in range(rounds))
    print(f"{name:<22} {wall:8.3f} {cpu:8.3f} {wr:10.3f} {cr:9.3f}")

# Fixed cost: start-up and tear-down of a profiled run around a command that does nothing.
tb, tc = [], []
for i in range(fixed_runs):
    pair = [("bare", ["true"]), ("ciprof", [ciprof, "run", "--no-store", "--", "true"])]
    for name, cmd in (pair if i % 2 == 0 else pair[::-1]):
        (tb if name == "bare" else tc).append(measure(cmd))
mb = statistics.median(w for w, _ in tb) * 1e3
mc = statistics.median(w for w, _ in tc) * 1e3
cb = statistics.median(c for _, c in tb) * 1e3
cc = statistics.median(c for _, c in tc) * 1e3
print()
print(f"fixed cost per run (median of {fixed_runs}): 'true' {mb:.1f} ms wall ({cb:.1f} ms CPU), "
      f"'ciprof run --no-store -- true' {mc:.1f} ms wall ({cc:.1f} ms CPU): "
      f"+{mc - mb:.1f} ms wall, +{cc - cb:.1f} ms CPU")

# ---- process-heavy: 300 processes of 3 ms of CPU each (tests/tools/burn_ms) ----
if os.access(burn, os.X_OK):
    heavy = ["sh", "-c", 'i=0; while [ $i -lt 300 ]; do "$0" 3 /dev/null; i=$((i+1)); done', burn]
    hmodes = [("bare", heavy)] + [(f"ciprof run --hz {hz}",
                                   [ciprof, "run", "--hz", hz, "--no-store", "--"] + heavy)
                                  for hz in ("99", "999")]
    hmodes.append(("ciprof 999 fp-only", [ciprof, "run", "--hz", "999", "--unwind", "fp-only",
                                          "--no-store", "--"] + heavy))
    if base_ciprof:  # --base BUILD: another build's ciprof side by side (before/after a change)
        hmodes.append(("base ciprof --hz 999", [base_ciprof, "run", "--hz", "999", "--no-store",
                                                "--"] + heavy))
    hres = {name: [] for name, _ in hmodes}
    for r in range(rounds):
        for name, cmd in hmodes[r % len(hmodes):] + hmodes[:r % len(hmodes)]:
            hres[name].append(measure(cmd))
    print()
    print("process-heavy workload: sh starting 300 processes of 3 ms of CPU each (burn_ms)")
    print(f"{'mode':<22} {'wall s':>8} {'CPU s':>8} {'wall/bare':>10} {'CPU/bare':>9}")
    for name, _ in hmodes:
        runs, hb = hres[name], hres["bare"]
        print(f"{name:<22} {statistics.median(w for w, _ in runs):8.3f} "
              f"{statistics.median(c for _, c in runs):8.3f} "
              f"{statistics.median(runs[i][0] / hb[i][0] for i in range(rounds)):10.3f} "
              f"{statistics.median(runs[i][1] / hb[i][1] for i in range(rounds)):9.3f}")
else:
    notes.append(f"{burn} not built: process-heavy rows not measured")

# ---- --unwind fp: the leaf fix-up's own time per sample, as `ciprof run -v` reports it ----
import re
p = subprocess.run([ciprof, "run", "-v", "--hz", "999", "--no-store", "--"] + work,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
m = re.search(r"unwind: (\d+) frame-pointer stacks checked against the leaf's CFI in ([\d.]+) s: "
              r"caller already there (\d+), inserted (\d+), rebuilt from the saved %rbp (\d+); "
              r"no CFI at the pc (\d+), return address beyond the \d+-byte copy (\d+)",
              p.stderr.decode(errors="replace"))
if p.returncode == 0 and m and int(m.group(1)):
    n = int(m.group(1))
    print(f"leaf fix-up (--unwind fp) on the workload at 999 Hz: {n} samples in {m.group(2)} s "
          f"({1e6 * float(m.group(2)) / n:.1f} us per sample); caller already there {m.group(3)}, "
          f"inserted {m.group(4)}, rebuilt {m.group(5)}, no CFI {m.group(6)}, beyond the copy "
          f"{m.group(7)}")
else:
    notes.append("leaf fix-up time: not measured (ciprof -v failed or printed no leaf line)")

# ---- --unwind dwarf: the unwinder's own throughput, as `ciprof run -v` reports it ----
if os.access(nofp, os.X_OK):
    for hz, extra in (("999", []), ("999", ["--recurse", "40", "--stack-size", "65528"])):
        p = subprocess.run([ciprof, "run", "-v", "--unwind", "dwarf", "--hz", hz, "--no-store"] +
                           extra[2:] + ["--", nofp, "--seconds", "1"] + extra[:2],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        m = re.search(r"unwind: (\d+) samples unwound with DWARF in ([\d.]+) s \((\d+) samples/s\), "
                      r"([\d.]+) frames each", p.stderr.decode(errors="replace"))
        what = "nofp_workload" + (" --recurse 40, --stack-size 65528" if extra else "")
        if p.returncode != 0 or not m:
            notes.append(f"unwinder throughput on {what}: not measured (ciprof failed)")
            continue
        rate = int(m.group(3))
        print(f"DWARF unwinder, {what} at {hz} Hz: {m.group(1)} samples, {m.group(4)} frames "
              f"each, {rate} samples/s ({1e6 / rate if rate else 0:.1f} us per sample)")
else:
    notes.append(f"{nofp} not built: unwinder throughput not measured")
# ---- end of the --unwind dwarf block ----
for n in notes:
    print("note:", n)
shutil.rmtree(tmp, ignore_errors=True)
PY
