/* Fuzz target: the folded-stack parser must reject or accept any bytes without crashing,
 * and whatever it accepts must write back out as valid folded text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = profile_new();
	if (profile_parse_folded(p, (const char *)data, size, "fuzz") == 0) {
		FILE *null = fopen("/dev/null", "w");
		if (null) {
			profile_write_folded(p, null, NULL);
			fclose(null);
		}
		struct profile_func *f;
		profile_functions(p, NULL, &f);
		free(f);
	}
	profile_free(p);
	return 0;
}
