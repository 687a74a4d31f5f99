# A stand-in for `ciprof report --need-run`, loaded into each CI step's bash through BASH_ENV
# (the templates put ciprof's own bin first on PATH, so a wrapper there would not be found):
# it answers the exit statuses in $NEED_RUN_ANSWERS in turn (then the last one again), logging
# each call's arguments to $NEED_RUN_LOG; any other `ciprof report` is logged to $REPORT_LOG
# and run. Nothing depends on timing.
ciprof() {
	if [ "${1:-}" = report ]; then
		case " $* " in
		*" --need-run "*)
			local n=0 rc answers
			[ -f "$NEED_RUN_LOG" ] && n=$(wc -l <"$NEED_RUN_LOG")
			echo "$*" >>"$NEED_RUN_LOG"
			read -r -a answers <<<"$NEED_RUN_ANSWERS"
			rc=${answers[$n]:-${answers[-1]}}
			case "$rc" in
			0) echo "confirm function work_hot +20.0 % (q 0.01)" ;;
			1) echo "ciprof: report: no further run needed: the stand-in says so" >&2 ;;
			*) echo "ciprof: error: the stand-in fails" >&2 ;;
			esac
			return "$rc"
			;;
		esac
		echo "$*" >>"${REPORT_LOG:-/dev/null}"
	fi
	command ciprof "$@"
}
