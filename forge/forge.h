/* forge/: ciprof's sticky pull-request comment. Finds the PR (GitHub) or MR (GitLab) of the CI
 * job from its environment, lists every comment on it, recognises ciprof's own by the hidden
 * marker *and* its author (a marker pasted by anyone else is never adopted), then updates that
 * comment or creates one. Only this room speaks HTTP; see forge/http.h for retries and
 * redaction. docs/comment.md describes the behaviour for users. */
#ifndef CP_FORGE_H
#define CP_FORGE_H

#include "common/comment.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The login GitHub gives comments made with the Actions GITHUB_TOKEN. */
#define FORGE_ACTIONS_LOGIN "github-actions[bot]"

enum forge_provider { FORGE_UNKNOWN = 0, FORGE_GITHUB, FORGE_GITLAB };

/* "github" / "gitlab" -> provider; 0, or -1 for anything else. */
int forge_provider_parse(const char *s, enum forge_provider *out);
const char *forge_provider_name(enum forge_provider p);
/* The CI the environment belongs to: GITHUB_ACTIONS=true, GITLAB_CI=true, else UNKNOWN. */
enum forge_provider forge_detect(char *const *envp);

/* Where the comment goes, read from the CI job's environment. All strings owned, "" if unset. */
struct forge_target {
	enum forge_provider provider;
	char *api_url;         /* without a trailing slash */
	char *project;         /* "owner/repo" (GitHub), project id or path (GitLab) */
	int64_t number;        /* PR number / MR iid; 0 when the job is not for one */
	char *number_src;      /* where number came from, for messages ("GITHUB_EVENT_PATH") */
	char *token;           /* secret: never printed; pass it to forge_redact */
	const char *token_var; /* the variable it came from: "GITHUB_TOKEN" (static) */
	char *base_ref;        /* the PR's target branch, "" when unknown */
	char *author;   /* CIPROF_COMMENT_AUTHOR: ciprof's comments' author, "" = ask the API */
	char *head_sha; /* CIPROF_PR_HEAD_SHA: the PR's head commit must be this one */
	char *pr_head;  /* the PR's head commit as the CI reports it (GitHub's event
	                   pull_request.head.sha, GitLab's CI_MERGE_REQUEST_SOURCE_BRANCH_SHA):
	                   hex, "" when unknown */
	char *commit;   /* the job's own commit (GITHUB_SHA, CI_COMMIT_SHA; for a PR it may be
	                   the merge commit): hex, "" when unknown */
	int actions;    /* GitHub Actions (GITHUB_ACTIONS=true) */
	char *marker;   /* the hidden line that makes a comment ciprof's: COMMENT_MARKER, or
	                   report_marker(--id) so that each suite keeps its own comment */
};

void forge_target_init(struct forge_target *t);
void forge_target_release(struct forge_target *t);

/*
 * Fills t for provider p from envp (NULL-terminated "NAME=value" strings, like environ).
 * GitHub: GITHUB_API_URL (default https://api.github.com), GITHUB_REPOSITORY, the PR number
 * from CIPROF_PR_NUMBER, else GITHUB_EVENT_PATH's pull_request.number (or issue.number of an
 * issue_comment on a PR), else GITHUB_REF refs/pull/N/...; GITHUB_BASE_REF; GITHUB_TOKEN.
 * GitLab: CI_API_V4_URL, CI_MERGE_REQUEST_PROJECT_ID else CI_PROJECT_ID, CIPROF_PR_NUMBER else
 * CI_MERGE_REQUEST_IID, CI_MERGE_REQUEST_TARGET_BRANCH_NAME, CIPROF_GITLAB_TOKEN.
 * Missing values stay "" / 0 (forge_target_check says what is missing); malformed ones (a
 * repository with a slash too many, a PR number that is not a number, unreadable event JSON)
 * are errors. 0 or -1 (cp_error, never containing the token).
 */
int forge_target_from_env(struct forge_target *t, enum forge_provider p, char *const *envp);

/* 0 when t has what posting needs (API URL, project, number, token unless dry_run), else -1
 * with a message naming the missing variable. */
int forge_target_check(const struct forge_target *t, int dry_run);

enum forge_action { FORGE_NONE = 0, FORGE_CREATED, FORGE_UPDATED };

struct forge_result {
	enum forge_action action; /* what was done, or would be with dry_run */
	int64_t comment_id;       /* the comment created or updated (0 when unknown) */
	char *url;                /* its web address when the API said (owned, may be NULL) */
	long status;              /* the HTTP status of the request that failed, 0 if none */
	int denied;               /* the failure was 401/403/404: the token may not do this */
	int write_denied;         /* ... and it happened on a write (typical of fork PRs) */
	size_t pages;             /* comment pages listed */
	size_t foreign_markers;   /* marker comments by other authors, left alone */
};

void forge_result_release(struct forge_result *r);

struct forge_opts {
	int dry_run;   /* list (when a token is there) but do not write: print the request */
	FILE *dry_out; /* where dry_run prints "METHOD URL", a blank line and the body */
};

/*
 * Posts body as ciprof's comment on t's PR/MR: finds ciprof's existing comment (marker and
 * author), PATCHes (GitHub) / PUTs (GitLab) it, else POSTs a new one. The body gets the marker
 * as its first line when it lacks it, invalid UTF-8 replaced, and is cut to the provider's
 * limit with a note. A POST that fails with a server error is not repeated blindly: the
 * comments are listed again first, in case it was created after all. Returns 0 (res filled),
 * or -1 with cp_error set (token redacted) and res->status / denied telling why.
 */
int forge_comment_upsert(const struct forge_target *t, const char *body, size_t len,
                         const struct forge_opts *o, struct forge_result *res);

/*
 * The body as it will be sent (owned): marker (a line of its own) first, valid UTF-8, at most limit
 * characters (a truncation note included). Exposed for tests.
 */
char *forge_prepare_body(const char *body, size_t len, size_t limit, const char *marker);

#endif
