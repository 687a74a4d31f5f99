#!/usr/bin/env bash
# Installing ciprof (docs/install.md): `cmake --install` puts bin/ciprof, the preload library,
# the header and the docs under a prefix; the installed binary finds its preload library
# through the install layout, also after DESTDIR staging or moving the tree, and falls back to
# it when perf_event_open is refused; a lone copied binary says where it looked. scripts/package
# turns the build into a .deb, a binary tarball and a source tarball with SHA256SUMS, all
# carrying the version `ciprof version` prints, and each unpacked package runs.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/forge_lib.sh" # expect_eq

DENY=$CIPROF_BUILD/tests/deny_perf
[ -x "$DENY" ] || fail "$DENY not built"
command -v dpkg-deb >/dev/null || fail "dpkg-deb is needed"

VERSION=$("$CIPROF" version | sed -n 's/^ciprof \([^ ]*\) .*/\1/p')
BASE=$(sed -n 's/^project(ciprof VERSION \([0-9.]*\).*/\1/p' "$CIPROF_SRC/CMakeLists.txt")
case "$VERSION" in
"$BASE" | "$BASE"[+~]*) ok "ciprof version $VERSION is the project's $BASE" ;;
*) check_failed "ciprof version '$VERSION' does not start with the project's version $BASE" ;;
esac

# A little CPU-bound workload, the same for every installed binary.
WORK='i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'

# works NAME BIN: BIN profiles WORK with the preload backend, with no hint where the library is.
works() {
	local name=$1 bin=$2
	run_capture "$name" env -u CIPROF_PRELOAD_LIB "$bin" run --backend preload --hz 999 --no-store \
		-o "$TMP/$name.folded" -- sh -c "$WORK"
	expect_rc "$name: --backend preload" 0 "$name"
	if [ -s "$TMP/$name.folded" ] && grep -q ' [0-9]*$' "$TMP/$name.folded"; then
		ok "$name: the preload library sampled ($(wc -l <"$TMP/$name.folded") stacks)"
	else
		check_failed "$name: no samples in the folded output"
	fi
}

# --- cmake --install --prefix ---------------------------------------------------------------
P="$TMP/prefix"
run_capture install cmake --install "$CIPROF_BUILD" --prefix "$P"
expect_rc "cmake --install --prefix" 0 install
for f in bin/ciprof lib/ciprof/libciprof-preload.so include/ciprof.h share/doc/ciprof/install.md \
	share/doc/ciprof/run.md share/doc/ciprof/README.md; do
	[ -f "$P/$f" ] && ok "installed $f" || check_failed "not installed: $f"
done
[ -x "$P/bin/ciprof" ] || fail "no installed binary"
expect_eq "installed ciprof version" "$("$P/bin/ciprof" version | cut -d' ' -f2)" "$VERSION"
works prefix "$P/bin/ciprof"

# The automatic fallback (perf_event_open refused by a seccomp filter) with the installed binary.
run_capture fallback "$DENY" EPERM env -u CIPROF_PRELOAD_LIB "$P/bin/ciprof" run --no-store -- sh -c 'exit 4'
expect_rc "installed binary falls back to preload, keeps the status" 4 fallback
expect_grep "the fallback is announced" "$TMP/fallback.err" "sampling with the LD_PRELOAD backend"

# The tree moved elsewhere still works (the lookup is relative to the binary).
mv "$P" "$TMP/moved"
works moved "$TMP/moved/bin/ciprof"

# --- DESTDIR staging (what packagers do) -----------------------------------------------------
DESTDIR="$TMP/stage" run_capture destdir cmake --install "$CIPROF_BUILD"
expect_rc "DESTDIR install" 0 destdir
staged=$(find "$TMP/stage" -path '*/bin/ciprof' | head -n1)
[ -n "$staged" ] && works destdir "$staged" || check_failed "no bin/ciprof under DESTDIR"

# --- a lone copy of the binary: a clear error ------------------------------------------------
mkdir -p "$TMP/lone"
cp "$CIPROF" "$TMP/lone/ciprof"
run_capture lone env -u CIPROF_PRELOAD_LIB "$TMP/lone/ciprof" run --backend preload --no-store -- true
if [ -f "${CIPROF_PRELOAD_INSTALLED_CHECK:-/usr/local/lib/ciprof/libciprof-preload.so}" ]; then
	ok "a ciprof is installed system-wide: the lone binary's error is not checked"
else
	expect_rc "lone binary without its library" 3 lone
	expect_grep "the error names where it looked" "$TMP/lone.err" "$TMP/lone/../lib/ciprof/libciprof-preload.so"
	expect_grep "the error says what to do" "$TMP/lone.err" "CIPROF_PRELOAD_LIB"
fi

# --- scripts/package ---------------------------------------------------------------------------
D="$TMP/dist"
run_capture package "$CIPROF_SRC/scripts/package" --build-dir "$CIPROF_BUILD" --out "$D"
expect_rc "scripts/package" 0 package
ARCH=$(dpkg --print-architecture)
DEB="$D/ciprof_${VERSION}_${ARCH}.deb"
BIN_TGZ="$D/ciprof-${VERSION}-linux-${ARCH}.tar.gz"
SRC_TGZ=$(ls "$D"/ciprof-*.tar.gz 2>/dev/null | grep -v -- -linux- | head -n1)
SRC_VERSION=$(basename "${SRC_TGZ:-none}" .tar.gz)
SRC_VERSION=${SRC_VERSION#ciprof-}
for f in "$DEB" "$BIN_TGZ" "$SRC_TGZ" "$D/SHA256SUMS"; do
	[ -s "$f" ] && ok "package file $(basename "$f")" || check_failed "missing $(basename "$f"): $(ls "$D")"
done
(cd "$D" && sha256sum --quiet -c SHA256SUMS) >"$TMP/sums.out" 2>&1 && ok "SHA256SUMS verify" ||
	check_failed "SHA256SUMS does not verify: $(cat "$TMP/sums.out")"
expect_eq "SHA256SUMS lists the three files" "$(wc -l <"$D/SHA256SUMS")" 3
expect_eq "the .deb's version" "$(dpkg-deb -f "$DEB" Version 2>&1)" "$VERSION"
deps=$(dpkg-deb -f "$DEB" Depends 2>&1)
case "$deps" in
*libgit2*libsqlite3*) ok "the .deb depends on the shared libraries ciprof links" ;;
*) check_failed "the .deb's Depends lacks libgit2/libsqlite3: $deps" ;;
esac
dpkg-deb -x "$DEB" "$TMP/deb" || check_failed "dpkg-deb -x failed"
expect_eq "the .deb's ciprof version" "$("$TMP/deb/usr/bin/ciprof" version | cut -d' ' -f2)" "$VERSION"
works deb "$TMP/deb/usr/bin/ciprof"
mkdir -p "$TMP/tgz" && tar -xzf "$BIN_TGZ" -C "$TMP/tgz" || check_failed "the binary tarball does not unpack"
works tarball "$TMP/tgz/ciprof-$VERSION/bin/ciprof"
mkdir -p "$TMP/src" && tar -xzf "$SRC_TGZ" -C "$TMP/src" || check_failed "the source tarball does not unpack"
expect_eq "the source tarball knows its version" \
	"$(cmake -DSRC="$TMP/src/ciprof-$SRC_VERSION" -DBASE="$BASE" -P "$CIPROF_SRC/scripts/version.cmake")" "$SRC_VERSION"
[ -f "$TMP/src/ciprof-$SRC_VERSION/CMakeLists.txt" ] && ok "the source tarball holds the source" ||
	check_failed "no CMakeLists.txt in the source tarball"

# --release refuses a build between releases.
if [ "$VERSION" != "$BASE" ]; then
	run_capture release "$CIPROF_SRC/scripts/package" --build-dir "$CIPROF_BUILD" --out "$TMP/rel" --release
	expect_rc "--release between releases" 1 release
	expect_grep "--release says why" "$TMP/release.err" "is not a release: tag HEAD v$BASE"
fi
finish
