/* Fuzz target: JUnit XML reports are parsed or refused with a message, never crash, and the
 * cases found attach to a profile. */
#include <stdint.h>

#include "model/profile.h"
#include "runner/attribution/junit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct junit j;
	junit_init(&j);
	junit_parse(&j, (const char *)data, size, "fuzz.xml");
	struct profile *p = profile_new();
	junit_attach(&j, p);
	profile_free(p);
	junit_release(&j);
	return 0;
}
