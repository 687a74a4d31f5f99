#!/bin/sh
# Builds the GoogleTest example into OUTDIR: OUTDIR/test_gtest, one binary (linked with
# gtest_main) running four tests. Needs libgtest-dev (Debian ships the static libraries).
set -eu
[ $# -eq 1 ] || { echo "usage: $0 OUTDIR" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
${CXX:-c++} -std=c++17 -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -Wall -Wextra \
	-I"$here/../common" -o "$1/test_gtest" "$here/test_gtest.cc" -lgtest_main -lgtest -pthread
