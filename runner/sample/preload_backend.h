/* The LD_PRELOAD backend, runner side: the command runs with libciprof-preload.so injected
 * into every process of its tree (runner/preload/preload.c); this event source of the runner
 * (backend.h) reads the per-process sample files it writes (runner/preload/format.h) while the
 * command runs into the runner's event queue. For when perf_event_open is refused
 * (docs/preload.md). */
#ifndef CP_PRELOAD_BACKEND_H
#define CP_PRELOAD_BACKEND_H

#include "model/profile.h"
#include "runner/backend.h"
#include "runner/preload/format.h"
#include "runner/runner.h"

#include <stddef.h>
#include <stdint.h>

/* The runner's ops for this backend, and its state for one run of opts (borrowed; owned by
 * the run, which releases it). --unwind dwarf is refused. */
extern const struct runner_backend_ops preload_backend_ops;
void *preload_backend_new(const struct runner_opts *opts);

/* For --backend auto after perf_event_open was refused: prints the one-line notice (the
 * perf diagnosis itself only with -v). dwarf: the user asked for --unwind dwarf, which this
 * backend cannot do (it walks frame pointers). */
void preload_announce_fallback(int dwarf);

/*
 * Where libciprof-preload.so is, as a new absolute path (owned by the caller): the file
 * named by $CIPROF_PRELOAD_LIB when set, else the one next to the running ciprof binary (a
 * build tree), else the one at the install layout's place relative to the binary
 * (bin/../lib/ciprof/, so a moved or unpacked install works), else the configured install path.
 * NULL with cp_error saying where it looked.
 */
char *preload_find_library(void);

/* ---- the sample-file reader, exposed for unit tests and the fuzzer ---- */

/* One record of a sample file, parsed; pointers point into the record. */
struct pl_view {
	uint16_t type, flags;
	uint64_t time;
	union {
		struct {
			int32_t tid;
			uint32_t nframes;
			uint64_t weight;
			const unsigned char *ips; /* nframes native uint64_t, maybe unaligned */
			/* PL_SAMPLE_STACK: %rsp, %rbp and stack_len bytes copied from %rsp (stack
			 * NULL without) */
			uint64_t sp, bp;
			const unsigned char *stack;
			uint32_t stack_len;
		} sample;
		struct {
			int32_t pid, ppid;
			const char *comm, *exe, *cwd, *argv; /* not NUL-terminated */
			uint32_t comm_len, exe_len, cwd_len, argv_len;
		} start;
		struct {
			const char *text;
			uint32_t len;
		} text; /* PL_REC_MAPS, PL_REC_NOTE */
		struct {
			int32_t tid;
		} thread;
		struct {
			int32_t pid;
			const char *path;
			uint32_t len;
		} exec;
	} u;
};

/*
 * Parses one record of len bytes (its header's size). Unknown types parse as themselves with
 * nothing else filled (later versions may add some). 0, or -1 with cp_error naming name
 * (the file) and file_offset (where the record starts) and what is wrong.
 */
int pl_parse_record(const unsigned char *rec, size_t len, struct pl_view *out, const char *name,
                    uint64_t file_offset);

/* Called for each record read; raw is the whole record (len bytes). Return 0 to go on. */
typedef int (*pl_record_fn)(void *ctx, const struct pl_view *r, const unsigned char *raw,
                            size_t len);

/*
 * Parses the len bytes that a ring of ring_size bytes holds from position pos (ring positions
 * count bytes ever written; the bytes are laid out in ring order, the part at the ring's end
 * first), calling fn for every record but PAD. ring_offset is the ring's offset in the file,
 * for messages. Returns 0, or -1 with cp_error naming name and the file offset of the bad
 * record (the records before it were passed to fn).
 */
int pl_parse_ring(const unsigned char *buf, size_t len, uint64_t pos, uint32_t ring_size,
                  uint64_t ring_offset, const char *name, pl_record_fn fn, void *ctx);

/* Checks a file's header (the first len bytes; file_size is the file's size). 0 and *out,
 * or -1 with cp_error naming name and what is wrong. */
int pl_check_header(const unsigned char *buf, size_t len, uint64_t file_size, const char *name,
                    struct pl_header *out);

/*
 * Parses a whole sample file held in memory: header, then every ring's records between its
 * tail and head, calling fn for each. 0, or -1 with cp_error naming name and the offset.
 */
int pl_parse_file(const unsigned char *buf, size_t len, const char *name, pl_record_fn fn,
                  void *ctx);

#endif
