/* What is known about a run besides its samples: git state, CI context, host, command and
 * outcome. runner/meta/gitmeta.c fills the git and CI parts, cli/ the rest, store/ persists it. */
#ifndef CP_RUNMETA_H
#define CP_RUNMETA_H

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
	int exit_code;
	double wall_seconds, cpu_seconds;
	int hz;
	uint64_t samples, lost;
	struct run_tag *tags;
	size_t ntags, tags_alloc;
};

/* Embedded object: all strings start as owned "" copies. */
void run_meta_init(struct run_meta *m);
void run_meta_release(struct run_meta *m);
/* Adds or replaces a tag (copies both). */
void run_meta_set_tag(struct run_meta *m, const char *key, const char *value);
/* Replaces *field (one of the char * members) with a copy of value (NULL means ""). */
void run_meta_set(char **field, const char *value);

#endif
