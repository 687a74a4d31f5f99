/* Every JSON document the commands print is built with jansson through these helpers, so a
 * name that is not valid UTF-8 (jansson refuses those, and json_pack then silently drops
 * the whole object) is repaired instead of lost. */
#ifndef CP_CLI_JSON_H
#define CP_CLI_JSON_H

#include <jansson.h>
#include <stdio.h>

/* A JSON string of s, invalid UTF-8 bytes replaced by U+FFFD. Never NULL (new reference). */
json_t *cli_json_str(const char *s);
/* Sets obj[key] = value (a new reference, stolen), the key repaired like cli_json_str. */
void cli_json_set(json_t *obj, const char *key, json_t *value);
/* Writes root to out (keys in insertion order, indented unless compact, a final newline) and
 * frees it. A NULL root (a json_pack that failed) is an error: 0 or -1 with cp_error set. */
int cli_json_write(json_t *root, FILE *out, int compact);
/* cli_json_write(root, stdout, 0). */
int cli_json_print(json_t *root);

#endif
