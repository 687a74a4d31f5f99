#!/bin/sh
# Builds the Go example's test binary into OUTDIR/fwgo.test (go test -c; the standard
# library only, no network). Run it as `OUTDIR/fwgo.test -test.v`, or with FWGO_PARALLEL=1
# and -test.parallel 2 for parallel tests. Needs golang-go.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
cd "$here"
GOCACHE=${GOCACHE:-$out/gocache} GOFLAGS=-mod=mod GOPROXY=off GO111MODULE=on \
	go test -c -o "$out/fwgo.test" .
