/* Record decoding of the perf backend: records that wrap the ring's end, each record type,
 * callchain context markers, and truncated records rejected rather than over-read. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>

#include "runner/perf.h"
#include "runner/perf_record.h"

/* Builds records in a little-endian byte buffer, as the kernel lays them out. */
struct rb {
	unsigned char b[1024];
	size_t n;
};

static void put(struct rb *r, const void *p, size_t len)
{
	memcpy(r->b + r->n, p, len);
	r->n += len;
}
static void put64(struct rb *r, uint64_t v)
{
	put(r, &v, 8);
}
static void put32(struct rb *r, uint32_t v)
{
	put(r, &v, 4);
}
static void header(struct rb *r, uint32_t type, uint16_t misc)
{
	struct perf_event_header h = {type, misc, 0};
	r->n = 0;
	put(r, &h, sizeof(h));
}
static void finish(struct rb *r)
{
	((struct perf_event_header *)r->b)->size = (uint16_t)r->n;
}

static void make_sample(struct rb *r, uint32_t pid, uint32_t tid, uint64_t time,
                        const uint64_t *chain, uint64_t nr)
{
	header(r, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
	put64(r, chain[nr - 1]); /* ip */
	put32(r, pid);
	put32(r, tid);
	put64(r, time);
	put64(r, 1000000); /* period */
	put64(r, nr);
	for (uint64_t i = 0; i < nr; i++)
		put64(r, chain[i]);
	finish(r);
}

static void test_sample_and_callchain(void **state)
{
	(void)state;
	uint64_t chain[] = {(uint64_t)PERF_CONTEXT_USER, 0x401000, 0x402000, 0x403000};
	struct rb r;
	make_sample(&r, 10, 11, 12345, chain, 4);
	struct perf_sample s;
	assert_int_equal(perf_parse_sample(r.b, r.n, &s), 0);
	assert_int_equal(s.pid, 10);
	assert_int_equal(s.tid, 11);
	assert_int_equal(s.time, 12345);
	assert_int_equal(s.period, 1000000);
	assert_int_equal(s.nr, 4);
	uint64_t out[8];
	size_t n = perf_user_callchain(&s, out, 8);
	assert_int_equal(n, 3);
	assert_int_equal(out[0], 0x401000);
	assert_int_equal(out[2], 0x403000);
	assert_int_equal(perf_record_time(r.b, r.n), 12345);
	/* max truncates, keeping the leaf */
	assert_int_equal(perf_user_callchain(&s, out, 2), 2);
	assert_int_equal(out[0], 0x401000);
	/* A truncated record is rejected, not over-read. */
	assert_int_equal(perf_parse_sample(r.b, r.n - 8, &s), -1);
	assert_int_equal(perf_parse_sample(r.b, 20, &s), -1);
}

static void test_kernel_frames_skipped(void **state)
{
	(void)state;
	uint64_t chain[] = {(uint64_t)PERF_CONTEXT_KERNEL, 0xffffffff81000000ULL,
	                    (uint64_t)PERF_CONTEXT_USER, 0x401000, 0x402000};
	struct rb r;
	make_sample(&r, 1, 1, 1, chain, 5);
	struct perf_sample s;
	assert_int_equal(perf_parse_sample(r.b, r.n, &s), 0);
	uint64_t out[8];
	assert_int_equal(perf_user_callchain(&s, out, 8), 2);
	assert_int_equal(out[0], 0x401000);
}

static void test_mmap2_comm_task_lost(void **state)
{
	(void)state;
	struct rb r;
	header(&r, PERF_RECORD_MMAP2, 0);
	put32(&r, 7);
	put32(&r, 8);
	put64(&r, 0x7f0000001000);
	put64(&r, 0x2000);
	put64(&r, 0x1000);
	put32(&r, 8);
	put32(&r, 1); /* maj, min */
	put64(&r, 99);
	put64(&r, 0); /* ino, generation */
	put32(&r, 5);
	put32(&r, 2);                                    /* prot, flags */
	put(&r, "/usr/lib/libx.so\0\0\0\0\0\0\0\0", 24); /* 16 chars + NUL, padded to 24 */
	put32(&r, 7);
	put32(&r, 8);
	put64(&r, 777); /* sample_id: pid, tid, time */
	finish(&r);
	struct perf_mmap2 m;
	assert_int_equal(perf_parse_mmap2(r.b, r.n, &m), 0);
	assert_int_equal(m.pid, 7);
	assert_int_equal(m.addr, 0x7f0000001000);
	assert_int_equal(m.len, 0x2000);
	assert_int_equal(m.pgoff, 0x1000);
	assert_string_equal(m.filename, "/usr/lib/libx.so");
	assert_int_equal(m.id.time, 777);
	assert_int_equal(perf_record_time(r.b, r.n), 777);
	/* a name without its NUL inside the record is rejected */
	memset(r.b + 72, 'x', 24); /* the name starts after 64 bytes of fields */
	assert_int_equal(perf_parse_mmap2(r.b, r.n - 16, &m), -1);

	header(&r, PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
	put32(&r, 5);
	put32(&r, 5);
	put(&r, "make\0\0\0\0", 8);
	put32(&r, 5);
	put32(&r, 5);
	put64(&r, 555);
	finish(&r);
	struct perf_comm c;
	assert_int_equal(perf_parse_comm(r.b, r.n, &c), 0);
	assert_string_equal(c.comm, "make");
	assert_true(c.exec);
	assert_int_equal(c.id.time, 555);

	header(&r, PERF_RECORD_FORK, 0);
	put32(&r, 20);
	put32(&r, 10);
	put32(&r, 20);
	put32(&r, 10);
	put64(&r, 444);
	put32(&r, 20);
	put32(&r, 20);
	put64(&r, 444);
	finish(&r);
	struct perf_task t;
	assert_int_equal(perf_parse_task(r.b, r.n, &t), 0);
	assert_int_equal(t.pid, 20);
	assert_int_equal(t.ppid, 10);
	assert_int_equal(perf_record_time(r.b, r.n), 444);

	header(&r, PERF_RECORD_LOST, 0);
	put64(&r, 1);
	put64(&r, 42);
	put32(&r, 1);
	put32(&r, 1);
	put64(&r, 333);
	finish(&r);
	struct perf_lost l;
	assert_int_equal(perf_parse_lost(r.b, r.n, &l), 0);
	assert_int_equal(l.lost, 42);
	assert_int_equal(perf_record_time(r.b, r.n), 333);
}

static void test_ring_wraps(void **state)
{
	(void)state;
	/* A 64-byte ring whose record starts 16 bytes before the end and wraps. */
	unsigned char data[64];
	memset(data, 0xee, sizeof(data));
	uint64_t chain[] = {(uint64_t)PERF_CONTEXT_USER, 0xabc};
	struct rb r;
	make_sample(&r, 3, 4, 99, chain, 2);
	assert_true(r.n > 16 && r.n <= 64);
	uint64_t tail = 64 * 5 + 48; /* counters keep growing past the size */
	for (size_t i = 0; i < r.n; i++)
		data[(tail + i) & 63] = r.b[i];
	uint64_t head = tail + r.n;
	unsigned char scratch[256];
	const void *rec = perf_ring_record(data, 64, tail, head, scratch, sizeof(scratch));
	assert_non_null(rec);
	assert_ptr_equal(rec, scratch); /* it had to be copied */
	assert_memory_equal(rec, r.b, r.n);
	struct perf_sample s;
	assert_int_equal(perf_parse_sample(rec, r.n, &s), 0);
	assert_int_equal(s.time, 99);

	/* The header itself straddling the end. */
	tail = 64 * 2 + 60;
	for (size_t i = 0; i < r.n; i++)
		data[(tail + i) & 63] = r.b[i];
	rec = perf_ring_record(data, 64, tail, tail + r.n, scratch, sizeof(scratch));
	assert_non_null(rec);
	assert_memory_equal(rec, r.b, r.n);

	/* Not yet complete: head short of the record's end. */
	assert_null(perf_ring_record(data, 64, tail, tail + r.n - 8, scratch, sizeof(scratch)));
	/* A record that does not wrap is returned in place. */
	memcpy(data, r.b, r.n);
	assert_ptr_equal(perf_ring_record(data, 64, 128, 128 + r.n, scratch, sizeof(scratch)),
	                 data);
	/* A size that is not a multiple of 8 is corrupt (the kernel pads every record). */
	struct perf_event_header odd = {PERF_RECORD_SAMPLE, 0, 20};
	memcpy(data, &odd, sizeof(odd));
	assert_null(perf_ring_record(data, 64, 0, 64, scratch, sizeof(scratch)));
	/* A zero-size header is corrupt. */
	memset(data, 0, 8);
	assert_null(perf_ring_record(data, 64, 0, 64, scratch, sizeof(scratch)));
}

static void test_diagnose(void **state)
{
	(void)state;
	char *m = perf_diagnose(EACCES, 4, 0, 0, 0, 516, 0);
	assert_non_null(strstr(m, "perf_event_paranoid is 4"));
	assert_non_null(strstr(m, "sudo sysctl kernel.perf_event_paranoid=2"));
	free(m);
	m = perf_diagnose(EPERM, 2, 2, 0, 0, 516, 0);
	assert_non_null(strstr(m, "seccomp"));
	assert_non_null(strstr(m, "--privileged"));
	free(m);
	/* root in a container at paranoid 4: paranoid does not apply, the filter does */
	m = perf_diagnose(EPERM, 4, 2, 1, 0, 516, 0);
	assert_non_null(strstr(m, "seccomp"));
	assert_null(strstr(m, "sysctl kernel.perf_event_paranoid"));
	free(m);
	m = perf_diagnose(EPERM, 1, 0, 0, 1, 516, 1 << 20);
	assert_non_null(strstr(m, "locked-memory"));
	assert_non_null(strstr(m, "--ring-pages"));
	free(m);
	m = perf_diagnose(ENOSYS, 2, 2, 0, 0, 516, 0);
	assert_non_null(strstr(m, "seccomp"));
	free(m);
	m = perf_diagnose(ENOSYS, 2, 0, 0, 0, 516, 0);
	assert_non_null(strstr(m, "CONFIG_PERF_EVENTS"));
	free(m);
	m = perf_diagnose(EMFILE, 2, 0, 0, 0, 516, 0);
	assert_non_null(strstr(m, "ulimit -n"));
	free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_sample_and_callchain),
	        cmocka_unit_test(test_kernel_frames_skipped),
	        cmocka_unit_test(test_mmap2_comm_task_lost),
	        cmocka_unit_test(test_ring_wraps),
	        cmocka_unit_test(test_diagnose),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
