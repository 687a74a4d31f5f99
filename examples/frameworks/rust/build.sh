#!/bin/sh
# Copies the Rust example to OUTDIR/fwrust and builds its tests there with frame pointers
# (cargo test --no-run, offline: no external crates; cargo writes Cargo.lock and target/
# there, never into the source tree). Then run them with
#   cd OUTDIR/fwrust && RUSTFLAGS="-C force-frame-pointers=yes" cargo test --offline --lib
# (add `-- --test-threads=1` for one at a time). Needs rustc and cargo; CARGO and RUSTC
# choose other ones than those on PATH.
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1/fwrust"
out=$(cd "$1" && pwd)
cp "$here/Cargo.toml" "$out/fwrust/"
cp -R "$here/src" "$out/fwrust/"
cd "$out/fwrust"
export RUSTFLAGS="-C force-frame-pointers=yes"
export CARGO_HOME=${CARGO_HOME:-$out/cargo-home}
"${CARGO:-cargo}" test --offline --quiet --lib --no-run
