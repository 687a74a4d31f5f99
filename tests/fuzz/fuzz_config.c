/* Fuzz target: .ciprof.yml. Any bytes are parsed or refused with a message, never crash. */
#include <stdint.h>

#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config c;
	config_init(&c);
	config_parse(&c, (const char *)data, size, "fuzz.yml");
	config_release(&c);
	return 0;
}
