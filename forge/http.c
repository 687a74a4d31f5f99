/* forge/http: libcurl requests with bounded bodies, header capture (Link, X-Next-Page, rate
 * limits), retries within a waiting budget, and token redaction in every message (http.h). */
#include "forge/http.h"
#include "common/error.h"
#include "common/log.h"
#include "common/xalloc.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void (*forge_http_sleep_hook)(long ms);

struct forge_http {
	CURL *curl;
	char *secret; /* owned copy */
	struct curl_slist *headers;
	struct forge_http_policy policy;
	long waited_ms;
	char errbuf[CURL_ERROR_SIZE];
};

static long env_long(const char *name, long def, long min, long max)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	char *end;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (errno || *end || n < min || n > max) {
		log_warn("%s='%s' is not a whole number from %ld to %ld; using %ld", name, v, min,
		         max, def);
		return def;
	}
	return n;
}

void forge_http_policy_init(struct forge_http_policy *p)
{
	p->attempts = (int)env_long("CIPROF_HTTP_RETRIES", 5, 1, 20);
	p->backoff_ms = env_long("CIPROF_HTTP_BACKOFF_MS", 1000, 0, 600000);
	p->max_wait_ms = env_long("CIPROF_HTTP_MAX_WAIT_MS", 120000, 0, 3600000);
	p->timeout_ms = env_long("CIPROF_HTTP_TIMEOUT_MS", 30000, 100, 3600000);
}

void forge_response_init(struct forge_response *r)
{
	memset(r, 0, sizeof(*r));
	strbuf_init(&r->body, FORGE_HTTP_MAX_BODY);
	r->retry_after = -1;
	r->rl_remaining = -1;
}

void forge_response_release(struct forge_response *r)
{
	strbuf_release(&r->body);
	free(r->link_next);
	free(r->next_page);
	forge_response_init(r);
}

char *forge_redact(char *s, const char *secret)
{
	if (!s || !secret || !*secret)
		return s;
	size_t n = strlen(secret);
	/* "***" for any real token; shorter secrets become as many stars, so that the text
	 * never grows and the replacement can be done in place. */
	size_t rn = n < 3 ? n : 3;
	char *p = s;
	while ((p = strstr(p, secret)) != NULL) {
		memset(p, '*', rn);
		memmove(p + rn, p + n, strlen(p + n) + 1);
		p += rn;
	}
	return s;
}

int forge_error(const char *secret, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char buf[1024];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	forge_redact(buf, secret);
	return cp_error("%s", buf);
}

/* log_verbose / log_debug with the secret redacted (a URL could carry it as user info). */
static void say(const struct forge_http *h, int level, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static void say(const struct forge_http *h, int level, const char *fmt, ...)
{
	if (log_level() < level)
		return;
	char buf[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	forge_redact(buf, h->secret);
	if (level >= LOG_DEBUG)
		log_debug("%s", buf);
	else
		log_verbose("%s", buf);
}

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int forge_http_new(struct forge_http **out, const char *secret, const char *const *headers,
                   const struct forge_http_policy *policy)
{
	*out = NULL;
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return cp_error("cannot initialise libcurl: %s", curl_easy_strerror(global_rc));
	struct forge_http *h = xcalloc(1, sizeof(*h));
	h->curl = curl_easy_init();
	if (!h->curl) {
		free(h);
		return cp_error("cannot initialise libcurl");
	}
	h->secret = secret ? xstrdup(secret) : NULL;
	if (policy)
		h->policy = *policy;
	else
		forge_http_policy_init(&h->policy);
	for (size_t i = 0; headers && headers[i]; i++) {
		struct curl_slist *n = curl_slist_append(h->headers, headers[i]);
		if (!n) {
			forge_http_free(h);
			return cp_error("out of memory building HTTP headers");
		}
		h->headers = n;
	}
	*out = h;
	return 0;
}

void forge_http_free(struct forge_http *h)
{
	if (!h)
		return;
	curl_slist_free_all(h->headers);
	curl_easy_cleanup(h->curl);
	if (h->secret) {
		/* the copy of the token does not outlive its use */
		memset(h->secret, 0, strlen(h->secret));
		free(h->secret);
	}
	free(h);
}

long forge_http_waited_ms(const struct forge_http *h)
{
	return h->waited_ms;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct forge_response *r = ctx;
	size_t n = size * nmemb;
	if (strbuf_add(&r->body, data, n) < 0)
		return 0; /* larger than FORGE_HTTP_MAX_BODY: abort the transfer */
	return n;
}

/* The value of header line `line` (len bytes) when its name is `name`, trimmed; owned. */
static char *header_value(const char *line, size_t len, const char *name)
{
	size_t nl = strlen(name);
	if (len <= nl || strncasecmp(line, name, nl) || line[nl] != ':')
		return NULL;
	const char *v = line + nl + 1;
	const char *end = line + len;
	while (v < end && (*v == ' ' || *v == '\t'))
		v++;
	while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	return xstrndup(v, (size_t)(end - v));
}

static int parse_long(const char *s, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0)
		return -1;
	*out = v;
	return 0;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *ctx)
{
	struct forge_response *r = ctx;
	size_t n = size * nmemb;
	char *v;
	long num;
	if (n >= 5 && !strncmp(data, "HTTP/", 5)) {
		/* a new header block (after 100 Continue, say): forget the previous one */
		free(r->link_next);
		free(r->next_page);
		r->link_next = r->next_page = NULL;
		r->retry_after = r->rl_remaining = -1;
		r->rl_reset = 0;
		return n;
	}
	if ((v = header_value(data, n, "Link"))) {
		free(r->link_next);
		r->link_next = forge_link_next(v);
	} else if ((v = header_value(data, n, "X-Next-Page"))) {
		free(r->next_page);
		r->next_page = v;
		v = NULL;
	} else if ((v = header_value(data, n, "Retry-After"))) {
		/* seconds; an HTTP date is not worth parsing for the forges we talk to */
		if (parse_long(v, &num) == 0)
			r->retry_after = num;
	} else if ((v = header_value(data, n, "X-RateLimit-Remaining")) ||
	           (v = header_value(data, n, "RateLimit-Remaining"))) {
		if (parse_long(v, &num) == 0)
			r->rl_remaining = num;
	} else if ((v = header_value(data, n, "X-RateLimit-Reset")) ||
	           (v = header_value(data, n, "RateLimit-Reset"))) {
		if (parse_long(v, &num) == 0)
			r->rl_reset = num;
	}
	free(v);
	return n;
}

char *forge_link_next(const char *link)
{
	/* Link: <https://api/x?page=2>; rel="next", <https://api/x?page=5>; rel="last" */
	const char *p = link;
	while (p && *p) {
		const char *lt = strchr(p, '<');
		if (!lt)
			return NULL;
		const char *gt = strchr(lt + 1, '>');
		if (!gt)
			return NULL;
		const char *end = strchr(gt, ',');
		/* a comma inside a quoted parameter is not expected in these headers */
		size_t plen = end ? (size_t)(end - gt) : strlen(gt);
		char *params = xstrndup(gt + 1, plen - 1);
		int next = 0;
		for (char *q = params; (q = strstr(q, "rel")) != NULL; q += 3) {
			char *s = q + 3;
			while (*s == ' ')
				s++;
			if (*s != '=')
				continue;
			s++;
			while (*s == ' ')
				s++;
			if (*s == '"')
				s++;
			/* rel may list several space-separated relations */
			while (*s && *s != '"' && *s != ';') {
				size_t w = strcspn(s, " \";");
				if (w == 4 && !strncmp(s, "next", 4))
					next = 1;
				s += w;
				while (*s == ' ')
					s++;
			}
		}
		free(params);
		if (next)
			return xstrndup(lt + 1, (size_t)(gt - lt - 1));
		p = end ? end + 1 : NULL;
	}
	return NULL;
}

/* The parts of a URL as curl's URL API reads it (the path with its dot segments resolved, as
 * curl sends it; the port filled in from the scheme). All owned by curl (curl_free). */
struct url_parts {
	char *scheme, *user, *host, *port, *path;
};

static int url_parse(const char *s, struct url_parts *p)
{
	memset(p, 0, sizeof(*p));
	CURLU *u = curl_url();
	if (!u)
		return -1;
	int ok = curl_url_set(u, CURLUPART_URL, s, 0) == CURLUE_OK &&
	         curl_url_get(u, CURLUPART_SCHEME, &p->scheme, 0) == CURLUE_OK &&
	         curl_url_get(u, CURLUPART_HOST, &p->host, 0) == CURLUE_OK &&
	         curl_url_get(u, CURLUPART_PORT, &p->port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
	         curl_url_get(u, CURLUPART_PATH, &p->path, 0) == CURLUE_OK;
	if (ok && curl_url_get(u, CURLUPART_USER, &p->user, 0) != CURLUE_OK)
		p->user = NULL;
	curl_url_cleanup(u);
	return ok ? 0 : -1;
}

static void url_parts_release(struct url_parts *p)
{
	curl_free(p->scheme);
	curl_free(p->user);
	curl_free(p->host);
	curl_free(p->port);
	curl_free(p->path);
}

int forge_url_under(const char *url, const char *base)
{
	struct url_parts u, b;
	int ok = 0;
	if (url_parse(url, &u) < 0 || url_parse(base, &b) < 0)
		goto out;
	/* No credentials of its own: the token is all a request to the forge carries. */
	if (u.user || strcasecmp(u.scheme, b.scheme) || strcasecmp(u.host, b.host) ||
	    strcmp(u.port, b.port))
		goto out;
	size_t blen = strlen(b.path);
	while (blen && b.path[blen - 1] == '/')
		blen--;
	ok = !strncmp(u.path, b.path, blen) && (!u.path[blen] || u.path[blen] == '/');
out:
	url_parts_release(&u);
	url_parts_release(&b);
	return ok;
}

char *forge_url_escape(const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0);
	if (!e)
		xalloc_die(strlen(s));
	char *out = xstrdup(e);
	curl_free(e);
	return out;
}

long forge_http_retry_delay(const struct forge_http_policy *policy, const struct forge_response *r,
                            int attempt, time_t now, int retry_5xx)
{
	int rate_limited = r->status == 429 ||
	                   (r->status == 403 && (r->rl_remaining == 0 || r->retry_after >= 0));
	if (rate_limited) {
		if (r->retry_after >= 0)
			return r->retry_after * 1000;
		if (r->rl_reset > 0)
			return r->rl_reset > (int64_t)now
			               ? (long)(r->rl_reset - (int64_t)now) * 1000 + 1000
			               : 1000;
		/* no hint: GitHub asks for at least a minute between secondary-limit retries */
		return 60000;
	}
	if (r->status == 0 || (retry_5xx && r->status >= 500 && r->status <= 599)) {
		long d = policy->backoff_ms;
		for (int i = 1; i < attempt && d < 3600000; i++)
			d *= 2;
		return d;
	}
	return -1;
}

static void sleep_ms(long ms)
{
	if (forge_http_sleep_hook) {
		forge_http_sleep_hook(ms);
		return;
	}
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Transport errors worth another attempt: nothing was received. A request that may have
 * reached the server (a timeout after sending) is only repeated when repeating is harmless. */
static int transport_retryable(CURLcode rc, int idempotent)
{
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SSL_CONNECT_ERROR:
		return 1;
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
		return idempotent;
	default:
		return 0;
	}
}

static int perform(struct forge_http *h, const char *method, const char *url, const void *body,
                   size_t body_len, const char *content_type, struct forge_response *resp,
                   CURLcode *rc_out)
{
	CURL *c = h->curl;
	curl_easy_reset(c);
	h->errbuf[0] = '\0';
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->errbuf);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L); /* never carry the token elsewhere */
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, h->policy.timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
	                 h->policy.timeout_ms < 10000 ? h->policy.timeout_ms : 10000L);
	curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
	/* A request's own content type joins the client's headers for this request only. */
	struct curl_slist *headers = h->headers, *extra = NULL;
	if (content_type) {
		for (struct curl_slist *n = h->headers; n; n = n->next)
			extra = curl_slist_append(extra, n->data);
		char *ct = xasprintf("Content-Type: %s", content_type);
		extra = curl_slist_append(extra, ct);
		free(ct);
		if (!extra) {
			*rc_out = CURLE_OUT_OF_MEMORY;
			resp->status = 0;
			return -1;
		}
		headers = extra;
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, resp);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, resp);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
	} else if (strcmp(method, "GET")) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)0);
	}
	CURLcode rc = curl_easy_perform(c);
	curl_slist_free_all(extra);
	*rc_out = rc;
	if (rc != CURLE_OK) {
		resp->status = 0;
		return -1;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp->status);
	return 0;
}

void forge_http_pause(struct forge_http *h, int attempt)
{
	long d = h->policy.backoff_ms;
	for (int i = 1; i < attempt && d < 3600000; i++)
		d *= 2;
	if (h->waited_ms + d > h->policy.max_wait_ms)
		d = h->policy.max_wait_ms - h->waited_ms;
	if (d <= 0)
		return;
	sleep_ms(d);
	h->waited_ms += d;
}

int forge_http_request(struct forge_http *h, const char *method, const char *url,
                       const char *json_body, int retry_5xx, struct forge_response *resp)
{
	return forge_http_send(h, method, url, json_body, json_body ? strlen(json_body) : 0, NULL,
	                       retry_5xx, resp);
}

int forge_http_send(struct forge_http *h, const char *method, const char *url, const void *body,
                    size_t body_len, const char *content_type, int retry_5xx,
                    struct forge_response *resp)
{
	int idempotent = strcmp(method, "POST") != 0;
	for (int attempt = 1;; attempt++) {
		forge_response_release(resp);
		CURLcode rc = CURLE_OK;
		int sent = perform(h, method, url, body, body_len, content_type, resp, &rc) == 0;
		if (sent)
			say(h, LOG_DEBUG, "%s %s: HTTP %ld", method, url, resp->status);
		long delay;
		if (!sent && !transport_retryable(rc, idempotent || retry_5xx))
			delay = -1;
		else
			delay = forge_http_retry_delay(&h->policy, resp, attempt, time(NULL),
			                               retry_5xx);
		if (delay < 0) {
			if (sent)
				return 0;
			return forge_error(h->secret, "%s %s: %s", method, url,
			                   h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc));
		}
		const char *why = sent ? NULL : (h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc));
		if (attempt >= h->policy.attempts || h->waited_ms + delay > h->policy.max_wait_ms) {
			if (sent && (resp->status == 429 || resp->status == 403))
				return forge_error(
				        h->secret,
				        "%s %s: rate limited (HTTP %ld); the server asks to "
				        "wait %ld s, more than the %ld s allowed "
				        "(CIPROF_HTTP_MAX_WAIT_MS)",
				        method, url, resp->status, delay / 1000,
				        h->policy.max_wait_ms / 1000);
			if (sent)
				return forge_error(h->secret, "%s %s: HTTP %ld after %d attempts",
				                   method, url, resp->status, attempt);
			return forge_error(h->secret, "%s %s: %s (after %d attempts)", method, url,
			                   why, attempt);
		}
		if (sent)
			say(h, LOG_VERBOSE, "%s %s: HTTP %ld; retrying in %ld ms", method, url,
			    resp->status, delay);
		else
			say(h, LOG_VERBOSE, "%s %s: %s; retrying in %ld ms", method, url, why,
			    delay);
		sleep_ms(delay);
		h->waited_ms += delay;
	}
}
