/* Tests for runner/gitmeta: real repositories made with the git CLI in a temporary folder,
 * fake CI environments passed as envp, host info and command-line quoting. */
#define _GNU_SOURCE /* vasprintf */
#include "runner/meta/gitmeta.h"
#include "common/error.h"
#include "common/worktree.h"
#include "common/xalloc.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* Under ASan: libgit2 1.5 leaks a small buffer when git_merge_base meets a missing commit (as in
 * a shallow clone). That leak is not ours; full unwinding lets the suppression match only
 * allocations made under git_merge_base, so our own leaks of libgit2 objects still show. */
const char *__asan_default_options(void);
const char *__lsan_default_suppressions(void);
const char *__asan_default_options(void)
{
	return "fast_unwind_on_malloc=0";
}
const char *__lsan_default_suppressions(void)
{
	return "leak:git_merge_base\n";
}

static char root[] = "/tmp/cp_gitmeta.XXXXXX";
static char *empty_env[] = {NULL};

/* Runs a shell command built from fmt; fails the test unless it exits 0. */
static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	va_list ap;
	char *cmd;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf(&cmd, fmt, ap);
	va_end(ap);
	assert_true(rc >= 0);
	rc = system(cmd);
	if (rc != 0)
		fail_msg("command failed (%d): %s", rc, cmd);
	free(cmd);
}

/* First line of a shell command's output; owned. */
static char *capture(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *capture(const char *fmt, ...)
{
	va_list ap;
	char *cmd, line[4096] = "";
	FILE *p;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf(&cmd, fmt, ap);
	va_end(ap);
	assert_true(rc >= 0);
	p = popen(cmd, "r");
	assert_non_null(p);
	if (!fgets(line, sizeof(line), p))
		line[0] = '\0';
	assert_int_equal(pclose(p), 0);
	free(cmd);
	line[strcspn(line, "\n")] = '\0';
	return xstrdup(line);
}

/* A new repository <root>/name whose first branch is branch; returns its path (owned). */
static char *new_repo(const char *name, const char *branch)
{
	char *dir = xasprintf("%s/%s", root, name);

	sh("git init -q -b %s %s && cd %s && git config user.name 'Test User' && "
	   "git config user.email test@example.com && git config commit.gpgsign false",
	   branch, dir, dir);
	return dir;
}

/* Writes file (relative to dir) with content, stages it and commits it with the message and
 * author/committer time (unix seconds). */
static void repo_commit(const char *dir, const char *file, const char *content, const char *msg,
                        long when)
{
	sh("cd %s && printf '%%s\\n' '%s' > %s && git add %s && "
	   "GIT_AUTHOR_DATE='%ld +0000' GIT_COMMITTER_DATE='%ld +0100' git commit -q -m '%s'",
	   dir, content, file, file, when, when + 3600, msg);
}

static char *rev(const char *dir, const char *what)
{
	return capture("git -C %s rev-parse %s", dir, what);
}

static int setup_root(void **state)
{
	(void)state;
	if (!mkdtemp(root))
		return -1;
	/* Neither the user's nor the system's git config may change what the CLI creates. */
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
	unsetenv("GIT_DIR");
	unsetenv("GIT_WORK_TREE");
	unsetenv("GIT_INDEX_FILE");
	return 0;
}

static int teardown_root(void **state)
{
	char *cmd = xasprintf("rm -rf '%s'", root);
	int rc;

	(void)state;
	rc = system(cmd);
	free(cmd);
	return rc == 0 ? 0 : -1;
}

/* Puts junk in m's git fields, to see that collect overwrites every one. */
static void fill_junk(struct run_meta *m)
{
	run_meta_set(&m->commit, "junk");
	run_meta_set(&m->branch, "junk");
	run_meta_set(&m->base_branch, "junk");
	run_meta_set(&m->merge_base, "junk");
	run_meta_set(&m->subject, "junk");
	m->dirty = 1;
	m->commit_time = 99;
}

static void assert_git_fields_empty(const struct run_meta *m)
{
	assert_string_equal(m->commit, "");
	assert_string_equal(m->branch, "");
	assert_string_equal(m->base_branch, "");
	assert_string_equal(m->merge_base, "");
	assert_string_equal(m->subject, "");
	assert_int_equal(m->dirty, 0);
	assert_int_equal(m->commit_time, 0);
}

static void test_feature_branch(void **state)
{
	char *dir = new_repo("feature", "main");
	char *main_sha, *head_sha, *sub;
	struct run_meta m;

	(void)state;
	repo_commit(dir, "a.txt", "one", "first on main", 1700000000);
	main_sha = rev(dir, "main");
	sh("cd %s && git checkout -q -b feature", dir);
	repo_commit(dir, "b.txt", "two", "feature one", 1700000100);
	sh("cd %s && printf 'x\\n' > c.txt && git add c.txt && "
	   "GIT_AUTHOR_DATE='1700000200 +0200' git commit -q -m 'feature two  ' -m 'the body'",
	   dir);
	head_sha = rev(dir, "HEAD");
	/* main moves on after the fork: the merge-base stays at the fork point */
	sh("cd %s && git checkout -q main", dir);
	repo_commit(dir, "d.txt", "later", "later on main", 1700000300);
	sh("cd %s && git checkout -q feature", dir);

	run_meta_init(&m);
	fill_junk(&m);
	assert_int_equal(gitmeta_collect(&m, dir, NULL, empty_env), 0);
	assert_string_equal(m.commit, head_sha);
	assert_int_equal(strlen(m.commit), 40);
	assert_string_equal(m.branch, "feature");
	assert_string_equal(m.base_branch, "main");
	assert_string_equal(m.merge_base, main_sha);
	assert_string_equal(m.subject, "feature two");
	assert_int_equal(m.commit_time, 1700000200);
	assert_int_equal(m.dirty, 0);

	/* from a subfolder: the repository is found by searching up */
	sub = xasprintf("%s/sub/deeper", dir);
	sh("mkdir -p %s", sub);
	fill_junk(&m);
	assert_int_equal(gitmeta_collect(&m, sub, "", empty_env), 0);
	assert_string_equal(m.commit, head_sha);
	assert_string_equal(m.branch, "feature");
	assert_string_equal(m.merge_base, main_sha);

	/* an explicit base wins, even one that does not exist (then no merge-base) */
	assert_int_equal(gitmeta_collect(&m, dir, "nonexistent", empty_env), 0);
	assert_string_equal(m.base_branch, "nonexistent");
	assert_string_equal(m.merge_base, "");
	/* a base given as a revision works too */
	assert_int_equal(gitmeta_collect(&m, dir, main_sha, empty_env), 0);
	assert_string_equal(m.merge_base, main_sha);
	/* on the base branch itself the merge-base is HEAD */
	sh("cd %s && git checkout -q main", dir);
	assert_int_equal(gitmeta_collect(&m, dir, NULL, empty_env), 0);
	assert_string_equal(m.branch, "main");
	assert_string_equal(m.merge_base, m.commit);
	assert_string_equal(m.subject, "later on main");

	run_meta_release(&m);
	free(sub);
	free(main_sha);
	free(head_sha);
	free(dir);
}

static void test_dirty(void **state)
{
	char *dir = new_repo("dirty", "main");
	struct run_meta m;

	(void)state;
	repo_commit(dir, "a.txt", "one", "first", 1700000000);
	sh("cd %s && printf 'build/\\n' > .gitignore && git add .gitignore && "
	   "git commit -q -m ignore",
	   dir);
	run_meta_init(&m);

	assert_int_equal(gitmeta_collect(&m, dir, NULL, empty_env), 0);
	assert_int_equal(m.dirty, 0);

	sh("cd %s && mkdir build && echo x > build/out.o && echo y > untracked.txt", dir);
	assert_int_equal(gitmeta_collect(&m, dir, NULL, empty_env), 0);
	assert_int_equal(m.dirty, 0); /* untracked and ignored files do not count */

	sh("cd %s && echo changed > a.txt", dir);
	assert_int_equal(gitmeta_collect(&m, dir, NULL, empty_env), 0);
	assert_int_equal(m.dirty, 1);

	sh("cd %s && git checkout -q -- a.txt && git add untracked.txt", dir);
	assert_int_equal(gitmeta_collect(&m, dir, NULL, empty_env), 0);
	assert_int_equal(m.dirty, 1); /* staged new file */

	sh("cd %s && git rm -q --cached untracked.txt && rm a.txt", dir);
	assert_int_equal(gitmeta_collect(&m, dir, NULL, empty_env), 0);
	assert_int_equal(m.dirty, 1); /* deleted tracked file */

	sh("cd %s && git checkout -q -- a.txt", dir);
	assert_int_equal(gitmeta_collect(&m, dir, NULL, empty_env), 0);
	assert_int_equal(m.dirty, 0);

	run_meta_release(&m);
	free(dir);
}

static void test_detached_github(void **state)
{
	char *dir = new_repo("detached_gh", "main");
	char *pr_env[] = {"GITHUB_ACTIONS=true",     "GITHUB_EVENT_NAME=pull_request",
	                  "GITHUB_HEAD_REF=my-pr",   "GITHUB_BASE_REF=main",
	                  "GITHUB_REF_NAME=5/merge", NULL};
	char *push_env[] = {"GITHUB_ACTIONS=true", "GITHUB_EVENT_NAME=push",  "GITHUB_HEAD_REF=",
	                    "GITHUB_BASE_REF=",    "GITHUB_REF_NAME=release", NULL};
	char *main_sha;
	struct run_meta m;

	(void)state;
	repo_commit(dir, "a.txt", "one", "first", 1700000000);
	main_sha = rev(dir, "HEAD");
	sh("cd %s && git checkout -q -b my-pr && git checkout -q --detach", dir);
	repo_commit(dir, "b.txt", "two", "detached work", 1700000100);
	run_meta_init(&m);

	assert_int_equal(gitmeta_collect(&m, dir, NULL, pr_env), 0);
	assert_string_equal(m.branch, "my-pr");
	assert_string_equal(m.base_branch, "main");
	assert_string_equal(m.merge_base, main_sha);
	assert_string_equal(m.subject, "detached work");

	assert_int_equal(gitmeta_collect(&m, dir, NULL, push_env), 0);
	assert_string_equal(m.branch, "release");
	assert_string_equal(m.base_branch, "main"); /* empty GITHUB_BASE_REF: local main */

	/* detached without CI: no branch name, the rest still known */
	assert_int_equal(gitmeta_collect(&m, dir, NULL, empty_env), 0);
	assert_string_equal(m.branch, "");
	assert_int_equal(strlen(m.commit), 40);
	assert_string_equal(m.merge_base, main_sha);

	run_meta_release(&m);
	free(main_sha);
	free(dir);
}

static void test_detached_gitlab_and_generic(void **state)
{
	char *dir = new_repo("detached_gl", "main");
	char *mr_env[] = {"GITLAB_CI=true",
	                  "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME=mr-src",
	                  "CI_COMMIT_REF_NAME=refs/merge-requests/3/head",
	                  "CI_MERGE_REQUEST_TARGET_BRANCH_NAME=develop",
	                  "CI_DEFAULT_BRANCH=main",
	                  NULL};
	char *branch_env[] = {"GITLAB_CI=true", "CI_COMMIT_BRANCH=topic",
	                      "CI_COMMIT_REF_NAME=topic", "CI_DEFAULT_BRANCH=main", NULL};
	char *tag_env[] = {"GITLAB_CI=true", "CI_COMMIT_REF_NAME=v1.0", NULL};
	char *jenkins_env[] = {"GIT_BRANCH=origin/jenkins-branch", NULL};
	char *generic_env[] = {"BRANCH_NAME=generic-branch", "GIT_BRANCH=origin/other", NULL};
	struct run_meta m;

	(void)state;
	repo_commit(dir, "a.txt", "one", "first", 1700000000);
	sh("cd %s && git checkout -q --detach", dir);
	run_meta_init(&m);

	assert_int_equal(gitmeta_collect(&m, dir, NULL, mr_env), 0);
	assert_string_equal(m.branch, "mr-src");
	assert_string_equal(m.base_branch, "develop");
	assert_string_equal(m.merge_base, ""); /* develop exists nowhere */

	assert_int_equal(gitmeta_collect(&m, dir, NULL, branch_env), 0);
	assert_string_equal(m.branch, "topic");
	assert_string_equal(m.base_branch, "main");
	assert_string_equal(m.merge_base, m.commit);

	assert_int_equal(gitmeta_collect(&m, dir, NULL, tag_env), 0);
	assert_string_equal(m.branch, "v1.0");

	assert_int_equal(gitmeta_collect(&m, dir, NULL, jenkins_env), 0);
	assert_string_equal(m.branch, "jenkins-branch");

	assert_int_equal(gitmeta_collect(&m, dir, NULL, generic_env), 0);
	assert_string_equal(m.branch, "generic-branch");

	/* an attached HEAD keeps its own name whatever CI says */
	sh("cd %s && git checkout -q main", dir);
	assert_int_equal(gitmeta_collect(&m, dir, NULL, branch_env), 0);
	assert_string_equal(m.branch, "main");

	run_meta_release(&m);
	free(dir);
}

static void test_remote_default_branch(void **state)
{
	char *src = new_repo("upstream", "trunk");
	char *dst = xasprintf("%s/clone", root);
	char *trunk_sha, *ref;
	struct run_meta m;

	(void)state;
	repo_commit(src, "a.txt", "one", "first on trunk", 1700000000);
	trunk_sha = rev(src, "trunk");
	sh("git clone -q %s %s && cd %s && git config user.name T && "
	   "git config user.email t@example.com && git checkout -q -b feature",
	   src, dst, dst);
	ref = capture("git -C %s symbolic-ref refs/remotes/origin/HEAD", dst);
	assert_string_equal(ref, "refs/remotes/origin/trunk");
	repo_commit(dst, "b.txt", "two", "on feature", 1700000100);
	/* the local trunk goes away: origin/trunk is enough */
	sh("cd %s && git branch -q -D trunk", dst);
	run_meta_init(&m);

	assert_int_equal(gitmeta_collect(&m, dst, NULL, empty_env), 0);
	assert_string_equal(m.branch, "feature");
	assert_string_equal(m.base_branch, "trunk");
	assert_string_equal(m.merge_base, trunk_sha);

	run_meta_release(&m);
	free(ref);
	free(trunk_sha);
	free(dst);
	free(src);
}

static void test_master_fallback(void **state)
{
	char *dir = new_repo("oldstyle", "master");
	char *none = new_repo("nobase", "dev");
	char *master_sha;
	struct run_meta m;

	(void)state;
	repo_commit(dir, "a.txt", "one", "first on master", 1700000000);
	master_sha = rev(dir, "master");
	sh("cd %s && git checkout -q -b feature", dir);
	repo_commit(dir, "b.txt", "two", "on feature", 1700000100);
	run_meta_init(&m);

	assert_int_equal(gitmeta_collect(&m, dir, NULL, empty_env), 0);
	assert_string_equal(m.base_branch, "master");
	assert_string_equal(m.merge_base, master_sha);

	/* main wins over master when both exist */
	sh("cd %s && git branch -q main %s", dir, master_sha);
	assert_int_equal(gitmeta_collect(&m, dir, NULL, empty_env), 0);
	assert_string_equal(m.base_branch, "main");

	/* neither main nor master nor a remote: no base */
	repo_commit(none, "a.txt", "one", "first on dev", 1700000000);
	assert_int_equal(gitmeta_collect(&m, none, NULL, empty_env), 0);
	assert_string_equal(m.branch, "dev");
	assert_string_equal(m.base_branch, "");
	assert_string_equal(m.merge_base, "");
	assert_int_equal(strlen(m.commit), 40);

	run_meta_release(&m);
	free(master_sha);
	free(none);
	free(dir);
}

/* CI fetches one commit deep: the merge-base is then unknown, which is not an error. */
static void test_shallow_clone(void **state)
{
	char *src = new_repo("deep", "main");
	char *dst = xasprintf("%s/shallow", root);
	struct run_meta m;

	(void)state;
	repo_commit(src, "a.txt", "one", "first", 1700000000);
	repo_commit(src, "a.txt", "two", "second", 1700000100);
	sh("cd %s && git checkout -q -b feature", src);
	repo_commit(src, "b.txt", "three", "on feature", 1700000200);
	sh("cd %s && git checkout -q main", src);
	repo_commit(src, "a.txt", "four", "later on main", 1700000300);
	sh("git clone -q --depth 1 --no-single-branch --branch feature file://%s %s", src, dst);
	run_meta_init(&m);

	cp_clear_error();
	assert_int_equal(gitmeta_collect(&m, dst, NULL, empty_env), 0);
	assert_string_equal(cp_last_error(), "");
	assert_string_equal(m.branch, "feature");
	assert_string_equal(m.base_branch, "main");
	assert_string_equal(m.subject, "on feature");
	assert_string_equal(m.merge_base, "");

	run_meta_release(&m);
	free(dst);
	free(src);
}

static void test_outside_repo(void **state)
{
	char *dir = xasprintf("%s/plain", root);
	struct run_meta m;

	(void)state;
	/* root lies in /tmp, which is in no repository */
	sh("mkdir -p %s && ! git -C %s rev-parse --git-dir >/dev/null 2>&1", dir, dir);
	run_meta_init(&m);
	fill_junk(&m);
	cp_clear_error();
	assert_int_equal(gitmeta_collect(&m, dir, "main", empty_env), 0);
	assert_git_fields_empty(&m);
	assert_string_equal(cp_last_error(), "");
	run_meta_release(&m);
	free(dir);
}

static void test_unborn_head(void **state)
{
	char *dir = new_repo("unborn", "main");
	struct run_meta m;

	(void)state;
	run_meta_init(&m);
	fill_junk(&m);
	assert_int_equal(gitmeta_collect(&m, dir, NULL, empty_env), 0);
	assert_git_fields_empty(&m);

	sh("cd %s && echo x > a.txt && git add a.txt", dir);
	fill_junk(&m);
	assert_int_equal(gitmeta_collect(&m, dir, NULL, empty_env), 0);
	assert_git_fields_empty(&m);
	run_meta_release(&m);
	free(dir);
}

static void test_broken_repo_is_an_error(void **state)
{
	char *dir = new_repo("broken", "main");
	struct run_meta m;

	(void)state;
	repo_commit(dir, "a.txt", "one", "first", 1700000000);
	/* HEAD's branch names an object that does not exist */
	sh("cd %s && echo 0123456789abcdef0123456789abcdef01234567 > .git/refs/heads/main", dir);
	run_meta_init(&m);
	cp_clear_error();
	assert_int_equal(gitmeta_collect(&m, dir, NULL, empty_env), -1);
	assert_string_not_equal(cp_last_error(), "");
	assert_non_null(strstr(cp_last_error(), "HEAD"));
	assert_string_equal(m.commit, "");
	run_meta_release(&m);
	free(dir);
}

/* A checkout another user owns (a CI container's): refused with the safe.directory advice,
 * whether or not a global safe.directory is set (libgit2 1.5.1 reports the former case as
 * "config value 'safe.directory' was not found"); the database's place is still found. */
static void test_other_users_repo(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* chown to another uid needs root */
	char *dir = new_repo("owned", "main");
	char *home = xasprintf("%s/owned_home", root);
	char *sub = xasprintf("%s/sub", dir);
	const char *old_home = getenv("HOME");
	char *saved = old_home ? xstrdup(old_home) : NULL;
	struct run_meta m;

	repo_commit(dir, "a.txt", "one", "first", 1700000000);
	sh("mkdir -p %s %s && chown -R 12345 %s", sub, home, dir);
	setenv("HOME", home, 1);
	run_meta_init(&m);
	for (int global = 0; global < 2; global++) {
		if (global) /* a safe.directory for another folder only */
			sh("printf '[safe]\\n\\tdirectory = /elsewhere\\n' > %s/.gitconfig", home);
		cp_clear_error();
		assert_int_equal(gitmeta_collect(&m, sub, NULL, empty_env), GITMETA_ERR_OWNER);
		char *fix = xasprintf("git config --global --add safe.directory %s'", dir);
		assert_non_null(strstr(cp_last_error(), fix));
		free(fix);
		assert_git_fields_empty(&m);
		char *top = worktree_top(sub);
		assert_non_null(top);
		assert_string_equal(top, dir);
		free(top);
	}
	sh("printf '[safe]\\n\\tdirectory = %s\\n' >> %s/.gitconfig", dir, home);
	assert_int_equal(gitmeta_collect(&m, sub, NULL, empty_env), 0);
	assert_string_equal(m.branch, "main");
	if (saved)
		setenv("HOME", saved, 1);
	else
		unsetenv("HOME");
	run_meta_release(&m);
	free(saved);
	free(sub);
	free(home);
	free(dir);
}

static void test_ci_github(void **state)
{
	char *pr_env[] = {"CI=true",
	                  "GITHUB_ACTIONS=true",
	                  "GITHUB_REF=refs/pull/123/merge",
	                  "GITHUB_SERVER_URL=https://github.example.com/",
	                  "GITHUB_REPOSITORY=o/r",
	                  "GITHUB_RUN_ID=4242",
	                  NULL};
	char *push_env[] = {"GITHUB_ACTIONS=true", "GITHUB_REF=refs/heads/main",
	                    "GITHUB_REPOSITORY=o/r", "GITHUB_RUN_ID=7", NULL};
	char *bad_env[] = {"GITHUB_ACTIONS=true", "GITHUB_REF=refs/pull/12x/merge", NULL};
	struct run_meta m;

	(void)state;
	run_meta_init(&m);
	gitmeta_ci(&m, pr_env);
	assert_string_equal(m.ci_provider, "github");
	assert_int_equal(m.pr_number, 123);
	assert_string_equal(m.job_url, "https://github.example.com/o/r/actions/runs/4242");

	gitmeta_ci(&m, push_env);
	assert_string_equal(m.ci_provider, "github");
	assert_int_equal(m.pr_number, 0);
	assert_string_equal(m.job_url, "https://github.com/o/r/actions/runs/7");

	gitmeta_ci(&m, bad_env);
	assert_int_equal(m.pr_number, 0);
	assert_string_equal(m.job_url, "");
	run_meta_release(&m);
}

static void test_ci_gitlab(void **state)
{
	char *mr_env[] = {"CI=true", "GITLAB_CI=true", "CI_MERGE_REQUEST_IID=17",
	                  "CI_JOB_URL=https://gitlab.example.com/g/p/-/jobs/99", NULL};
	char *branch_env[] = {"CI=true", "GITLAB_CI=true",
	                      "CI_MERGE_REQUEST_IID=", "CI_JOB_URL=https://gitlab.com/g/p/-/jobs/1",
	                      NULL};
	struct run_meta m;

	(void)state;
	run_meta_init(&m);
	gitmeta_ci(&m, mr_env);
	assert_string_equal(m.ci_provider, "gitlab");
	assert_int_equal(m.pr_number, 17);
	assert_string_equal(m.job_url, "https://gitlab.example.com/g/p/-/jobs/99");

	gitmeta_ci(&m, branch_env);
	assert_string_equal(m.ci_provider, "gitlab");
	assert_int_equal(m.pr_number, 0);
	assert_string_equal(m.job_url, "https://gitlab.com/g/p/-/jobs/1");
	run_meta_release(&m);
}

static void test_ci_generic_and_none(void **state)
{
	char *generic_env[] = {"CI=1", "BUILD_URL=https://jenkins.example.com/job/x/5/", NULL};
	char *plain_ci_env[] = {"CI=true", NULL};
	char *false_env[] = {"CI=false", "GITHUB_ACTIONS=false", NULL};
	char *empty_ci_env[] = {"CI=", NULL};
	struct run_meta m;

	(void)state;
	run_meta_init(&m);
	gitmeta_ci(&m, generic_env);
	assert_string_equal(m.ci_provider, "ci");
	assert_int_equal(m.pr_number, 0);
	assert_string_equal(m.job_url, "https://jenkins.example.com/job/x/5/");

	gitmeta_ci(&m, plain_ci_env);
	assert_string_equal(m.ci_provider, "ci");
	assert_string_equal(m.job_url, "");

	/* leftovers from an earlier call are cleared */
	m.pr_number = 5;
	run_meta_set(&m.job_url, "x");
	gitmeta_ci(&m, false_env);
	assert_string_equal(m.ci_provider, "");
	assert_int_equal(m.pr_number, 0);
	assert_string_equal(m.job_url, "");

	gitmeta_ci(&m, empty_ci_env);
	assert_string_equal(m.ci_provider, "");
	gitmeta_ci(&m, empty_env);
	assert_string_equal(m.ci_provider, "");
	run_meta_release(&m);
}

static void test_env_get(void **state)
{
	char *env[] = {"A=1", "AB=2", "EMPTY=", "EQ=x=y", NULL};

	(void)state;
	assert_string_equal(gitmeta_env_get(env, "A"), "1");
	assert_string_equal(gitmeta_env_get(env, "AB"), "2");
	assert_string_equal(gitmeta_env_get(env, "EMPTY"), "");
	assert_string_equal(gitmeta_env_get(env, "EQ"), "x=y");
	assert_null(gitmeta_env_get(env, "ABC"));
	assert_null(gitmeta_env_get(env, "B"));
	assert_null(gitmeta_env_get(empty_env, "A"));
	setenv("CP_GITMETA_TEST_VAR", "from-environ", 1);
	assert_string_equal(gitmeta_env_get(NULL, "CP_GITMETA_TEST_VAR"), "from-environ");
	unsetenv("CP_GITMETA_TEST_VAR");
}

static void test_host(void **state)
{
	struct run_meta m;

	(void)state;
	run_meta_init(&m);
	gitmeta_host(&m);
	assert_true(strlen(m.cpu_model) > 0);
	assert_int_equal(m.cpu_model[0] == ' ', 0);
	assert_int_equal(m.cpu_model[strlen(m.cpu_model) - 1] == ' ', 0);
	assert_null(strstr(m.cpu_model, "  "));
	assert_int_equal(m.cpu_count, (int)sysconf(_SC_NPROCESSORS_ONLN));
	run_meta_release(&m);
}

/* The host. tags a stored run gets from its figures; a run_meta reused for the next run (ciprof
 * ab's sides) keeps none that the next run's figures do not call for. */
static void test_stats_tags(void **state)
{
	(void)state;
	struct run_meta m;
	run_meta_init(&m);
	run_meta_set_tag(&m, "ab", "x");
	struct profile_stats st = {.others_seconds = 1.5,
	                           .wall_seconds = 3,
	                           .unseen_processes = 2,
	                           .dispersion = 4.125,
	                           .silent_seconds = 0.25};
	run_meta_tag_stats(&m, &st);
	assert_string_equal(run_meta_tag(&m, RUN_TAG_OTHER_CPUS), "0.500");
	assert_int_equal(run_meta_unseen(&m), 2);
	assert_float_equal(run_meta_dispersion(&m), 4.125, 1e-9);
	assert_float_equal(run_meta_silent(&m), 0.25, 1e-9);
	assert_true(run_meta_is_incomplete(&m));
	/* The next run: complete, one period a sample, no busy figure. */
	struct profile_stats next = {.others_seconds = -1, .wall_seconds = 3, .dispersion = 1};
	run_meta_tag_stats(&m, &next);
	assert_null(run_meta_tag(&m, RUN_TAG_OTHER_CPUS));
	assert_null(run_meta_tag(&m, RUN_TAG_UNSEEN));
	assert_null(run_meta_tag(&m, RUN_TAG_DISPERSION));
	assert_null(run_meta_tag(&m, RUN_TAG_SILENT));
	assert_false(run_meta_is_incomplete(&m));
	assert_string_equal(run_meta_tag(&m, "ab"), "x");
	assert_int_equal(m.ntags, 1);
	run_meta_release(&m);
}

static void test_proc_stat(void **state)
{
	(void)state;
	double busy = 0;
	/* user nice system idle iowait irq softirq steal guest guest_nice: busy is all but idle
	 * and iowait (guest time is inside user already). */
	assert_int_equal(
	        host_parse_stat("cpu  100 2 30 5000 40 5 6 7 50 1\ncpu0 1 2 3\n", "s", &busy), 0);
	assert_float_equal(busy, 150, 1e-9);
	/* A kernel without the steal column. */
	assert_int_equal(host_parse_stat("cpu 10 0 5 99 1 2 3\n", "s", &busy), 0);
	assert_float_equal(busy, 20, 1e-9);
	/* Not /proc/stat: an error naming the file and the place. */
	assert_int_equal(host_parse_stat("intr 1 2 3\n", "/x/stat", &busy), -1);
	assert_non_null(strstr(cp_last_error(), "/x/stat:1: no \"cpu\" line"));
	assert_int_equal(host_parse_stat("cpu 10 0 x 99\n", "/x/stat", &busy), -1);
	assert_non_null(strstr(cp_last_error(), "/x/stat:1:10: expected a count"));
	assert_int_equal(host_parse_stat("cpu 10 0\n", "/x/stat", &busy), -1);
	assert_int_equal(host_parse_stat("", "/x/stat", &busy), -1);
}

static void test_busy_others(void **state)
{
	(void)state;
	/* Others' time is the machine's busy time less ciprof's and its children's, over the
	 * wall time. */
	struct host_busy a = {.machine = 100, .self = 1, .children = 10, .wall = 50, .ok = 1};
	struct host_busy b = {.machine = 112,
	                      .self = 1.5,
	                      .children = 18,
	                      .wall = 57,
	                      .tick = 0.01,
	                      .cpus = 4,
	                      .ok = 1};
	assert_float_equal(host_busy_cpus(&a, &b), 0.5, 1e-9);
	/* /proc/stat's ticks are coarser than getrusage's: never below 0 ... */
	b.machine = 105;
	assert_float_equal(host_busy_cpus(&a, &b), 0, 1e-9);
	/* ... nor above the machine's CPUs */
	b.machine = 200;
	assert_float_equal(host_busy_cpus(&a, &b), 4, 1e-9);
	/* a command shorter than 20 ticks: one tick over 2 ms would read as 5 CPUs */
	b.machine = 100.01;
	b.self = 1;
	b.children = 10;
	b.wall = 50.002;
	assert_true(host_busy_cpus(&a, &b) < 0);
	b.wall = 50.19;
	assert_true(host_busy_cpus(&a, &b) < 0);
	b.wall = 50.2;
	assert_float_equal(host_busy_cpus(&a, &b), 0.05, 1e-9);
	b.ok = 0;
	assert_true(host_busy_cpus(&a, &b) < 0);
	/* A stand-in /proc/stat (the test hook): its ticks at the system's clock rate. */
	char path[] = "/tmp/cp-stat-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char text[] = "cpu  300 0 100 900 0 0 0 0 0 0\n";
	assert_int_equal(write(fd, text, sizeof(text) - 1), (ssize_t)(sizeof(text) - 1));
	close(fd);
	setenv("CIPROF_TEST_PROC_STAT", path, 1);
	host_busy_mark(&a);
	assert_true(a.ok);
	assert_float_equal(a.machine, 400.0 / (double)sysconf(_SC_CLK_TCK), 1e-9);
	assert_true(a.self > 0);
	assert_true(a.wall > 0 && a.cpus >= 1);
	assert_float_equal(a.tick, 1.0 / (double)sysconf(_SC_CLK_TCK), 1e-12);
	setenv("CIPROF_TEST_PROC_STAT", "/nonexistent/stat", 1);
	host_busy_mark(&a);
	assert_false(a.ok);
	unsetenv("CIPROF_TEST_PROC_STAT");
	/* The real one. */
	host_busy_mark(&a);
	assert_true(a.ok && a.machine > 0);
	unlink(path);
}

static void assert_command(char *const *argv, const char *want)
{
	char *got = gitmeta_command_string(argv);
	assert_string_equal(got, want);
	free(got);
}

static void test_command_string(void **state)
{
	char *plain[] = {"make", "-j4", "test", "CFLAGS=-O2", "--filter=a/b.c,x@y:1%", NULL};
	char *space[] = {"echo", "a b", NULL};
	char *quote[] = {"echo", "it's", NULL};
	char *empty[] = {"prog", "", "x", NULL};
	char *meta[] = {"sh", "-c", "echo $HOME; ls *", "~", NULL};
	char *none[] = {NULL};

	(void)state;
	assert_command(plain, "make -j4 test CFLAGS=-O2 --filter=a/b.c,x@y:1%");
	assert_command(space, "echo 'a b'");
	assert_command(quote, "echo 'it'\\''s'");
	assert_command(empty, "prog '' x");
	assert_command(meta, "sh -c 'echo $HOME; ls *' '~'");
	assert_command(none, "");
	assert_command(NULL, "");
}

/* The quoted string, given back to a shell, yields the original arguments. */
static void test_command_string_round_trip(void **state)
{
	char *argv[] = {"printf", "[%s]", "a b", "it's", "", "\"q\"\\", "$x`y`", "plain", NULL};
	char *cmd = gitmeta_command_string(argv);
	char *out = capture("%s", cmd);

	(void)state;
	assert_string_equal(out, "[a b][it's][][\"q\"\\][$x`y`][plain]");
	free(out);
	free(cmd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_feature_branch),
	        cmocka_unit_test(test_dirty),
	        cmocka_unit_test(test_detached_github),
	        cmocka_unit_test(test_detached_gitlab_and_generic),
	        cmocka_unit_test(test_remote_default_branch),
	        cmocka_unit_test(test_master_fallback),
	        cmocka_unit_test(test_shallow_clone),
	        cmocka_unit_test(test_outside_repo),
	        cmocka_unit_test(test_unborn_head),
	        cmocka_unit_test(test_broken_repo_is_an_error),
	        cmocka_unit_test(test_other_users_repo),
	        cmocka_unit_test(test_ci_github),
	        cmocka_unit_test(test_ci_gitlab),
	        cmocka_unit_test(test_ci_generic_and_none),
	        cmocka_unit_test(test_env_get),
	        cmocka_unit_test(test_host),
	        cmocka_unit_test(test_stats_tags),
	        cmocka_unit_test(test_proc_stat),
	        cmocka_unit_test(test_busy_others),
	        cmocka_unit_test(test_command_string),
	        cmocka_unit_test(test_command_string_round_trip),
	};
	return cmocka_run_group_tests(tests, setup_root, teardown_root);
}
