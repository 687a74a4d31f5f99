/* forge/gitlab: GitLab's REST API v4 for merge request notes: who the token is, every page of
 * an MR's notes (X-Next-Page), system notes skipped, and the URLs to create or edit one. */
#include "forge/internal.h"
#include "common/error.h"
#include "common/log.h"
#include "common/xalloc.h"

#include <stdlib.h>
#include <string.h>

#define GITLAB_MAX_PAGES 200

/* Who ciprof's notes are by: CIPROF_COMMENT_AUTHOR (a username), else GET /user (the token's
 * user; a project access token has its own bot user). */
static int gitlab_whoami(struct forge_session *s)
{
	const struct forge_target *t = s->t;
	if (*t->author) {
		s->login = xstrdup(t->author);
		log_verbose("gitlab: ciprof's notes are those by %s (CIPROF_COMMENT_AUTHOR)",
		            s->login);
		return 0;
	}
	char *url = xasprintf("%s/user", t->api_url);
	struct forge_response r;
	forge_response_init(&r);
	json_t *j;
	int ret = forge_get_json(s, url, 0, &r, &j);
	if (ret < 0)
		goto out;
	ret = -1;
	json_t *id = json_object_get(j, "id");
	json_t *name = json_object_get(j, "username");
	if (!json_is_integer(id) || !json_is_string(name)) {
		forge_error(t->token, "GET %s: the answer has no id and username", url);
	} else {
		s->user_id = json_integer_value(id);
		s->login = xstrdup(json_string_value(name));
		log_verbose("gitlab: the token is %s's (user %lld)", s->login,
		            (long long)s->user_id);
		ret = 0;
	}
	json_decref(j);
out:
	forge_response_release(&r);
	free(url);
	return ret;
}

static char *mr_url(struct forge_session *s)
{
	char *project = forge_url_escape(s->t->project);
	char *url = xasprintf("%s/projects/%s/merge_requests/%lld", s->t->api_url, project,
	                      (long long)s->t->number);
	free(project);
	return url;
}

static json_t *gitlab_head_sha(json_t *mr)
{
	return json_object_get(mr, "sha");
}

static int is_ours(struct forge_session *s, json_t *author)
{
	json_t *id = json_object_get(author, "id");
	json_t *name = json_object_get(author, "username");
	if (s->user_id)
		return json_is_integer(id) && json_integer_value(id) == s->user_id;
	return json_is_string(name) && !strcmp(json_string_value(name), s->login);
}

static int gitlab_find(struct forge_session *s, struct forge_found *f)
{
	const struct forge_target *t = s->t;
	char *base = mr_url(s);
	struct forge_response r;
	forge_response_init(&r);
	int ret = -1;
	long page = 1;
	size_t pages = 0;
	char *url = NULL;
	s->res->foreign_markers = 0;
	for (;;) {
		if (++pages > GITLAB_MAX_PAGES) {
			forge_error(t->token, "MR !%lld has more than %d pages of notes; stopped",
			            (long long)t->number, GITLAB_MAX_PAGES);
			goto out;
		}
		free(url);
		url = xasprintf("%s/notes?sort=asc&order_by=created_at&per_page=100&page=%ld", base,
		                page);
		json_t *list;
		if (forge_get_json(s, url, 0, &r, &list) < 0)
			goto out;
		if (!json_is_array(list)) {
			json_decref(list);
			forge_error(t->token, "GET %s: expected a list of notes", url);
			goto out;
		}
		size_t i;
		json_t *c;
		json_array_foreach(list, i, c)
		{
			json_t *body = json_object_get(c, "body");
			json_t *id = json_object_get(c, "id");
			/* system notes ("added 1 commit") are GitLab's own, never ciprof's */
			if (json_is_true(json_object_get(c, "system")))
				continue;
			if (!json_is_string(body) || !strstr(json_string_value(body), t->marker))
				continue;
			if (!is_ours(s, json_object_get(c, "author")) || !json_is_integer(id)) {
				s->res->foreign_markers++;
				continue;
			}
			if (!f->ours++)
				f->id = json_integer_value(id);
		}
		json_decref(list);
		/* X-Next-Page is empty on the last page */
		const char *next = r.next_page ? r.next_page : "";
		if (!*next)
			break;
		char *end;
		long n = strtol(next, &end, 10);
		if (*end || n <= page) {
			forge_error(t->token, "GET %s: X-Next-Page '%.20s' is not a later page",
			            url, next);
			goto out;
		}
		page = n;
	}
	ret = 0;
out:
	s->res->pages = pages;
	forge_response_release(&r);
	free(url);
	free(base);
	return ret;
}

static char *gitlab_create_url(struct forge_session *s)
{
	char *base = mr_url(s);
	char *url = xasprintf("%s/notes", base);
	free(base);
	return url;
}

static char *gitlab_update_url(struct forge_session *s, int64_t id)
{
	char *base = mr_url(s);
	char *url = xasprintf("%s/notes/%lld", base, (long long)id);
	free(base);
	return url;
}

static void gitlab_parse_written(json_t *c, int64_t *id, char **url)
{
	(void)url; /* notes carry no web address */
	json_t *j = json_object_get(c, "id");
	if (json_is_integer(j))
		*id = json_integer_value(j);
}

const struct forge_provider_ops forge_gitlab_ops = {
        .noun = "merge request",
        .short_noun = "MR",
        .update_method = "PUT",
        .ref_prefix = "!",
        .body_limit = COMMENT_GITLAB_LIMIT,
        .whoami = gitlab_whoami,
        .pr_url = mr_url,
        .head_sha = gitlab_head_sha,
        .find = gitlab_find,
        .create_url = gitlab_create_url,
        .update_url = gitlab_update_url,
        .parse_written = gitlab_parse_written,
};
