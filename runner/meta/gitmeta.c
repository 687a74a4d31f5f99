/* Git and CI metadata of a run. libgit2 reads the checkout (HEAD, branch, merge-base with the
 * base branch, dirty work tree); CI checkouts are detached, so branch names and PR numbers come
 * from the CI provider's variables, read from an explicit envp so tests can fake them. */
#include "runner/meta/gitmeta.h"
#include "common/error.h"
#include "common/worktree.h"
#include "common/xalloc.h"

#include <git2.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

const char *gitmeta_env_get(char *const *envp, const char *name)
{
	size_t n = strlen(name);

	if (!envp)
		envp = environ;
	if (!envp)
		return NULL;
	for (; *envp; envp++)
		if (!strncmp(*envp, name, n) && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

/* The value of name when set and not empty, else NULL: CI systems often export empty vars. */
static const char *env_nonempty(char *const *envp, const char *name)
{
	const char *v = gitmeta_env_get(envp, name);
	return v && *v ? v : NULL;
}

static int env_is(char *const *envp, const char *name, const char *value)
{
	const char *v = gitmeta_env_get(envp, name);
	return v && !strcmp(v, value);
}

/* CI=true, CI=1, CI=yes ...: set, not empty and not an explicit "false". */
static int env_truthy(char *const *envp, const char *name)
{
	static const char *const falsy[] = {"0", "false", "no", "off"};
	const char *v = env_nonempty(envp, name);

	if (!v)
		return 0;
	for (size_t i = 0; i < sizeof(falsy) / sizeof(falsy[0]); i++)
		if (!strcasecmp(v, falsy[i]))
			return 0;
	return 1;
}

/* A positive decimal number made of digits only, else 0. */
static int64_t parse_positive(const char *s, size_t len)
{
	int64_t v = 0;

	if (!s || !len)
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		if (v > (INT64_MAX - (s[i] - '0')) / 10)
			return 0;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* "refs/pull/123/merge" (or .../head) -> 123; anything else -> 0. */
static int64_t github_pr_from_ref(const char *ref)
{
	static const char prefix[] = "refs/pull/";
	const char *num, *slash;

	if (!ref || strncmp(ref, prefix, sizeof(prefix) - 1))
		return 0;
	num = ref + sizeof(prefix) - 1;
	slash = strchr(num, '/');
	if (!slash || (strcmp(slash, "/merge") && strcmp(slash, "/head")))
		return 0;
	return parse_positive(num, (size_t)(slash - num));
}

void gitmeta_ci(struct run_meta *m, char *const *envp)
{
	const char *provider = "", *url = NULL;
	char *github_url = NULL;
	int64_t pr = 0;

	if (env_is(envp, "GITHUB_ACTIONS", "true")) {
		const char *server = env_nonempty(envp, "GITHUB_SERVER_URL");
		const char *repo = env_nonempty(envp, "GITHUB_REPOSITORY");
		const char *run = env_nonempty(envp, "GITHUB_RUN_ID");

		provider = "github";
		pr = github_pr_from_ref(gitmeta_env_get(envp, "GITHUB_REF"));
		if (!server)
			server = "https://github.com";
		if (repo && run) {
			size_t n = strlen(server);
			while (n && server[n - 1] == '/')
				n--;
			github_url =
			        xasprintf("%.*s/%s/actions/runs/%s", (int)n, server, repo, run);
			url = github_url;
		}
	} else if (env_is(envp, "GITLAB_CI", "true")) {
		const char *iid = env_nonempty(envp, "CI_MERGE_REQUEST_IID");

		provider = "gitlab";
		if (iid)
			pr = parse_positive(iid, strlen(iid));
		url = env_nonempty(envp, "CI_JOB_URL");
	} else if (env_truthy(envp, "CI")) {
		provider = "ci";
		/* Jenkins (and tools that mimic it) name the build page BUILD_URL. */
		url = env_nonempty(envp, "BUILD_URL");
	}
	run_meta_set(&m->ci_provider, provider);
	run_meta_set(&m->job_url, url);
	m->pr_number = pr;
	free(github_url);
}

const char *gitmeta_ci_branch(char *const *envp)
{
	/* GitHub: GITHUB_HEAD_REF is set (to the PR's source branch) only for pull_request events;
	 * GITHUB_REF_NAME then reads "123/merge", so it comes second. */
	static const char *const names[] = {
	        "GITHUB_HEAD_REF",  "GITHUB_REF_NAME",    "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME",
	        "CI_COMMIT_BRANCH", "CI_COMMIT_REF_NAME", "BRANCH_NAME",
	        "GIT_BRANCH",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *v = env_nonempty(envp, names[i]);
		if (!v)
			continue;
		/* Jenkins' GIT_BRANCH reads "origin/feature"; some tools export full ref names. */
		if (!strncmp(v, "refs/heads/", 11))
			v += 11;
		else if (!strcmp(names[i], "GIT_BRANCH") && !strncmp(v, "origin/", 7))
			v += 7;
		if (*v)
			return v;
	}
	return NULL;
}

/* The branch a merge request or PR targets, or the project's default branch, from CI. */
static const char *base_from_ci(char *const *envp)
{
	static const char *const names[] = {
	        "GITHUB_BASE_REF",
	        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME",
	        "CI_DEFAULT_BRANCH",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *v = env_nonempty(envp, names[i]);
		if (v)
			return v;
	}
	return NULL;
}

/* Records libgit2's last message after what; returns -1. */
static int gm_fail(const char *what)
{
	const git_error *e = git_error_last();
	return cp_error("%s: %s", what, e && e->message ? e->message : "unknown libgit2 error");
}

static int ref_exists(git_repository *repo, const char *name)
{
	git_reference *ref = NULL;
	int found = git_reference_lookup(&ref, repo, name) == 0;

	git_reference_free(ref);
	return found;
}

static int branch_exists(git_repository *repo, const char *branch)
{
	char *local = xasprintf("refs/heads/%s", branch);
	char *remote = xasprintf("refs/remotes/origin/%s", branch);
	int found = ref_exists(repo, local) || ref_exists(repo, remote);

	free(local);
	free(remote);
	return found;
}

/* The remote's default branch as refs/remotes/origin/HEAD records it (clone sets it);
 * owned, or NULL. */
static char *remote_default_branch(git_repository *repo)
{
	static const char prefix[] = "refs/remotes/origin/";
	git_reference *ref = NULL;
	const char *target;
	char *out = NULL;

	if (git_reference_lookup(&ref, repo, "refs/remotes/origin/HEAD") < 0)
		return NULL;
	target = git_reference_symbolic_target(ref);
	if (target && !strncmp(target, prefix, sizeof(prefix) - 1) && target[sizeof(prefix) - 1])
		out = xstrdup(target + sizeof(prefix) - 1);
	git_reference_free(ref);
	return out;
}

/* The base branch name (owned; "" when none can be found). */
static char *choose_base(git_repository *repo, const char *arg, char *const *envp)
{
	const char *ci;
	char *remote;

	if (arg && *arg)
		return xstrdup(arg);
	ci = base_from_ci(envp);
	if (ci)
		return xstrdup(ci);
	remote = remote_default_branch(repo);
	if (remote)
		return remote;
	if (branch_exists(repo, "main"))
		return xstrdup("main");
	if (branch_exists(repo, "master"))
		return xstrdup("master");
	return xstrdup("");
}

/*
 * Commit id of base: the local branch, then origin/<base>, then any revision git understands
 * (a tag, a hash, "origin/main"). 0, GIT_ENOTFOUND when none, or another negative libgit2 code.
 */
static int resolve_base(git_oid *out, git_repository *repo, const char *base)
{
	static const char *const prefixes[] = {"refs/heads/", "refs/remotes/origin/"};
	git_object *obj = NULL, *peeled = NULL;
	int err;

	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		char *name = xasprintf("%s%s", prefixes[i], base);
		err = git_reference_name_to_id(out, repo, name);
		free(name);
		if (err == 0)
			return 0;
		if (err != GIT_ENOTFOUND && err != GIT_EINVALIDSPEC)
			return err;
	}
	err = git_revparse_single(&obj, repo, base);
	if (err == GIT_EINVALIDSPEC || err == GIT_EAMBIGUOUS)
		err = GIT_ENOTFOUND;
	if (err == 0)
		err = git_object_peel(&peeled, obj, GIT_OBJECT_COMMIT);
	if (err == GIT_EINVALIDSPEC || err == GIT_EPEEL)
		err = GIT_ENOTFOUND;
	if (err == 0)
		git_oid_cpy(out, git_object_id(peeled));
	git_object_free(peeled);
	git_object_free(obj);
	return err;
}

/* 1 when a tracked file is modified, staged, deleted, renamed or retyped; untracked and
 * ignored files do not count. 0, 1, or -1 with cp_error set. */
static int worktree_dirty(git_repository *repo)
{
	git_status_options opts;
	git_status_list *list = NULL;
	int dirty = 0;

	if (git_repository_is_bare(repo))
		return 0;
	if (git_status_options_init(&opts, GIT_STATUS_OPTIONS_VERSION) < 0)
		return gm_fail("cannot set up git status options");
	opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
	opts.flags = 0; /* no untracked, no ignored: only changes to what is tracked */
	if (git_status_list_new(&list, repo, &opts) < 0)
		return gm_fail("cannot read the git work tree's status");
	for (size_t i = 0, n = git_status_list_entrycount(list); i < n && !dirty; i++) {
		const git_status_entry *e = git_status_byindex(list, i);
		unsigned int s =
		        e->status & ~(unsigned int)(GIT_STATUS_WT_NEW | GIT_STATUS_IGNORED);
		if (s != GIT_STATUS_CURRENT)
			dirty = 1;
	}
	git_status_list_free(list);
	return dirty;
}

/* First line of a commit message, without trailing blanks or CR. Owned. */
static char *first_line(const char *msg)
{
	size_t n;

	if (!msg)
		return xstrdup("");
	while (*msg == '\n' || *msg == '\r')
		msg++;
	n = strcspn(msg, "\n");
	while (n && (msg[n - 1] == '\r' || msg[n - 1] == ' ' || msg[n - 1] == '\t'))
		n--;
	return xstrndup(msg, n);
}

static void clear_git_fields(struct run_meta *m)
{
	run_meta_set(&m->commit, "");
	run_meta_set(&m->branch, "");
	run_meta_set(&m->base_branch, "");
	run_meta_set(&m->merge_base, "");
	run_meta_set(&m->subject, "");
	m->dirty = 0;
	m->commit_time = 0;
}

int gitmeta_collect(struct run_meta *m, const char *dir, const char *base_branch, char *const *envp)
{
	git_repository *repo = NULL;
	char *owner_top = NULL;
	git_reference *head = NULL;
	git_object *head_obj = NULL;
	const git_commit *commit;
	const git_signature *author;
	char hex[GIT_OID_HEXSZ + 1], mb_hex[GIT_OID_HEXSZ + 1] = "";
	char *branch = NULL, *base = NULL, *subject = NULL;
	git_oid base_oid, mb_oid;
	int ret = 0, err, dirty;

	clear_git_fields(m);
	if (!dir || !*dir)
		dir = ".";
	if (git_libgit2_init() < 0)
		return gm_fail("cannot initialise libgit2");

	err = worktree_repo_open(&repo, dir, &owner_top);
	if (err == GIT_ENOTFOUND)
		goto out; /* not in a repository: a run still stores, with empty git fields */
	if (err == GIT_EOWNER) {
		ret = cp_error("the git repository %s is owned by another user, and git refuses "
		               "it (\"dubious ownership\"); mark it safe with 'git config "
		               "--global --add safe.directory %s'",
		               owner_top, owner_top);
		ret = GITMETA_ERR_OWNER;
		goto out;
	}
	if (err < 0) {
		ret = gm_fail("cannot open the git repository");
		goto out;
	}

	err = git_repository_head(&head, repo);
	if (err == GIT_EUNBORNBRANCH || err == GIT_ENOTFOUND)
		goto out; /* no commit yet: nothing to describe */
	if (err < 0) {
		ret = gm_fail("cannot read the git HEAD");
		goto out;
	}
	if (git_reference_peel(&head_obj, head, GIT_OBJECT_COMMIT) < 0) {
		ret = gm_fail("cannot read the git HEAD commit");
		goto out;
	}
	commit = (const git_commit *)head_obj;
	git_oid_tostr(hex, sizeof(hex), git_commit_id(commit));
	author = git_commit_author(commit);
	subject = first_line(git_commit_message(commit));

	if (git_repository_head_detached(repo) == 1) {
		const char *ci = gitmeta_ci_branch(envp);
		branch = xstrdup(ci ? ci : "");
	} else {
		branch = xstrdup(git_reference_shorthand(head));
	}

	base = choose_base(repo, base_branch, envp);
	if (*base) {
		err = resolve_base(&base_oid, repo, base);
		if (err == 0)
			err = git_merge_base(&mb_oid, repo, git_commit_id(commit), &base_oid);
		if (err == 0)
			git_oid_tostr(mb_hex, sizeof(mb_hex), &mb_oid);
		/* A shallow clone (CI's default fetch depth) often lacks the history. */
		else if (err != GIT_ENOTFOUND && git_repository_is_shallow(repo) != 1) {
			ret = gm_fail("cannot find the merge-base with the base branch");
			goto out;
		}
	}

	dirty = worktree_dirty(repo);
	if (dirty < 0) {
		ret = dirty;
		goto out;
	}

	run_meta_set(&m->commit, hex);
	run_meta_set(&m->branch, branch);
	run_meta_set(&m->base_branch, base);
	run_meta_set(&m->merge_base, mb_hex);
	run_meta_set(&m->subject, subject);
	m->dirty = dirty;
	m->commit_time = author ? (int64_t)author->when.time : (int64_t)git_commit_time(commit);
out:
	free(owner_top);
	free(branch);
	free(base);
	free(subject);
	git_object_free(head_obj);
	git_reference_free(head);
	git_repository_free(repo);
	git_libgit2_shutdown();
	return ret;
}

/* --- report-time questions about a head commit --- */

struct gitmeta_repo {
	git_repository *repo;
};

int gitmeta_repo_open(struct gitmeta_repo **out, const char *dir)
{
	git_repository *repo = NULL;
	*out = NULL;
	if (git_libgit2_init() < 0)
		return gm_fail("cannot initialise libgit2");
	int err = worktree_repo_open(&repo, dir && *dir ? dir : ".", NULL);
	if (err < 0) {
		/* Not in a repository, or one we may not use: report from the store alone. */
		git_libgit2_shutdown();
		return 0;
	}
	*out = xcalloc(1, sizeof(**out));
	(*out)->repo = repo;
	return 0;
}

void gitmeta_repo_free(struct gitmeta_repo *r)
{
	if (!r)
		return;
	git_repository_free(r->repo);
	free(r);
	git_libgit2_shutdown();
}

char *gitmeta_base_branch(struct gitmeta_repo *r, const char *arg, char *const *envp)
{
	if (!r) {
		const char *ci = arg && *arg ? arg : base_from_ci(envp);
		return xstrdup(ci ? ci : "");
	}
	return choose_base(r->repo, arg, envp);
}

/* The commit a full or abbreviated hex id names; GIT_ENOTFOUND when none. */
static int commit_oid(git_oid *out, git_repository *repo, const char *hex)
{
	git_object *obj = NULL;
	size_t n = strlen(hex);
	if (n < 4 || n > GIT_OID_HEXSZ)
		return GIT_ENOTFOUND;
	git_oid prefix;
	if (git_oid_fromstrn(&prefix, hex, n) < 0)
		return GIT_ENOTFOUND;
	int err = git_object_lookup_prefix(&obj, repo, &prefix, n, GIT_OBJECT_COMMIT);
	if (err < 0)
		return GIT_ENOTFOUND;
	git_oid_cpy(out, git_object_id(obj));
	git_object_free(obj);
	return 0;
}

int gitmeta_merge_base(struct gitmeta_repo *r, const char *commit, const char *base,
                       char out[GITMETA_HEX_SIZE])
{
	git_oid head, b, mb;
	out[0] = '\0';
	if (!r || !*commit || !*base)
		return 0;
	if (commit_oid(&head, r->repo, commit) < 0 || resolve_base(&b, r->repo, base) < 0)
		return 0;
	if (git_merge_base(&mb, r->repo, &head, &b) == 0)
		git_oid_tostr(out, GITMETA_HEX_SIZE, &mb);
	return 0;
}

int gitmeta_is_ancestor(struct gitmeta_repo *r, const char *anc, const char *commit)
{
	git_oid a, c;
	if (!r || commit_oid(&c, r->repo, commit) < 0 || commit_oid(&a, r->repo, anc) < 0)
		return -1;
	if (git_oid_equal(&a, &c))
		return 1;
	int v = git_graph_descendant_of(r->repo, &c, &a);
	return v < 0 ? -1 : v;
}
