#!/bin/bash
# Every C source and header of the tree is as .clang-format lays it out (shared/STYLE.md), so
# a reader never meets two layouts and a diff shows only what changed. Names the files that
# drift and the command that fixes them.
. "$(dirname "$0")/lib.sh"

command -v clang-format >/dev/null || skip "clang-format is not installed (scripts/setup installs it)"
cd "$CIPROF_SRC" || fail "cannot enter $CIPROF_SRC"
if [ -d .git ] || [ -f .git ]; then
	mapfile -t files < <(git ls-files '*.c' '*.h')
else
	mapfile -t files < <(find . -path ./build -prune -o \( -name '*.c' -o -name '*.h' \) -print)
fi
[ "${#files[@]}" -gt 50 ] || fail "found only ${#files[@]} C files under $CIPROF_SRC"
# In parallel, a batch of files per clang-format: the files that drift, sorted.
mapfile -t drift < <(printf '%s\0' "${files[@]}" | xargs -0 -n 16 -P "$(nproc)" sh -c \
	'for f; do clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"; done' sh |
	sort)
if [ "${#drift[@]}" -eq 0 ]; then
	ok "${#files[@]} C files laid out as .clang-format says"
else
	check_failed "${#drift[@]} file(s) not laid out as .clang-format says: ${drift[*]}" \
		"(fix: clang-format -i ${drift[*]})"
fi
finish
