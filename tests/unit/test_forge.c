/* forge/: the pieces that need no network: Link headers, same-API checks, token redaction,
 * retry delays, the body's marker, UTF-8 and length limit, and reading the CI environment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "common/xalloc.h"
#include "forge/forge.h"
#include "forge/http.h"
#include "forge/pyroscope.h"

static void test_link_next(void **state)
{
	(void)state;
	char *n =
	        forge_link_next("<https://api.github.com/repositories/1/issues/7/comments?page=2>; "
	                        "rel=\"next\", <https://api.github.com/x?page=5>; rel=\"last\"");
	assert_string_equal(n, "https://api.github.com/repositories/1/issues/7/comments?page=2");
	free(n);
	n = forge_link_next(
	        "<https://a/x?page=1>; rel=\"prev\", <https://a/x?page=3>; rel=\"next\"");
	assert_string_equal(n, "https://a/x?page=3");
	free(n);
	/* several relations in one rel, spaces around '=' */
	n = forge_link_next("<https://a/y>; rel = \"last next\"");
	assert_string_equal(n, "https://a/y");
	free(n);
	assert_null(
	        forge_link_next("<https://a/x?page=1>; rel=\"prev\", <https://a/z>; rel=\"last\""));
	assert_null(forge_link_next(""));
	assert_null(forge_link_next("garbage"));
	assert_null(forge_link_next("<unterminated; rel=\"next\""));
	/* "nextish" is not "next" */
	assert_null(forge_link_next("<https://a/x>; rel=\"nextish\""));
}

static void test_url_under(void **state)
{
	(void)state;
	assert_true(forge_url_under("https://api.github.com/repos/a/b?page=2",
	                            "https://api.github.com"));
	assert_true(forge_url_under("https://ghe.example.com/api/v3/repos/a",
	                            "https://ghe.example.com/api/v3"));
	assert_true(forge_url_under("http://127.0.0.1:8080/x", "http://127.0.0.1:8080"));
	assert_false(
	        forge_url_under("https://api.github.com.evil.net/x", "https://api.github.com"));
	assert_false(
	        forge_url_under("https://api.github.com@evil.net/x", "https://api.github.com"));
	assert_false(forge_url_under("http://api.github.com/x", "https://api.github.com"));
	assert_false(forge_url_under("http://127.0.0.1:8081/x", "http://127.0.0.1:8080"));
	assert_false(forge_url_under("https://ghe.example.com/other/x",
	                             "https://ghe.example.com/api/v3"));
	assert_false(forge_url_under("https://ghe.example.com/api/v30/x",
	                             "https://ghe.example.com/api/v3"));
	assert_false(forge_url_under("https://a/x", "not a url"));
	/* curl sends the path with its dot segments resolved: this one leaves the base */
	assert_false(forge_url_under("https://ghe.example.com/api/v3/../../other/x",
	                             "https://ghe.example.com/api/v3"));
	assert_true(forge_url_under("https://ghe.example.com/api/v3/a/../b",
	                            "https://ghe.example.com/api/v3"));
	/* no credentials of its own, and the host compared without case */
	assert_false(forge_url_under("https://x:y@api.github.com/a", "https://api.github.com"));
	assert_true(forge_url_under("https://API.github.com/a", "https://api.github.com"));
}

static void test_redact(void **state)
{
	(void)state;
	char s[] = "token ghp_secret123 and ghp_secret123ghp_secret123!";
	assert_string_equal(forge_redact(s, "ghp_secret123"), "token *** and ******!");
	char t[] = "ab";
	assert_string_equal(forge_redact(t, "b"), "a*"); /* never grows */
	char u[] = "nothing here";
	assert_string_equal(forge_redact(u, ""), "nothing here");
	assert_string_equal(forge_redact(u, NULL), "nothing here");
	assert_int_equal(forge_error("s3cr3t", "GET %s: %s", "https://x", "bad s3cr3t"), -1);
	assert_string_equal(cp_last_error(), "GET https://x: bad ***");
}

static void test_retry_delay(void **state)
{
	(void)state;
	struct forge_http_policy p = {
	        .attempts = 5, .backoff_ms = 100, .max_wait_ms = 10000, .timeout_ms = 1000};
	struct forge_response r;
	forge_response_init(&r);
	r.status = 200;
	assert_int_equal(forge_http_retry_delay(&p, &r, 1, 1000, 1), -1);
	r.status = 404;
	assert_int_equal(forge_http_retry_delay(&p, &r, 1, 1000, 1), -1);
	r.status = 403; /* a plain refusal is final */
	assert_int_equal(forge_http_retry_delay(&p, &r, 1, 1000, 1), -1);
	r.status = 500; /* exponential back-off */
	assert_int_equal(forge_http_retry_delay(&p, &r, 1, 1000, 1), 100);
	assert_int_equal(forge_http_retry_delay(&p, &r, 3, 1000, 1), 400);
	assert_int_equal(forge_http_retry_delay(&p, &r, 1, 1000, 0), -1); /* creates: no */
	r.status = 0;                                                     /* no answer at all */
	assert_int_equal(forge_http_retry_delay(&p, &r, 2, 1000, 0), 200);
	r.status = 429; /* Retry-After wins */
	r.retry_after = 7;
	assert_int_equal(forge_http_retry_delay(&p, &r, 1, 1000, 0), 7000);
	r.retry_after = 0;
	assert_int_equal(forge_http_retry_delay(&p, &r, 1, 1000, 0), 0);
	r.status = 403; /* GitHub's primary limit: remaining 0, wait for the reset */
	r.retry_after = -1;
	r.rl_remaining = 0;
	r.rl_reset = 1030;
	assert_int_equal(forge_http_retry_delay(&p, &r, 1, 1000, 1), 31000);
	r.rl_reset = 900; /* already past */
	assert_int_equal(forge_http_retry_delay(&p, &r, 1, 1000, 1), 1000);
	r.status = 403; /* secondary limit: Retry-After on a 403 */
	r.rl_remaining = 12;
	r.retry_after = 60;
	assert_int_equal(forge_http_retry_delay(&p, &r, 1, 1000, 1), 60000);
	forge_response_release(&r);
}

static size_t utf8_chars(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static void test_prepare_body(void **state)
{
	(void)state;
	char *b = forge_prepare_body("hello", 5, 1000, COMMENT_MARKER);
	assert_string_equal(b, COMMENT_MARKER "\nhello");
	free(b);
	/* a body that carries the marker is left as it is */
	const char *m = "x\n" COMMENT_MARKER "\nbody";
	b = forge_prepare_body(m, strlen(m), 1000, COMMENT_MARKER);
	assert_string_equal(b, m);
	free(b);
	/* invalid UTF-8 and NULs become U+FFFD; valid multi-byte text stays */
	const char bad[] = "a\xff"
	                   "b\0c\xc3\xa9\xe2\x82"
	                   "d\xed\xa0\x80";
	b = forge_prepare_body(bad, sizeof(bad) - 1, 1000, COMMENT_MARKER);
	assert_string_equal(b, COMMENT_MARKER "\na\xef\xbf\xbd"
	                                      "b\xef\xbf\xbd"
	                                      "c\xc3\xa9\xef\xbf\xbd"
	                                      "\xef\xbf\xbd"
	                                      "d\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	free(b);
	/* cut to the limit in characters, with a note */
	char big[3000];
	for (size_t i = 0; i + 1 < sizeof(big); i += 2)
		memcpy(big + i, "\xc3\xa9", 2); /* é: 2 bytes, 1 character */
	b = forge_prepare_body(big, sizeof(big) - 1, 1000, COMMENT_MARKER);
	assert_int_equal(utf8_chars(b), 1000);
	assert_non_null(strstr(b, "at most 1000 characters"));
	assert_true(!strncmp(b, COMMENT_MARKER "\n", strlen(COMMENT_MARKER) + 1));
	free(b);
	/* exactly at the limit: untouched */
	char fit[200];
	memset(fit, 'x', sizeof(fit));
	b = forge_prepare_body(fit, 100 - strlen(COMMENT_MARKER) - 1, 100, COMMENT_MARKER);
	assert_int_equal(strlen(b), 100);
	assert_null(strstr(b, "cut by ciprof"));
	free(b);
}

static void test_target_github(void **state)
{
	(void)state;
	char path[] = "/tmp/ciprof-test-event-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char *ev = "{\"pull_request\": {\"number\": 42, \"base\": {\"ref\": \"release\"}, "
	                 "\"head\": {\"sha\": \"0123456789abcdef0123456789abcdef01234567\"}}}";
	assert_int_equal(write(fd, ev, strlen(ev)), (ssize_t)strlen(ev));
	close(fd);
	char evar[128];
	snprintf(evar, sizeof(evar), "GITHUB_EVENT_PATH=%s", path);
	char *env[] = {"GITHUB_ACTIONS=true",
	               "GITHUB_REPOSITORY=octo/widgets",
	               evar,
	               "GITHUB_REF=refs/pull/9/merge",
	               "GITHUB_TOKEN=tok",
	               "GITHUB_API_URL=https://ghe.example.com/api/v3/",
	               NULL};
	assert_int_equal(forge_detect(env), FORGE_GITHUB);
	struct forge_target t;
	forge_target_init(&t);
	assert_int_equal(forge_target_from_env(&t, FORGE_GITHUB, env), 0);
	assert_int_equal(t.number, 42); /* the event file beats GITHUB_REF */
	assert_string_equal(t.number_src, "GITHUB_EVENT_PATH");
	assert_string_equal(t.base_ref, "release");
	/* the PR's own head, not the merge commit the job checked out */
	assert_string_equal(t.pr_head, "0123456789abcdef0123456789abcdef01234567");
	assert_string_equal(t.api_url, "https://ghe.example.com/api/v3");
	assert_string_equal(t.project, "octo/widgets");
	assert_string_equal(t.token, "tok");
	assert_int_equal(forge_target_check(&t, 0), 0);
	forge_target_release(&t);

	/* GITHUB_REF alone; the public API by default */
	char *env2[] = {"GITHUB_REPOSITORY=o/r", "GITHUB_REF=refs/pull/9/merge", NULL};
	forge_target_init(&t);
	assert_int_equal(forge_target_from_env(&t, FORGE_GITHUB, env2), 0);
	assert_int_equal(t.number, 9);
	assert_string_equal(t.api_url, "https://api.github.com");
	assert_int_equal(forge_target_check(&t, 1), 0);  /* dry run needs no token */
	assert_int_equal(forge_target_check(&t, 0), -1); /* a real one does */
	assert_non_null(strstr(cp_last_error(), "GITHUB_TOKEN is not set"));
	forge_target_release(&t);

	/* CIPROF_PR_NUMBER wins; a push is not a PR */
	char *env3[] = {"GITHUB_REPOSITORY=o/r", "GITHUB_REF=refs/heads/main", NULL};
	forge_target_init(&t);
	assert_int_equal(forge_target_from_env(&t, FORGE_GITHUB, env3), 0);
	assert_int_equal(t.number, 0);
	assert_int_equal(forge_target_check(&t, 1), -1);
	forge_target_release(&t);
	char *env4[] = {"CIPROF_PR_NUMBER=11", "GITHUB_REPOSITORY=o/r",
	                "GITHUB_REF=refs/pull/9/merge", NULL};
	forge_target_init(&t);
	assert_int_equal(forge_target_from_env(&t, FORGE_GITHUB, env4), 0);
	assert_int_equal(t.number, 11);
	forge_target_release(&t);

	/* malformed values are errors */
	char *bad[][3] = {
	        {"GITHUB_REPOSITORY=o/r/x", NULL, NULL},
	        {"GITHUB_REPOSITORY=../x", NULL, NULL},
	        {"GITHUB_REPOSITORY=o/..", NULL, NULL},
	        {"GITHUB_API_URL=ftp://x", NULL, NULL},
	        {"CIPROF_PR_NUMBER=7; rm -rf", NULL, NULL},
	        {"CIPROF_PR_HEAD_SHA=xyz", NULL, NULL},
	        {"GITHUB_EVENT_PATH=/nonexistent/event.json", NULL, NULL},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		forge_target_init(&t);
		if (forge_target_from_env(&t, FORGE_GITHUB, bad[i]) != -1)
			fail_msg("accepted %s", bad[i][0]);
		forge_target_release(&t);
	}
	/* the message wraps the cause, which must survive being wrapped (cp_error once
	 * formatted its own buffer into itself) */
	forge_target_init(&t);
	assert_int_equal(forge_target_from_env(&t, FORGE_GITHUB, bad[6]), -1);
	assert_string_equal(cp_last_error(), "GITHUB_EVENT_PATH: cannot open "
	                                     "/nonexistent/event.json: No such file or directory");
	forge_target_release(&t);

	/* an event file that is not JSON */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_int_equal(write(fd, "{nope", 5), 5);
	close(fd);
	forge_target_init(&t);
	assert_int_equal(forge_target_from_env(&t, FORGE_GITHUB, env), -1);
	assert_non_null(strstr(cp_last_error(), "GITHUB_EVENT_PATH"));
	forge_target_release(&t);
	unlink(path);
}

static void test_target_gitlab(void **state)
{
	(void)state;
	char *env[] = {"GITLAB_CI=true",
	               "CI_API_V4_URL=https://gitlab.example.com/api/v4",
	               "CI_PROJECT_ID=12",
	               "CI_MERGE_REQUEST_PROJECT_ID=5",
	               "CI_MERGE_REQUEST_IID=3",
	               "CI_MERGE_REQUEST_TARGET_BRANCH_NAME=main",
	               "CIPROF_GITLAB_TOKEN=glpat-x",
	               "GITHUB_TOKEN=not-this-one",
	               NULL};
	assert_int_equal(forge_detect(env), FORGE_GITLAB);
	struct forge_target t;
	forge_target_init(&t);
	assert_int_equal(forge_target_from_env(&t, FORGE_GITLAB, env), 0);
	assert_string_equal(t.project, "5"); /* the MR's project, not the fork's */
	assert_int_equal(t.number, 3);
	assert_string_equal(t.token, "glpat-x");
	assert_string_equal(t.token_var, "CIPROF_GITLAB_TOKEN");
	assert_string_equal(t.base_ref, "main");
	forge_target_release(&t);
	char *bad[] = {"CI_MERGE_REQUEST_IID=abc", NULL};
	forge_target_init(&t);
	assert_int_equal(forge_target_from_env(&t, FORGE_GITLAB, bad), -1);
	forge_target_release(&t);
	/* a token read from a file keeps no newline; one that would split a header is refused
	 * without being printed */
	char *nl[] = {"CIPROF_GITLAB_TOKEN=glpat-abc\n", NULL};
	forge_target_init(&t);
	assert_int_equal(forge_target_from_env(&t, FORGE_GITLAB, nl), 0);
	assert_string_equal(t.token, "glpat-abc");
	forge_target_release(&t);
	char *inj[] = {"GITHUB_TOKEN=abc\r\nX-Evil: 1", NULL};
	forge_target_init(&t);
	assert_int_equal(forge_target_from_env(&t, FORGE_GITHUB, inj), -1);
	assert_string_equal(
	        cp_last_error(),
	        "GITHUB_TOKEN holds spaces or control characters: it cannot be a token");
	forge_target_release(&t);
	char *none[] = {"PATH=/bin", NULL};
	assert_int_equal(forge_detect(none), FORGE_UNKNOWN);
	enum forge_provider p;
	assert_int_equal(forge_provider_parse("gitlab", &p), 0);
	assert_int_equal(p, FORGE_GITLAB);
	assert_int_equal(forge_provider_parse("GitHub", &p), -1);
}

/* Pyroscope's application name: hostile branch names cannot add labels or break the syntax. */
static void test_pyroscope_name(void **state)
{
	(void)state;
	struct pyroscope_label l[] = {{"branch", "feat/a,b=c}{x"},
	                              {"commit", "abc"},
	                              {"ci", ""},
	                              {"pr", "7"},
	                              {"we ird", "line\nbreak"}};
	char *n = pyroscope_app_name("my app!", l, 5);
	assert_string_equal(n,
	                    "my_app_.cpu{branch=feat/a_b_c__x,commit=abc,pr=7,we_ird=line_break}");
	free(n);
	n = pyroscope_app_name("", NULL, 0);
	assert_string_equal(n, "ciprof.cpu{}");
	free(n);
}

static size_t allocations;

static int count_allocation(size_t n)
{
	(void)n;
	allocations++;
	return 0;
}

/* forge/'s allocations reach ciprof's allocator (its OOM message, its test hook), not
 * libiberty's functions of the same spelling, whatever the order of the link line. */
static void test_allocator(void **state)
{
	(void)state;
	struct forge_target t;
	allocations = 0;
	xalloc_test_fail = count_allocation;
	forge_target_init(&t);
	xalloc_test_fail = NULL;
	forge_target_release(&t);
	assert_true(allocations >= 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	        cmocka_unit_test(test_link_next),     cmocka_unit_test(test_url_under),
	        cmocka_unit_test(test_redact),        cmocka_unit_test(test_retry_delay),
	        cmocka_unit_test(test_prepare_body),  cmocka_unit_test(test_target_github),
	        cmocka_unit_test(test_target_gitlab), cmocka_unit_test(test_pyroscope_name),
	        cmocka_unit_test(test_allocator),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
