#!/usr/bin/env python3
"""bench/verdicts: how often `ciprof report` cries wolf, and how often it finds what is there.

    bench/verdicts/run.py [--quick] [--ciprof PATH] [--history N] [--history-hog K] [--interleave K]
                          [--trials-scale F] [--scale F] [--hz N] [--backend perf|preload]
                          [--keep DIR] [--json FILE]
                          [--workload workload|workload2|workload3|workload4|workload5]
                          [--head-runs N|auto]

(bench/verdicts/rejudge.py judges a --keep DIR's heads again with other binaries.)

Builds the workload (bench/verdicts/workload: 20 functions, 8 CTest tests, threads, a forked
child, an exec'd helper) in a fresh git repository, then does what CI accumulates: N commits
on main, each profiled once with `ciprof run -- ctest -j2` (the base branch's history; a CPU hog
runs on the other core during every 4th, as CI's shared runners have noisy neighbours). On a
PR branch it profiles heads: identical code (A/A), identical code with a CPU hog on the other
core during the head run (a noisy neighbour), one function made X % slower (a steady 5 %
function, crc32_loop, and a steady 20 % one, horner_poly), one test made 10 % slower (a test of
steady loops, test_checksums, and one of swinging parsing code, test_parse), and everything
15 % slower (the names are the workload's; --workload workload2, workload3 and workload4 run
a second, a third and a fourth suite of other shapes, each with its own planted.json, that the
statistics were never tuned on; workload5 is one cmocka program whose tests run serially in
one process, profiled as its planted.json's "command" says, so no tests share the cores).
Each head is judged with
`ciprof report --base main --format json --fail-on-regression` at ciprof's shipped defaults.

Each head is a commit of its own on the PR branch. --head-runs N profiles each head N times,
back to back (as a CI job that runs `ciprof run` N times would), and judges the last: the report
then requires a finding in each of the N runs (ciprof report --head-runs, default 3).
--head-runs auto (the default, as the CI templates' `runs: auto`) profiles each head once, then
again while `ciprof report --base main --need-run` says another run could decide a finding, at
most 3 times; the runs a head took are printed per scenario.

Printed per scenario: comparisons, build failures (exit 1), regressions made advisory because
other processes kept the machine busier during the head than during its history (ciprof
report's busy-head rule: not build failures, counted apart), comparisons flagging anything,
power (the planted item flagged as a regression), comparisons that flagged an unplanted
function's self time (where a test is planted, the functions it holds a quarter or more of,
as ciprof report's "within a flagged test" counts them, slow with it and are not counted), and
wall time. Then how often the memory-bound pointer_chase was
flagged over all comparisons. --quick is small enough for CI (the integration test
test_verdicts_bench runs it) and exits 1 when its checks fail: at most one of its three A/A
comparisons fails the build (QUICK_AA_FAILS), and a 20 % function made twice as slow is seen: flagged, or at least the most slowed
function at p < 0.01 when a noisy history's tails keep the gate from calling it (a check of the
whole pipeline on a loaded CI machine, not of power: the full run measures that).

The environment of CI providers (GITHUB_*, GITLAB_*, CI_*) is removed so that the base branch
is the repository's own main. The rates depend on the machine: the numbers quoted in
docs/benchmarks.md say on which.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))

# The planted items, named by each workload folder's planted.json (bench/verdicts/workload's:
# below). FUNC5: a steady loop holding about 5 % of the suite; FUNC20: a steady loop holding
# about 20 %; TEST10: a test of steady loops holding about 10 %; TEST10S: a test of swinging
# code holding about 10 %; MEMBOUND: a memory-bound walk, whose time swings between identical
# runs.
FUNC5 = "crc32_loop"
FUNC20 = "horner_poly"
TEST10 = "test_checksums"  # crc32, adler32, fnv1a: about 12 %
TEST10S = "test_parse"    # parsing, tokenizing
MEMBOUND = "pointer_chase"
# What `ciprof run --` runs in the workload's repository: planted.json's "command", else this.
COMMAND = ["ctest", "--test-dir", "build", "-j2"]


def use_workload(folder):
    """Names the planted items, and the command, after folder/planted.json."""
    global FUNC5, FUNC20, TEST10, TEST10S, MEMBOUND, COMMAND
    with open(os.path.join(folder, "planted.json")) as f:
        p = json.load(f)
    FUNC5, FUNC20, TEST10, TEST10S, MEMBOUND = (
        p["FUNC5"], p["FUNC20"], p["TEST10"], p["TEST10S"], p["MEMBOUND"])
    COMMAND = p.get("command", COMMAND)


# --quick judges this many A/A heads and fails when more than QUICK_AA_FAILS of them fail the
# build. A single false alarm under load is the rate the full bench measures (2 % of A/A heads
# with 30-run histories, about 8 % with the quick run's 10, more with a CPU hog): with two heads
# that had to pass both, one quick run in six failed with a hog on the other core. A model that
# cries wolf on most identical heads still fails it.
QUICK_AA = 3
QUICK_AA_FAILS = 1


def scenarios(quick, k):
    """(name, env knobs, planted (measure, name) or None, kind, hog, trials)."""
    def n(t):
        return max(1, int(round(t * k)))
    if quick:
        return [
            ("A/A", {}, None, "aa", False, QUICK_AA),
            ("+100 % on a 20 % function", {"VB_SLOW_FUNC": FUNC20, "VB_SLOW_PCT": "100"},
             ("self", FUNC20), "func", False, 1),
        ]
    s = [("A/A", {}, None, "aa", False, n(20)),
         ("A/A, CPU hog during the head", {}, None, "aa", True, n(20))]
    for pct in (10, 20, 30, 50):
        s.append((f"+{pct} % on a 5 % function", {"VB_SLOW_FUNC": FUNC5, "VB_SLOW_PCT": str(pct)},
                  ("self", FUNC5), "func", False, n(5)))
    for pct in (10, 20, 30, 50):
        s.append((f"+{pct} % on a 20 % function",
                  {"VB_SLOW_FUNC": FUNC20, "VB_SLOW_PCT": str(pct)},
                  ("self", FUNC20), "func", False, n(3)))
    s.append(("+10 % on a steady 10 % test",
              {"VB_SLOW_TEST": TEST10, "VB_SLOW_TEST_PCT": "10"},
              ("test", TEST10), "test", False, n(8)))
    # Its functions swing 10-15 % from run to run on a loaded machine: +10 % is within the
    # test's own noise, reported for what it is, not a target.
    s.append(("+10 % on a swinging 10 % test",
              {"VB_SLOW_TEST": TEST10S, "VB_SLOW_TEST_PCT": "10"},
              ("test", TEST10S), "test", False, n(8)))
    s.append(("everything +15 %", {"VB_SLOW_ALL": "15"}, None, "shift", False, n(5)))
    return s


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GITHUB_", "GITLAB_", "CI_", "CIPROF_", "VB_"))
           and k not in ("CI",)}
    env["GIT_AUTHOR_NAME"] = env["GIT_COMMITTER_NAME"] = "bench"
    env["GIT_AUTHOR_EMAIL"] = env["GIT_COMMITTER_EMAIL"] = "bench@example.com"
    if extra:
        env.update(extra)
    return env


def sh(args, cwd, env=None, check=True, capture=True):
    r = subprocess.run(args, cwd=cwd, env=env or clean_env(), text=True,
                       stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                       stderr=subprocess.PIPE if capture else subprocess.DEVNULL)
    if check and r.returncode != 0:
        sys.exit(f"run.py: {' '.join(args)} failed ({r.returncode}):\n{r.stderr if capture else ''}")
    return r


class Hog:
    """A busy loop on another core while a head runs (a noisy neighbour)."""
    def __init__(self, on):
        self.on, self.p = on, None

    def __enter__(self):
        if self.on:
            self.p = subprocess.Popen(["sh", "-c", "while :; do :; done"])
        return self

    def __exit__(self, *a):
        if self.p:
            self.p.kill()
            self.p.wait()


BACKEND = None  # --backend: ciprof run's sampler (CIPROF_RUN_BACKEND), else its own choice


def profile(ciprof, repo, knobs, scale, hog=False, hz=None):
    env = clean_env(knobs)
    env["VB_SCALE"] = str(scale)
    if hz:
        env["CIPROF_RUN_HZ"] = str(hz)
    if BACKEND:
        env["CIPROF_RUN_BACKEND"] = BACKEND
    t0 = time.monotonic()
    with Hog(hog):
        r = subprocess.run([ciprof, "-q", "run", "--", *COMMAND],
                           cwd=repo, env=env, text=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
    if r.returncode != 0:
        sys.exit(f"run.py: ciprof run failed ({r.returncode}):\n{r.stderr}")
    return time.monotonic() - t0


def head_runs_arg(v):
    if v == "auto":
        return v
    try:
        n = int(v)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"a whole number from 1, or auto, not '{v}'")
    return n


def report(ciprof, repo, *args):
    """`ciprof -q report --base main ARGS` in the repository: (exit status, standard output);
    exits the bench on any status but 0 and 1 (1: a failing verdict, or --need-run's no)."""
    cmd = [ciprof, "-q", "report", "--base", "main", *args]
    r = subprocess.run(cmd, cwd=repo, env=clean_env(), text=True, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if r.returncode not in (0, 1):
        sys.exit(f"{os.path.basename(sys.argv[0])}: {' '.join(cmd)} failed "
                 f"({r.returncode}):\n{r.stderr}")
    return r.returncode, r.stdout


def held_by(ciprof, repo, test, run="latest"):
    """The functions test holds HOLDER_SHARE or more of the self samples of, in run (a run of
    main): what a slower test makes slower, not other functions flagged."""
    def selfs(*args):
        r = subprocess.run([ciprof, "-q", "show", str(run), "--format", "json", *args], cwd=repo,
                           env=clean_env(), text=True, stdout=subprocess.PIPE, check=True)
        return {f["name"]: f["self"] for f in json.loads(r.stdout)["functions"]}
    everywhere, within = selfs(), selfs("--test", test)
    return {f for f, n in within.items() if n >= HOLDER_SHARE * everywhere.get(f, n)}


def other_functions(funcs, planted, held):
    """The flagged functions (report items) that nothing planted slowed: not the planted
    function, nor one the planted test holds (held: test -> held_by's set)."""
    return [x for x in funcs if x.get("measure") == "self" and
            not (planted and x["name"] == planted[1]) and
            not (planted and planted[0] == "test" and x["name"] in held.get(planted[1], ()))]


# ciprof report's REPORT_HOLDER_SHARE (report/diff.h): a test holding this much of a
# function's self samples is one of the tests it is "in"
HOLDER_SHARE = 0.25


def need_run(ciprof, repo, *args):
    """Whether `ciprof report --need-run` asks for another run of the head's commit (the
    newest run's, unless ARGS name one)."""
    return report(ciprof, repo, "--need-run", *args)[0] == 0


AUTO_MAX_RUNS = 3  # the CI templates' runs: auto


def judge(ciprof, repo, *args):
    """The report as JSON with --fail-on-regression: (exit status, report)."""
    rc, out = report(ciprof, repo, "--format", "json", "--fail-on-regression", *args)
    return rc, json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--ciprof", default=os.path.join(os.environ.get("CIPROF_BUILD", os.path.join(SRC, "build")), "ciprof"))
    ap.add_argument("--history", type=int, help="base-branch runs (default 10)")
    ap.add_argument("--history-hog", type=int, default=None, metavar="K",
                    help="a CPU hog during every K-th history run, as on shared CI runners "
                         "(default 4, --quick too; 0: none)")
    ap.add_argument("--interleave", type=int, default=0, metavar="K",
                    help="as CI accumulates: one more main commit and run before every K-th "
                         "head, each PR forked anew from main's tip, so that the history "
                         "each head is judged against is the newest (default 0: all of main's "
                         "history first, then every head on one PR)")
    ap.add_argument("--trials-scale", type=float, default=1.0, help="more or fewer heads")
    ap.add_argument("--scale", type=float, help="workload size (default 1)")
    ap.add_argument("--hz", type=int, help="ciprof run's sampling rate (default: ciprof's own)")
    ap.add_argument("--backend", choices=("perf", "preload"),
                    help="ciprof run's sampler (default: ciprof's own choice, perf where the "
                         "kernel allows it); preload measures verdicts as a CI runner that "
                         "refuses perf_event_open gets them")
    ap.add_argument("--keep", help="build the repository here and keep it")
    ap.add_argument("--json", help="write every comparison's outcome to this file")
    ap.add_argument("--head-runs", type=head_runs_arg, default="auto", metavar="N|auto",
                    help="profile each head N times (one commit) and judge the last; auto "
                         "(default): once, then again while ciprof report --need-run asks, at "
                         "most 3 times, as the CI templates' runs: auto")
    ap.add_argument("--workload", default="workload",
                    help="the suite: a folder of bench/verdicts with a CMake project and its "
                         "planted.json (default workload; workload2, workload3, workload4 and "
                         "workload5 are suites of other shapes, never tuned on)")
    a = ap.parse_args()
    wl = os.path.join(HERE, a.workload)
    if not os.path.isfile(os.path.join(wl, "planted.json")):
        sys.exit(f"run.py: no workload at {wl} (a folder with CMakeLists.txt and planted.json)")
    use_workload(wl)
    global BACKEND
    BACKEND = a.backend
    history = a.history or 10
    # --quick too: a history of ten back-to-back calm runs fits nearly normal tails (t(30)),
    # and a head on a busier machine then failed A/A builds (chase_init +13 %, parse_csv
    # +26 %: 3 of 12 quick runs with a CPU hog on 2026-11-26). CI histories come from many
    # runs on shared runners; every 4th with a neighbour is what the full bench measures.
    hog_every = a.history_hog if a.history_hog is not None else 4
    scale = a.scale or 1.0
    ciprof = os.path.abspath(a.ciprof)
    if not os.access(ciprof, os.X_OK):
        sys.exit(f"run.py: no ciprof at {ciprof} (build first, or --ciprof PATH)")

    top = a.keep or tempfile.mkdtemp(prefix="ciprof-verdicts-")
    repo = os.path.join(top, "repo")
    if os.path.exists(repo):
        shutil.rmtree(repo)
    shutil.copytree(wl, repo)
    with open(os.path.join(repo, ".gitignore"), "w") as f:
        f.write("build/\n")
    sh(["git", "init", "-q", "-b", "main"], repo)
    sh(["git", "add", "-A"], repo)
    sh(["git", "commit", "-q", "-m", "workload"], repo)
    sh(["cmake", "-S", ".", "-B", "build", "-DCMAKE_BUILD_TYPE="], repo)
    sh(["cmake", "--build", "build", "-j2"], repo)

    t_start = time.monotonic()
    run_seconds = []
    print(f"history: {history} runs of main, one per commit (VB_SCALE={scale})"
          + (f", a CPU hog during every {hog_every}th" if hog_every else ""), flush=True)
    nmain = 0

    def main_run():
        nonlocal nmain
        sh(["git", "checkout", "-q", "main"], repo)
        sh(["git", "commit", "-q", "--allow-empty", "-m", f"main {nmain + 1}"], repo)
        run_seconds.append(profile(ciprof, repo, {}, scale,
                                   hog=bool(hog_every) and nmain % hog_every == hog_every - 1,
                                   hz=a.hz))
        nmain += 1
        sh(["git", "checkout", "-q", "-B", "pr"], repo)
        sh(["git", "commit", "-q", "--allow-empty", "-m", f"pr after main {nmain}"], repo)

    for i in range(history):
        main_run()
    nheads = 0
    # A planted test's own functions slow with it: flagged, they are found, not "other".
    held = {t: held_by(ciprof, repo, t) for t in (TEST10, TEST10S)}
    print("functions each planted test holds (not counted as other functions flagged): "
          + "; ".join(f"{t}: {', '.join(sorted(fs)) or 'none'}" for t, fs in held.items()),
          flush=True)

    rows, outcomes, membound_flags, total, heads = [], [], 0, 0, []
    for name, knobs, planted, kind, hog, trials in scenarios(a.quick, a.trials_scale):
        st = {"n": 0, "fail": 0, "flagged": 0, "items": 0, "found": 0, "others": 0,
              "shift": 0, "secs": 0.0, "busy": 0, "runs": 0}
        for t in range(trials):
            if a.interleave and nheads and nheads % a.interleave == 0:
                main_run()
            nheads += 1
            # Each head its own commit, as each push of a PR is: runs of one commit are one
            # head's (ciprof report --head-runs).
            sh(["git", "commit", "-q", "--allow-empty", "-m", f"head {nheads}"], repo)
            auto = a.head_runs == "auto"
            want = AUTO_MAX_RUNS if auto else max(1, a.head_runs)
            secs, made = 0.0, 0
            while made < want:
                secs += profile(ciprof, repo, knobs, scale, hog, a.hz)
                made += 1
                if auto and made < want and not need_run(ciprof, repo):
                    break
            st["secs"] += secs / made
            st["runs"] += made
            rc, r = judge(ciprof, repo)
            sig = [x for x in r["functions"] + r["tests"] if x.get("significant")]
            funcs = [x for x in r["functions"] if x.get("significant")]
            tests = [x for x in r["tests"] if x.get("significant")]
            hit = False
            if planted and planted[0] == "self":
                hit = any(x["name"] == planted[1] and x.get("measure") == "self" and
                          x["kind"] == "regression" for x in funcs)
            elif planted:
                hit = any(x["name"] == planted[1] and x["kind"] == "regression" for x in tests)
            # Seen: the planted item is the most slowed function (self) and its own test says
            # p < 0.01, whether or not the gate (FDR 0.1 %, a noisy history's heavy tails)
            # calls it a regression: the pipeline measured it.
            seen = hit
            if planted and planted[0] == "self" and not hit:
                selfs = [x for x in r["functions"] if x.get("measure") == "self" and
                         x.get("tested") and x.get("delta") is not None]
                most = max(selfs, key=lambda x: x["delta"], default=None)
                seen = bool(most and most["name"] == planted[1] and most["p_value"] < 0.01)
            st["seen"] = st.get("seen", 0) + seen
            others = other_functions(funcs, planted, held)
            membound_flags += any(x["name"] == MEMBOUND for x in funcs)
            st["n"] += 1
            st["fail"] += rc == 1
            # regressions that did not fail the build because the head shared its machine
            busy = r.get("verdict") == "regression" and "other processes kept" in (
                r.get("advisory_reason") or "")
            st["busy"] += busy
            st["flagged"] += bool(sig)
            st["items"] += len(sig)
            st["found"] += hit
            st["others"] += bool(others)
            st["shift"] += (r.get("scale", {}).get("shift") == "slower" and not funcs and not tests)
            total += 1
            heads.append({"id": r.get("head"), "scenario": name, "planted": planted,
                          "kind": kind, "hog": hog})
            outcomes.append({"scenario": name, "trial": t, "exit": rc, "verdict": r["verdict"],
                             "advisory": r.get("advisory"), "found": hit,
                             "factor": r.get("scale", {}).get("factor"),
                             "flagged": [f"{x['name']} {x.get('measure', 'test')} "
                                         + (f"{x['delta']:+.1%}" if x.get("delta") is not None
                                            else "new")
                                         for x in sig]})
            sm = r.get("summary", {})
            load = (f", others {sm['head_other_cpus']:.2f} CPUs (history "
                    f"{sm.get('history_other_cpus') or 0:.2f})"
                    if sm.get("head_other_cpus") is not None else "")
            print(f"  {name} #{t + 1}: exit {rc}, {r['verdict']}"
                  f"{' (advisory: a busy head)' if busy else ''}, factor "
                  f"{r.get('scale', {}).get('factor', 1):.3f}{load}, flagged "
                  f"[{', '.join(outcomes[-1]['flagged'])}]", flush=True)
            if planted and not hit:
                # What the report knew of the planted item: enough to tell a noisy history
                # from a slowdown that never happened.
                for x in r["functions"] + r["tests"]:
                    if x["name"] == planted[1] and x.get("measure", "test") == planted[0]:
                        print("    missed: " + ", ".join(
                            f"{k} {x.get(k)}" for k in ("delta", "noise_cv", "p_value",
                                                       "q_value", "base_samples",
                                                       "head_samples", "expected_samples")),
                              flush=True)
                print(f"    baseline: {r.get('baseline')}", flush=True)
        rows.append((name, kind, st))

    print()
    print("| scenario | comparisons | build failures | advisory: busy head | flagged anything "
          "| items flagged | found | other functions flagged | s per run | runs a head |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, kind, st in rows:
        n = st["n"]
        found = (f"{st['found']}/{n}" if kind in ("func", "test")
                 else f"shift {st['shift']}/{n}" if kind == "shift" else "–")
        print(f"| {name} | {n} | {st['fail']} | {st['busy']} | {st['flagged']} | {st['items']} "
              f"| {found} "
              f"| {st['others']} | {st['secs'] / n:.1f} | {st['runs'] / n:.2f} |")
    print()
    aa = [st for _, kind, st in rows if kind == "aa"]
    print(f"A/A: {sum(s['fail'] for s in aa)} build failures (and {sum(s['busy'] for s in aa)} "
          f"regressions advisory on a busy head) and {sum(s['items'] for s in aa)} "
          f"flagged items in {sum(s['n'] for s in aa)} comparisons; memory-bound {MEMBOUND} "
          f"flagged in {membound_flags} of {total} comparisons; "
          f"{nmain + total} runs in {time.monotonic() - t_start:.0f} s")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(outcomes, f, indent=1)
    # The heads, for rejudge.py: the same runs judged again by other binaries.
    with open(os.path.join(top, "heads.json"), "w") as f:
        json.dump(heads, f, indent=1)
    if not a.keep:
        shutil.rmtree(top, ignore_errors=True)
    if a.quick:
        bad = []
        if sum(s["fail"] for s in aa) > QUICK_AA_FAILS:
            bad.append(f"more than {QUICK_AA_FAILS} of the {QUICK_AA} A/A comparisons failed "
                       "the build")
        planted = [st for _, kind, st in rows if kind == "func"]
        if sum(s.get("seen", 0) for s in planted) < sum(s["n"] for s in planted):
            bad.append("the planted +100 % slowdown was not seen (neither flagged nor the "
                       "most slowed function at p < 0.01)")
        for b in bad:
            print(f"run.py: check failed: {b}", file=sys.stderr)
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
