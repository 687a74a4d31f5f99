/* Pyroscope's ingest API: the query string carries the application name (with its labels),
 * the time range and the sampling rate; the body is a multipart form whose "profile" part is
 * the gzip'd pprof, the shape Pyroscope's own clients send. */
#include "forge/pyroscope.h"
#include "common/error.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <ctype.h>
#include <curl/curl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void add_clean(struct strbuf *sb, const char *s, const char *keep_extra, int value)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int keep = value ? (c >= 0x20 && c != 0x7f && !strchr("{}=,\"", c))
		                 : (isalnum(c) || (keep_extra && strchr(keep_extra, c)));
		strbuf_addch(sb, keep ? c : '_');
	}
}

char *pyroscope_app_name(const char *app, const struct pyroscope_label *labels, size_t n)
{
	struct strbuf sb = STRBUF_INIT;
	add_clean(&sb, *app ? app : "ciprof", "_.-", 0);
	strbuf_addstr(&sb, ".cpu{");
	int first = 1;
	for (size_t i = 0; i < n; i++) {
		if (!labels[i].value || !*labels[i].value)
			continue;
		if (!first)
			strbuf_addch(&sb, ',');
		first = 0;
		add_clean(&sb, labels[i].key, "_", 0);
		strbuf_addch(&sb, '=');
		add_clean(&sb, labels[i].value, NULL, 1);
	}
	strbuf_addch(&sb, '}');
	return strbuf_detach(&sb, NULL);
}

static char *base64(const char *s)
{
	static const char tab[] =
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = strlen(s);
	char *out = xmalloc(st_add(st_mult(n / 3 + 1, 4), 1)), *o = out;
	const unsigned char *u = (const unsigned char *)s;
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)u[i] << 16;
		if (i + 1 < n)
			v |= (unsigned)u[i + 1] << 8;
		if (i + 2 < n)
			v |= u[i + 2];
		*o++ = tab[(v >> 18) & 63];
		*o++ = tab[(v >> 12) & 63];
		*o++ = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		*o++ = i + 2 < n ? tab[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/* Headers may not carry line breaks: a value with one would smuggle another header. */
static int header_safe(const char *what, const char *v)
{
	for (const char *c = v; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return cp_error(
			        "%s holds control characters; it cannot go in an HTTP header",
			        what);
	return 0;
}

/* Appends one "key=value" to u's query; curl encodes the value. */
static int add_param(CURLU *u, const char *key, const char *value)
{
	char *kv = xasprintf("%s=%s", key, value);
	int rc = curl_url_set(u, CURLUPART_QUERY, kv, CURLU_APPENDQUERY | CURLU_URLENCODE);
	free(kv);
	return rc == CURLUE_OK ? 0 : -1;
}

/* The ingest URL (owned): the server's URL, which must be http or https without credentials,
 * with "/ingest" after its path and the query (name, time range, format, rate) built and
 * encoded by curl's URL API. NULL with cp_error set. */
static char *ingest_url(const struct pyroscope_push *p)
{
	CURLU *u = curl_url();
	char *scheme = NULL, *user = NULL, *query = NULL, *fragment = NULL, *path = NULL,
	     *full = NULL, *out = NULL;
	if (!u)
		xalloc_die(sizeof(void *));
	if (curl_url_set(u, CURLUPART_URL, p->server, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    (strcmp(scheme, "http") && strcmp(scheme, "https"))) {
		cp_error("the Pyroscope server '%s' must be an http:// or https:// URL", p->server);
		goto out;
	}
	if (curl_url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK) {
		cp_error("the Pyroscope server URL holds credentials; give them as "
		         "CIPROF_PUSH_TOKEN, or push.user and CIPROF_PUSH_PASSWORD, instead");
		goto out;
	}
	/* The query is ciprof's own (name, from, until, ...): one in the server's URL would be
	 * dropped unseen, and a token put there printed with the URL. */
	if (curl_url_get(u, CURLUPART_QUERY, &query, 0) == CURLUE_OK ||
	    curl_url_get(u, CURLUPART_FRAGMENT, &fragment, 0) == CURLUE_OK) {
		cp_error("the Pyroscope server URL has a query or fragment ('?...', '#...'), which "
		         "/ingest cannot carry: give the server's base URL, and a token as "
		         "CIPROF_PUSH_TOKEN");
		goto out;
	}
	if (curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK)
		goto bad;
	size_t n = strlen(path);
	while (n && path[n - 1] == '/')
		n--;
	char *ingest = xasprintf("%.*s/ingest", (int)n, path);
	int rc = curl_url_set(u, CURLUPART_PATH, ingest, 0);
	free(ingest);
	char from[32], until[32], rate[16];
	snprintf(from, sizeof(from), "%" PRId64, p->from);
	snprintf(until, sizeof(until), "%" PRId64, p->until);
	snprintf(rate, sizeof(rate), "%d", p->hz);
	if (rc != CURLUE_OK || curl_url_set(u, CURLUPART_QUERY, NULL, 0) != CURLUE_OK ||
	    add_param(u, "name", p->name) < 0 || add_param(u, "from", from) < 0 ||
	    add_param(u, "until", until) < 0 || add_param(u, "format", "pprof") < 0 ||
	    add_param(u, "spyName", "ciprof") < 0 || add_param(u, "units", "samples") < 0 ||
	    add_param(u, "aggregationType", "sum") < 0 ||
	    (p->hz > 0 && add_param(u, "sampleRate", rate) < 0) ||
	    curl_url_get(u, CURLUPART_URL, &full, 0) != CURLUE_OK)
		goto bad;
	out = xstrdup(full);
	goto out;
bad:
	cp_error("cannot make the ingest URL from the Pyroscope server '%s'", p->server);
out:
	curl_free(scheme);
	curl_free(user);
	curl_free(query);
	curl_free(fragment);
	curl_free(path);
	curl_free(full);
	curl_url_cleanup(u);
	return out;
}

int pyroscope_send(const struct pyroscope_push *p, const struct forge_http_policy *policy,
                   long *status)
{
	if (status)
		*status = 0;
	int has_token = p->token && *p->token, has_user = p->user && *p->user;
	if (has_token && has_user)
		return cp_error("give a bearer token or a user and password, not both");
	if ((has_token && header_safe("the push token", p->token) < 0) ||
	    (has_user && (header_safe("the push user", p->user) < 0 ||
	                  header_safe("the push password", p->password ? p->password : "") < 0)) ||
	    (p->tenant && header_safe("the tenant", p->tenant) < 0))
		return -1;
	if (has_user && strchr(p->user, ':'))
		return cp_error("the push user may not contain ':' (basic authentication)");
	char *url = ingest_url(p);
	if (!url)
		return -1;

	/* Headers: the secret is redacted from every message forge/http leaves. */
	const char *secret = has_token ? p->token : has_user ? p->password : NULL;
	char *auth = NULL, *tenant = NULL, *cred = NULL;
	const char *headers[4] = {NULL};
	size_t nh = 0;
	if (has_token) {
		auth = xasprintf("Authorization: Bearer %s", p->token);
	} else if (has_user) {
		char *pair = xasprintf("%s:%s", p->user, p->password ? p->password : "");
		cred = base64(pair);
		memset(pair, 0, strlen(pair));
		free(pair);
		auth = xasprintf("Authorization: Basic %s", cred);
	}
	if (auth)
		headers[nh++] = auth;
	if (p->tenant && *p->tenant)
		headers[nh++] = tenant = xasprintf("X-Scope-OrgID: %s", p->tenant);
	headers[nh++] = "Expect:"; /* no 100-continue round trip for the upload */

	/* The multipart body; the boundary must not occur in the profile. */
	char boundary[64];
	unsigned seed = (unsigned)time(NULL) ^ ((unsigned)getpid() << 16);
	for (int tries = 0;; tries++) {
		seed = seed * 1103515245u + 12345u;
		snprintf(boundary, sizeof(boundary), "ciprof-%08x%08x", seed, seed * 2654435761u);
		if (!memmem(p->pprof, p->pprof_len, boundary, strlen(boundary)) || tries > 100)
			break;
	}
	struct strbuf body = STRBUF_INIT;
	strbuf_addf(&body,
	            "--%s\r\nContent-Disposition: form-data; name=\"profile\"; "
	            "filename=\"profile.pprof\"\r\nContent-Type: application/octet-stream\r\n\r\n",
	            boundary);
	strbuf_add(&body, p->pprof, p->pprof_len);
	strbuf_addf(&body, "\r\n--%s--\r\n", boundary);
	char *ctype = xasprintf("multipart/form-data; boundary=%s", boundary);

	struct forge_http *h = NULL;
	struct forge_response resp;
	forge_response_init(&resp);
	int r = forge_http_new(&h, secret, headers, policy);
	if (r == 0)
		r = forge_http_send(h, "POST", url, body.buf, body.len, ctype, 1, &resp);
	if (status)
		*status = resp.status;
	if (r == 0 && (resp.status < 200 || resp.status > 299)) {
		const char *hint = resp.status == 401 || resp.status == 403
		                           ? " (check CIPROF_PUSH_TOKEN, or the user and password)"
		                           : "";
		/* The server's own words, made printable, the secrets redacted - before it is
		 * shortened, so that no cut leaves a secret's prefix - then shortened. A server (or
		 * proxy) that echoes the Authorization header shows basic credentials base64'd:
		 * as good as the password. */
		char *msg = xmalloc(resp.body.len + 1);
		size_t n = 0;
		for (size_t i = 0; i < resp.body.len; i++)
			msg[n++] =
			        isprint((unsigned char)resp.body.buf[i]) ? resp.body.buf[i] : ' ';
		msg[n] = '\0';
		forge_redact(forge_redact(msg, secret), cred);
		n = strlen(msg);
		if (n > 200)
			msg[n = 200] = '\0';
		r = forge_error(secret, "Pyroscope refused the profile: HTTP %ld%s%s%s",
		                resp.status, hint, n ? ": " : "", msg);
		free(msg);
	}
	forge_response_release(&resp);
	forge_http_free(h);
	free(ctype);
	strbuf_release(&body);
	free(url);
	free(tenant);
	if (auth) {
		memset(auth, 0, strlen(auth));
		free(auth);
	}
	if (cred) {
		memset(cred, 0, strlen(cred));
		free(cred);
	}
	return r;
}
