/* Run metadata from outside the profile: git state of the checkout (libgit2), the CI context
 * (environment variables), the host, and the command line. Fills struct run_meta; see
 * docs/metadata.md for where each field comes from. */
#ifndef CP_GITMETA_H
#define CP_GITMETA_H

#include "common/runmeta.h"

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
 * Only the git fields are touched; the CI fields are gitmeta_ci's.
 */
int gitmeta_collect(struct run_meta *m, const char *dir, const char *base_branch,
                    char *const *envp);

/* Fills m's CI fields (ci_provider, pr_number, job_url) from envp; unknown: "" and 0. */
void gitmeta_ci(struct run_meta *m, char *const *envp);

/* Fills m->cpu_model (from /proc/cpuinfo, else the machine name) and m->cpu_count. */
void gitmeta_host(struct run_meta *m);

/*
 * argv (NULL-terminated; NULL means no arguments) joined with spaces, each argument quoted in
 * POSIX shell single quotes only when it needs quoting, so that the result can be pasted back
 * into a shell. Owned by the caller; never NULL.
 */
char *gitmeta_command_string(char *const *argv);

#endif
