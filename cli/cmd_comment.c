/* ciprof comment: post the report as ciprof's one sticky comment on the CI job's pull request
 * (GitHub) or merge request (GitLab), updating it on later runs; append it to the GitHub job
 * summary. A failure to comment never fails the build unless --strict (exit 3). */
#include "cli/cli.h"
#include "config/config.h"
#include "common/error.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"
#include "forge/forge.h"
#include "forge/http.h"
#include "report/report.h"
#include "runner/meta/gitmeta.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum {
	OPT_PROVIDER = 256,
	OPT_BODY_FILE,
	OPT_DRY_RUN,
	OPT_STRICT,
	OPT_ID,
};

static const struct cli_option comment_options[] = {
        {"provider", OPT_PROVIDER, "P",
         "github or gitlab (default: comment.provider, else detected from the CI)"},
        {"body-file", OPT_BODY_FILE, "FILE",
         "post FILE ('-' for stdin) instead of 'ciprof report' of the latest run"},
        {"dry-run", OPT_DRY_RUN, NULL,
         "print the request (method, URL, body) instead of sending it; never the token"},
        {"strict", OPT_STRICT, NULL, "exit 3 when the comment cannot be posted"},
        {"id", OPT_ID, "NAME",
         "one sticky comment per NAME (a CI matrix: one per suite); passed to 'ciprof report'"},
        {NULL, 0, NULL, NULL},
};

static const char comment_usage[] =
        "[--provider github|gitlab] [--id NAME] [--body-file FILE] [--dry-run] [--strict]";
static const char comment_description[] =
        "Posts the report as ciprof's comment on the current pull request (GitHub Actions)\n"
        "or merge request (GitLab CI), or updates the one it posted before: every comment is\n"
        "listed, and ciprof's is the one carrying the hidden marker <!-- ciprof-report -->\n"
        "and written by the token's own user (on Actions with GITHUB_TOKEN:\n"
        "github-actions[bot]; CIPROF_COMMENT_AUTHOR overrides). A marker in anyone else's\n"
        "comment is left alone. With --id NAME the marker is <!-- ciprof-report id=NAME -->:\n"
        "each NAME keeps its own comment, so the jobs of a CI matrix do not overwrite each\n"
        "other's (NAME: 1 to 64 letters, digits and . _ + : / @ -).\n"
        "\n"
        "The body: --body-file, else 'ciprof report --format md [--id NAME]' of the latest run\n"
        "against\n"
        "report.base-branch when set, else the PR's target branch. With $GITHUB_STEP_SUMMARY\n"
        "set, the body is also appended to the job summary. When the CI names the job's\n"
        "commit or branch and the latest run is of neither, the body reports the latest run\n"
        "that is; with none, nothing is posted (another branch's report never is).\n"
        "\n"
        "GitHub: GITHUB_REPOSITORY, GITHUB_EVENT_PATH or GITHUB_REF (the PR), GITHUB_API_URL,\n"
        "GITHUB_TOKEN (needs 'pull-requests: write'). GitLab: CI_API_V4_URL, CI_PROJECT_ID,\n"
        "CI_MERGE_REQUEST_IID, CIPROF_GITLAB_TOKEN (a project access token, api scope).\n"
        "CIPROF_PR_NUMBER names the PR/MR explicitly (workflow_run companions);\n"
        "CIPROF_PR_HEAD_SHA refuses to post unless the PR's head is that commit.\n"
        "Server errors and rate limits are retried with back-off (CIPROF_HTTP_RETRIES,\n"
        "CIPROF_HTTP_BACKOFF_MS, CIPROF_HTTP_MAX_WAIT_MS). The token is never printed.\n"
        "\n"
        "Exit status: 0 posted, nothing to do (not a PR, comment.enabled false), or not posted\n"
        "with a warning; 3 not posted with --strict; 2 usage error.\n"
        "\n"
        "examples:\n"
        "  ciprof comment\n"
        "  ciprof comment --body-file report.md --strict\n"
        "  ciprof comment --id linux-gcc          # in a matrix job: its own comment\n"
        "  ciprof comment --provider gitlab --dry-run";

struct comment_args {
	const char *provider;
	const char *body_file;
	const char *id;
	int dry_run, strict;
};

static int comment_opt(void *ctx, int id, const char *arg)
{
	struct comment_args *a = ctx;
	enum forge_provider p;
	switch (id) {
	case OPT_PROVIDER:
		if (forge_provider_parse(arg, &p) < 0) {
			cli_usage_error("comment", "--provider takes github or gitlab, not '%s'",
			                arg);
			return -1;
		}
		a->provider = arg;
		return 0;
	case OPT_BODY_FILE:
		if (!*arg) {
			cli_usage_error("comment", "--body-file needs a file name");
			return -1;
		}
		a->body_file = arg;
		return 0;
	case OPT_DRY_RUN:
		a->dry_run = 1;
		return 0;
	case OPT_STRICT:
		a->strict = 1;
		return 0;
	case OPT_ID:
		if (!report_id_valid(arg)) {
			cli_usage_error("comment",
			                "--id takes 1 to 64 letters, digits and . _ + : / @ - (no "
			                "'--'), not '%s'",
			                arg);
			return -1;
		}
		a->id = arg;
		return 0;
	}
	return -1;
}

/*
 * The default body: Markdown from `ciprof report --format md [--base BASE]` of the latest run.
 * It runs this very binary as a subprocess, so comment depends on report's command line only;
 * this function is the one place that knows how the report is obtained. 0 or -1 (cp_error).
 */
static int report_body(const char *base, const char *id, int64_t head, struct strbuf *out)
{
	const char *args[14];
	char head_arg[24];
	size_t n = 0;
	args[n++] = "ciprof";
	if (log_level() <= LOG_QUIET)
		args[n++] = "-q";
	else if (log_level() >= LOG_VERBOSE)
		args[n++] = "-v";
	args[n++] = "report";
	args[n++] = "--format";
	args[n++] = "md";
	if (base) {
		args[n++] = "--base";
		args[n++] = base;
	}
	if (id) {
		args[n++] = "--id";
		args[n++] = id;
	}
	if (head) {
		snprintf(head_arg, sizeof(head_arg), "%lld", (long long)head);
		args[n++] = "--head";
		args[n++] = head_arg;
	}
	args[n] = NULL;
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return cp_error_errno("cannot create a pipe");
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return cp_error_errno("cannot fork 'ciprof report'");
	}
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);
		if (devnull >= 0)
			dup2(devnull, STDIN_FILENO);
		dup2(fds[1], STDOUT_FILENO);
		execv("/proc/self/exe", (char *const *)args);
		fprintf(stderr, "ciprof: cannot run /proc/self/exe report: %s\n", strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	int ret = 0;
	char buf[65536];
	for (;;) {
		ssize_t got = read(fds[0], buf, sizeof(buf));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		if (strbuf_add(out, buf, (size_t)got) < 0 && !ret)
			ret = cp_error("the report is larger than %zu bytes", out->max);
	}
	close(fds[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (ret == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		ret = cp_error(
		        "'ciprof report --format md%s%s' failed (%s %d); see its message above",
		        base ? " --base " : "", base ? base : "",
		        WIFEXITED(st) ? "exit status" : "signal",
		        WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return ret;
}

/* Whether run m is of the CI job's head: at one of its commits, or on its branch. */
static int of_job(const struct run_meta *m, const char *const *commits, size_t ncommits,
                  const char *branch)
{
	for (size_t i = 0; i < ncommits; i++)
		if (*m->commit && !strncmp(m->commit, commits[i], strlen(commits[i])))
			return 1;
	return branch && !strcmp(m->branch, branch);
}

/*
 * The run the default body reports on. The newest run, unless the CI job names its head (its
 * commit, the PR's head commit, its branch) and the newest run is of none of them (another
 * branch's job shares the database): then the newest run at one of the job's commits, else
 * the newest of its branch. *head = that run's id, 0 for the newest (or when the database
 * cannot be read: 'ciprof report' then says why). -1 (cp_error) when the database has runs
 * but none of this job's: another branch's report is not posted.
 */
static int job_run(const struct forge_target *t, char *const *envp, int64_t *head)
{
	*head = 0;
	/* a companion job (CIPROF_PR_NUMBER) comments on a PR it did not run for: its own
	 * commit and branch say nothing about the runs */
	if (t->provider == FORGE_UNKNOWN || !strcmp(t->number_src, "CIPROF_PR_NUMBER"))
		return 0;
	const char *commits[2];
	size_t nc = 0;
	if (*t->commit)
		commits[nc++] = t->commit;
	if (*t->pr_head)
		commits[nc++] = t->pr_head;
	const char *branch = gitmeta_ci_branch(envp);
	if (!nc && !branch)
		return 0;
	char *path = store_default_path();
	struct store *s = NULL;
	struct run_meta *newest = NULL, *runs = NULL;
	size_t nnewest = 0, n = 0;
	int ret = 0;
	if (store_open(&s, path, STORE_READONLY) < 0 ||
	    store_list_runs(s, NULL, 1, &newest, &nnewest) < 0 || !nnewest ||
	    of_job(&newest[0], commits, nc, branch))
		goto out; /* 'ciprof report' says what is wrong, or posts the newest */
	for (size_t i = 0; i < nc; i++) {
		struct store_run_filter f = {.commit_prefix = commits[i], .limit = 1};
		if (store_find_runs(s, &f, &runs, &n) == 0 && n && runs[0].id > *head)
			*head = runs[0].id;
		store_runs_free(runs, n);
		runs = NULL;
		n = 0;
	}
	if (!*head && branch) {
		struct store_run_filter f = {.branch = branch, .limit = 1};
		if (store_find_runs(s, &f, &runs, &n) == 0 && n)
			*head = runs[0].id;
	}
	if (*head) {
		log_info("comment: the newest run (%lld) is of branch '%s' at %.12s, not this "
		         "job's: reporting run %lld instead",
		         (long long)newest[0].id, newest[0].branch, newest[0].commit,
		         (long long)*head);
		goto out;
	}
	struct strbuf what = STRBUF_INIT;
	for (size_t i = 0; i < nc; i++)
		strbuf_addf(&what, "%scommit %.12s", i ? " or " : "", commits[i]);
	if (branch)
		strbuf_addf(&what, "%sbranch '%s'", nc ? " or " : "", branch);
	ret = cp_error("no run of this job's %s in %s: the newest, run %lld, is of branch '%s' at "
	               "%.12s, and another branch's report is not posted; run 'ciprof run' in "
	               "this job first",
	               what.buf, path, (long long)newest[0].id, newest[0].branch, newest[0].commit);
	strbuf_release(&what);
out:
	store_runs_free(runs, n);
	store_runs_free(newest, nnewest);
	if (s)
		store_close(s);
	free(path);
	return ret;
}

static int read_body_file(const char *path, struct strbuf *out)
{
	if (strcmp(path, "-"))
		return strbuf_read_file(out, path);
	char buf[65536];
	for (;;) {
		ssize_t got = read(STDIN_FILENO, buf, sizeof(buf));
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return cp_error_errno("cannot read the body from standard input");
		if (got == 0)
			return 0;
		if (strbuf_add(out, buf, (size_t)got) < 0)
			return cp_error("the body is larger than %zu bytes", out->max);
	}
}

/* Appends the body to the GitHub job summary; a failure is only a warning. */
static void step_summary(const char *path, const struct strbuf *body, int dry_run)
{
	if (dry_run) {
		log_info("dry run: would append the report to $GITHUB_STEP_SUMMARY");
		return;
	}
	FILE *f = fopen(path, "a");
	int bad = !f;
	if (f) {
		fwrite(body->buf, 1, body->len, f);
		if (body->len && body->buf[body->len - 1] != '\n')
			fputc('\n', f);
		bad = ferror(f) != 0;
		if (fclose(f) != 0)
			bad = 1;
	}
	if (bad)
		log_warn("cannot append the report to $GITHUB_STEP_SUMMARY (%s): %s", path,
		         strerror(errno));
	else
		log_verbose("report appended to the job summary");
}

/* What to do about a refused token, by provider. */
static void denied_hint(const struct forge_target *t, const struct forge_result *res)
{
	if (res->status == 401) {
		log_warn("%s was rejected (HTTP 401): it is wrong or has expired", t->token_var);
		return;
	}
	if (res->status == 404 && !res->write_denied) {
		log_warn("%s or the %s number may be wrong, or %s cannot see the %s",
		         t->provider == FORGE_GITLAB ? "CI_PROJECT_ID" : "GITHUB_REPOSITORY",
		         t->provider == FORGE_GITLAB ? "merge request" : "pull request",
		         t->token_var, t->provider == FORGE_GITLAB ? "project" : "repository");
		return;
	}
	if (t->provider == FORGE_GITLAB) {
		log_warn(
		        "CIPROF_GITLAB_TOKEN may not %s notes on this merge request. Use a project "
		        "access token with the 'api' scope and at least the Reporter role, stored "
		        "as "
		        "a masked CI/CD variable. Pipelines for merge requests from forks run "
		        "without "
		        "the parent project's variables unless they run in the parent project "
		        "(docs/ci.md, 'Fork merge requests').",
		        res->write_denied ? "write" : "read");
		return;
	}
	log_warn("%s may not %s comments on this pull request. For pull requests from forks, "
	         "GitHub gives the workflow a read-only token whatever 'permissions' say: the "
	         "action uploads the report as the artifact 'ciprof-report', and a separate "
	         "'workflow_run' workflow with 'pull-requests: write' posts it without running the "
	         "fork's code (ci-templates/github/workflows/ciprof-comment.yml, docs/ci.md, 'Fork "
	         "pull requests'). For same-repository pull requests, give the job "
	         "'permissions: pull-requests: write'.",
	         t->token_var, res->write_denied ? "write" : "read");
}

/* A comment that could not be posted: a warning (exit 0), or an error with --strict (3). */
static int not_posted(const struct comment_args *a, const struct forge_target *t,
                      const struct forge_result *res)
{
	char *msg = forge_redact(xstrdup(cp_last_error()), t ? t->token : NULL);
	if (a->strict)
		fprintf(stderr, "ciprof: error: comment not posted: %s\n", msg);
	else
		log_warn("comment not posted: %s", msg);
	free(msg);
	if (t && res && res->denied)
		denied_hint(t, res);
	return a->strict ? EXIT_RUNTIME : EXIT_OK;
}

int cmd_comment(int argc, char **argv)
{
	struct comment_args a = {0};
	struct config cfg;
	config_init(&cfg);
	struct forge_target t;
	forge_target_init(&t);
	struct forge_result res = {0};
	struct strbuf body = STRBUF_INIT;
	body.max = 16u << 20;
	int first, status;
	int r = cli_parse(argc, argv, "comment", comment_usage, comment_description,
	                  comment_options, comment_opt, &a, &first);
	if (r) {
		status = r > 0 ? cli_finish_stdout() : EXIT_USAGE;
		goto out;
	}
	if (first < argc) {
		status = cli_usage_error("comment",
		                         "unexpected argument '%s'; see 'ciprof comment "
		                         "--help'",
		                         argv[first]);
		goto out;
	}
	if (config_load(&cfg, NULL) < 0) {
		log_errmsg("%s", cp_last_error());
		status = EXIT_USAGE;
		goto out;
	}
	if (a.provider)
		config_set(&cfg, CONFIG_COMMENT_PROVIDER, a.provider, CONFIG_FLAG);

	const char *pname = config_str(&cfg, CONFIG_COMMENT_PROVIDER);
	enum forge_provider provider = FORGE_UNKNOWN;
	if (strcmp(pname, "auto"))
		forge_provider_parse(pname, &provider);
	else
		provider = forge_detect(environ);
	if (provider != FORGE_UNKNOWN && forge_target_from_env(&t, provider, environ) < 0) {
		status = not_posted(&a, &t, NULL);
		goto out;
	}
	free(t.marker);
	t.marker = report_marker(a.id);

	/* The body. */
	if (a.body_file) {
		if (read_body_file(a.body_file, &body) < 0) {
			status = not_posted(&a, &t, NULL);
			goto out;
		}
	} else {
		const char *base = NULL;
		char *why = NULL;
		if (config_is_set(&cfg, CONFIG_REPORT_BASE_BRANCH)) {
			base = config_str(&cfg, CONFIG_REPORT_BASE_BRANCH);
			why = config_origin(&cfg, CONFIG_REPORT_BASE_BRANCH);
		} else if (*t.base_ref) {
			base = t.base_ref;
			why = xstrdup("the pull request's target branch");
		}
		if (base)
			log_verbose("comment: body from 'ciprof report --base %s' (%s)", base, why);
		free(why);
		int64_t head;
		if (job_run(&t, environ, &head) < 0 || report_body(base, a.id, head, &body) < 0) {
			status = not_posted(&a, &t, NULL);
			goto out;
		}
	}
	if (!body.len) {
		cp_error("the body is empty");
		status = not_posted(&a, &t, NULL);
		goto out;
	}

	const char *summary = getenv("GITHUB_STEP_SUMMARY");
	if (summary && *summary) {
		/* the job summary is shown to anyone who can see the run: no token there */
		char *text = forge_redact(xstrndup(body.buf, body.len), t.token);
		struct strbuf sb = STRBUF_INIT;
		strbuf_addstr(&sb, text);
		step_summary(summary, &sb, a.dry_run);
		strbuf_release(&sb);
		free(text);
	}

	if (!config_bool(&cfg, CONFIG_COMMENT_ENABLED)) {
		char *from = config_origin(&cfg, CONFIG_COMMENT_ENABLED);
		log_info("comment: comment.enabled is false (%s): nothing posted", from);
		free(from);
		status = EXIT_OK;
		goto out;
	}
	if (provider == FORGE_UNKNOWN) {
		cp_error("not in GitHub Actions (GITHUB_ACTIONS=true) nor GitLab CI "
		         "(GITLAB_CI=true): "
		         "pass --provider github or gitlab");
		status = not_posted(&a, &t, NULL);
		goto out;
	}
	if (!t.number) {
		log_info("comment: this %s job is not for a %s: nothing to comment on",
		         forge_provider_name(provider),
		         provider == FORGE_GITHUB ? "pull request" : "merge request");
		status = EXIT_OK;
		goto out;
	}
	struct forge_opts o = {.dry_run = a.dry_run, .dry_out = stdout};
	if (forge_comment_upsert(&t, body.buf, body.len, &o, &res) < 0) {
		status = not_posted(&a, &t, &res);
		goto out;
	}
	const char *noun = provider == FORGE_GITHUB ? "PR #" : "MR !";
	/* the address comes from the API: printed only when it looks like one */
	if (res.url && (strncmp(res.url, "https://", 8) || strpbrk(res.url, " \t\r\n\033"))) {
		free(res.url);
		res.url = NULL;
	}
	if (a.dry_run)
		log_info("dry run: would %s the comment on %s%lld",
		         res.action == FORGE_UPDATED ? "update" : "create", noun,
		         (long long)t.number);
	else
		log_info("%s comment %lld on %s%lld%s%s",
		         res.action == FORGE_UPDATED ? "updated" : "posted",
		         (long long)res.comment_id, noun, (long long)t.number, res.url ? ": " : "",
		         res.url ? res.url : "");
	status = cli_finish_stdout();
out:
	strbuf_release(&body);
	forge_result_release(&res);
	forge_target_release(&t);
	config_release(&cfg);
	return status;
}
