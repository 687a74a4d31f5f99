#!/bin/bash
# The run of export, show and push is named as DESIGN's CLI contract says, `CMD [RUN]`, and as
# `--run ID`, with the same meaning: options before or after RUN, both forms at once when they
# agree; RUN and --run naming different runs, or a second RUN, are usage errors (exit 2).
. "$(dirname "$0")/lib.sh"

SYNTH=$CIPROF_BUILD/bench/storage/store_synth
[ -x "$SYNTH" ] || fail "store_synth not built ($SYNTH)"
DB=$TMP/r.db
"$SYNTH" --db "$DB" --runs 3 --branch main --seed 5 >"$TMP/ids" || fail "seeding the database"
OLD=$(head -n1 "$TMP/ids")
NEW=$(tail -n1 "$TMP/ids")
[ "$OLD" != "$NEW" ] || fail "store_synth gave one run id"

# same NAME CMD ARGS...: CMD's output with each way of naming run OLD must be the first's
# (standard output; standard error with WHICH=err: push --dry-run says there what it would send).
same() {
	local name=$1 cmd=$2
	shift 2
	local i=0 ref="" form w=${WHICH:-out}
	for form in "$OLD" "--run $OLD" "$OLD --run $OLD" "--run $OLD $OLD"; do
		i=$((i + 1))
		# shellcheck disable=SC2086
		run_capture "$name$i" "$CIPROF" "$cmd" --db "$DB" "$@" $form
		if [ "$RC" != 0 ]; then
			check_failed "$cmd $* $form: exit $RC: $(cat "$TMP/$name$i.err")"
			return
		fi
		[ -n "$ref" ] || ref=$TMP/$name$i.$w
		cmp -s "$ref" "$TMP/$name$i.$w" || check_failed "$cmd $* $form differs from $cmd $* $OLD"
	done
	# RUN first, options after it.
	run_capture "${name}_after" "$CIPROF" "$cmd" "$OLD" --db "$DB" "$@"
	[ "$RC" = 0 ] && cmp -s "$ref" "$TMP/${name}_after.$w" ||
		check_failed "$cmd $OLD before its options: exit $RC or other output"
	run_capture "${name}_new" "$CIPROF" "$cmd" --db "$DB" "$@" "$NEW"
	cmp -s "$ref" "$TMP/${name}_new.$w" && check_failed "$cmd: run $NEW gives run $OLD's output"
	ok "$cmd: RUN, --run ID, both agreeing, RUN before options: the same run"
}

# refused NAME CMD ARGS...: the conflicting forms are usage errors that say why.
refused() {
	local name=$1 cmd=$2
	shift 2
	run_capture "${name}_diff" "$CIPROF" "$cmd" --db "$DB" "$@" "$OLD" --run "$NEW"
	[ "$RC" = 2 ] && grep -q "RUN $OLD and --run $NEW name different runs" "$TMP/${name}_diff.err" ||
		check_failed "$cmd RUN --run OTHER: exit $RC, $(cat "$TMP/${name}_diff.err")"
	run_capture "${name}_latest" "$CIPROF" "$cmd" --db "$DB" "$@" --run latest "$NEW"
	[ "$RC" = 2 ] || check_failed "$cmd --run latest $NEW: exit $RC, expected 2"
	run_capture "${name}_two" "$CIPROF" "$cmd" --db "$DB" "$@" "$OLD" "$NEW"
	[ "$RC" = 2 ] && grep -q "unexpected argument '$NEW'" "$TMP/${name}_two.err" ||
		check_failed "$cmd RUN RUN: exit $RC, $(cat "$TMP/${name}_two.err")"
	run_capture "${name}_bad" "$CIPROF" "$cmd" --db "$DB" "$@" nonsense
	[ "$RC" = 2 ] && grep -q "'nonsense' is not a run" "$TMP/${name}_bad.err" ||
		check_failed "$cmd nonsense: exit $RC, $(cat "$TMP/${name}_bad.err")"
	ok "$cmd: RUN and a different --run, two RUNs, a non-run: usage errors"
}

same export export --format folded
refused export export --format folded
same show show --top 0 --format json
refused show show
WHICH=err same push push --server http://127.0.0.1:9 --dry-run
refused push push --server http://127.0.0.1:9 --dry-run
# show's JSON names the run it showed.
python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["run"] != int(sys.argv[2]))' \
	"$TMP/show1.out" "$OLD" && ok "show RUN shows that run" || check_failed "show $OLD: another run's JSON"
finish
