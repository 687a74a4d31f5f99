/* Fuzz target: /proc/stat's text (the run's host.other_cpus measure) is read or refused with a
 * message, never past its end, whatever it holds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runner/meta/gitmeta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* host_busy_mark reads at most 511 bytes and ends them with a NUL: so does this. */
	size_t n = size < 511 ? size : 511;
	char *text = malloc(n + 1);
	if (!text)
		return 0;
	memcpy(text, data, n);
	text[n] = 0;
	double busy;
	host_parse_stat(text, "fuzz", &busy);
	free(text);
	return 0;
}
