/* The reader of the LD_PRELOAD backend's sample files (runner/sample/preload_backend.c):
 * well-formed files built here as the sampler writes them, and malformed ones, each of which must
 * give a clear error naming the file and the offset of the bad part. */
#include "common/error.h"
#include "common/xalloc.h"
#include "runner/sample/preload_backend.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define RING  4096
#define ERING (2 * PL_MAX_EVENT)

/* A file with two sample rings, built in memory. */
struct file {
	unsigned char *buf;
	size_t len;
	struct pl_header h;
};

static void file_new(struct file *f)
{
	memset(&f->h, 0, sizeof(f->h));
	memcpy(f->h.magic, PL_MAGIC, 8);
	f->h.version = PL_VERSION;
	f->h.nslots = 2;
	f->h.header_size = pl_header_size(2);
	f->h.ring_size = RING;
	f->h.event_ring_size = ERING;
	f->h.pid = 4242;
	f->h.start_ns = 1000;
	f->len = (size_t)pl_file_size(&f->h);
	f->buf = xcalloc(1, f->len);
	memcpy(f->buf, &f->h, sizeof(f->h));
}

static struct pl_slot *slot(struct file *f, uint32_t i)
{
	return (struct pl_slot *)(f->buf + PL_SLOT_TABLE_OFFSET) + i;
}

static uint32_t ring_len(struct file *f, uint32_t i)
{
	return i ? f->h.ring_size : f->h.event_ring_size;
}

/* Appends len bytes of record to ring i as the sampler does (a PAD when it would wrap). */
static void put(struct file *f, uint32_t i, const void *rec, uint32_t len)
{
	struct pl_slot *s = slot(f, i);
	uint32_t size = ring_len(f, i);
	unsigned char *ring = f->buf + pl_ring_offset(&f->h, i);
	uint64_t off = s->head & (size - 1);
	if (size - off < len) {
		struct pl_rec pad = {PL_REC_PAD, 0, (uint32_t)(size - off), 0};
		memcpy(ring + off, &pad, 8);
		s->head += size - off;
		off = 0;
	}
	memcpy(ring + off, rec, len);
	s->head += len;
}

static void put_sample(struct file *f, uint32_t i, int32_t tid, uint64_t t, uint32_t n)
{
	unsigned char b[sizeof(struct pl_sample) + 8 * 8];
	struct pl_sample s = {{PL_REC_SAMPLE, 0, (uint32_t)(sizeof(s) + 8 * n), t}, tid, n, 1};
	memcpy(b, &s, sizeof(s));
	for (uint32_t k = 0; k < n; k++) {
		uint64_t ip = 0x400000 + 16 * k;
		memcpy(b + sizeof(s) + 8 * k, &ip, 8);
	}
	put(f, i, b, s.h.size);
}

static void put_text(struct file *f, uint16_t type, const char *text, uint64_t t)
{
	unsigned char b[1024] = {0};
	struct pl_text h = {{type, 0, 0, t}, (uint32_t)strlen(text), 0};
	h.h.size = (uint32_t)((sizeof(h) + h.len + 7) & ~7u);
	memcpy(b, &h, sizeof(h));
	memcpy(b + sizeof(h), text, h.len);
	put(f, 0, b, h.h.size);
}

static void put_start(struct file *f, uint64_t t)
{
	unsigned char b[256] = {0};
	const char strings[] = "prog/usr/bin/prog/srcprog\0-x\0";
	struct pl_start h = {{PL_REC_START, PL_START_EXEC, 0, t}, 4242, 1, 4, 13, 4, 8};
	h.h.size = (uint32_t)((sizeof(h) + 29 + 7) & ~7u);
	memcpy(b, &h, sizeof(h));
	memcpy(b + sizeof(h), strings, 29);
	put(f, 0, b, h.h.size);
}

struct seen {
	int types[64];
	uint64_t times[64];
	int n;
	struct pl_view last_sample, start, exec;
	char text[256];
	char strings[256]; /* the start record's strings, copied: views point into the reader's
	                      buffer */
	char path[64];
};

static int collect(void *ctx, const struct pl_view *v, const unsigned char *raw, size_t len)
{
	struct seen *s = ctx;
	(void)raw;
	(void)len;
	if (s->n < 64) {
		s->types[s->n] = v->type;
		s->times[s->n++] = v->time;
	}
	if (v->type == PL_REC_SAMPLE)
		s->last_sample = *v;
	if (v->type == PL_REC_START) {
		s->start = *v;
		size_t n = (size_t)v->u.start.comm_len + v->u.start.exe_len + v->u.start.cwd_len +
		           v->u.start.argv_len;
		memcpy(s->strings, v->u.start.comm,
		       n < sizeof(s->strings) ? n : sizeof(s->strings));
	}
	if (v->type == PL_REC_EXEC) {
		s->exec = *v;
		snprintf(s->path, sizeof(s->path), "%.*s", (int)v->u.exec.len, v->u.exec.path);
	}
	if (v->type == PL_REC_MAPS)
		snprintf(s->text, sizeof(s->text), "%.*s", (int)v->u.text.len, v->u.text.text);
	return 0;
}

static void expect_error(struct file *f, const char *what, uint64_t offset)
{
	struct seen s = {0};
	assert_int_equal(pl_parse_file(f->buf, f->len, "t.pl", collect, &s), -1);
	const char *msg = cp_last_error();
	char where[64];
	snprintf(where, sizeof(where), "offset %llu", (unsigned long long)offset);
	if (!strstr(msg, "t.pl") || !strstr(msg, what) ||
	    (offset != UINT64_MAX && !strstr(msg, where)))
		fail_msg("error '%s' should name t.pl, '%s' and '%s'", msg, what, where);
}

static void test_good_file(void **state)
{
	(void)state;
	struct file f;
	file_new(&f);
	put_start(&f, 1000);
	put_text(&f, PL_REC_MAPS, "00400000-00401000 r-xp 00000000 08:01 12 /usr/bin/prog\n", 1001);
	struct pl_thread th = {{PL_REC_THREAD, PL_THREAD_BEGIN, sizeof(th), 1002}, 4243, 0};
	put(&f, 0, &th, sizeof(th));
	unsigned char eb[64] = {0};
	struct pl_exec ex = {{PL_REC_EXEC, PL_EXEC_STATIC, 40, 1003}, 4244, 9};
	memcpy(eb, &ex, sizeof(ex));
	memcpy(eb + sizeof(ex), "/bin/stat", 9);
	put(&f, 0, eb, 40);
	put_sample(&f, 1, 4242, 2000, 3);
	put_sample(&f, 2, 4243, 2001, 0);
	struct seen s = {0};
	assert_int_equal(pl_parse_file(f.buf, f.len, "t.pl", collect, &s), 0);
	assert_int_equal(s.n, 6);
	assert_int_equal(s.types[0], PL_REC_START);
	assert_int_equal(s.types[1], PL_REC_MAPS);
	assert_int_equal(s.types[2], PL_REC_THREAD);
	assert_int_equal(s.types[3], PL_REC_EXEC);
	assert_int_equal(s.types[4], PL_REC_SAMPLE);
	assert_int_equal(s.types[5], PL_REC_SAMPLE);
	assert_string_equal(s.text, "00400000-00401000 r-xp 00000000 08:01 12 /usr/bin/prog\n");
	assert_int_equal(s.start.u.start.pid, 4242);
	assert_int_equal(s.start.u.start.comm_len, 4);
	assert_int_equal(s.start.u.start.exe_len, 13);
	assert_int_equal(s.start.u.start.cwd_len, 4);
	assert_int_equal(s.start.u.start.argv_len, 8);
	assert_memory_equal(s.strings, "prog/usr/bin/prog/srcprog\0-x\0", 29);
	assert_int_equal(s.exec.u.exec.pid, 4244);
	assert_int_equal(s.exec.flags, PL_EXEC_STATIC);
	assert_string_equal(s.path, "/bin/stat");
	assert_int_equal(s.last_sample.u.sample.nframes, 0);
	free(f.buf);
}

/* Samples that wrap the ring's end (with a PAD), read from a tail that is not 0. */
static void test_wrap(void **state)
{
	(void)state;
	struct file f;
	file_new(&f);
	put_start(&f, 1);
	uint64_t t = 10;
	int expected = 0;
	for (int k = 0; k < 60; k++) {
		put_sample(&f, 1, 4242, t++, 7);
		if (slot(&f, 1)->head - slot(&f, 1)->tail > RING - 200) {
			/* The runner read what was there: move the tail up to the head. */
			struct seen s = {0};
			assert_int_equal(pl_parse_file(f.buf, f.len, "t.pl", collect, &s), 0);
			expected += s.n - 1;
			slot(&f, 1)->tail = slot(&f, 1)->head;
			slot(&f, 0)->tail = slot(&f, 0)->head;
			put_start(&f, t);
		}
	}
	struct seen s = {0};
	assert_int_equal(pl_parse_file(f.buf, f.len, "t.pl", collect, &s), 0);
	expected += s.n - 1;
	assert_int_equal(expected, 60);
	assert_true(slot(&f, 1)->head > RING); /* it did wrap */
	/* times come out in order */
	for (int i = 2; i < s.n; i++)
		assert_true(s.times[i] > s.times[i - 1]);
	free(f.buf);
}

static void test_bad_header(void **state)
{
	(void)state;
	struct file f;
	file_new(&f);
	f.buf[0] = 'X';
	expect_error(&f, "bad magic", 0);
	free(f.buf);

	file_new(&f);
	((struct pl_header *)f.buf)->version = 99;
	expect_error(&f, "version 99", 8);
	free(f.buf);

	file_new(&f);
	((struct pl_header *)f.buf)->ring_size = 5000;
	expect_error(&f, "power of two", 20);
	free(f.buf);

	file_new(&f);
	((struct pl_header *)f.buf)->nslots = 1000;
	expect_error(&f, "ring count", 16);
	free(f.buf);

	file_new(&f);
	f.len -= 1; /* truncated */
	expect_error(&f, "describes", UINT64_MAX);
	f.len = 100;
	expect_error(&f, "shorter than a sample-file header", 0);
	free(f.buf);
}

static void test_bad_span(void **state)
{
	(void)state;
	struct file f;
	file_new(&f);
	slot(&f, 2)->head = 3 * RING;
	expect_error(&f, "more than the ring apart",
	             PL_SLOT_TABLE_OFFSET + 2 * sizeof(struct pl_slot));
	slot(&f, 2)->head = 0;
	slot(&f, 2)->tail = 8; /* tail beyond head */
	expect_error(&f, "more than the ring apart",
	             PL_SLOT_TABLE_OFFSET + 2 * sizeof(struct pl_slot));
	free(f.buf);
}

static void test_bad_records(void **state)
{
	(void)state;
	struct file f;
	uint64_t ring1 = 0;
	struct pl_rec *r;

	/* A sample whose size is not a multiple of 8, after a good one. */
	file_new(&f);
	ring1 = pl_ring_offset(&f.h, 1);
	put_sample(&f, 1, 7, 5, 2);
	put_sample(&f, 1, 7, 6, 2);
	r = (struct pl_rec *)(f.buf + ring1 + 48);
	r->size = 44;
	struct seen s = {0};
	assert_int_equal(pl_parse_file(f.buf, f.len, "t.pl", collect, &s), -1);
	assert_int_equal(s.n, 1); /* the record before the bad one was read */
	expect_error(&f, "multiple of 8", ring1 + 48);
	free(f.buf);

	/* A sample claiming more frames than its size holds. */
	file_new(&f);
	ring1 = pl_ring_offset(&f.h, 1);
	put_sample(&f, 1, 7, 5, 2);
	((struct pl_sample *)(f.buf + ring1))->nframes = 3;
	expect_error(&f, "frame count", ring1);
	((struct pl_sample *)(f.buf + ring1))->nframes = 100000;
	expect_error(&f, "more frames", ring1);
	((struct pl_sample *)(f.buf + ring1))->nframes = 2;
	((struct pl_sample *)(f.buf + ring1))->weight = 0;
	expect_error(&f, "weight", ring1);
	((struct pl_sample *)(f.buf + ring1))->weight = 1;
	((struct pl_sample *)(f.buf + ring1))->tid = -1;
	expect_error(&f, "thread id", ring1);
	free(f.buf);

	/* A record running past the head, and past the ring's end. */
	file_new(&f);
	ring1 = pl_ring_offset(&f.h, 1);
	put_sample(&f, 1, 7, 5, 2);
	slot(&f, 1)->head -= 8;
	expect_error(&f, "past the ring's head", ring1);
	slot(&f, 1)->tail = slot(&f, 1)->head = RING - 16;
	slot(&f, 1)->head += 16;
	r = (struct pl_rec *)(f.buf + ring1 + RING - 16);
	*r = (struct pl_rec){PL_REC_SAMPLE, 0, 48, 0};
	expect_error(&f, "past the end of its ring", ring1 + RING - 16);
	/* Padding must reach the ring's end exactly. */
	*r = (struct pl_rec){PL_REC_PAD, 0, 8, 0};
	expect_error(&f, "padding", ring1 + RING - 16);
	r->size = 16;
	struct seen ok = {0};
	assert_int_equal(pl_parse_file(f.buf, f.len, "t.pl", collect, &ok), 0);
	assert_int_equal(ok.n, 0);
	free(f.buf);

	/* Start and text records whose strings overrun them. */
	file_new(&f);
	put_start(&f, 1);
	((struct pl_start *)(f.buf + f.h.header_size))->exe_len = 5000;
	expect_error(&f, "overrun", f.h.header_size);
	((struct pl_start *)(f.buf + f.h.header_size))->exe_len = 13;
	((struct pl_start *)(f.buf + f.h.header_size))->h.flags = 0;
	expect_error(&f, "neither fork nor exec", f.h.header_size);
	free(f.buf);

	file_new(&f);
	put_text(&f, PL_REC_NOTE, "hello", 1);
	((struct pl_text *)(f.buf + f.h.header_size))->len = 100;
	expect_error(&f, "overruns", f.h.header_size);
	free(f.buf);

	/* An incomplete header at the head. */
	file_new(&f);
	slot(&f, 1)->head = 4;
	expect_error(&f, "incomplete record header", pl_ring_offset(&f.h, 1));
	free(f.buf);
}

static void test_unknown_type_skipped(void **state)
{
	(void)state;
	struct file f;
	file_new(&f);
	struct pl_rec future = {200, 0, 24, 3};
	unsigned char b[24] = {0};
	memcpy(b, &future, sizeof(future));
	put(&f, 0, b, 24);
	put_text(&f, PL_REC_NOTE, "after", 4);
	struct seen s = {0};
	assert_int_equal(pl_parse_file(f.buf, f.len, "t.pl", collect, &s), 0);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.types[0], 200);
	assert_int_equal(s.types[1], PL_REC_NOTE);
	free(f.buf);
}

static void test_record_alone(void **state)
{
	(void)state;
	struct pl_view v;
	struct pl_rec h = {PL_REC_THREAD, 0, 24, 0};
	unsigned char b[24] = {0};
	memcpy(b, &h, sizeof(h));
	assert_int_equal(pl_parse_record(b, 16, &v, "x.pl", 77), -1);
	assert_non_null(strstr(cp_last_error(), "x.pl: offset 77"));
	assert_int_equal(pl_parse_record(b, 24, &v, "x.pl", 77), -1); /* tid 0 */
	int32_t tid = 9;
	memcpy(b + 16, &tid, 4);
	assert_int_equal(pl_parse_record(b, 24, &v, "x.pl", 77), 0);
	assert_int_equal(v.u.thread.tid, 9);
}

/* A sample with its stack copy (PL_SAMPLE_STACK): the copy's registers and bytes reach the
 * view; a copy of a size the sampler never takes, or a record size that disagrees, is an
 * error naming the file and offset. */
static void test_sample_stack(void **state)
{
	(void)state;
	unsigned char b[sizeof(struct pl_sample) + 8 + sizeof(struct pl_stack) + PL_STACK_COPY + 8];
	struct pl_view v;
	struct pl_sample smp = {{PL_REC_SAMPLE, PL_SAMPLE_STACK, 0, 5}, 7, 1, 1};
	struct pl_stack st = {0x7ffc0000, 0x7ffc0040, 16, 0};
	uint64_t ip = 0x401000, words[2] = {0x401234, 0x7ffc0080};
	size_t at = sizeof(smp) + 8;
	smp.h.size = (uint32_t)(at + sizeof(st) + 16);
	memcpy(b, &smp, sizeof(smp));
	memcpy(b + sizeof(smp), &ip, 8);
	memcpy(b + at, &st, sizeof(st));
	memcpy(b + at + sizeof(st), words, 16);
	assert_int_equal(pl_parse_record(b, smp.h.size, &v, "s.pl", 8), 0);
	assert_int_equal(v.u.sample.nframes, 1);
	assert_int_equal(v.u.sample.sp, 0x7ffc0000);
	assert_int_equal(v.u.sample.bp, 0x7ffc0040);
	assert_int_equal(v.u.sample.stack_len, 16);
	assert_ptr_equal(v.u.sample.stack, b + at + sizeof(st));
	/* without the flag, the same bytes are a sample whose size disagrees */
	b[2] = 0;
	assert_int_equal(pl_parse_record(b, smp.h.size, &v, "s.pl", 8), -1);
	assert_non_null(strstr(cp_last_error(), "disagrees with its frame count"));
	b[2] = PL_SAMPLE_STACK;
	/* a copy that is not whole words */
	st.len = 12;
	memcpy(b + at, &st, sizeof(st));
	assert_int_equal(pl_parse_record(b, smp.h.size, &v, "s.pl", 8), -1);
	assert_non_null(strstr(cp_last_error(), "s.pl: offset 8: sample's stack copy"));
	/* a copy larger than the sampler takes */
	st.len = PL_STACK_COPY + 8;
	memcpy(b + at, &st, sizeof(st));
	smp.h.size = (uint32_t)(at + sizeof(st) + st.len);
	memcpy(b, &smp, sizeof(smp));
	assert_int_equal(pl_parse_record(b, smp.h.size, &v, "s.pl", 8), -1);
	assert_non_null(strstr(cp_last_error(), "stack copy of a size the sampler never takes"));
	/* a copy whose length runs past the record */
	st.len = 32;
	memcpy(b + at, &st, sizeof(st));
	smp.h.size = (uint32_t)(at + sizeof(st) + 16);
	memcpy(b, &smp, sizeof(smp));
	assert_int_equal(pl_parse_record(b, smp.h.size, &v, "s.pl", 8), -1);
	assert_non_null(strstr(cp_last_error(), "disagrees with its frame count and stack copy"));
	/* too short for the copy's header */
	smp.h.size = (uint32_t)(at + 8);
	memcpy(b, &smp, sizeof(smp));
	assert_int_equal(pl_parse_record(b, smp.h.size, &v, "s.pl", 8), -1);
	assert_non_null(strstr(cp_last_error(), "too short for its stack copy"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_good_file),    cmocka_unit_test(test_wrap),
	        cmocka_unit_test(test_bad_header),   cmocka_unit_test(test_bad_span),
	        cmocka_unit_test(test_bad_records),  cmocka_unit_test(test_unknown_type_skipped),
	        cmocka_unit_test(test_record_alone), cmocka_unit_test(test_sample_stack),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
