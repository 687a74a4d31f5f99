/* Every JSON document ciprof writes - the commands' output, the report's JSON, the HTML
 * page's data block, the forges' request bodies - is built with jansson through these
 * helpers: a string that is not valid UTF-8 (jansson refuses those, and json_pack then
 * silently drops the whole object) is repaired (U+FFFD) instead of lost, and one writer
 * decides the text's shape. */
#ifndef CP_JSONOUT_H
#define CP_JSONOUT_H

#include "common/strbuf.h"

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* A JSON string of s (n bytes), invalid UTF-8 bytes replaced by U+FFFD. Never NULL (a new
 * reference; OOM aborts). */
json_t *jsonout_str(const char *s);
json_t *jsonout_strn(const char *s, size_t n);
/* Sets obj[key] = value (a new reference, stolen), the key repaired as jsonout_str does. */
void jsonout_set(json_t *obj, const char *key, json_t *value);

/* Writer flags: one line without spaces (a page's data block, a request body), else
 * indented by 2 with a final newline. */
#define JSONOUT_COMPACT 1u
/* Appends root's text to out and frees root: keys in insertion order, real numbers with 10
 * significant digits (every measured figure, none of binary floating point's noise such as
 * 0.30000000000000004). A NULL root (a json_pack that failed) is an error: 0 or -1 with
 * cp_error set. */
int jsonout_dump(json_t *root, struct strbuf *out, unsigned flags);
/* jsonout_dump to a stream, ending in a newline either way; 0 or -1 with cp_error set. */
int jsonout_write(json_t *root, FILE *f, unsigned flags);

#endif
