/* store/ internals: the schema and the migrations from older versions (migrate.c). */
#ifndef CP_STORE_MIGRATE_H
#define CP_STORE_MIGRATE_H

#include "model/profile.h"
#include "store/dict.h"

struct store;

/* The schema 2 tables, for a fresh file. */
extern const char store_schema_v2[];
/* Schema 2 -> 3: the test outcomes of JUnit reports (run --junit). */
extern const char store_step_2_to_3[];
/* Schema 4 -> 5: build ids per run. */
extern const char store_step_4_to_5[];
/* Writes a whole dictionary (ids = database ids) into an empty dict table. */
int store_write_dict(struct store *s, const struct profile *names, const struct trie *t);
/* In a write transaction: converts a schema 1 database to schema 2. */
int store_migrate_1_to_2(struct store *s);

#endif
