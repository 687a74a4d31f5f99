/* Fuzz target for the perf map parser (runner/symbols/perfmap.c): strict and lenient parsing of
 * arbitrary bytes, then lookups at and around every parsed boundary, checking the answers. */
#include "runner/symbols/symbolize.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_lookups(const struct perfmap *m)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct perfmap_entry *e = &m->entries[i];
		if (i && m->entries[i - 1].start >= e->start)
			abort(); /* sorted, equal starts merged */
		if (!e->name || !*e->name)
			abort();
		uint64_t probes[] = {e->start, e->start - 1, e->start + e->size,
		                     e->start + e->size - 1, e->start + e->size / 2};
		for (size_t j = 0; j < sizeof(probes) / sizeof(probes[0]); j++) {
			const struct perfmap_entry *hit = perfmap_lookup(m, probes[j]);
			if (hit && (probes[j] < hit->start || probes[j] - hit->start >= hit->size))
				abort(); /* a hit must cover the address */
		}
		if (e->size && !perfmap_lookup(m, e->start))
			abort(); /* an entry's own start is always covered by something */
	}
	perfmap_lookup(m, 0);
	perfmap_lookup(m, UINT64_MAX);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap m = {0};
	perfmap_parse(&m, (const char *)data, size, "fuzz.map");
	check_lookups(&m);
	size_t strict = m.n;
	perfmap_release(&m);

	perfmap_parse_lenient(&m, (const char *)data, size, "fuzz.map");
	check_lookups(&m);
	if (m.n < strict)
		abort(); /* lenient keeps at least what strict kept */
	perfmap_release(&m);
	return 0;
}
