#!/bin/bash
# The demo: build examples/calc (a standalone CMake project with a cmocka suite run by
# CTest) and profile its whole suite with `ciprof run -- ctest`. The status of ctest comes
# back, every test process shows up under its own name, and the costs of the library's hot
# functions come out in their known order: matmul (~1 s) > sieve (~0.6 s) > factorial (~0.35 s).
. "$(dirname "$0")/lib.sh"

CALC_BUILD=$CIPROF_BUILD/examples/calc-test
HZ=499

if ! cmake -S "$CIPROF_SRC/examples/calc" -B "$CALC_BUILD" >"$TMP/configure.log" 2>&1; then
	cat "$TMP/configure.log" >&2
	fail "cannot configure examples/calc"
fi
if ! cmake --build "$CALC_BUILD" -j2 >"$TMP/build.log" 2>&1; then
	cat "$TMP/build.log" >&2
	fail "cannot build examples/calc"
fi
ok "examples/calc built in $CALC_BUILD"

run_capture demo "$CIPROF" run --hz $HZ --no-store -o "$TMP/c.folded" -- \
	ctest --test-dir "$CALC_BUILD"
expect_rc "ciprof run -- ctest (all calc tests pass)" 0 demo
expect_grep "ctest's own output passes through" "$TMP/demo.out" "100% tests passed"
total=$(check_folded "$TMP/c.folded") || fail "bad folded profile: $total"
ok "folded profile is well-formed, $total samples"

python3 - "$TMP/c.folded" "$HZ" <<'PY' || check_failed "the calc profile is wrong (see above)"
import sys
folded, hz = sys.argv[1], int(sys.argv[2])
stacks = []
for line in open(folded):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    stacks.append((stack.split(";"), int(count)))
errors = []

def samples(pred):
    return sum(c for f, c in stacks if pred(f))

def below(frames, outer, inner):
    """inner is called (directly or not) by outer in this stack"""
    return outer in frames and inner in frames and frames.index(outer) < frames.index(inner)

# Each test binary is its own process, named after its executable.
roots = {}
for f, c in stacks:
    roots[f[0]] = roots.get(f[0], 0) + c
print("samples by process:", ", ".join(f"{k} {v}" for k, v in sorted(roots.items(), key=lambda kv: -kv[1])))
for p in ("test_parse", "test_factorial", "test_sieve", "test_matmul"):
    if p not in roots:
        errors.append(f"no stack rooted at process '{p}'")

# The hot functions, inclusive, each under the test that calls it and in its own process.
hot = {
    "matmul": ("test_matmul", "test_large_product", ["calc_matmul"]),
    "sieve": ("test_sieve", "test_large_counts", ["calc_prime_count", "calc_sieve",
                                                  "calc_sieve_segment"]),
    "factorial": ("test_factorial", "check_factorial", ["calc_factorial", "calc_big_mul_small"]),
}
cost = {}
for key, (proc, caller, funcs) in hot.items():
    cost[key] = samples(lambda f, fs=funcs: any(x in f for x in fs))
    chain = samples(lambda f, p=proc, c=caller, fn=funcs[0]: f[0] == p and below(f, c, fn))
    print(f"{funcs[0]:<18} {cost[key]:6d} samples ({cost[key] / hz:.2f} s)"
          f", {chain} under {proc};...;{caller}")
    if cost[key] == 0:
        errors.append(f"{funcs[0]} is missing from the profile")
    elif chain == 0:
        errors.append(f"{funcs[0]} never appears below {caller} in process {proc}")
# The inner frames of the sieve and factorial are their own functions too.
for inner, outer in (("calc_sieve_segment", "calc_prime_count"),
                     ("calc_big_mul_small", "calc_factorial")):
    if not samples(lambda f, o=outer, i=inner: below(f, o, i)):
        errors.append(f"{inner} never appears below {outer}")

MARGIN = 1.3
for hi, lo in (("matmul", "sieve"), ("sieve", "factorial")):
    if cost[hi] < MARGIN * cost[lo]:
        errors.append(f"{hi} ({cost[hi]} samples) should cost at least {MARGIN}x {lo} "
                      f"({cost[lo]} samples)")
for hi, lo in (("test_matmul", "test_sieve"), ("test_sieve", "test_factorial"),
               ("test_factorial", "test_parse")):
    if roots.get(hi, 0) < MARGIN * roots.get(lo, 0):
        errors.append(f"process {hi} ({roots.get(hi, 0)} samples) should cost at least "
                      f"{MARGIN}x {lo} ({roots.get(lo, 0)} samples)")
for e in errors:
    print("  mismatch:", e, file=sys.stderr)
sys.exit(1 if errors else 0)
PY
[ "$FAILURES" -eq 0 ] && ok "hot functions found in the known order of cost"
finish
