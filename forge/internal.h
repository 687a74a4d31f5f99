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
	size_t body_limit;
	int (*whoami)(struct forge_session *s);
	int (*check_head)(struct forge_session *s);
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

/* Percent-encodes s for a URL path segment (owned). */
char *forge_url_escape(const char *s);

#endif
