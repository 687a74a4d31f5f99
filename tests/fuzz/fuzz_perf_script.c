/* Fuzz target: the perf script text reader must reject or accept any bytes without crashing,
 * and whatever it accepts must write out as folded text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/profile.h"
#include "export/perf_script.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = profile_new();
	if (perf_script_parse(p, (const char *)data, size, "fuzz", NULL) == 0) {
		FILE *null = fopen("/dev/null", "w");
		if (null) {
			profile_write_folded(p, null, NULL);
			fclose(null);
		}
	}
	profile_free(p);
	return 0;
}
