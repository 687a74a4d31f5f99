/* forge/env: which PR/MR a CI job belongs to, and with which token and API to comment on it,
 * read from GitHub Actions' or GitLab CI's variables (and GitHub's event payload file). */
#include "forge/forge.h"
#include "common/error.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static const char *env_get(char *const *envp, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; envp && envp[i]; i++)
		if (!strncmp(envp[i], name, n) && envp[i][n] == '=')
			return envp[i] + n + 1;
	return NULL;
}

/* The variable's value, "" when unset. */
static const char *env_str(char *const *envp, const char *name)
{
	const char *v = env_get(envp, name);
	return v ? v : "";
}

int forge_provider_parse(const char *s, enum forge_provider *out)
{
	if (!strcmp(s, "github"))
		*out = FORGE_GITHUB;
	else if (!strcmp(s, "gitlab"))
		*out = FORGE_GITLAB;
	else
		return -1;
	return 0;
}

const char *forge_provider_name(enum forge_provider p)
{
	switch (p) {
	case FORGE_GITHUB:
		return "github";
	case FORGE_GITLAB:
		return "gitlab";
	default:
		return "unknown";
	}
}

enum forge_provider forge_detect(char *const *envp)
{
	if (!strcmp(env_str(envp, "GITHUB_ACTIONS"), "true"))
		return FORGE_GITHUB;
	if (!strcmp(env_str(envp, "GITLAB_CI"), "true"))
		return FORGE_GITLAB;
	return FORGE_UNKNOWN;
}

void forge_target_init(struct forge_target *t)
{
	memset(t, 0, sizeof(*t));
	t->api_url = xstrdup("");
	t->project = xstrdup("");
	t->number_src = xstrdup("");
	t->token = xstrdup("");
	t->token_var = "";
	t->base_ref = xstrdup("");
	t->author = xstrdup("");
	t->head_sha = xstrdup("");
	t->pr_head = xstrdup("");
	t->commit = xstrdup("");
	t->marker = xstrdup(COMMENT_MARKER);
}

void forge_target_release(struct forge_target *t)
{
	free(t->api_url);
	free(t->project);
	free(t->number_src);
	if (t->token) {
		memset(t->token, 0, strlen(t->token));
		free(t->token);
	}
	free(t->base_ref);
	free(t->author);
	free(t->head_sha);
	free(t->pr_head);
	free(t->commit);
	free(t->marker);
	memset(t, 0, sizeof(*t));
}

static void set(char **field, const char *v)
{
	free(*field);
	*field = xstrdup(v ? v : "");
}

/* The token, trimmed of surrounding white space (a secret read from a file often ends in a
 * newline); one with control characters inside would break the request's headers. The error
 * names the variable, never the value. */
static int set_token(struct forge_target *t, const char *v, const char *var)
{
	while (*v == ' ' || *v == '\t' || *v == '\r' || *v == '\n')
		v++;
	size_t n = strlen(v);
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\r' || v[n - 1] == '\n'))
		n--;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f || v[i] == ' ')
			return cp_error(
			        "%s holds spaces or control characters: it cannot be a token", var);
	if (t->token)
		memset(t->token, 0, strlen(t->token));
	free(t->token);
	t->token = xstrndup(v, n);
	t->token_var = var;
	return 0;
}

/* A PR/MR number: 1 .. 2^53 in decimal. */
/* A commit id from the CI: 7 to 64 hex digits, else ignored ("" kept). */
static void set_sha(char **field, const char *v)
{
	size_t n = v ? strlen(v) : 0;
	if (n >= 7 && n <= 64 && strspn(v, "0123456789abcdef") == n)
		set(field, v);
}

static int parse_number(const char *s, int64_t *out)
{
	if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 15)
		return -1;
	int64_t v = strtoll(s, NULL, 10);
	if (v <= 0)
		return -1;
	*out = v;
	return 0;
}

static int api_url(struct forge_target *t, const char *v, const char *var)
{
	if (strncmp(v, "https://", 8) && strncmp(v, "http://", 7))
		return cp_error("%s must be an http(s):// URL, not '%.200s'", var, v);
	if (strpbrk(v, " \t\r\n\"<>"))
		return cp_error("%s must be a URL without spaces or quotes", var);
	set(&t->api_url, v);
	size_t n = strlen(t->api_url);
	while (n > 8 && t->api_url[n - 1] == '/')
		t->api_url[--n] = '\0';
	return 0;
}

/* GITHUB_EVENT_PATH: the webhook payload that started the workflow. */
static int github_event(struct forge_target *t, const char *path)
{
	struct strbuf sb = STRBUF_INIT;
	sb.max = 64u << 20;
	int ret = -1;
	json_t *root = NULL;
	if (strbuf_read_file(&sb, path) < 0) {
		cp_error("GITHUB_EVENT_PATH: %s", cp_last_error());
		goto out;
	}
	json_error_t jerr;
	root = json_loadb(sb.buf, sb.len, 0, &jerr);
	if (!root) {
		cp_error("GITHUB_EVENT_PATH %s: line %d: %s", path, jerr.line, jerr.text);
		goto out;
	}
	json_t *pr = json_object_get(root, "pull_request");
	json_t *num = json_object_get(pr, "number");
	if (!json_is_integer(num)) {
		/* an issue_comment event on a pull request carries the PR as issue.number */
		json_t *issue = json_object_get(root, "issue");
		if (json_object_get(issue, "pull_request"))
			num = json_object_get(issue, "number");
	}
	if (json_is_integer(num) && json_integer_value(num) > 0 && !t->number) {
		t->number = json_integer_value(num);
		set(&t->number_src, "GITHUB_EVENT_PATH");
	}
	/* the PR's own head, not the merge commit the workflow checked out */
	json_t *sha = json_object_get(json_object_get(pr, "head"), "sha");
	if (json_is_string(sha))
		set_sha(&t->pr_head, json_string_value(sha));
	json_t *base = json_object_get(json_object_get(pr, "base"), "ref");
	if (json_is_string(base) && !*t->base_ref)
		set(&t->base_ref, json_string_value(base));
	ret = 0;
out:
	json_decref(root);
	strbuf_release(&sb);
	return ret;
}

static int valid_repo(const char *s)
{
	const char *allowed = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-";
	size_t a = strspn(s, allowed);
	if (!a || s[a] != '/')
		return 0;
	size_t b = strspn(s + a + 1, allowed);
	if (!b || s[a + 1 + b])
		return 0;
	/* "." and ".." would walk the URL's path */
	return strncmp(s, ".", a) && strncmp(s, "..", a) && strcmp(s + a + 1, ".") &&
	       strcmp(s + a + 1, "..");
}

static int github_env(struct forge_target *t, char *const *envp)
{
	const char *v = env_str(envp, "GITHUB_API_URL");
	if (api_url(t, *v ? v : "https://api.github.com", "GITHUB_API_URL") < 0)
		return -1;
	v = env_str(envp, "GITHUB_REPOSITORY");
	if (*v && !valid_repo(v))
		return cp_error("GITHUB_REPOSITORY must be OWNER/REPO, not '%.200s'", v);
	set(&t->project, v);
	set(&t->base_ref, env_str(envp, "GITHUB_BASE_REF"));
	set_sha(&t->commit, env_str(envp, "GITHUB_SHA"));
	v = env_str(envp, "GITHUB_EVENT_PATH");
	if (*v && github_event(t, v) < 0)
		return -1;
	v = env_str(envp, "GITHUB_REF");
	int64_t n;
	if (!t->number && !strncmp(v, "refs/pull/", 10)) {
		char *num = xstrndup(v + 10, strcspn(v + 10, "/"));
		if (parse_number(num, &n) == 0) {
			t->number = n;
			set(&t->number_src, "GITHUB_REF");
		}
		free(num);
	}
	if (set_token(t, env_str(envp, "GITHUB_TOKEN"), "GITHUB_TOKEN") < 0)
		return -1;
	t->actions = !strcmp(env_str(envp, "GITHUB_ACTIONS"), "true");
	return 0;
}

static int gitlab_env(struct forge_target *t, char *const *envp)
{
	const char *v = env_str(envp, "CI_API_V4_URL");
	if (*v && api_url(t, v, "CI_API_V4_URL") < 0)
		return -1;
	/* In a merge request pipeline the MR belongs to CI_MERGE_REQUEST_PROJECT_ID (the
	 * target project), which differs from CI_PROJECT_ID for MRs from forks. */
	v = env_str(envp, "CI_MERGE_REQUEST_PROJECT_ID");
	if (!*v)
		v = env_str(envp, "CI_PROJECT_ID");
	if (strpbrk(v, " \t\r\n"))
		return cp_error("CI_PROJECT_ID must be a project id or path, not '%.200s'", v);
	set(&t->project, v);
	v = env_str(envp, "CI_MERGE_REQUEST_IID");
	int64_t n;
	if (*v) {
		if (parse_number(v, &n) < 0)
			return cp_error("CI_MERGE_REQUEST_IID must be a merge request number, "
			                "not '%.40s'",
			                v);
		t->number = n;
		set(&t->number_src, "CI_MERGE_REQUEST_IID");
	}
	set(&t->base_ref, env_str(envp, "CI_MERGE_REQUEST_TARGET_BRANCH_NAME"));
	/* set in merged-results pipelines, where CI_COMMIT_SHA is the merge */
	set_sha(&t->pr_head, env_str(envp, "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA"));
	set_sha(&t->commit, env_str(envp, "CI_COMMIT_SHA"));
	return set_token(t, env_str(envp, "CIPROF_GITLAB_TOKEN"), "CIPROF_GITLAB_TOKEN");
}

int forge_target_from_env(struct forge_target *t, enum forge_provider p, char *const *envp)
{
	t->provider = p;
	/* CIPROF_PR_NUMBER wins: a workflow_run companion comments on a PR it did not run for */
	const char *v = env_str(envp, "CIPROF_PR_NUMBER");
	if (*v) {
		if (parse_number(v, &t->number) < 0)
			return cp_error(
			        "CIPROF_PR_NUMBER must be a pull request number, not '%.40s'", v);
		set(&t->number_src, "CIPROF_PR_NUMBER");
	}
	set(&t->author, env_str(envp, "CIPROF_COMMENT_AUTHOR"));
	v = env_str(envp, "CIPROF_PR_HEAD_SHA");
	if (*v && (strlen(v) < 7 || strlen(v) > 64 || strspn(v, "0123456789abcdef") != strlen(v)))
		return cp_error("CIPROF_PR_HEAD_SHA must be a commit id in hex, not '%.80s'", v);
	set(&t->head_sha, v);
	switch (p) {
	case FORGE_GITHUB:
		return github_env(t, envp);
	case FORGE_GITLAB:
		return gitlab_env(t, envp);
	default:
		return cp_error("no CI provider: pass --provider github or gitlab");
	}
}

int forge_target_check(const struct forge_target *t, int dry_run)
{
	int gh = t->provider == FORGE_GITHUB;
	if (!*t->api_url)
		return cp_error("%s is not set: the API's address is unknown",
		                gh ? "GITHUB_API_URL" : "CI_API_V4_URL");
	if (!*t->project)
		return cp_error("%s is not set: the %s is unknown",
		                gh ? "GITHUB_REPOSITORY" : "CI_PROJECT_ID",
		                gh ? "repository" : "project");
	if (!t->number)
		return cp_error("not a %s", gh ? "pull request" : "merge request");
	if (!dry_run && !*t->token)
		return cp_error("%s is not set: ciprof needs a token to comment (%s)", t->token_var,
		                gh ? "give the step 'env: GITHUB_TOKEN: ${{ github.token }}' and "
		                     "'permissions: pull-requests: write'"
		                   : "a project access token with the api scope, as a masked "
		                     "CI/CD variable");
	return 0;
}
