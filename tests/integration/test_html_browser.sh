#!/usr/bin/env bash
# The interactive HTML report in a real headless browser (Debian's chromium and
# chromium-driver, driven by python3-selenium; scripts/setup installs them): it loads without
# console errors (a CSP violation is one), click to zoom, search with highlight and matched
# share, tooltips, the base/head/diff toggle, the sandwich view and sortable tables work, and a
# hostile function name stays text. The profiles are imported folded stacks, so every number
# is known. HTML_SHOTS=DIR also saves screenshots there (docs/images).
source "$(dirname "$0")/lib.sh"

# Debian's python3 carries selenium; a python3 earlier in PATH (pyenv) may not.
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
for need in chromium chromedriver; do
	command -v "$need" >/dev/null || fail "$need is not installed: run scripts/setup (it installs chromium, chromium-driver and python3-selenium)"
done
"$PY" -c 'import selenium' 2>/dev/null || fail "python3-selenium is not installed: run scripts/setup"

cd "$TMP" || fail "no temp dir"
DB=$TMP/db.sqlite
# markup, and a bidi override (U+202E) that would reorder the text the reader sees
HOSTILE='<img src=x onerror="window.pwned=1">'$'\xe2\x80\xae''evil'
base() {
	cat <<EOF2
suite;main;parse;tokenize 3000
suite;main;parse;$HOSTILE 1000
suite;main;hash;mix 2000
suite;main;render;mix 1000
suite;main;render;draw 2500
suite;main;work_hot 2000
EOF2
}
for i in 1 2 3; do
	# the runs differ by a sample or two, as real runs do
	base | awk -v d=$((i - 1)) '{ n = $NF; sub(/[0-9]+$/, n + d); print }' >base$i.folded
	run_capture import$i "$CIPROF" import --db "$DB" --format folded --branch main \
		--commit "$(printf '%040d' $i)" base$i.folded
	expect_rc "base run $i imported" 0 import$i
done
base | sed 's/^suite;main;work_hot 2000$/suite;main;work_hot 4000/' >head.folded
run_capture importh "$CIPROF" import --db "$DB" --format folded --branch pr \
	--commit "$(printf 'a%039d' 0)" head.folded
expect_rc "head run imported" 0 importh
run_capture html "$CIPROF" report --db "$DB" --head 4 --base main --format html -o report.html
expect_rc "report --format html" 0 html

"$PY" "$CIPROF_SRC/tests/integration/html_browser.py" "$TMP/report.html" "${HTML_SHOTS:-}" \
	>"$TMP/browser.out" 2>&1 && ok "the browser checks pass" ||
	check_failed "the browser checks failed"
sed 's/^/    /' "$TMP/browser.out"
finish
