/* Fuzz target: the regex complexity check. Any bytes are measured without reading past the
 * end; a pattern the check accepts must compile within the fuzzer's memory limit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/regex_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *pat = malloc(size + 1);
	if (!pat)
		return 0;
	memcpy(pat, data, size);
	pat[size] = '\0';
	regex_t re;
	if (regex_compile(&re, pat, REG_NOSUB) == 0)
		regfree(&re);
	free(pat);
	return 0;
}
