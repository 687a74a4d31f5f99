/* Decoding of perf_event_open ring-buffer records, free of system calls so it can be unit
 * tested and fuzzed: reading a record that wraps the ring's end, and parsing the SAMPLE,
 * MMAP2, COMM, FORK/EXIT and LOST records that the perf backend asks for. */
#ifndef CP_PERF_RECORD_H
#define CP_PERF_RECORD_H

#include <stddef.h>
#include <stdint.h>

/* The sample_type the backend requests; perf_parse_sample assumes exactly this layout. */
#define PERF_REC_SAMPLE_TYPE                                                                       \
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD |                \
	 PERF_SAMPLE_CALLCHAIN)
/* With --unwind dwarf: the same plus the user registers and a copy of the user stack, which
 * the kernel places after the callchain; perf_parse_sample_user reads this layout. */
#define PERF_REC_SAMPLE_TYPE_DWARF                                                                 \
	(PERF_REC_SAMPLE_TYPE | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)

/*
 * Returns a pointer to the whole record starting at ring position tail (an ever-growing
 * counter; the byte is data[tail & (size - 1)]), or NULL when fewer than a header's or the
 * record's bytes lie between tail and head, or the header's size is invalid (< 8, or not a
 * multiple of 8 as the kernel's records always are).
 * A record that wraps the end of data is copied into scratch (scratch_len >= 65536 holds any
 * record, as a record's size is a u16). size must be a power of two.
 */
const void *perf_ring_record(const unsigned char *data, uint64_t size, uint64_t tail, uint64_t head,
                             void *scratch, size_t scratch_len);

/* Trailer of every non-sample record (sample_id_all with TID|TIME). */
struct perf_id {
	uint32_t pid, tid;
	uint64_t time;
};

struct perf_sample {
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint64_t period;
	uint64_t nr;         /* callchain entries, context markers included */
	const uint64_t *ips; /* points into the record; may be unaligned-safe copies only */
	/* PERF_SAMPLE_REGS_USER and PERF_SAMPLE_STACK_USER (perf_parse_sample_user only; zero
	 * and NULL otherwise). All pointers point into the record. */
	uint64_t abi;         /* PERF_SAMPLE_REGS_ABI_NONE (no registers), _32 or _64 */
	const uint64_t *regs; /* nregs values, one per bit of sample_regs_user, ascending */
	uint32_t nregs;       /* 0 when abi is NONE */
	const void *stack;    /* stack_size bytes copied from the user SP upward, or NULL */
	uint64_t stack_size;  /* bytes of room in the record */
	uint64_t stack_dyn;   /* of them, bytes really copied (<= stack_size) */
};

struct perf_mmap2 {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint32_t prot, flags;
	const char *filename; /* NUL-terminated inside the record */
	struct perf_id id;
};

struct perf_comm {
	uint32_t pid, tid;
	const char *comm;
	int exec; /* PERF_RECORD_MISC_COMM_EXEC: the process exec'd */
	struct perf_id id;
};

struct perf_task { /* FORK and EXIT */
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

/* PERF_RECORD_READ with read_format 0: an exiting task's own count (inherit_stat). */
struct perf_read {
	uint32_t pid, tid;
	uint64_t value;
	struct perf_id id;
};

struct perf_lost {
	uint64_t lost;
	struct perf_id id;
};

/* Each parses one record of its type (header included, len = header.size); 0 or -1 when
 * the record is shorter than its fields say. Records must be 8-byte aligned. */
int perf_parse_sample(const void *rec, size_t len, struct perf_sample *out);
/*
 * Parses a sample of PERF_REC_SAMPLE_TYPE_DWARF, regs_mask being the sample_regs_user asked
 * for. -1 when the record is shorter than its fields say, or a stack's dyn_size exceeds its
 * size; a sample whose registers (ABI NONE) or stack (size 0) the kernel could not take is
 * valid, with nregs or stack_dyn 0.
 */
int perf_parse_sample_user(const void *rec, size_t len, uint64_t regs_mask,
                           struct perf_sample *out);
int perf_parse_mmap2(const void *rec, size_t len, struct perf_mmap2 *out);
int perf_parse_comm(const void *rec, size_t len, struct perf_comm *out);
int perf_parse_read(const void *rec, size_t len, struct perf_read *out);
int perf_parse_task(const void *rec, size_t len, struct perf_task *out);
int perf_parse_lost(const void *rec, size_t len, struct perf_lost *out);
/* Timestamp of any record type the backend receives, from its trailer or body; 0 if none. */
uint64_t perf_record_time(const void *rec, size_t len);

/*
 * The user-space frames of a sample's callchain, leaf first: skips context markers
 * (PERF_CONTEXT_*) and kernel frames, keeps at most max. Returns how many were written.
 */
size_t perf_user_callchain(const struct perf_sample *s, uint64_t *out, size_t max);

#endif
