/* Ring-buffer record decoding for the perf backend (see perf_record.h). Every read is
 * bounds-checked against the record's own size: the kernel is trusted, but a fuzzer is not. */
#include "runner/sample/perf_record.h"

#include <linux/perf_event.h>
#include <string.h>

const void *perf_ring_record(const unsigned char *data, uint64_t size, uint64_t tail, uint64_t head,
                             void *scratch, size_t scratch_len)
{
	uint64_t avail = head - tail;
	if (avail < sizeof(struct perf_event_header) || head < tail)
		return NULL;
	uint64_t mask = size - 1;
	uint64_t off = tail & mask;
	struct perf_event_header hdr;
	/* The header itself may straddle the end. */
	if (off + sizeof(hdr) <= size) {
		memcpy(&hdr, data + off, sizeof(hdr));
	} else {
		size_t first = (size_t)(size - off);
		memcpy(&hdr, data + off, first);
		memcpy((unsigned char *)&hdr + first, data, sizeof(hdr) - first);
	}
	/* The kernel pads every record to 8 bytes; any other size is corruption. */
	if (hdr.size < sizeof(hdr) || hdr.size > avail || hdr.size % 8)
		return NULL;
	if (off + hdr.size <= size)
		return data + off;
	if (hdr.size > scratch_len)
		return NULL;
	size_t first = (size_t)(size - off);
	memcpy(scratch, data + off, first);
	memcpy((unsigned char *)scratch + first, data, hdr.size - first);
	return scratch;
}

/* A cursor over a record's body. */
struct cur {
	const unsigned char *p, *end;
	int bad;
};

static uint64_t take_u64(struct cur *c)
{
	uint64_t v = 0;
	if (c->end - c->p < 8) {
		c->bad = 1;
		return 0;
	}
	memcpy(&v, c->p, 8);
	c->p += 8;
	return v;
}

static uint32_t take_u32(struct cur *c)
{
	uint32_t v = 0;
	if (c->end - c->p < 4) {
		c->bad = 1;
		return 0;
	}
	memcpy(&v, c->p, 4);
	c->p += 4;
	return v;
}

static struct cur body(const void *rec, size_t len)
{
	struct cur c = {(const unsigned char *)rec + sizeof(struct perf_event_header),
	                (const unsigned char *)rec + len, len < sizeof(struct perf_event_header)};
	if (c.bad)
		c.p = c.end;
	return c;
}

/* The sample_id trailer (TID then TIME) sits in the last 16 bytes of the record. */
static int trailer(const void *rec, size_t len, const unsigned char *after_body, struct perf_id *id)
{
	const unsigned char *end = (const unsigned char *)rec + len;
	if (end - after_body < 16)
		return -1;
	struct cur c = {end - 16, end, 0};
	id->pid = take_u32(&c);
	id->tid = take_u32(&c);
	id->time = take_u64(&c);
	return 0;
}

/* The fields of PERF_REC_SAMPLE_TYPE, leaving c after the callchain. */
static int parse_sample_base(struct cur *c, struct perf_sample *out)
{
	memset(out, 0, sizeof(*out));
	out->ip = take_u64(c);
	out->pid = take_u32(c);
	out->tid = take_u32(c);
	out->time = take_u64(c);
	out->period = take_u64(c);
	out->nr = take_u64(c);
	if (c->bad || out->nr > (uint64_t)(c->end - c->p) / 8)
		return -1;
	out->ips = (const uint64_t *)(const void *)c->p;
	c->p += out->nr * 8;
	return 0;
}

int perf_parse_sample(const void *rec, size_t len, struct perf_sample *out)
{
	struct cur c = body(rec, len);
	return parse_sample_base(&c, out);
}

int perf_parse_sample_user(const void *rec, size_t len, uint64_t regs_mask, struct perf_sample *out)
{
	struct cur c = body(rec, len);
	if (parse_sample_base(&c, out) < 0)
		return -1;
	/* PERF_SAMPLE_REGS_USER: the ABI, then one u64 per mask bit unless the ABI is NONE. */
	out->abi = take_u64(&c);
	if (c.bad)
		return -1;
	if (out->abi != PERF_SAMPLE_REGS_ABI_NONE) {
		uint32_t n = (uint32_t)__builtin_popcountll(regs_mask);
		if (n > (uint64_t)(c.end - c.p) / 8)
			return -1;
		out->regs = (const uint64_t *)(const void *)c.p;
		out->nregs = n;
		c.p += (size_t)n * 8;
	}
	/* PERF_SAMPLE_STACK_USER: size, size bytes, and dyn_size when size is not 0. */
	out->stack_size = take_u64(&c);
	if (c.bad)
		return -1;
	if (out->stack_size) {
		if (out->stack_size > (uint64_t)(c.end - c.p))
			return -1;
		out->stack = c.p;
		c.p += out->stack_size;
		out->stack_dyn = take_u64(&c);
		if (c.bad || out->stack_dyn > out->stack_size)
			return -1;
	}
	return 0;
}

int perf_parse_mmap2(const void *rec, size_t len, struct perf_mmap2 *out)
{
	struct cur c = body(rec, len);
	out->pid = take_u32(&c);
	out->tid = take_u32(&c);
	out->addr = take_u64(&c);
	out->len = take_u64(&c);
	out->pgoff = take_u64(&c);
	take_u32(&c); /* maj */
	take_u32(&c); /* min */
	take_u64(&c); /* ino */
	take_u64(&c); /* ino_generation */
	out->prot = take_u32(&c);
	out->flags = take_u32(&c);
	if (c.bad)
		return -1;
	const unsigned char *name = c.p;
	const unsigned char *nul = memchr(name, '\0', (size_t)(c.end - name));
	if (!nul)
		return -1;
	out->filename = (const char *)name;
	/* The name is padded to 8 bytes; the trailer follows. */
	const unsigned char *after = name + (((size_t)(nul - name) + 1 + 7) & ~(size_t)7);
	return trailer(rec, len, after, &out->id);
}

int perf_parse_comm(const void *rec, size_t len, struct perf_comm *out)
{
	const struct perf_event_header *h = rec;
	struct cur c = body(rec, len);
	out->pid = take_u32(&c);
	out->tid = take_u32(&c);
	if (c.bad)
		return -1;
	const unsigned char *nul = memchr(c.p, '\0', (size_t)(c.end - c.p));
	if (!nul)
		return -1;
	out->comm = (const char *)c.p;
	out->exec = !!(h->misc & PERF_RECORD_MISC_COMM_EXEC);
	const unsigned char *after = c.p + (((size_t)(nul - c.p) + 1 + 7) & ~(size_t)7);
	return trailer(rec, len, after, &out->id);
}

int perf_parse_task(const void *rec, size_t len, struct perf_task *out)
{
	struct cur c = body(rec, len);
	out->pid = take_u32(&c);
	out->ppid = take_u32(&c);
	out->tid = take_u32(&c);
	out->ptid = take_u32(&c);
	out->time = take_u64(&c);
	return c.bad ? -1 : 0;
}

int perf_parse_read(const void *rec, size_t len, struct perf_read *out)
{
	struct cur c = body(rec, len);
	out->pid = take_u32(&c);
	out->tid = take_u32(&c);
	out->value = take_u64(&c);
	if (c.bad)
		return -1;
	return trailer(rec, len, c.p, &out->id);
}

int perf_parse_lost(const void *rec, size_t len, struct perf_lost *out)
{
	struct cur c = body(rec, len);
	take_u64(&c); /* id */
	out->lost = take_u64(&c);
	if (c.bad)
		return -1;
	return trailer(rec, len, c.p, &out->id);
}

uint64_t perf_record_time(const void *rec, size_t len)
{
	const struct perf_event_header *h = rec;
	if (len < sizeof(*h))
		return 0;
	switch (h->type) {
	case PERF_RECORD_SAMPLE: {
		struct perf_sample s;
		return perf_parse_sample(rec, len, &s) ? 0 : s.time;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: {
		struct perf_task t;
		return perf_parse_task(rec, len, &t) ? 0 : t.time;
	}
	default: {
		/* Every other record carries the sample_id trailer. */
		struct perf_id id;
		const unsigned char *b = (const unsigned char *)rec + sizeof(*h);
		return trailer(rec, len, b, &id) ? 0 : id.time;
	}
	}
}

size_t perf_user_callchain(const struct perf_sample *s, uint64_t *out, size_t max)
{
	size_t n = 0;
	int user = 0;
	for (uint64_t i = 0; i < s->nr && n < max; i++) {
		uint64_t ip;
		memcpy(&ip, &s->ips[i], sizeof(ip));
		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			user = ip == (uint64_t)PERF_CONTEXT_USER;
			continue;
		}
		if (user)
			out[n++] = ip;
	}
	/* Without a callchain (or no user context), the sampled ip is the only frame. */
	if (!n && max && s->ip < (uint64_t)PERF_CONTEXT_MAX)
		out[n++] = s->ip;
	return n;
}
