/* forge/http: the one place ciprof speaks HTTP (libcurl). JSON requests to a forge's REST API
 * (and any body: Pyroscope's /ingest) with its token in a header, responses read into bounded
 * buffers, and retries: server errors (5xx) and network failures back off exponentially, rate
 * limits (429, or 403 with X-RateLimit-Remaining: 0 or Retry-After) wait as long as the server
 * asks, all within one total waiting budget. Every message it leaves has the token replaced by
 * "***". */
#ifndef CP_FORGE_HTTP_H
#define CP_FORGE_HTTP_H

#include "common/strbuf.h"

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/* Retry policy. Defaults (forge_http_policy_init) come from the environment so that tests can
 * make them small: CIPROF_HTTP_RETRIES (attempts per request, default 5),
 * CIPROF_HTTP_BACKOFF_MS (first back-off, doubled each time, default 1000),
 * CIPROF_HTTP_MAX_WAIT_MS (total sleep allowed per forge_http, default 120000),
 * CIPROF_HTTP_TIMEOUT_MS (per request, default 30000). */
struct forge_http_policy {
	int attempts;
	long backoff_ms;
	long max_wait_ms;
	long timeout_ms;
};

void forge_http_policy_init(struct forge_http_policy *p);

struct forge_response {
	long status;        /* HTTP status; 0 when no response arrived */
	struct strbuf body; /* at most FORGE_HTTP_MAX_BODY bytes */
	char *link_next;    /* Link: <URL>; rel="next" (owned, NULL when none) */
	char *next_page;    /* X-Next-Page (GitLab), owned, NULL or "" when last */
	long retry_after;   /* Retry-After in seconds, -1 when absent */
	long rl_remaining;  /* X-RateLimit-Remaining, -1 when absent */
	int64_t rl_reset;   /* X-RateLimit-Reset, unix seconds, 0 when absent */
};

#define FORGE_HTTP_MAX_BODY (32u << 20)

void forge_response_init(struct forge_response *r);
void forge_response_release(struct forge_response *r);

struct forge_http;

/*
 * A client for one forge. secret (borrowed, may be NULL) is redacted from every message;
 * headers (borrowed, NULL-terminated, e.g. "Authorization: Bearer ...") go with each request.
 * *out is owned by the caller: forge_http_free.
 */
int forge_http_new(struct forge_http **out, const char *secret, const char *const *headers,
                   const struct forge_http_policy *policy);
void forge_http_free(struct forge_http *h);

/*
 * Sends one request with an optional JSON body and fills *resp (forge_response_init'ed by the
 * caller; reset here). Retries as described above; retry_5xx = 0 returns a 5xx at once (for
 * requests that must not be repeated blindly, such as creating a comment). Returns 0 when a
 * final response arrived, whatever its status (the caller judges it), or -1 with cp_error set
 * when none did or the waiting budget ran out (resp->status then holds the last status seen,
 * 0 if none).
 */
int forge_http_request(struct forge_http *h, const char *method, const char *url,
                       const char *json_body, int retry_5xx, struct forge_response *resp);

/*
 * The same for any body: body_len bytes (body NULL: none) sent as content_type (NULL: the
 * client's own headers decide), e.g. a multipart upload of a binary profile.
 */
int forge_http_send(struct forge_http *h, const char *method, const char *url, const void *body,
                    size_t body_len, const char *content_type, int retry_5xx,
                    struct forge_response *resp);

/* Sleeps the back-off for retry number attempt (1, 2, ...), within the waiting budget. */
void forge_http_pause(struct forge_http *h, int attempt);

/* Milliseconds slept by retries so far. */
long forge_http_waited_ms(const struct forge_http *h);

/* Tests only: replaces nanosleep for back-off (called with milliseconds). */
extern void (*forge_http_sleep_hook)(long ms);

/*
 * How long to wait before attempt number `attempt` (1 = the first retry) after response r,
 * at time now: -1 when r is not worth retrying. Rate limits wait Retry-After, else until
 * X-RateLimit-Reset; server errors and lost connections (status 0) back off
 * policy->backoff_ms * 2^(attempt-1). Exposed for tests.
 */
long forge_http_retry_delay(const struct forge_http_policy *policy, const struct forge_response *r,
                            int attempt, time_t now, int retry_5xx);

/* The URL of rel="next" in a Link header value (owned), or NULL. */
char *forge_link_next(const char *link);

/* 1 when url (parsed by curl's URL API, as curl will send it: dot segments resolved) has the
 * scheme, host and port of base, no credentials of its own, and a path under base's path. */
int forge_url_under(const char *url, const char *base);

/* Percent-encodes s for a URL path segment (curl_easy_escape: all but A-Z a-z 0-9 - . _ ~).
 * Owned. */
char *forge_url_escape(const char *s);

/*
 * Replaces every occurrence of secret in s (in place) with "***"; a NULL or empty secret does
 * nothing. Returns s.
 */
char *forge_redact(char *s, const char *secret);

/* Sets cp_error to the formatted message with secret redacted; returns -1. */
int forge_error(const char *secret, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
