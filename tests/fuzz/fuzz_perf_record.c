/* Fuzz target: ring-buffer records. The bytes form a ring; every record read from it is parsed
 * as each record type (samples in both the frame-pointer and the --unwind dwarf layout, whose
 * registers and stack copy are read in full), so no length field can make a parser read past
 * the record. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runner/sample/perf_record.h"
#include "runner/sample/unwind.h"

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
		const void *h =
		        perf_ring_record(ring, ringsize, tail, head, scratch, sizeof(scratch));
		if (!h)
			break;
		uint16_t rec_size;
		memcpy(&rec_size, (const char *)h + 6, sizeof(rec_size));
		/* Parsers need 8-byte alignment: copy, as the backend does. */
		uint64_t *rec = malloc(rec_size + 8u);
		memcpy(rec, h, rec_size);
		struct perf_sample s;
		struct perf_mmap2 m;
		struct perf_comm c;
		struct perf_task t;
		struct perf_lost l;
		struct perf_read rd;
		if (perf_parse_sample(rec, rec_size, &s) == 0) {
			uint64_t out[128];
			perf_user_callchain(&s, out, 128);
		}
		if (perf_parse_sample_user(rec, rec_size, UNWIND_PERF_REGS_MASK, &s) == 0) {
			struct unwind_regs regs;
			unwind_regs_from_perf(&regs, UNWIND_PERF_REGS_MASK, s.regs, s.nregs);
			/* Touch every byte the parser vouched for. */
			volatile unsigned char sum = 0;
			for (uint64_t k = 0; k < s.stack_dyn; k++)
				sum += ((const unsigned char *)s.stack)[k];
			(void)sum;
		}
		perf_parse_mmap2(rec, rec_size, &m);
		perf_parse_comm(rec, rec_size, &c);
		perf_parse_task(rec, rec_size, &t);
		perf_parse_lost(rec, rec_size, &l);
		perf_parse_read(rec, rec_size, &rd);
		perf_record_time(rec, rec_size);
		tail += rec_size;
		free(rec);
	}
	free(ring);
	return 0;
}
