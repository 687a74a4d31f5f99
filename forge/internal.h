/* forge/ internals shared by comment.c (the find-and-update logic) and the two providers. */
#ifndef CP_FORGE_INTERNAL_H
#define CP_FORGE_INTERNAL_H

#include "forge/forge.h"
#include "forge/http.h"

#include <jansson.h>

/* One comment run: the target, its HTTP client and who ciprof is there. */
struct forge_session {
	const struct forge_target *t;
	struct forge_http *http;
	struct forge_result *res;
	char *login;     /* the author of ciprof's comments (owned) */
	int64_t user_id; /* GitLab: the token's user id, 0 when unknown (compare login) */
};

/* What listing every comment found: ciprof's first comment (0 when none). */
struct forge_found {
	int64_t id;
	char *url; /* owned, may be NULL */
	size_t ours;
};

/* Provider operations. Each returns 0 or -1 with cp_error set (via forge_failed). */
struct forge_provider_ops {
	const char *noun;          /* "pull request" */
	const char *short_noun;    /* "PR" */
	const char *update_method; /* "PATCH" / "PUT" */
	const char *ref_prefix;    /* how the forge writes a number: "#" (PR #12) / "!" (MR !12) */
	size_t body_limit;
	int (*whoami)(struct forge_session *s);
	/* The PR's / MR's API URL (owned), and its head commit in that URL's JSON (borrowed). */
	char *(*pr_url)(struct forge_session *s);
	json_t *(*head_sha)(json_t *pr);
	int (*find)(struct forge_session *s, struct forge_found *f);
	char *(*create_url)(struct forge_session *s);
	char *(*update_url)(struct forge_session *s, int64_t id);
	/* Reads the created/updated comment's id and web address from its JSON. */
	void (*parse_written)(json_t *comment, int64_t *id, char **url);
};

extern const struct forge_provider_ops forge_github_ops;
extern const struct forge_provider_ops forge_gitlab_ops;

/*
 * A request whose status was not the expected one: records it in s->res (status, denied) and
 * sets cp_error to "METHOD URL: HTTP N: <the API's message>", redacted. Returns -1.
 */
int forge_failed(struct forge_session *s, const char *method, const char *url,
                 const struct forge_response *r);

/* Parses r's body as JSON (owned, json_decref), or sets cp_error and returns NULL. */
json_t *forge_json(struct forge_session *s, const char *url, const struct forge_response *r);

/*
 * The one way forge/ reads its APIs: GET url (retried as forge_http_request does) into *r,
 * which keeps the headers for paging, and parse the answer. HTTP 200: *out = its JSON (owned,
 * json_decref), returns 0. With denied_ok, a 403 or 404 returns 1 with *out NULL and nothing
 * recorded (for callers to whom a refusal is an answer). Else -1 with cp_error set and *out
 * NULL: no answer, another status (forge_failed: "GET URL: HTTP N: <the API's message>"), or
 * a body that is not JSON.
 */
int forge_get_json(struct forge_session *s, const char *url, int denied_ok,
                   struct forge_response *r, json_t **out);

#endif
