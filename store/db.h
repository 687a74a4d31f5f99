/* store/ internals: the connection (db.c) - the struct store every file of store/ works on,
 * its prepared statements, errors named after the file, transactions and their one lock-wait
 * budget. */
#ifndef CP_STORE_DB_H
#define CP_STORE_DB_H

#include "store/blob.h"
#include "store/dict.h"
#include "store/store.h"

#include <sqlite3.h>
#include <stdint.h>

enum store_stmt_id {
	Q_DICT_SINCE,
	Q_DICT_AT,
	Q_DICT_PUT,
	Q_BRANCH_FIND,
	Q_BRANCH_INSERT,
	Q_BRANCH_BUMP,
	Q_RUN_INSERT,
	Q_RUN_POS,
	Q_TAG_INSERT,
	Q_TAGS_GET,
	Q_PROFILE_PUT,
	Q_PROFILES_OF_SEQS,
	Q_SEG_GET,
	Q_SEG_PUT,
	Q_GENERATION,
	Q_NSTMTS
};

/* What this process knows of a branch's newest run, so that storing the next one needs no
 * decoding: valid while the generation, the branch and its run count match. */
struct run_tail {
	int64_t gen, branch_id, seq, run_id;
	struct blob_entries run;       /* entries of run seq */
	struct blob_entries block_sum; /* sum of runs [seq - seq % SEGTREE_BLOCK, seq] */
};

struct store {
	sqlite3 *db;
	char *path;
	int readonly;
	int immutable; /* opened with immutable=1: the file's folder or medium is read-only */
	/* One busy-timeout budget (CIPROF_DB_TIMEOUT_MS) per wait for a lock: the busy
	 * handler gives up at deadline_ms; an operation retrying a statement (store_begin,
	 * WAL mode) sets it once for all of its attempts. */
	int64_t timeout_ms, deadline_ms;
	int budget_active;
	sqlite3_stmt *stmt[Q_NSTMTS];
	/* The whole dictionary as of this process's last write transaction, ids = database
	 * ids: strings and frames in dict, stack nodes in trie; valid while the database's
	 * generation (bumped when gc renumbers) is dict_gen. */
	struct profile *dict;
	struct trie trie;
	int64_t dict_gen;
	struct run_tail tail;
};

/* Records the connection's last error as a message naming the file (see store.h); -1. */
int store_sqlerr(struct store *s, const char *what);
/* Records "database F is corrupt: WHAT: <cp_last_error()>; restore a backup ..."; -1. */
int store_corrupt(struct store *s, const char *what);
/* Runs SQL without results; 0 or -1. */
int store_exec(struct store *s, const char *sql);
/* The prepared statement id, reset and unbound (borrowed); NULL with cp_error set. */
sqlite3_stmt *store_stmt(struct store *s, enum store_stmt_id id);
/* Steps a statement expected to finish without rows; 0 or -1. */
int store_step_done(struct store *s, sqlite3_stmt *st, const char *what);
/* Prepares sql on s into *st (the caller finalizes it); 0, or -1 with an error about what. */
int store_prepare(struct store *s, const char *sql, sqlite3_stmt **st, const char *what);
/* A one-number query; *out = 0 when it returns no row. */
int store_query_int(struct store *s, const char *sql, int64_t *out, const char *what);
/* BEGIN IMMEDIATE, retried while another writer holds the lock; COMMIT; ROLLBACK. */
int store_begin(struct store *s);
int store_commit(struct store *s);
void store_rollback(struct store *s);
/* A read transaction (one snapshot for several statements), and its end. */
int store_begin_read(struct store *s);
void store_end_read(struct store *s);
/* Forgets the in-memory dictionary and run tail (after a rollback, or when gc renumbered). */
void store_cache_reset(struct store *s);
/* The database's generation (meta). */
int store_generation(struct store *s, int64_t *out);
/* Column i of the current row as text, "" for NULL (borrowed until the next step). */
const char *store_col_text(sqlite3_stmt *st, int i);

#endif
