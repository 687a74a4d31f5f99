/* Fuzz target for the reader of the LD_PRELOAD backend's sample files
 * (runner/sample/preload_backend.c): a whole file image, then the same bytes as one ring's
 * contents. Every record handed out must lie inside its input, and every failure must leave a
 * message naming the file and an offset. */
#include "common/error.h"
#include "runner/sample/preload_backend.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct bounds {
	const uint8_t *lo, *hi;
	uint64_t count;
};

static void inside(const struct bounds *b, const void *p, size_t len)
{
	const uint8_t *q = p;
	if (len && (q < b->lo || q + len > b->hi))
		abort();
}

static int check(void *ctx, const struct pl_view *v, const unsigned char *raw, size_t len)
{
	struct bounds *b = ctx;
	struct bounds rec = {raw, raw + len, 0};
	if (b->lo) /* parsing the input in place; pl_parse_file reads rings from a copy */
		inside(b, raw, len);
	switch (v->type) {
	case PL_REC_SAMPLE:
		if (v->u.sample.nframes > PL_MAX_FRAMES || !v->u.sample.weight)
			abort();
		inside(&rec, v->u.sample.ips, 8 * (size_t)v->u.sample.nframes);
		break;
	case PL_REC_START:
		inside(&rec, v->u.start.comm, v->u.start.comm_len);
		inside(&rec, v->u.start.exe, v->u.start.exe_len);
		inside(&rec, v->u.start.cwd, v->u.start.cwd_len);
		inside(&rec, v->u.start.argv, v->u.start.argv_len);
		break;
	case PL_REC_MAPS:
	case PL_REC_NOTE:
		inside(&rec, v->u.text.text, v->u.text.len);
		break;
	case PL_REC_EXEC:
		inside(&rec, v->u.exec.path, v->u.exec.len);
		break;
	}
	b->count++;
	return 0;
}

/* A failure names the file, and the offset of the bad part unless the file is too short
 * for what its header describes. */
static void expect_message(int r)
{
	const char *m = cp_last_error();
	if (r < 0 &&
	    (!strstr(m, "fuzz.pl: ") || (!strstr(m, "offset ") && !strstr(m, "describes"))))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* The reader assumes nothing about alignment; an odd copy makes sure of it. */
	uint8_t *copy = malloc(size + 1);
	if (!copy)
		return 0;
	memcpy(copy + 1, data, size);
	struct bounds b = {NULL, NULL, 0};
	expect_message(pl_parse_file(copy + 1, size, "fuzz.pl", check, &b));
	/* The same bytes as the contents of a ring, at two ring positions. */
	b = (struct bounds){copy + 1, copy + 1 + size, 0};
	expect_message(pl_parse_ring(copy + 1, size, 0, 1u << 20, 4096, "fuzz.pl", check, &b));
	if (size >= 8) {
		size_t n = size & ~(size_t)7;
		expect_message(pl_parse_ring(copy + 1, n, (1u << 20) - n, 1u << 20, 4096, "fuzz.pl",
		                             check, &b));
	}
	free(copy);
	return 0;
}
