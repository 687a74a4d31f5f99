#!/bin/sh
# A real-shaped "suite" of short processes for bench/storage/real.sh: 100 rounds of python3,
# git, sort and awk, each process loaded by ld.so (dynamic-loader frames), hundreds per run.
# usage: bench/storage/real.sh build 8 999 bench/storage/procs.sh
for i in $(seq 100); do
	python3 -c 'import json; json.dumps(list(range(2000)))'
	git --version >/dev/null
	sort /etc/services >/dev/null
	awk 'BEGIN { s = 0; for (i = 0; i < 20000; i++) s += i; }'
done
