/* What is known about a run besides its samples: git state, CI context, host and command.
 * runner/meta/gitmeta.c fills the git and CI parts, cli/ the rest, store/ persists it. The
 * run's figures (samples, lost, CPU and wall time, rate, period, exit status) are one struct
 * profile_stats: the profile carries them where they are measured (runner/, importers) and
 * store_add_run stores them from there; run_meta holds the stored run's copy for listings. */
#ifndef CP_RUNMETA_H
#define CP_RUNMETA_H

#include "model/profile.h"

#include <stddef.h>
#include <stdint.h>

struct run_tag {
	char *key, *value; /* owned */
};

struct run_meta {
	int64_t id;         /* assigned by the store; 0 before */
	int64_t created_at; /* unix seconds, when the run started */
	/* git (empty strings outside a repository) */
	char *commit;        /* full hex id of HEAD */
	char *branch;        /* "main"; from CI variables when the checkout is detached */
	char *base_branch;   /* the branch compared against: remote default, else main/master */
	char *merge_base;    /* merge-base of HEAD with base_branch, hex, or "" */
	int dirty;           /* work tree has uncommitted changes to tracked files */
	int64_t commit_time; /* author time of HEAD, unix seconds */
	char *subject;       /* first line of HEAD's message */
	/* CI */
	char *ci_provider; /* "github", "gitlab", "ci" (generic CI=true) or "" locally */
	int64_t pr_number; /* PR / MR number, 0 when none */
	char *job_url;
	/* host and command */
	char *cpu_model;
	int cpu_count;
	char *command; /* argv joined with spaces, shell-quoted where needed */
	/* The run's figures as stored: set by the store when it reads a run, and by
	 * store_add_run to what it stored (from the profile: set them there, not here).
	 * unsampled_seconds is not stored (0). */
	struct profile_stats stats;
	struct run_tag *tags;
	size_t ntags, tags_alloc;
};

/* The tag ciprof run gives a run: how many CPUs other processes kept busy on average while
 * it ran (profile_stats.others_seconds over its wall time, "%.3f"); a report compares the
 * head's with its history's (docs/report.md, "A head on a busy machine"). */
#define RUN_TAG_OTHER_CPUS "host.other_cpus"
/* The tag ciprof run gives a run some of whose processes the kernel did not follow
 * (profile_stats.unseen_processes, when not 0): a report sets such a run aside
 * (docs/run.md, "Limits"). */
#define RUN_TAG_UNSEEN "host.unseen_processes"
/* The tag ciprof run gives a run during which the kernel stopped writing to a CPU's ring
 * buffer: the CPU time counted there after its last record (profile_stats.silent_seconds,
 * "%.3f", when not 0), which no task's samples or records stand for; a report sets such a
 * run aside as it does one with RUN_TAG_UNSEEN. */
#define RUN_TAG_SILENT "host.silent_ring_seconds"

/* The tag ciprof run gives a run whose sample events stood for more than one period each
 * (the preload backend's coarse CPU-time timers): profile_stats.dispersion, "%.3f", when over
 * 1; a report's count tests take a count of n periods for n / dispersion samples. */
#define RUN_TAG_DISPERSION "host.sample_dispersion"
/* The dispersion from which ciprof run's summary and ciprof ab's report say that the samples
 * were coarse. */
#define RUN_COARSE_DISPERSION 1.5

/* Embedded object: all strings start as owned "" copies. */
void run_meta_init(struct run_meta *m);
void run_meta_release(struct run_meta *m);
/* Adds or replaces a tag (copies both). */
void run_meta_set_tag(struct run_meta *m, const char *key, const char *value);
/* The value of tag key, or NULL (borrowed). */
const char *run_meta_tag(const struct run_meta *m, const char *key);
/* Sets the host. tags above that st calls for (other CPUs, unseen processes, dispersion, a
 * silent ring) on m, and removes those it does not: what ciprof run and ciprof ab record of
 * each run they store. */
void run_meta_tag_stats(struct run_meta *m, const struct profile_stats *st);
/* Its RUN_TAG_OTHER_CPUS as a number, or NAN when the run has none (or not a number >= 0). */
double run_meta_other_cpus(const struct run_meta *m);
/* Its RUN_TAG_UNSEEN as a number: 0 when the run has none (or not a whole number). */
unsigned long run_meta_unseen(const struct run_meta *m);
/* Its RUN_TAG_DISPERSION as a number: 1 when the run has none (or not a number >= 1). */
double run_meta_dispersion(const struct run_meta *m);
/* Its RUN_TAG_SILENT as a number: 0 when the run has none (or not a number > 0). */
double run_meta_silent(const struct run_meta *m);
/* Whether the run is incomplete (RUN_TAG_UNSEEN or RUN_TAG_SILENT): NULL, or why, in words
 * and numbers only ("6 processes the kernel did not follow; 1.170 CPU-s counted after a CPU's
 * ring buffer fell silent"), to be freed. */
char *run_meta_incomplete(const struct run_meta *m);
/* The same as a yes or no, nothing allocated. */
int run_meta_is_incomplete(const struct run_meta *m);
/* The same from the figures: unseen processes, silent CPU-seconds (profile_stats'). */
char *run_incomplete_why(unsigned long long unseen, double silent);
/* Whether command is one 'ciprof import' stores (the import's own command line): the
 * imported suite's command is unknown, so report never leaves such a run out for another
 * command, and gc folds imported runs together whatever their file names. */
int run_meta_command_imported(const char *command);
/* Replaces *field (one of the char * members) with a copy of value (NULL means ""). */
void run_meta_set(char **field, const char *value);

#endif
