/* forge/github: GitHub's REST API for PR comments (which are issue comments): who the token
 * is, every page of a PR's comments (Link: rel="next"), and the URLs to create or edit one. */
#include "forge/internal.h"
#include "common/error.h"
#include "common/log.h"
#include "common/xalloc.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* At most this many pages of 100 comments are listed. */
#define GITHUB_MAX_PAGES 200

/*
 * Who ciprof's comments are by. CIPROF_COMMENT_AUTHOR when set; else GET /user, which answers
 * for personal and user tokens; an installation token (the Actions GITHUB_TOKEN, a GitHub App)
 * is refused there with 403 (or 404), and its comments are by "github-actions[bot]".
 */
static int github_whoami(struct forge_session *s)
{
	const struct forge_target *t = s->t;
	if (*t->author) {
		s->login = xstrdup(t->author);
		log_verbose("github: ciprof's comments are those by %s (CIPROF_COMMENT_AUTHOR)",
		            s->login);
		return 0;
	}
	char *url = xasprintf("%s/user", t->api_url);
	struct forge_response r;
	forge_response_init(&r);
	json_t *j;
	int ret = forge_get_json(s, url, 1, &r, &j);
	if (ret < 0)
		goto out;
	if (ret == 1) {
		s->login = xstrdup(FORGE_ACTIONS_LOGIN);
		log_verbose("github: GET /user refused (HTTP %ld), so %s is an installation token "
		            "(like Actions' GITHUB_TOKEN): ciprof's comments are those by %s",
		            r.status, t->token_var, s->login);
		ret = 0;
		goto out;
	}
	ret = -1;
	json_t *login = json_object_get(j, "login");
	if (!json_is_string(login)) {
		forge_error(t->token, "GET %s: the answer has no login", url);
	} else {
		s->login = xstrdup(json_string_value(login));
		log_verbose("github: the token is %s's", s->login);
		ret = 0;
	}
	json_decref(j);
out:
	forge_response_release(&r);
	free(url);
	return ret;
}

static char *github_pr_url(struct forge_session *s)
{
	return xasprintf("%s/repos/%s/pulls/%lld", s->t->api_url, s->t->project,
	                 (long long)s->t->number);
}

static json_t *github_head_sha(json_t *pr)
{
	return json_object_get(json_object_get(pr, "head"), "sha");
}

static int github_find(struct forge_session *s, struct forge_found *f)
{
	const struct forge_target *t = s->t;
	char *url = xasprintf("%s/repos/%s/issues/%lld/comments?per_page=100", t->api_url,
	                      t->project, (long long)t->number);
	struct forge_response r;
	forge_response_init(&r);
	int ret = -1;
	size_t pages = 0;
	s->res->foreign_markers = 0;
	while (url) {
		if (++pages > GITHUB_MAX_PAGES) {
			forge_error(t->token,
			            "PR #%lld has more than %d pages of comments; stopped",
			            (long long)t->number, GITHUB_MAX_PAGES);
			goto out;
		}
		json_t *list;
		if (forge_get_json(s, url, 0, &r, &list) < 0)
			goto out;
		if (!json_is_array(list)) {
			json_decref(list);
			forge_error(t->token, "GET %s: expected a list of comments", url);
			goto out;
		}
		size_t i;
		json_t *c;
		json_array_foreach(list, i, c)
		{
			json_t *body = json_object_get(c, "body");
			json_t *login = json_object_get(json_object_get(c, "user"), "login");
			json_t *id = json_object_get(c, "id");
			if (!json_is_string(body) || !strstr(json_string_value(body), t->marker))
				continue;
			if (!json_is_string(login) ||
			    strcasecmp(json_string_value(login), s->login) ||
			    !json_is_integer(id)) {
				s->res->foreign_markers++;
				continue;
			}
			if (!f->ours++) {
				f->id = json_integer_value(id);
				json_t *html = json_object_get(c, "html_url");
				f->url = json_is_string(html) ? xstrdup(json_string_value(html))
				                              : NULL;
			}
		}
		json_decref(list);
		free(url);
		url = NULL;
		if (r.link_next) {
			/* Only follow pages of the same API: the token goes with every request. */
			if (!forge_url_under(r.link_next, t->api_url)) {
				forge_error(t->token,
				            "the next page of comments is at %.200s, outside %s; "
				            "refusing "
				            "to send the token there",
				            r.link_next, t->api_url);
				goto out;
			}
			url = xstrdup(r.link_next);
		}
	}
	ret = 0;
out:
	s->res->pages = pages;
	forge_response_release(&r);
	free(url);
	return ret;
}

static char *github_create_url(struct forge_session *s)
{
	return xasprintf("%s/repos/%s/issues/%lld/comments", s->t->api_url, s->t->project,
	                 (long long)s->t->number);
}

static char *github_update_url(struct forge_session *s, int64_t id)
{
	return xasprintf("%s/repos/%s/issues/comments/%lld", s->t->api_url, s->t->project,
	                 (long long)id);
}

static void github_parse_written(json_t *c, int64_t *id, char **url)
{
	json_t *j = json_object_get(c, "id");
	if (json_is_integer(j))
		*id = json_integer_value(j);
	j = json_object_get(c, "html_url");
	if (json_is_string(j)) {
		free(*url);
		*url = xstrdup(json_string_value(j));
	}
}

const struct forge_provider_ops forge_github_ops = {
        .noun = "pull request",
        .short_noun = "PR",
        .update_method = "PATCH",
        .ref_prefix = "#",
        .body_limit = COMMENT_GITHUB_LIMIT,
        .whoami = github_whoami,
        .pr_url = github_pr_url,
        .head_sha = github_head_sha,
        .find = github_find,
        .create_url = github_create_url,
        .update_url = github_update_url,
        .parse_written = github_parse_written,
};
