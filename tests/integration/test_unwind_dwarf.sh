#!/bin/bash
# --unwind dwarf against frame pointers on examples/nofp (main -> nofp_a -> nofp_b -> nofp_c ->
# nofp_leaf, built with -O2 -fomit-frame-pointer):
# - dwarf: at least 90 % of nofp_leaf's samples carry the whole chain up to main, and nofp_a's
#   total share agrees with the CPU time the workload measured for it and its callees;
# - fp: the same program's chains are broken (proving the check above means something), and
#   ciprof warns that stacks look truncated, suggesting --unwind dwarf; a frame-pointer-built
#   program (the accuracy workload) gets no such warning;
# - a stack deeper than the 8 KiB copy: a warning to raise --stack-size, and --stack-size 65528
#   recovers the chain;
# - processes, forks, threads and exec under dwarf (the accuracy workload): complete stacks;
# - --stack-size validation.
. "$(dirname "$0")/lib.sh"

NOFP=$CIPROF_BUILD/examples/nofp/nofp_workload
ACC=$CIPROF_BUILD/examples/accuracy/accuracy_workload
[ -x "$NOFP" ] || fail "$NOFP not built"
[ -x "$ACC" ] || fail "$ACC not built"
cd "$TMP" || fail "cannot enter $TMP"

# chain_share FILE LEAF CHAIN: "FULL TOTAL PERCENT" for the samples whose leaf frame is LEAF:
# how many end with the frames CHAIN (';'-separated, LEAF last).
chain_share() {
	python3 - "$@" <<'PY'
import sys
path, leaf, chain = sys.argv[1:4]
total = full = 0
for line in open(path, encoding="utf-8", errors="replace"):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    if frames[-1] != leaf:
        continue
    total += int(count)
    if (";" + stack).endswith(";" + chain):
        full += int(count)
print(full, total, f"{100.0 * full / total:.1f}" if total else "0.0")
PY
}

# total_share FILE FUNCTION: percent of the samples with a stack that have FUNCTION on it.
# "[unsampled]" (a process's CPU time no sample caught, docs/run.md) has no stack to unwind:
# it is left out (under load it grew to several percent of a run and diluted the share).
total_share() {
	python3 - "$@" <<'PY'
import sys
path, fn = sys.argv[1:3]
total = hit = 0
for line in open(path, encoding="utf-8", errors="replace"):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    if frames[-1] == "[unsampled]":
        continue
    total += int(count)
    if fn in frames[1:]:
        hit += int(count)
print(f"{100.0 * hit / total:.1f}" if total else "0.0")
PY
}

# ge A B: A >= B for decimals.
ge() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)' "$1" "$2"; }

CHAIN="main;nofp_a;nofp_b;nofp_c;nofp_leaf"

# 1. --unwind dwarf recovers the callers.
run_capture dwarf "$CIPROF" run --unwind dwarf --hz 999 --no-store -o dwarf.folded -- \
	"$NOFP" --seconds 2 --truth truth.txt
expect_rc "run --unwind dwarf" 0 dwarf
check_folded dwarf.folded >/dev/null || check_failed "dwarf.folded is not folded output"
read -r full total pct < <(chain_share dwarf.folded nofp_leaf "$CHAIN")
if [ "$total" -ge 200 ] && ge "$pct" 90; then
	ok "dwarf: $full of $total nofp_leaf samples ($pct %) carry $CHAIN"
else
	check_failed "dwarf: only $full of $total nofp_leaf samples ($pct %) carry $CHAIN; stacks:"
	sort -t' ' -k2 -nr dwarf.folded | head -5 | sed 's/^/    /' >&2
fi
read -r full_start _ pct_start < <(chain_share dwarf.folded nofp_leaf "_start;__libc_start_main@@GLIBC_2.34;__libc_start_call_main;$CHAIN")
echo "note [$TEST_NAME]: $pct_start % of nofp_leaf samples reach _start ($full_start)"
# nofp_a's total share is the CPU time of nofp_a and everything it calls.
want=$(python3 -c '
t = dict((l.split()[0], float(l.split()[1])) for l in open("truth.txt"))
callees = t["nofp_a"] + t["nofp_b"] + t["nofp_c"] + t["nofp_leaf"]
print("%.1f" % (100 * callees / sum(t.values())))')
got=$(total_share dwarf.folded nofp_a)
if python3 -c 'import sys; sys.exit(0 if abs(float(sys.argv[1]) - float(sys.argv[2])) <= 5 else 1)' "$got" "$want"; then
	ok "dwarf: nofp_a total share $got %, measured $want %"
else
	check_failed "dwarf: nofp_a total share $got %, but the workload measured $want %"
	awk '{print $NF " " $0}' dwarf.folded | sort -rn | head -n 12 | cut -d' ' -f2- |
		sed 's/^/    /' >&2
fi
if grep -q 'try --unwind dwarf' "$TMP/dwarf.err"; then
	check_failed "dwarf: the truncated-stack warning appeared under --unwind dwarf"
fi

# 2. Frame pointers cannot: the chain is broken, and ciprof says so.
run_capture fp "$CIPROF" run --unwind fp --hz 999 --no-store -o fp.folded -- "$NOFP" --seconds 2
expect_rc "run --unwind fp" 0 fp
read -r full total pct < <(chain_share fp.folded nofp_leaf "$CHAIN")
if [ "$total" -ge 200 ] && ! ge "$pct" 10; then
	ok "fp: $full of $total nofp_leaf samples ($pct %) carry the chain: frame pointers lose it"
else
	check_failed "fp: $full of $total nofp_leaf samples ($pct %) carry the chain; the dwarf check proves nothing"
fi
expect_grep "fp: truncation warning" "$TMP/fp.err" "try --unwind dwarf"
grep 'try --unwind dwarf' "$TMP/fp.err" >warning.txt
expect_grep "fp: the warning names where stacks end" warning.txt "nofp_workload"
sed "s/^/note [$TEST_NAME]: /" warning.txt

# A program built with frame pointers (forks, a thread, an exec) draws no such warning, and
# under dwarf its stacks are complete in every process.
run_capture accfp "$CIPROF" run --hz 499 --no-store -o accfp.folded -- "$ACC" --truth acc1.txt \
	--scale 0.5
expect_rc "accuracy workload, fp" 0 accfp
if grep -q 'try --unwind dwarf' "$TMP/accfp.err"; then
	check_failed "fp: a frame-pointer-built program drew the truncation warning:"
	sed 's/^/    /' "$TMP/accfp.err" >&2
else
	ok "fp: no truncation warning for a frame-pointer-built program"
fi
run_capture accdw "$CIPROF" run --unwind dwarf --hz 499 --no-store -o accdw.folded -- "$ACC" \
	--truth acc2.txt --scale 0.5
expect_rc "accuracy workload, dwarf" 0 accdw
for role in parent child thread exec; do
	read -r full total pct < <(python3 - accdw.folded "spin_$role" <<'PY'
import sys
path, leaf = sys.argv[1:3]
total = full = 0
for line in open(path, encoding="utf-8", errors="replace"):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    frames = stack.split(";")
    if frames[-1] != leaf:
        continue
    total += int(count)
    if frames[1] in ("_start", "__clone3", "clone3", "clone") and "burn_" + leaf[5:] in frames:
        full += int(count)
print(full, total, f"{100.0 * full / total:.1f}" if total else "0.0")
PY
)
	if [ "$total" -ge 20 ] && ge "$pct" 90; then
		ok "dwarf, accuracy workload: $pct % of spin_$role samples run from the entry point through burn_$role"
	else
		check_failed "dwarf, accuracy workload: $full of $total spin_$role samples ($pct %) complete"
	fi
done

# 3. A stack deeper than the copy: warned about, and a bigger copy recovers it.
DEEP="main;nofp_a;nofp_b$(printf ';nofp_c%.0s' $(seq 0 40));nofp_leaf"
run_capture deep "$CIPROF" run --unwind dwarf --hz 999 --no-store -o deep.folded -- \
	"$NOFP" --seconds 1 --recurse 40
expect_rc "run --unwind dwarf, 41 levels of nofp_c" 0 deep
expect_grep "deep: stack-size warning" "$TMP/deep.err" "raise --stack-size"
read -r full total pct < <(chain_share deep.folded nofp_leaf "$DEEP")
echo "note [$TEST_NAME]: with an 8 KiB copy $pct % of deep nofp_leaf samples are complete"
run_capture deep64 "$CIPROF" run --unwind dwarf --stack-size 65528 --hz 999 --no-store \
	-o deep64.folded -- "$NOFP" --seconds 1 --recurse 40
expect_rc "run --unwind dwarf --stack-size 65528" 0 deep64
read -r full total pct < <(chain_share deep64.folded nofp_leaf "$DEEP")
if [ "$total" -ge 100 ] && ge "$pct" 90; then
	ok "--stack-size 65528: $pct % of deep nofp_leaf samples carry all 45 frames to main"
else
	check_failed "--stack-size 65528: $full of $total deep nofp_leaf samples ($pct %) complete"
fi
if grep -q 'raise --stack-size' "$TMP/deep64.err"; then
	check_failed "--stack-size 65528 still warned about the stack size"
fi

# 4. Option checks.
for bad in 12 0 65536 abc; do
	run_capture bad "$CIPROF" run --unwind dwarf --stack-size "$bad" --no-store -- true
	expect_rc "--stack-size $bad refused" 2 bad
done
run_capture nodwarf "$CIPROF" run --stack-size 4096 --no-store -- true
expect_rc "--stack-size without --unwind dwarf refused" 2 nodwarf
expect_grep "--stack-size needs dwarf" "$TMP/nodwarf.err" "--stack-size needs --unwind dwarf"
run_capture small "$CIPROF" run --unwind dwarf --stack-size 8 --no-store -- true
expect_rc "--stack-size 8 accepted" 0 small

finish
