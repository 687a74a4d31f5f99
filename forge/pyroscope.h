/* forge/pyroscope: sends a profile to Grafana Pyroscope's POST /ingest (pprof, as the
 * multipart "profile" part its clients send), with a bearer token or basic credentials and
 * the X-Scope-OrgID tenant header; retries and redaction are forge/http's. */
#ifndef CP_FORGE_PYROSCOPE_H
#define CP_FORGE_PYROSCOPE_H

#include "forge/http.h"

#include <stddef.h>
#include <stdint.h>

/* A label of the application name: key=value. */
struct pyroscope_label {
	const char *key, *value;
};

/*
 * The application name Pyroscope files a profile under: "APP.cpu{k1=v1,k2=v2}". app keeps
 * [A-Za-z0-9_.-] (anything else becomes '_'); keys keep [A-Za-z0-9_]; values lose the
 * characters the name syntax reserves ({}=, and controls, each made '_'); empty values are
 * left out. Owned by the caller.
 */
char *pyroscope_app_name(const char *app, const struct pyroscope_label *labels, size_t n);

struct pyroscope_push {
	const char *server;   /* base URL, e.g. http://pyroscope:4040 (with or without '/') */
	const char *name;     /* from pyroscope_app_name */
	int64_t from, until;  /* unix seconds */
	int hz;               /* sampleRate; 0 leaves the server's default */
	const char *token;    /* bearer token, or NULL / "" */
	const char *user;     /* basic authentication, with password; NULL / "" for none */
	const char *password; /* secret */
	const char *tenant;   /* X-Scope-OrgID, or NULL / "" */
	const void *pprof;    /* gzip'd pprof (export/pprof.h) */
	size_t pprof_len;
};

/*
 * POSTs the profile; policy NULL takes forge_http_policy_init's. Server errors and lost
 * connections are retried within the policy's budget. Returns 0 when the server accepted it
 * (2xx), or -1 with cp_error set (token and password replaced by "***"); *status (may be NULL)
 * gets the last HTTP status, 0 when none arrived.
 */
int pyroscope_send(const struct pyroscope_push *p, const struct forge_http_policy *policy,
                   long *status);

#endif
