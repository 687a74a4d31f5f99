# shellcheck shell=bash
# Shared steps of tests/integration/test_attr_*.sh, sourced after tests/integration/lib.sh:
# make sure a framework is installed, build its example, profile a run of its suite and
# compare ciprof's per-test attribution (`ciprof show --by test --format json`) with the
# CPU time each test measured itself (compare_truth.py).

FW_SRC=$CIPROF_SRC/examples/frameworks
FW_HZ=${FW_HZ:-499}

# fw_require PACKAGE CMD...: CMD (quiet) tells whether the framework is usable. If not, and
# Debian offers PACKAGE, the test fails (install it: scripts/setup does); if Debian has no
# such package at all, the test says so and passes, as a skip.
fw_require() {
	local pkg=$1 candidate
	shift
	"$@" >/dev/null 2>&1 && return 0
	if ! command -v apt-cache >/dev/null; then
		fail "'$*' failed and there is no apt-cache to tell whether Debian has $pkg: install $pkg"
	fi
	candidate=$(apt-cache policy "$pkg" 2>/dev/null | sed -n 's/^ *Candidate: *//p')
	if [ -z "$candidate" ] || [ "$candidate" = "(none)" ]; then
		echo "skip [$TEST_NAME]: '$*' failed, and Debian package $pkg is not available" \
			"here (apt-cache policy $pkg: no candidate); nothing to test"
		exit 0
	fi
	fail "'$*' failed: install Debian package $pkg (candidate $candidate; scripts/setup installs it)"
}

# fw_build NAME: builds examples/frameworks/NAME into $CIPROF_BUILD/examples/frameworks/NAME
# and sets FW_OUT to that directory.
fw_build() {
	FW_OUT=$CIPROF_BUILD/examples/frameworks/$1
	local t0=$SECONDS
	mkdir -p "$(dirname "$FW_OUT")"
	if ! "$FW_SRC/$1/build.sh" "$FW_OUT" >"$TMP/build-$1.log" 2>&1; then
		sed 's/^/    /' "$TMP/build-$1.log" >&2
		fail "cannot build examples/frameworks/$1"
	fi
	ok "examples/frameworks/$1 built in $FW_OUT ($((SECONDS - t0)) s)"
}

# fw_profile LABEL [CIPROF-RUN-OPTION...] -- CMD...: runs CMD under
# `ciprof run --hz $FW_HZ --db $TMP/LABEL.db` with CIPROF_TRUTH=$TMP/LABEL.truth, expects
# status 0, and compares the stored run's tests with the truth the suite wrote.
fw_profile() {
	local label=$1 t0=$SECONDS
	local -a opts=()
	shift
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	[ "${1:-}" = -- ] || fail "fw_profile $label: no '--' before the command"
	shift
	rm -f "$TMP/$label.truth"
	run_capture "$label" env CIPROF_TRUTH="$TMP/$label.truth" \
		"$CIPROF" run --hz "$FW_HZ" --db "$TMP/$label.db" "${opts[@]}" -- "$@"
	expect_rc "$label: ciprof run ${opts[*]} -- $*" 0 "$label"
	if [ "$RC" -ne 0 ]; then
		sed 's/^/    /' "$TMP/$label.out" | tail -20 >&2
		return
	fi
	if [ ! -s "$TMP/$label.truth" ]; then
		check_failed "$label: the suite wrote no truth ($TMP/$label.truth); its output:"
		sed 's/^/    /' "$TMP/$label.out" | tail -20 >&2
		return
	fi
	run_capture "$label-show" "$CIPROF" show --db "$TMP/$label.db" --by test --format json
	expect_rc "$label: ciprof show --by test --format json" 0 "$label-show"
	[ "$RC" -eq 0 ] || return
	echo "--- $label: ciprof's tests vs the measured truth"
	if python3 "$FW_SRC/compare_truth.py" "$TMP/$label-show.out" "$TMP/$label.truth"; then
		ok "$label: every test found under its own name, shares within 5 points ($((SECONDS - t0)) s)"
	else
		check_failed "$label: attribution does not match the truth (see above)"
	fi
}
