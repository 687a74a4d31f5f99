/* Fuzz target: the pprof reader must reject or accept any bytes (gzip'd or not) without
 * crashing or reading out of bounds, and whatever it accepts must write back out as pprof. */
#include <stdint.h>
#include <stdlib.h>

#include "model/profile.h"
#include "common/strbuf.h"
#include "export/pprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = profile_new();
	if (pprof_read(p, data, size, "fuzz", NULL, "fuzz", NULL) == 0) {
		struct strbuf out = STRBUF_INIT;
		pprof_write(p, NULL, NULL, &out);
		strbuf_release(&out);
	}
	profile_free(p);
	return 0;
}
