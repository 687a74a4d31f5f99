/* Run metadata from outside the profile: git state of the checkout (libgit2), the CI context
 * (environment variables), the host, and the command line. Fills struct run_meta; see
 * docs/metadata.md for where each field comes from. */
#ifndef CP_GITMETA_H
#define CP_GITMETA_H

#include "model/runmeta.h"

/*
 * The value of variable name in envp (a NULL-terminated "NAME=value" array, as main's third
 * argument or environ), or NULL when unset. envp NULL means the process environment.
 * Borrowed: points into envp.
 */
const char *gitmeta_env_get(char *const *envp, const char *name);

/*
 * Fills m's git fields (commit, branch, base_branch, merge_base, dirty, commit_time, subject)
 * from the repository containing dir (searching parent folders). base_branch, when non-NULL
 * and non-empty, names the branch to compare against; otherwise it comes from CI variables in
 * envp, then the remote's default branch, then main or master. A detached HEAD takes its
 * branch name from CI variables in envp (envp NULL: the process environment).
 * Returns 0, also outside a repository and in one without commits (git fields "" and 0), or -1
 * with cp_error set when libgit2 fails otherwise (git fields then "" and 0). A missing
 * merge-base (unrelated history, shallow clone) is not an error: merge_base is "".
 * A repository owned by another user, which git refuses without safe.directory, returns
 * GITMETA_ERR_OWNER with cp_error naming the folder and the safe.directory command.
 * Only the git fields are touched; the CI fields are gitmeta_ci's.
 */
#define GITMETA_ERR_OWNER (-2)
int gitmeta_collect(struct run_meta *m, const char *dir, const char *base_branch,
                    char *const *envp);

/*
 * Report-time questions about a head commit, asked of the repository when it is there (the
 * store alone answers without it). gitmeta_repo_open sets *out NULL and returns 0 outside a
 * repository; -1 with cp_error only when libgit2 cannot start. Each function accepts NULL.
 */
struct gitmeta_repo;
#define GITMETA_HEX_SIZE 41
int gitmeta_repo_open(struct gitmeta_repo **out, const char *dir);
void gitmeta_repo_free(struct gitmeta_repo *r);
/* The base branch, the one rule for run, report and comment: arg when non-empty (a flag or
 * .ciprof.yml's report.base-branch), else CI's target branch (GITHUB_BASE_REF,
 * CI_MERGE_REQUEST_TARGET_BRANCH_NAME, CI_DEFAULT_BRANCH), else the remote's default branch,
 * else main or master that exists; "" when none. Owned. */
char *gitmeta_base_branch(struct gitmeta_repo *r, const char *arg, char *const *envp);
/* out = the merge-base of commit (hex, may be abbreviated) with base (a branch or revision);
 * "" when either is unknown here or they share no history. Returns 0. */
int gitmeta_merge_base(struct gitmeta_repo *r, const char *commit, const char *base,
                       char out[GITMETA_HEX_SIZE]);
/* 1 when anc is commit or one of its ancestors, 0 when not, -1 when it cannot be told (a
 * commit missing from the repository, e.g. a shallow clone). */
int gitmeta_is_ancestor(struct gitmeta_repo *r, const char *anc, const char *commit);

/* The branch a CI job names in envp (GITHUB_HEAD_REF, GITHUB_REF_NAME, GitLab's, Jenkins'):
 * what a detached checkout's run records as its branch. NULL when none (borrowed from envp). */
const char *gitmeta_ci_branch(char *const *envp);

/* Fills m's CI fields (ci_provider, pr_number, job_url) from envp; unknown: "" and 0. */
void gitmeta_ci(struct run_meta *m, char *const *envp);

/* Fills m->cpu_model (from /proc/cpuinfo, else the machine name) and m->cpu_count. */
void gitmeta_host(struct run_meta *m);

/*
 * How busy the rest of the machine kept its CPUs while a command ran: a mark before it starts
 * and one after it ends. The machine's busy CPU time comes from /proc/stat's "cpu" line (user,
 * nice, system, irq, softirq and steal: a hypervisor's other guests count as others too);
 * ciprof's own time and its waited-for children's (the command, and every descendant that was
 * reaped) come from getrusage. ok is 0 when /proc/stat could not be read.
 */
struct host_busy {
	double machine;  /* CPU seconds the whole machine has been busy */
	double self;     /* CPU seconds ciprof has used */
	double children; /* CPU seconds its reaped children have used */
	double wall;     /* CLOCK_MONOTONIC seconds when the mark was taken */
	double tick;     /* seconds per /proc/stat tick (1 / USER_HZ) */
	int cpus;        /* online CPUs */
	int ok;
};
void host_busy_mark(struct host_busy *m);
/*
 * How many CPUs other processes kept busy on average between marks a and b: from 0 to b's
 * CPU count. -1 (unknown) when a mark has no reading, or when less than HOST_BUSY_MIN_TICKS
 * of /proc/stat's ticks passed: its 10 ms ticks cannot measure a command of a few ms (one
 * tick over 2 ms would read as 5 CPUs).
 */
#define HOST_BUSY_MIN_TICKS 20
double host_busy_cpus(const struct host_busy *a, const struct host_busy *b);
/* Parses /proc/stat's text: *busy = the "cpu" line's busy ticks. 0, or -1 with cp_error
 * naming what (where is the file name for the message). */
int host_parse_stat(const char *text, const char *where, double *busy);

/*
 * argv (NULL-terminated; NULL means no arguments) joined with spaces, each argument quoted in
 * POSIX shell single quotes only when it needs quoting, so that the result can be pasted back
 * into a shell. Owned by the caller; never NULL.
 */
char *gitmeta_command_string(char *const *argv);

#endif
