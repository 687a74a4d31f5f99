/* ciprof push: a stored run to Grafana Pyroscope's /ingest, as pprof with the run's tests as
 * sample labels and its git and CI context as labels of the application name, so that CI
 * profiles of many repositories and runners land in one place next to production's. */
#include "cli/cli.h"
#include "cli/store_open.h"
#include "config/config.h"
#include "common/error.h"
#include "common/log.h"
#include "model/runmeta.h"
#include "common/strbuf.h"
#include "common/worktree.h"
#include "common/xalloc.h"
#include "export/pprof.h"
#include "forge/http.h"
#include "forge/pyroscope.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_DB = 256, OPT_RUN, OPT_SERVER, OPT_APP, OPT_TENANT, OPT_USER, OPT_DRY_RUN };

static const struct cli_option push_options[] = {
        {"db", OPT_DB, "FILE",
         "database file (default: $CIPROF_DB, else .ciprof/ciprof.db at "
         "the repo top)"},
        {"run", OPT_RUN, "ID", "the run to push (default: the latest; also as an argument)"},
        {"server", OPT_SERVER, "URL", "Pyroscope's URL (push.server, $CIPROF_PUSH_SERVER)"},
        {"app", OPT_APP, "NAME",
         "application name (push.app, $CIPROF_PUSH_APP; default: the repository's folder "
         "name)"},
        {"tenant", OPT_TENANT, "ID", "X-Scope-OrgID header (push.tenant, $CIPROF_PUSH_TENANT)"},
        {"user", OPT_USER, "NAME",
         "basic-auth user (push.user, $CIPROF_PUSH_USER); the password from "
         "$CIPROF_PUSH_PASSWORD"},
        {"dry-run", OPT_DRY_RUN, NULL, "print what would be sent, send nothing"},
        {NULL, 0, NULL, NULL},
};

static const char push_usage[] =
        "[--db FILE] [RUN | --run ID] [--server URL] [--app NAME] [--tenant ID] [--user NAME]\n"
        "       [--dry-run]";
static const char push_description[] =
        "Sends a stored run to Grafana Pyroscope (POST /ingest, pprof). The application name is\n"
        "APP.cpu{branch=...,commit=...,ci=...,pr=...}; each sample carries its test as the label\n"
        "'test', so Pyroscope's query {test=\"NAME\"} selects one test. from/until are the run's\n"
        "start and end, sampleRate its sampling rate.\n"
        "Authentication: a bearer token from $CIPROF_PUSH_TOKEN, or --user with the password\n"
        "from $CIPROF_PUSH_PASSWORD; the token is never printed. Server errors and lost\n"
        "connections are retried within $CIPROF_HTTP_MAX_WAIT_MS (default 120000 ms).\n"
        "\n"
        "examples:\n"
        "  ciprof push --server http://localhost:4040\n"
        "  CIPROF_PUSH_TOKEN=... ciprof push 12 --server https://profiles.example.com\n"
        "  ciprof push --server https://pyroscope.internal --tenant team-a --dry-run";

struct push_args {
	const char *db, *server, *app, *tenant, *user;
	int64_t run;
	int dry_run;
};

static int push_opt(void *ctx, int id, const char *arg)
{
	struct push_args *a = ctx;
	switch (id) {
	case OPT_DB:
		a->db = arg;
		return 0;
	case OPT_RUN:
		return cli_parse_run("push", arg, &a->run);
	case OPT_SERVER:
		a->server = arg;
		return 0;
	case OPT_APP:
		a->app = arg;
		return 0;
	case OPT_TENANT:
		a->tenant = arg;
		return 0;
	case OPT_USER:
		a->user = arg;
		return 0;
	case OPT_DRY_RUN:
		a->dry_run = 1;
		return 0;
	}
	return -1;
}

/* A secret from the environment, without the white space a file's last line brings. Owned. */
static char *env_secret(const char *name)
{
	const char *v = getenv(name);
	if (!v)
		return xstrdup("");
	while (*v == ' ' || *v == '\t' || *v == '\n' || *v == '\r')
		v++;
	size_t n = strlen(v);
	while (n && (v[n - 1] == ' ' || v[n - 1] == '\t' || v[n - 1] == '\n' || v[n - 1] == '\r'))
		n--;
	return xstrndup(v, n);
}

static void free_secret(char *s)
{
	if (s) {
		memset(s, 0, strlen(s));
		free(s);
	}
}

/* The default application name: the repository's folder name, else "ciprof". Owned. */
static char *default_app(void)
{
	char *top = worktree_top(NULL);
	const char *base = top ? strrchr(top, '/') : NULL;
	char *app = xstrdup(base && base[1] ? base + 1 : "ciprof");
	free(top);
	return app;
}

/* Sets k from a flag; the value is checked as the file's would be. 0 or EXIT_USAGE. */
static int flag(struct config *cfg, enum config_key k, const char *v, const char *opt)
{
	if (v && config_set(cfg, k, v, CONFIG_FLAG) < 0)
		return cli_usage_error("push", "%s: %s", opt, cp_last_error());
	return 0;
}

int cmd_push(int argc, char **argv)
{
	struct push_args a = {0};
	struct config cfg;
	config_init(&cfg);
	struct store *s = NULL;
	struct profile *p = NULL;
	struct run_meta m;
	run_meta_init(&m);
	struct strbuf pprof = STRBUF_INIT;
	char *app = NULL, *name = NULL, *token = NULL, *password = NULL, *shown = NULL;
	int r = cli_parse_with_run(argc, argv, "push", push_usage, push_description, push_options,
	                           push_opt, &a, &a.run);
	if (r) {
		r = r > 0 ? cli_finish_stdout() : EXIT_USAGE;
		goto out;
	}
	if (config_load(&cfg, NULL) < 0) {
		log_errmsg("%s", cp_last_error());
		r = EXIT_USAGE;
		goto out;
	}
	if ((r = flag(&cfg, CONFIG_PUSH_SERVER, a.server, "--server")) ||
	    (r = flag(&cfg, CONFIG_PUSH_APP, a.app, "--app")) ||
	    (r = flag(&cfg, CONFIG_PUSH_TENANT, a.tenant, "--tenant")) ||
	    (r = flag(&cfg, CONFIG_PUSH_USER, a.user, "--user")))
		goto out;
	const char *server = config_str(&cfg, CONFIG_PUSH_SERVER);
	const char *user = config_str(&cfg, CONFIG_PUSH_USER);
	if (!*server) {
		r = cli_usage_error("push",
		                    "no Pyroscope server: give --server URL, push.server in "
		                    ".ciprof.yml or CIPROF_PUSH_SERVER");
		goto out;
	}
	token = env_secret("CIPROF_PUSH_TOKEN");
	password = env_secret("CIPROF_PUSH_PASSWORD");
	if (*token && *user) {
		r = cli_usage_error("push",
		                    "CIPROF_PUSH_TOKEN and a basic-auth user (%s) are both "
		                    "set; use one",
		                    user);
		goto out;
	}
	if (*password && !*user) {
		r = cli_usage_error("push", "CIPROF_PUSH_PASSWORD is set without a user: give "
		                            "--user, push.user or CIPROF_PUSH_USER");
		goto out;
	}

	if ((r = cli_store_open(&s, a.db, STORE_READONLY)))
		goto out;
	if ((!a.run && store_latest_run(s, NULL, &a.run) < 0) || store_get_run(s, a.run, &m) < 0 ||
	    store_load_profile(s, a.run, NULL, &p) < 0) {
		r = cli_runtime_error();
		goto out;
	}
	struct pprof_info info = {
	        .time_nanos = m.created_at * 1000000000,
	        .duration_nanos = (int64_t)(m.stats.wall_seconds * 1e9),
	};
	if (pprof_write(p, &info, NULL, &pprof) < 0) {
		r = cli_runtime_error();
		goto out;
	}
	app = *config_str(&cfg, CONFIG_PUSH_APP) ? xstrdup(config_str(&cfg, CONFIG_PUSH_APP))
	                                         : default_app();
	char pr[32] = "";
	if (m.pr_number > 0)
		snprintf(pr, sizeof(pr), "%" PRId64, m.pr_number);
	struct pyroscope_label labels[] = {
	        {"branch", m.branch}, {"commit", m.commit}, {"ci", m.ci_provider}, {"pr", pr}};
	name = pyroscope_app_name(app, labels, sizeof(labels) / sizeof(*labels));
	int64_t wall = (int64_t)ceil(m.stats.wall_seconds);
	struct pyroscope_push push = {
	        .server = server,
	        .name = name,
	        .from = m.created_at,
	        .until = m.created_at + (wall > 0 ? wall : 1),
	        .hz = m.stats.hz,
	        .token = token,
	        .user = user,
	        .password = password,
	        .tenant = config_str(&cfg, CONFIG_PUSH_TENANT),
	        .pprof = pprof.buf,
	        .pprof_len = pprof.len,
	};
	uint64_t samples = profile_total(p, NULL);
	/* The server as printed: never with a secret, wherever the user put it. */
	shown = forge_redact(forge_redact(xstrdup(server), token), password);
	if (a.dry_run) {
		fprintf(stderr,
		        "ciprof: would push run %lld to %s as %s: %" PRIu64
		        " samples, %zu bytes of pprof, from %" PRId64 " until %" PRId64
		        ", auth %s%s%s\n",
		        (long long)a.run, shown, name, samples, pprof.len, push.from, push.until,
		        *token  ? "bearer token"
		        : *user ? "basic"
		                : "none",
		        *push.tenant ? ", tenant " : "", push.tenant);
		r = cli_finish_stdout();
		goto out;
	}
	if (pyroscope_send(&push, NULL, NULL) < 0) {
		r = cli_runtime_error();
		goto out;
	}
	log_info("pushed run %lld to %s as %s (%" PRIu64 " samples)", (long long)a.run, shown, name,
	         samples);
	r = cli_finish_stdout();
out:
	free_secret(token);
	free_secret(password);
	free(name);
	free(app);
	free(shown);
	strbuf_release(&pprof);
	profile_free(p);
	run_meta_release(&m);
	store_close(s);
	config_release(&cfg);
	return r;
}
