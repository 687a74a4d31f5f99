/* Fuzz target: test-runner output (markers) and CTest JSON, as the runner receives them:
 * any bytes, in any split, must neither crash nor break the window bookkeeping. */
#include <stdint.h>
#include <stdlib.h>

#include "runner/attribution/attribute.h"
#include "runner/attribution/markers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = profile_new();
	struct attrib a;
	attrib_init(&a, p);
	struct markers m;
	markers_init(&m);
	size_t split = size ? data[0] % (size + 1) : 0;
	markers_feed(&m, &a, (const char *)data, split, 10);
	markers_feed(&m, &a, (const char *)data + split, size - split, 20);
	markers_flush(&m, &a, 30);
	for (uint64_t t = 0; t < 40; t += 5) {
		int weak;
		attrib_sample(&a, 1, 1, t, &weak);
	}
	attrib_ctest_load(&a, (const char *)data, size, "fuzz");
	char *argv[] = {"t", NULL};
	attrib_ctest_find(&a, argv, "/");
	markers_release(&m);
	attrib_release(&a);
	profile_free(p);
	return 0;
}
