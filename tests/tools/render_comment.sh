#!/usr/bin/env bash
# render_comment.sh REPORT.md OUT.png: the PR comment as GitHub would show it, for the docs:
# GitHub-flavoured Markdown rendered by cmark-gfm (Debian's cmark-gfm; --unsafe keeps the
# report's <details> and <sub>) in a comment-like box, the first finding's "what changed
# under it" opened, screenshotted by headless Chromium at 940 px wide. cmark-gfm draws no
# Mermaid: the trend charts show as their xychart-beta source (GitHub draws line charts).
set -euo pipefail
md=$1 png=$2
for need in cmark-gfm chromium; do
	command -v "$need" >/dev/null || { echo "render_comment.sh: $need is not installed" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
	cat <<'HTML'
<!DOCTYPE html><html><head><meta charset="utf-8"><style>
body { font-family: -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif;
  font-size: 14px; line-height: 1.5; color: #1f2328; margin: 16px 30px; background: #fff; }
.box { border: 1px solid #d1d9e0; border-radius: 6px; padding: 16px; }
code { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 85%;
  background: #eff1f3; padding: .2em .4em; border-radius: 6px; }
pre { background: #f6f8fa; padding: 16px; border-radius: 6px; overflow: auto; font-size: 85%;
  line-height: 1.45; }
pre code { background: none; padding: 0; font-size: 100%; }
sub { color: #59636e; }
table { border-collapse: collapse; } td, th { border: 1px solid #d1d9e0; padding: 6px 13px; }
h3 { font-size: 1.25em; margin: 24px 0 16px; }
li { margin: .25em 0; }
</style></head><body><div class="box">
HTML
	cmark-gfm --unsafe -e table "$md" |
		sed '0,/<details><summary>what changed/s//<details open><summary>what changed/'
	echo '</div></body></html>'
} >"$tmp/comment.html"
chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars \
	--force-device-scale-factor=1 --window-size=940,1000 --screenshot="$png" \
	"file://$tmp/comment.html" 2>/dev/null
[ -s "$png" ] || { echo "render_comment.sh: no screenshot made" >&2; exit 1; }
