#!/usr/bin/env python3
"""A wide test suite's profiles, made up and seeded, so the truth is known and nothing is timed:
34 tests and 141 functions (besides the tests and the harness) in call trees 5 to 9 frames
deep (process, harness, test, then 1 to 4 levels of callees), shared helpers called from
several tests, a few leaves hot in nearly every test, two modules. It writes N base runs and one head run as pprof files (profile.proto,
the `test` sample label, samples/count; ciprof import --format pprof reads them), with
run-to-run noise as a real suite has it: a suite-wide level per run (1 %), per test (1 %),
per function (3 %, a few memory-bound ones 8 %), then Poisson sampling of every stack's count
(about 80,000 samples a run, every stack at least 20 on average, so every run has the same
frames). In the head, exactly one function's self time is planted 40 % slower: crc32_update,
a helper called from five tests through different callers, holding 4 % of the suite.

    wide_suite.py OUTDIR [--base-runs N] [--seed S] [--jumps P] [--slowdown F] [--head-runs K]

writes OUTDIR/base1.pb ... baseN.pb, OUTDIR/head.pb, OUTDIR/head-aa.pb (one more run with
nothing planted) and OUTDIR/truth.json: the planted
function, its module, every head frame of it (path and head samples), what each test holds of
it, the names, and figures for the browser test (tests/integration/html_browser.py --expect).

--jumps P makes every function's self time jump by a factor of 1.4 in a run with chance P (a
neighbour's burst on a shared runner: the history's tails get heavy); --slowdown F plants F
instead of 1.40; --head-runs K writes K - 1 more planted runs, head2.pb ... headK.pb, and
head-jump.pb, a run in which only the planted function jumped, threefold, nothing planted
(tests/integration/test_report_confirm.sh). Without them the files are as before.
"""
import json
import math
import os
import random
import sys

PLANTED = "crc32_update"
SLOWDOWN = 1.40
PROCESS = "wide_tests"
LIBC = "libc.so.6"
HARNESS = ["__libc_start_call_main", "main", "run_suite"]
PERIOD_NS = 1_000_000  # 1 kHz: a run of ~80,000 samples is 80 s of CPU

AREAS = ["json", "xml", "http", "sql", "png", "zip", "tls", "dns", "csv", "regex", "cache",
         "sched", "log", "cli", "yaml", "mime", "url", "ws", "smtp", "rpc", "kv", "fs", "ipc",
         "auth", "geo", "img", "font", "audio", "pdf", "ini", "tar", "b64", "uuid", "time"]
VERBS = ["parse", "encode", "decode", "validate", "render", "flush", "lookup", "insert",
         "scan", "compress", "expand", "resolve", "merge", "split"]
HELPERS = ["buf_append", "buf_reserve", "str_intern", "str_split", "vec_push", "vec_grow",
           "map_get", "map_put", "map_rehash", "list_sort", "heap_push", "heap_pop",
           "utf8_decode", "utf8_encode", "num_format", "num_parse", "path_join", "path_norm",
           "tok_next", "tok_peek", "node_new", "node_free", "tree_walk", "tree_insert",
           "ring_put", "ring_get", "bits_read", "bits_write", "hash_mix", "hash_final",
           "fmt_printf", "fmt_escape", "date_parse", "date_format", "lock_acquire",
           "lock_release", "io_read", "io_write", "deflate_block", "inflate_block"]
LEAVES = ["arena_alloc", "arena_reset", "mem_copy", "mem_compare", "mem_zero", "char_class",
          "fast_div", "popcount64", "bswap32", "clamp_index", "xorshift_next", "siphash_round",
          "min_max", "align_up", "table_index", "crc_table_get", "varint_len", "ascii_lower",
          "digit_value", "slot_probe", "bitmap_test", "cmp_keys", "swap_items", "hash_step",
          "ptr_check"]
LIBC_FNS = ["memcpy", "memmove", "memset", "malloc", "free", "strlen", "memcmp", "qsort"]
# leaves hot in nearly every test, and functions whose time swings more from run to run
HOT = ["arena_alloc", "mem_copy", "utf8_decode", "memcpy"]
NOISY = ["map_rehash", "tree_walk", "slot_probe", "qsort"]
# the planted function's callers: one domain function in each of five tests
PLANTED_CALLERS = ["png_compress", "zip_encode", "tls_flush", "tar_split", "ws_encode"]


def names(rng):
    """The domain functions: two per area (AREA_VERB), the planted function's callers among
    them."""
    l1 = []
    for area in AREAS:
        for v in rng.sample(VERBS, 2):
            l1.append(f"{area}_{v}")
    for c in PLANTED_CALLERS:
        if c not in l1:
            l1[l1.index(next(x for x in l1 if x.startswith(c.split("_")[0] + "_")))] = c
    return l1


def build(seed):
    """The suite's structure: per test, {stack: self weight}, each stack a tuple of names
    root-first below the process (harness, test, callees...); the module of each function;
    each function's run-to-run spread."""
    rng = random.Random(seed)
    l1 = names(rng)
    tests = [f"test_{a}_{rng.choice(['basic', 'roundtrip', 'large', 'errors', 'stress'])}"
             for a in AREAS]
    fn_module = {f: PROCESS for f in l1 + HELPERS + LEAVES + [PLANTED]}
    fn_module.update({f: LIBC for f in LIBC_FNS})
    stacks = {t: {} for t in tests}

    def leaf_pick():
        if rng.random() < 0.45:
            return rng.choice(HOT)
        return rng.choice(LEAVES + LIBC_FNS)

    def add(test, stack, w):
        key = tuple(stack)
        stacks[test][key] = stacks[test].get(key, 0) + w

    def grow(test, stack, depth, w):
        """Self time here, and callees below, down to depth frames under the test."""
        add(test, stack, w * rng.uniform(0.2, 0.6))
        if depth >= 4:
            return
        last = stack[-1]
        if last in l1:
            kids = rng.sample(HELPERS, rng.randint(1, 3))
        elif last in HELPERS:
            kids = [leaf_pick() for _ in range(rng.randint(0, 2))]
        elif last in LEAVES and rng.random() < 0.3:
            kids = [rng.choice(LIBC_FNS)]
        else:
            kids = []
        for k in dict.fromkeys(kids):
            grow(test, stack + [k], depth + 1, w * rng.uniform(0.3, 0.8))

    for i, t in enumerate(tests):
        area = AREAS[i]
        mine = [f for f in l1 if f.startswith(area + "_")]
        # a test calls its own area's functions and one or two of another area's
        callees = mine + rng.sample([f for f in l1 if f not in mine], rng.randint(1, 2))
        size = rng.uniform(0.6, 1.6)
        add(t, HARNESS + [t], 0.02 * size)
        for f in callees:
            grow(t, HARNESS + [t, f], 1, size * rng.uniform(0.3, 1.0))
    # The planted helper: called from one domain function in five tests; it calls a leaf.
    planted_tests = []
    for c in PLANTED_CALLERS:
        t = next(t for t in tests if c in {s[len(HARNESS) + 1] for s in stacks[t]
                                            if len(s) > len(HARNESS) + 1})
        planted_tests.append(t)
        add(t, HARNESS + [t, c, PLANTED], 0.0)
        add(t, HARNESS + [t, c, PLANTED, "crc_table_get"], 0.0)
    # weights to shares: the planted function holds ~4 % of the suite's self time, split
    # unevenly over its five call sites; its leaf a fifth of that
    total = sum(w for t in tests for w in stacks[t].values())
    split = [0.34, 0.24, 0.18, 0.14, 0.10]
    for t, c, s in zip(planted_tests, PLANTED_CALLERS, split):
        stacks[t][tuple(HARNESS + [t, c, PLANTED])] += 0.042 * total * s
        stacks[t][tuple(HARNESS + [t, c, PLANTED, "crc_table_get"])] += 0.008 * total * s
    fns = sorted(fn_module)
    noise = {f: (0.08 if f in NOISY else 0.03) for f in fns}
    return tests, stacks, fn_module, noise


def poisson(rng, lam):
    if lam <= 0:
        return 0
    if lam > 50:
        return max(0, round(rng.gauss(lam, math.sqrt(lam))))
    k, p, limit = 0, 1.0, math.exp(-lam)
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def sample_run(rng, tests, stacks, noise, samples, planted=1.0, jumps=0.0):
    """One run: {test: {stack: count}} with the noise described above."""
    total = sum(w for t in tests for w in stacks[t].values())
    level = math.exp(rng.gauss(0, 0.01))
    tf = {t: math.exp(rng.gauss(0, 0.01)) for t in tests}
    ff = {f: math.exp(rng.gauss(0, s)) for f, s in noise.items()}
    if jumps > 0:
        leaves = sorted({s[-1] for t in tests for s in stacks[t]})
        for f in leaves:
            if rng.random() < jumps:
                ff[f] = ff.get(f, 1.0) * 1.4
    run = {}
    for t in tests:
        run[t] = {}
        for stack, w in sorted(stacks[t].items()):
            leaf = stack[-1]
            lam = samples * w / total * level * tf[t] * ff.get(leaf, 1.0)
            if leaf == PLANTED:
                lam *= planted
            n = poisson(rng, lam)
            if n:
                run[t][stack] = n
    return run


# ---- a minimal protobuf writer for profile.proto ----

def varint(v):
    out = bytearray()
    v &= (1 << 64) - 1
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(num, v):
    return varint(num << 3) + varint(v)


def field_bytes(num, b):
    return varint(num << 3 | 2) + varint(len(b)) + b


def packed(num, values):
    return field_bytes(num, b"".join(varint(v) for v in values))


def encode(run, fn_module):
    """run as a profile.proto message: one location per function, the test as a label."""
    strings, index = [""], {"": 0}

    def s(x):
        if x not in index:
            index[x] = len(strings)
            strings.append(x)
        return index[x]

    out = bytearray()
    out += field_bytes(1, field_varint(1, s("samples")) + field_varint(2, s("count")))
    # mapping 1 is the main binary: its base name becomes the process (the root frame)
    maps = {PROCESS: 1, LIBC: 2}
    for name, mid in maps.items():
        path = "/usr/lib/x86_64-linux-gnu/" + name if name == LIBC else "/build/" + name
        out += field_bytes(3, field_varint(1, mid) + field_varint(2, 0x400000 * mid) +
                           field_varint(3, 0x400000 * mid + 0x100000) + field_varint(5, s(path)))
    fids = {}
    funcs, locs = bytearray(), bytearray()
    for name in sorted(set(f for t in run for st in run[t] for f in st)):
        fid = fids[name] = len(fids) + 1
        mod = fn_module.get(name, PROCESS)
        funcs += field_bytes(5, field_varint(1, fid) + field_varint(2, s(name)) +
                             field_varint(4, s(name.split("_")[0] + ".c")))
        line = field_varint(1, fid) + field_varint(2, 10 + fid)
        locs += field_bytes(4, field_varint(1, fid) + field_varint(2, maps[mod]) +
                            field_varint(3, 0x400000 * maps[mod] + 16 * fid) +
                            field_bytes(4, line))
    for t in sorted(run):
        label = field_varint(1, s("test")) + field_varint(2, s(t))
        for stack, n in sorted(run[t].items()):
            # locations leaf first
            out += field_bytes(2, packed(1, [fids[f] for f in reversed(stack)]) +
                               packed(2, [n]) + field_bytes(3, label))
    out += locs + funcs
    period_type = field_varint(1, s("cpu")) + field_varint(2, s("nanoseconds"))
    for x in strings:  # after the last s()
        out += field_bytes(6, x.encode())
    out += field_bytes(11, period_type) + field_varint(12, PERIOD_NS)
    return bytes(out)


def tree_counts(run):
    """Head samples under every path (root-first tuple, process first), merged over tests."""
    under = {}
    for t in run:
        for stack, n in run[t].items():
            full = (PROCESS,) + stack
            for k in range(1, len(full) + 1):
                under[full[:k]] = under.get(full[:k], 0) + n
    return under


def search_figures(paths, under, text, total):
    """What the HTML report's search shows for text: matching frames, and the share of
    samples under the outermost matches."""
    hits = [p for p in paths if text in p[-1].lower()]
    outer = [p for p in hits if not any(text in f.lower() for f in p[:-1])]
    return {"text": text, "frames": len(hits),
            "share": sum(under.get(p, 0) for p in outer) / total}


def main():
    args = sys.argv[1:]
    if not args or args[0].startswith("-"):
        sys.exit(__doc__)
    out = args[0]
    opts = dict(zip(args[1::2], args[2::2]))
    nbase = int(opts.get("--base-runs", 7))
    seed = int(opts.get("--seed", 13))
    jumps = float(opts.get("--jumps", 0))
    slowdown = float(opts.get("--slowdown", SLOWDOWN))
    head_runs = int(opts.get("--head-runs", 1))
    samples = 80000
    tests, stacks, fn_module, noise = build(seed)
    # every stack holds at least 20 samples per run: the tree's frames are the same in
    # every run (a zero count would drop a frame from one run and not another)
    total = sum(w for t in tests for w in stacks[t].values())
    for t in tests:
        for k in stacks[t]:
            stacks[t][k] = max(stacks[t][k], 20 * total / samples)
    os.makedirs(out, exist_ok=True)
    rng = random.Random(seed * 7919 + 1)
    for i in range(1, nbase + 1):
        run = sample_run(rng, tests, stacks, noise, samples, jumps=jumps)
        with open(os.path.join(out, f"base{i}.pb"), "wb") as f:
            f.write(encode(run, fn_module))
    head = sample_run(rng, tests, stacks, noise, samples, planted=slowdown)
    with open(os.path.join(out, "head.pb"), "wb") as f:
        f.write(encode(head, fn_module))
    # an A/A head: another run of main's code, nothing planted
    with open(os.path.join(out, "head-aa.pb"), "wb") as f:
        f.write(encode(sample_run(rng, tests, stacks, noise, samples), fn_module))
    for k in range(2, head_runs + 1):
        with open(os.path.join(out, f"head{k}.pb"), "wb") as f:
            f.write(encode(sample_run(rng, tests, stacks, noise, samples, planted=slowdown),
                           fn_module))
    if head_runs > 1:
        with open(os.path.join(out, "head-jump.pb"), "wb") as f:
            f.write(encode(sample_run(rng, tests, stacks, noise, samples, planted=3.0),
                           fn_module))

    total = sum(w for t in tests for w in stacks[t].values())
    test_total = {t: sum(stacks[t].values()) for t in tests}
    planted_self = {t: sum(w for s, w in stacks[t].items() if s[-1] == PLANTED) for t in tests}
    under = tree_counts(head)
    head_total = sum(n for t in head for n in head[t].values())
    paths = sorted(under)
    pframes = [{"path": list(p), "head": under[p]} for p in paths if p[-1] == PLANTED]
    pframes.sort(key=lambda f: -f["head"])
    # the functions the profiles hold, besides the tests and the harness
    functions = sorted({f for t in tests for s in stacks[t] for f in s} - set(tests) - set(HARNESS))
    truth = {
        "planted": PLANTED,
        "planted_module": fn_module[PLANTED],
        "slowdown": slowdown,
        "planted_share": sum(planted_self.values()) / total,
        "tests": tests,
        "functions": functions,
        "harness": [PROCESS] + HARNESS,
        # each test's expected change: what the planted function adds to it
        "test_change": {t: (slowdown - 1) * planted_self[t] / test_total[t] for t in tests},
        "head_samples": head_total,
        "planted_frames": pframes,
        "planted_callees": sorted({p[-1] for p in paths if PLANTED in p[:-1]}),
        "planted_callers": sorted({f for p in paths if p[-1] == PLANTED for f in p[:-1]}),
        "search": [search_figures(paths, under, PLANTED, head_total),
                   search_figures(paths, under, "arena_alloc", head_total)],
    }
    with open(os.path.join(out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)
    print(f"{len(tests)} tests, {len(functions)} functions, "
          f"{sum(len(stacks[t]) for t in tests)} stacks, {nbase} base runs of ~{samples} "
          f"samples; {PLANTED} holds {100 * truth['planted_share']:.1f} % and is "
          f"{100 * (slowdown - 1):.0f} % slower in the head")


if __name__ == "__main__":
    main()
