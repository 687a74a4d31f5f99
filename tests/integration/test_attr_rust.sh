#!/bin/bash
# Per-test attribution, Rust: profile `cargo test` on examples/frameworks/rust (libtest, four
# tests of known cost, no external crates, built with frame pointers) and check each test is
# reported under its libtest name ("tests::large") with a share within 5 points of its
# measured CPU time, one test thread (--test-threads=1) and two.
. "$(dirname "$0")/lib.sh"
. "$CIPROF_SRC/examples/frameworks/harness.sh"

# Debian's toolchain (rustc, cargo) unless CARGO says otherwise: a rustup toolchain earlier
# on PATH is another compiler and another standard library.
if [ -z "${CARGO:-}" ] && [ -x /usr/bin/cargo ] && [ -x /usr/bin/rustc ]; then
	export CARGO=/usr/bin/cargo RUSTC=/usr/bin/rustc
fi
export CARGO=${CARGO:-cargo}
fw_require cargo "$CARGO" --version
fw_require rustc "${RUSTC:-rustc}" --version
fw_build rust
# The same flags as build.sh, so cargo finds the tests built and compiles nothing.
export RUSTFLAGS="-C force-frame-pointers=yes" CARGO_HOME=$FW_OUT/cargo-home
cd "$FW_OUT/fwrust" || fail "cannot enter $FW_OUT/fwrust"
fw_profile serial -- "$CARGO" test --offline --lib -- --test-threads=1
fw_profile parallel -- "$CARGO" test --offline --lib -- --test-threads=2
finish
