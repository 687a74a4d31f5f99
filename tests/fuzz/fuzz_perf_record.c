/* Fuzz target: ring-buffer records. The bytes form a ring; every record read from it is parsed
 * as each record type, so no length field can make a parser read past the record. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runner/perf_record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t ringsize = 1;
	while (ringsize * 2 <= size && ringsize < (1u << 16))
		ringsize *= 2;
	if (size < 8)
		return 0;
	unsigned char *ring = malloc(ringsize);
	memcpy(ring, data, ringsize);
	uint64_t scratch[65536 / 8];
	uint64_t tail = size & 7 ? ringsize - 8 : 0; /* sometimes start near the end: wrap */
	uint64_t head = tail + ringsize;
	for (int i = 0; i < 64; i++) {
		const struct {
			uint32_t type;
			uint16_t misc, size;
		} *h = perf_ring_record(ring, ringsize, tail, head, scratch, sizeof(scratch));
		if (!h)
			break;
		/* Parsers need 8-byte alignment: copy, as the backend does. */
		uint64_t *rec = malloc(h->size + 8u);
		memcpy(rec, h, h->size);
		struct perf_sample s;
		struct perf_mmap2 m;
		struct perf_comm c;
		struct perf_task t;
		struct perf_lost l;
		if (perf_parse_sample(rec, h->size, &s) == 0) {
			uint64_t out[128];
			perf_user_callchain(&s, out, 128);
		}
		perf_parse_mmap2(rec, h->size, &m);
		perf_parse_comm(rec, h->size, &c);
		perf_parse_task(rec, h->size, &t);
		perf_parse_lost(rec, h->size, &l);
		perf_record_time(rec, h->size);
		tail += h->size;
		free(rec);
	}
	free(ring);
	return 0;
}
