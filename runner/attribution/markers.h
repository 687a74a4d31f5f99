/* Output markers: test runners' own progress lines, read as the bytes arrive and turned into
 * test windows (attrib_window_begin/end): GoogleTest and cmocka "[ RUN      ] x" ...
 * "[       OK ] x", `go test -v` "=== RUN   TestX" ... "--- PASS: TestX", `pytest -v`
 * "path::test PASSED", `cargo test` "test path::name ... ok", and TAP "ok N - name".
 * A runner that prints the name before running the test (pytest, cargo) starts the window
 * when the name arrives, before the line is complete. Colours (ANSI escapes) are ignored. */
#ifndef CP_MARKERS_H
#define CP_MARKERS_H

#include "common/strbuf.h"
#include "runner/attribution/attribute.h"

#include <stddef.h>
#include <stdint.h>

struct markers {
	struct strbuf line; /* the current line, escapes removed */
	int esc;            /* inside an escape sequence: 0 none, 1 after ESC, 2 in CSI */
	int begun;          /* a partial-line begin was emitted for this line */
	char *open_partial; /* owned: test begun by a partial line, ended at its newline */
	uint64_t lines;
};

void markers_init(struct markers *m);
void markers_release(struct markers *m);
/* Feeds len bytes that arrived at time t (CLOCK_MONOTONIC ns). */
void markers_feed(struct markers *m, struct attrib *a, const char *buf, size_t len, uint64_t t);
/* Ends the stream (a last line without newline is complete). */
void markers_flush(struct markers *m, struct attrib *a, uint64_t t);

#endif
