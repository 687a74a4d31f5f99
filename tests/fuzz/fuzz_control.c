/* Fuzz target: CIPROF_CONTROL_FD lines ("begin TID NAME", "end TID NAME", "proc PID NAME"),
 * one per newline; malformed lines are refused with a message, never crash. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "runner/attribution/attribute.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = profile_new();
	struct attrib a;
	attrib_init(&a, p);
	char *text = xstrndup((const char *)data, size);
	uint64_t t = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		attrib_control_line(&a, line, t += 7);
		int weak;
		attrib_sample(&a, 1, (pid_t)(t % 5), t, &weak);
	}
	free(text);
	attrib_release(&a);
	profile_free(p);
	return 0;
}
