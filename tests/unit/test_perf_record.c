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

#include "runner/sample/perf.h"
#include "runner/sample/perf_record.h"

/* Builds records in a little-endian byte buffer, as the kernel lays them out. */
struct rb {
	unsigned char b[20480]; /* room for a sample with a 16 KiB stack copy */
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

	/* READ (inherit_stat, read_format 0): pid, tid, the task's own count, sample_id */
	header(&r, PERF_RECORD_READ, 0);
	put32(&r, 30);
	put32(&r, 31);
	put64(&r, 3500000);
	put32(&r, 30);
	put32(&r, 31);
	put64(&r, 555);
	finish(&r);
	struct perf_read rd;
	assert_int_equal(perf_parse_read(r.b, r.n, &rd), 0);
	assert_int_equal(rd.pid, 30);
	assert_int_equal(rd.tid, 31);
	assert_int_equal(rd.value, 3500000);
	assert_int_equal(perf_record_time(r.b, r.n), 555);
	assert_int_equal(perf_parse_read(r.b, 20, &rd), -1); /* cut short */
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

/* A --unwind dwarf sample: the callchain, then REGS_USER (abi, one u64 per mask bit) and
 * STACK_USER (size, size bytes, dyn_size). */
#define REGS_MASK 0xff01ffULL /* AX..IP and R8..R15: 17 registers */

static void make_dwarf_sample(struct rb *r, uint64_t abi, uint64_t stack_size, uint64_t dyn)
{
	uint64_t chain[] = {(uint64_t)PERF_CONTEXT_USER, 0x401000, 0x402000};
	make_sample(r, 10, 11, 777, chain, 3);
	put64(r, abi);
	if (abi != PERF_SAMPLE_REGS_ABI_NONE)
		for (uint64_t i = 0; i < 17; i++)
			put64(r, 0x1000 + i);
	put64(r, stack_size);
	if (stack_size) {
		for (uint64_t i = 0; i < stack_size; i++)
			r->b[r->n + i] = (unsigned char)(i * 7);
		r->n += stack_size;
		put64(r, dyn);
	}
	finish(r);
}

static void test_sample_regs_stack(void **state)
{
	(void)state;
	struct rb r;
	make_dwarf_sample(&r, PERF_SAMPLE_REGS_ABI_64, 8192, 6000);
	struct perf_sample s;
	assert_int_equal(perf_parse_sample_user(r.b, r.n, REGS_MASK, &s), 0);
	assert_int_equal(s.pid, 10);
	assert_int_equal(s.time, 777);
	assert_int_equal(s.nr, 3);
	assert_int_equal(s.abi, PERF_SAMPLE_REGS_ABI_64);
	assert_int_equal(s.nregs, 17);
	assert_int_equal(s.regs[0], 0x1000);  /* AX */
	assert_int_equal(s.regs[8], 0x1008);  /* IP: bit 8, the ninth value */
	assert_int_equal(s.regs[16], 0x1010); /* R15 */
	assert_int_equal(s.stack_size, 8192);
	assert_int_equal(s.stack_dyn, 6000);
	assert_int_equal(((const unsigned char *)s.stack)[5], 35);
	assert_ptr_equal(s.stack, r.b + 8 + 40 + 3 * 8 + 8 + 17 * 8 + 8);
	uint64_t out[8];
	assert_int_equal(perf_user_callchain(&s, out, 8), 2);
	assert_int_equal(out[1], 0x402000);
	/* The frame-pointer layout's fields read the same from such a record. */
	assert_int_equal(perf_record_time(r.b, r.n), 777);
	struct perf_sample fp;
	assert_int_equal(perf_parse_sample(r.b, r.n, &fp), 0);
	assert_int_equal(fp.nr, 3);
	assert_null(fp.stack);
	assert_int_equal(fp.nregs, 0);

	/* The kernel could take neither registers nor stack (ABI NONE, size 0): valid. */
	make_dwarf_sample(&r, PERF_SAMPLE_REGS_ABI_NONE, 0, 0);
	assert_int_equal(perf_parse_sample_user(r.b, r.n, REGS_MASK, &s), 0);
	assert_int_equal(s.nregs, 0);
	assert_null(s.regs);
	assert_null(s.stack);
	assert_int_equal(s.stack_dyn, 0);
	/* Registers but an empty copy (dyn_size 0). */
	make_dwarf_sample(&r, PERF_SAMPLE_REGS_ABI_64, 64, 0);
	assert_int_equal(perf_parse_sample_user(r.b, r.n, REGS_MASK, &s), 0);
	assert_int_equal(s.stack_dyn, 0);
}

static void test_sample_regs_stack_malformed(void **state)
{
	(void)state;
	struct rb r;
	struct perf_sample s;
	/* dyn_size larger than the room: corrupt. */
	make_dwarf_sample(&r, PERF_SAMPLE_REGS_ABI_64, 64, 72);
	assert_int_equal(perf_parse_sample_user(r.b, r.n, REGS_MASK, &s), -1);
	/* Every truncation of a good record is rejected, never over-read. */
	make_dwarf_sample(&r, PERF_SAMPLE_REGS_ABI_64, 256, 200);
	for (size_t len = 0; len < r.n; len += 8)
		assert_int_equal(perf_parse_sample_user(r.b, len, REGS_MASK, &s), -1);
	assert_int_equal(perf_parse_sample_user(r.b, r.n, REGS_MASK, &s), 0);
	/* A mask naming more registers than the record holds. */
	assert_int_equal(perf_parse_sample_user(r.b, r.n, ~0ULL, &s), -1);
	/* A stack size claiming more than the record (and one that would wrap a pointer). */
	size_t size_at = 8 + 40 + 3 * 8 + 8 + 17 * 8;
	uint64_t big = 1ULL << 20;
	memcpy(r.b + size_at, &big, 8);
	assert_int_equal(perf_parse_sample_user(r.b, r.n, REGS_MASK, &s), -1);
	big = UINT64_MAX - 7;
	memcpy(r.b + size_at, &big, 8);
	assert_int_equal(perf_parse_sample_user(r.b, r.n, REGS_MASK, &s), -1);
	/* A bad callchain length still fails first. */
	make_dwarf_sample(&r, PERF_SAMPLE_REGS_ABI_64, 64, 64);
	uint64_t nr = 1ULL << 40;
	memcpy(r.b + 8 + 32, &nr, 8);
	assert_int_equal(perf_parse_sample_user(r.b, r.n, REGS_MASK, &s), -1);
}

static void test_ring_wraps_big_sample(void **state)
{
	(void)state;
	/* A 16 KiB stack sample wrapping the end of a 32 KiB ring: copied whole. */
	static unsigned char data[32768];
	static uint64_t scratch[65536 / 8];
	struct rb r;
	make_dwarf_sample(&r, PERF_SAMPLE_REGS_ABI_64, 16384, 16384);
	assert_true(r.n > 16384 && r.n < 65536);
	uint64_t tail = 32768 * 3 + 32768 - 4096;
	for (size_t i = 0; i < r.n; i++)
		data[(tail + i) & 32767] = r.b[i];
	const void *rec = perf_ring_record(data, 32768, tail, tail + r.n, scratch, sizeof(scratch));
	assert_ptr_equal(rec, scratch);
	struct perf_sample s;
	assert_int_equal(perf_parse_sample_user(rec, r.n, REGS_MASK, &s), 0);
	assert_int_equal(s.stack_dyn, 16384);
	assert_memory_equal(s.stack, r.b + (r.n - 8 - 16384), 16384);
	/* scratch too small for it: refused rather than overrun */
	assert_null(perf_ring_record(data, 32768, tail, tail + r.n, scratch, 8192));
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
	        cmocka_unit_test(test_sample_regs_stack),
	        cmocka_unit_test(test_sample_regs_stack_malformed),
	        cmocka_unit_test(test_ring_wraps_big_sample),
	        cmocka_unit_test(test_diagnose),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
