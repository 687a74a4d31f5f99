/* Fuzz target for the store's decoders - profile blobs (schema 1's pairs and multi, schema 2's
 * full and delta) and dictionary chunks (strings, frames, stack nodes), chosen by the first
 * byte as the store does. Any input must decode or be refused with a message, never crash;
 * and every coding but zlib's is canonical, so whatever decodes must re-encode to the very
 * same bytes (string chunks, and node chunks of the old 0x23 format, which is read but no
 * longer written, must decode again to the same items). Delta blobs are decoded
 * against the fixed reference fuzz_reference() builds, strings chunks coded against the first
 * chunk (0x24) against fuzz_ref_text. Schema 2 blobs and chunks end with a
 * checksum: the target appends the right one to its input, so that the fuzzer explores the
 * decoders behind it (the corpus holds them without it). */
#include "store/blob.h"
#include "common/error.h"
#include "common/xalloc.h"
#include "store/dict.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Three tests, a dozen nodes each, small counts: what a delta blob is coded against. */
static void fuzz_reference(struct blob_entries *ref)
{
	static const uint64_t tests[] = {0, 3, 7};
	for (int t = 0; t < 3; t++)
		for (uint64_t n = 1; n <= 12; n++)
			blob_entries_push(ref, tests[t], n * 2 + (uint64_t)t, n + (uint64_t)t);
}

static void check_entries(const uint8_t *data, size_t size)
{
	struct blob_entries out, ref;
	blob_entries_init(&out);
	blob_entries_init(&ref);
	fuzz_reference(&ref);
	if (blob_decode(data, size, 0, &ref, &out) == 0) {
		struct strbuf sb = STRBUF_INIT;
		switch (data[0]) {
		case BLOB_FORMAT_PAIRS:
			blob_encode_pairs(&sb, out.e, out.n);
			break;
		case BLOB_FORMAT_MULTI:
			blob_encode_multi(&sb, &out);
			break;
		case BLOB_FORMAT_FULL:
			blob_encode_full(&sb, &out);
			break;
		default:
			blob_encode_delta(&sb, &out, &ref);
			break;
		}
		if (sb.len != size || memcmp(sb.buf, data, size))
			abort();
		strbuf_release(&sb);
	} else if (!*cp_last_error()) {
		abort(); /* refused without saying why */
	}
	blob_entries_release(&out);
	blob_entries_release(&ref);
}

/* What 0x24 strings chunks are decoded against: a first chunk's text (names and modules). */
static const char fuzz_ref_text[] = "main\0libc.so.6\0run_test\0[unknown]\0libz.so.1+0x3377\0"
                                    "_PyEval_EvalFrameDefault\0bash+0x41a82\0";

/* A dictionary holding exactly the decoded chunk's items at their ids, built by hand: the
 * decoder leaves duplicates to the loader, and the encoders only read the arrays. */
static void check_chunk(const uint8_t *data, size_t size, int kind)
{
	uint64_t first = kind == DICT_FRAMES ? 0 : 1;
	struct dict_chunk c = {0};
	struct dict_ref ref = {fuzz_ref_text, sizeof(fuzz_ref_text) - 1};
	const struct dict_ref *refp = dict_chunk_needs_ref(data, size, kind) ? &ref : NULL;
	if (dict_decode_chunk(data, size, kind, first, refp, &c) < 0) {
		if (!*cp_last_error())
			abort();
		return;
	}
	struct strbuf sb = STRBUF_INIT;
	struct profile *d = profile_new();
	if (kind == DICT_STRINGS) {
		/* zlib output is not canonical: check the strings survive a round trip */
		for (uint64_t i = 0; i < c.n; i++)
			profile_intern(d, c.pool + c.off[i]);
		if (d->nstr == c.n + 1) {
			dict_encode_chunk(&sb, d, NULL, kind, 1, c.n, refp);
			struct dict_chunk again = {0};
			if (dict_decode_chunk(sb.buf, sb.len, kind, 1, refp, &again) < 0 ||
			    again.n != c.n)
				abort();
			for (uint64_t i = 0; i < c.n; i++)
				if (strcmp(again.pool + again.off[i], c.pool + c.off[i]))
					abort();
			dict_chunk_release(&again);
		}
	} else {
		struct profile_node *nodes = NULL;
		if (kind == DICT_FRAMES) {
			free(d->frames);
			d->frames = xcalloc(c.n ? c.n : 1, sizeof(*d->frames));
			if (c.n)
				memcpy(d->frames, c.frames, c.n * sizeof(*c.frames));
			d->nframes = c.n;
		} else {
			nodes = xcalloc(first + c.n, sizeof(*nodes));
			for (uint64_t i = 0; i < c.n; i++)
				nodes[first + i] = (struct profile_node){(uint32_t)c.parent[i],
				                                         (uint32_t)c.frame[i]};
		}
		dict_encode_chunk(&sb, d, nodes, kind, first, c.n, NULL);
		free(nodes);
		if (data[0] == DICT_FORMAT_NODES) {
			/* the old node format is read, no longer written: the same nodes again */
			struct dict_chunk again = {0};
			if (dict_decode_chunk(sb.buf, sb.len, kind, first, NULL, &again) < 0 ||
			    again.n != c.n)
				abort();
			for (uint64_t i = 0; i < c.n; i++)
				if (again.parent[i] != c.parent[i] || again.frame[i] != c.frame[i])
					abort();
			dict_chunk_release(&again);
		} else if (sb.len != size || memcmp(sb.buf, data, size)) {
			abort();
		}
	}
	profile_free(d);
	strbuf_release(&sb);
	dict_chunk_release(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	cp_clear_error();
	int format = size ? data[0] : 0;
	if (format < BLOB_FORMAT_FULL ||
	    (format > BLOB_FORMAT_DELTA && format < DICT_FORMAT_STRINGS) ||
	    format > DICT_FORMAT_NODES_NEXT) {
		check_entries(data, size);
		return 0;
	}
	struct strbuf sealed = STRBUF_INIT;
	strbuf_add(&sealed, data, size);
	blob_seal(&sealed, 0);
	if (format >= DICT_FORMAT_STRINGS)
		check_chunk((const uint8_t *)sealed.buf, sealed.len,
		            format == DICT_FORMAT_STRINGS_REF  ? DICT_STRINGS
		            : format == DICT_FORMAT_NODES_NEXT ? DICT_NODES
		                                               : format - DICT_FORMAT_STRINGS);
	else
		check_entries((const uint8_t *)sealed.buf, sealed.len);
	strbuf_release(&sealed);
	return 0;
}
