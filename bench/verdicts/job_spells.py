#!/usr/bin/env python3
"""bench/verdicts/job_spells.py: which heads of kept bench/verdicts runs ciprof report took for
runs of one job in a slow spell (summary.job_spell).

    bench/verdicts/job_spells.py CIPROF DIR [DIR...]

Each DIR is what `run.py --keep DIR` left. Every head is judged as run.py judged it (`ciprof
report --head ID --base main --format json`, its other runs of the commit combined); printed
per DIR: the heads, those judged with other runs combined (20 or more history runs), and each
head taken for a spell with its scenario, job_median_z, history_median_z and regressions.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from run import clean_env  # noqa: E402


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    ciprof = sys.argv[1]
    for d in sys.argv[2:]:
        repo = os.path.join(d, "repo")
        with open(os.path.join(d, "heads.json")) as f:
            heads = json.load(f)
        combined, hits = 0, []
        for h in heads:
            r = subprocess.run([ciprof, "report", "--head", str(h["id"]), "--base", "main",
                                "--format", "json"], cwd=repo, env=clean_env(), text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            s = json.loads(r.stdout)["summary"]
            combined += s.get("head_runs", 1) > 1 and s.get("history_runs", 0) >= 20
            if s.get("job_spell"):
                hits.append((h["id"], h["scenario"], round(s["job_median_z"], 2),
                             round(s["history_median_z"], 2), s["regressions"]))
        print(f"{d}: {len(heads)} heads, {combined} combined, {len(hits)} spells {hits}",
              flush=True)


if __name__ == "__main__":
    main()
