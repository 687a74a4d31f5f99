/* Fuzz target for store/blob's decoders: any bytes must decode or be refused with a message,
 * never crash; and the coding is canonical, so whatever decodes must re-encode to the very
 * same bytes. */
#include "store/blob.h"
#include "common/error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct blob_entries out;
	blob_entries_init(&out);
	if (blob_decode(data, size, 0, &out) == 0) {
		struct strbuf sb = STRBUF_INIT;
		if (data[0] == BLOB_FORMAT_PAIRS)
			blob_encode_pairs(&sb, out.e, out.n);
		else
			blob_encode_multi(&sb, &out);
		if (sb.len != size || memcmp(sb.buf, data, size))
			abort();
		strbuf_release(&sb);
	} else if (!*cp_last_error()) {
		abort(); /* refused without saying why */
	}
	blob_entries_release(&out);
	return 0;
}
