/* forge/comment: the sticky comment. List every comment, take ciprof's own (marker and
 * author), update it or create one; with a server error on create, list again before
 * retrying so that a comment created despite the error is not duplicated. */
#include "forge/internal.h"
#include "common/error.h"
#include "common/jsonout.h"
#include "common/log.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ciprof_version.h"

/* Rounds of "find, then update or create" when a create fails with a server error. */
#define UPSERT_ROUNDS 3

void forge_result_release(struct forge_result *r)
{
	free(r->url);
	memset(r, 0, sizeof(*r));
}

/* The API's own words about a failure: "message" (GitHub, GitLab) or "error" (GitLab), on
 * one line, at most 300 bytes. Owned, "" when there are none. */
static char *api_message(const struct forge_response *r)
{
	json_t *j = json_loadb(r->body.buf, r->body.len, 0, NULL);
	json_t *m = json_object_get(j, "message");
	if (!m)
		m = json_object_get(j, "error");
	char *text;
	if (json_is_string(m))
		text = xstrdup(json_string_value(m));
	else if (m) {
		struct strbuf sb = STRBUF_INIT;
		text = jsonout_dump(json_incref(m), &sb, JSONOUT_COMPACT) < 0
		               ? NULL
		               : strbuf_detach(&sb, NULL);
		strbuf_release(&sb);
	} else
		text = xstrndup(r->body.buf, r->body.len < 300 ? r->body.len : 300);
	json_decref(j);
	if (!text)
		text = xstrdup("");
	for (char *p = text; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	if (strlen(text) > 300)
		strcpy(text + 297, "...");
	return text;
}

int forge_failed(struct forge_session *s, const char *method, const char *url,
                 const struct forge_response *r)
{
	s->res->status = r->status;
	s->res->denied = r->status == 401 || r->status == 403 || r->status == 404;
	s->res->write_denied = s->res->denied && strcmp(method, "GET");
	char *msg = api_message(r);
	forge_error(s->t->token, "%s %s: HTTP %ld%s%s", method, url, r->status, *msg ? ": " : "",
	            msg);
	free(msg);
	return -1;
}

json_t *forge_json(struct forge_session *s, const char *url, const struct forge_response *r)
{
	json_error_t err;
	json_t *j = json_loadb(r->body.buf, r->body.len, 0, &err);
	if (!j)
		forge_error(s->t->token, "%s: the answer is not JSON (line %d: %s)", url, err.line,
		            err.text);
	return j;
}

int forge_get_json(struct forge_session *s, const char *url, int denied_ok,
                   struct forge_response *r, json_t **out)
{
	*out = NULL;
	if (forge_http_request(s->http, "GET", url, NULL, 1, r) < 0)
		return -1;
	if (denied_ok && (r->status == 403 || r->status == 404))
		return 1;
	if (r->status != 200)
		return forge_failed(s, "GET", url, r);
	*out = forge_json(s, url, r);
	return *out ? 0 : -1;
}

/* CIPROF_PR_HEAD_SHA: the PR's head must be that commit (a workflow_run companion checks that
 * the report it downloaded is for the PR it is about to comment on). */
static int check_head(struct forge_session *s, const struct forge_provider_ops *ops)
{
	const struct forge_target *t = s->t;
	char *url = ops->pr_url(s);
	struct forge_response r;
	forge_response_init(&r);
	json_t *j;
	int ret = forge_get_json(s, url, 0, &r, &j);
	if (ret < 0)
		goto out;
	ret = -1;
	json_t *sha = ops->head_sha(j);
	if (!json_is_string(sha))
		forge_error(t->token, "GET %s: the answer has no head commit", url);
	else if (strncmp(json_string_value(sha), t->head_sha, strlen(t->head_sha)))
		forge_error(t->token,
		            "%s %s%lld's head is %.40s, not %s (CIPROF_PR_HEAD_SHA): the report "
		            "is for another commit, so it is not posted",
		            ops->short_noun, ops->ref_prefix, (long long)t->number,
		            json_string_value(sha), t->head_sha);
	else
		ret = 0;
	json_decref(j);
out:
	forge_response_release(&r);
	free(url);
	return ret;
}

static const struct forge_provider_ops *ops_for(enum forge_provider p)
{
	return p == FORGE_GITLAB ? &forge_gitlab_ops : &forge_github_ops;
}

/* --dry-run: what would be sent, never with the token (the body is already redacted). */
static void print_dry(const struct forge_opts *o, const char *method, const char *url,
                      const char *body, const char *secret)
{
	FILE *out = o->dry_out ? o->dry_out : stdout;
	char *u = forge_redact(xstrdup(url), secret);
	fprintf(out, "%s %s\n\n%s", method, u, body);
	if (*body && body[strlen(body) - 1] != '\n')
		fputc('\n', out);
	free(u);
}

static char *json_body(const char *body)
{
	json_t *j = json_object();
	jsonout_set(j, "body", jsonout_str(body));
	struct strbuf sb = STRBUF_INIT;
	if (jsonout_dump(j, &sb, JSONOUT_COMPACT) < 0)
		abort(); /* only OOM gets here */
	return strbuf_detach(&sb, NULL);
}

/* Sends the write (PATCH/PUT to id, or POST when id is 0). 0 done, 1 "try again after listing"
 * (a create that met a server error or lost its connection), -1 failed. */
static int write_comment(struct forge_session *s, const struct forge_provider_ops *ops, int64_t id,
                         const char *payload)
{
	const char *method = id ? ops->update_method : "POST";
	char *url = id ? ops->update_url(s, id) : ops->create_url(s);
	struct forge_response r;
	forge_response_init(&r);
	int ret = -1;
	/* An edit can be repeated; a create cannot, blindly: 5xx come back here. */
	if (forge_http_request(s->http, method, url, payload, id != 0, &r) < 0) {
		s->res->status = r.status;
		if (!id && r.status == 0) {
			log_warn("%s", cp_last_error());
			ret = 1;
		}
		goto out;
	}
	if (r.status == 200 || r.status == 201) {
		json_t *j = json_loadb(r.body.buf, r.body.len, 0, NULL);
		s->res->comment_id = id;
		ops->parse_written(j, &s->res->comment_id, &s->res->url);
		json_decref(j);
		s->res->action = id ? FORGE_UPDATED : FORGE_CREATED;
		ret = 0;
	} else if (!id && r.status >= 500 && r.status <= 599) {
		forge_failed(s, method, url, &r);
		log_warn("%s; listing the comments again before another try", cp_last_error());
		ret = 1;
	} else if (id && r.status == 404) {
		/* deleted since it was listed: create a new one */
		log_verbose("comment %lld is gone; creating a new one", (long long)id);
		ret = 1;
	} else {
		forge_failed(s, method, url, &r);
	}
out:
	forge_response_release(&r);
	free(url);
	return ret;
}

int forge_comment_upsert(const struct forge_target *t, const char *body, size_t len,
                         const struct forge_opts *o, struct forge_result *res)
{
	const struct forge_provider_ops *ops = ops_for(t->provider);
	struct forge_session s = {.t = t, .res = res};
	memset(res, 0, sizeof(*res));
	char *text =
	        forge_redact(forge_prepare_body(body, len, ops->body_limit, t->marker), t->token);
	char *payload = NULL;
	char *auth = NULL;
	int ret = -1;
	if (forge_target_check(t, o->dry_run) < 0)
		goto out;
	if (o->dry_run && !*t->token) {
		/* No token: no listing either; say what a first run would do. */
		char *url = ops->create_url(&s);
		log_info("dry run without %s: existing comments were not looked up", t->token_var);
		print_dry(o, "POST", url, text, t->token);
		free(url);
		res->action = FORGE_CREATED;
		ret = 0;
		goto out;
	}
	if (t->provider == FORGE_GITLAB)
		auth = xasprintf("PRIVATE-TOKEN: %s", t->token);
	else
		auth = xasprintf("Authorization: Bearer %s", t->token);
	const char *headers[] = {
	        auth,
	        "Content-Type: application/json",
	        "User-Agent: ciprof/" CIPROF_VERSION,
	        t->provider == FORGE_GITLAB ? "Accept: application/json"
	                                    : "Accept: application/vnd.github+json",
	        t->provider == FORGE_GITLAB ? NULL : "X-GitHub-Api-Version: 2022-11-28",
	        NULL,
	};
	if (forge_http_new(&s.http, t->token, headers, NULL) < 0)
		goto out;
	if (*t->head_sha && check_head(&s, ops) < 0)
		goto out;
	if (ops->whoami(&s) < 0)
		goto out;
	payload = json_body(text);
	for (int round = 1; round <= UPSERT_ROUNDS; round++) {
		struct forge_found f = {0};
		if (ops->find(&s, &f) < 0)
			goto out;
		if (res->foreign_markers)
			log_info("%zu comment(s) carry ciprof's marker but are not by %s: left "
			         "alone",
			         res->foreign_markers, s.login);
		if (f.ours > 1)
			log_verbose("%zu comments by %s carry the marker; updating the first",
			            f.ours, s.login);
		if (o->dry_run) {
			char *url = f.id ? ops->update_url(&s, f.id) : ops->create_url(&s);
			print_dry(o, f.id ? ops->update_method : "POST", url, text, t->token);
			free(url);
			res->action = f.id ? FORGE_UPDATED : FORGE_CREATED;
			res->comment_id = f.id;
			res->url = f.url;
			ret = 0;
			goto out;
		}
		int w = write_comment(&s, ops, f.id, payload);
		if (w == 0 && !res->url && f.id)
			res->url = f.url;
		else
			free(f.url);
		if (w <= 0) {
			ret = w;
			goto out;
		}
		if (round == UPSERT_ROUNDS) {
			forge_error(t->token, "%s: gave up after %d tries", cp_last_error(), round);
			goto out;
		}
		forge_http_pause(s.http, round);
	}
out:
	free(s.login);
	forge_http_free(s.http);
	if (auth) {
		memset(auth, 0, strlen(auth));
		free(auth);
	}
	free(payload);
	free(text);
	return ret;
}
