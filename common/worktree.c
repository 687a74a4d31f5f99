/* common/worktree: the git work tree's top, found by libgit2 (see worktree.h). */
#include "common/worktree.h"
#include "common/xalloc.h"

#include <git2.h>
#include <stdlib.h>
#include <string.h>

/* The repository at or above dir opened without the ownership check; libgit2's code. */
static int open_unchecked(git_repository **out, const char *dir)
{
	int was = 1;
	git_libgit2_opts(GIT_OPT_GET_OWNER_VALIDATION, &was);
	git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0);
	int err = git_repository_open_ext(out, dir, 0, NULL);
	git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, was);
	return err;
}

/* The work tree's top without a trailing slash (the repository folder when bare). Owned. */
static char *repo_top(git_repository *repo)
{
	const char *wd = git_repository_workdir(repo);
	char *top = xstrdup(wd ? wd : git_repository_path(repo));
	size_t n = strlen(top);
	while (n > 1 && top[n - 1] == '/')
		top[--n] = '\0';
	return top;
}

int worktree_repo_open(git_repository **out, const char *dir, char **owner_top)
{
	git_repository *unchecked = NULL;
	*out = NULL;
	if (owner_top)
		*owner_top = NULL;
	int err = git_repository_open_ext(out, dir, 0, NULL);
	if (err != GIT_EOWNER && err != GIT_ENOTFOUND)
		return err;
	/* Found without the ownership check, refused with it: another user's repository. */
	if (open_unchecked(&unchecked, dir) < 0)
		return err;
	if (owner_top)
		*owner_top = repo_top(unchecked);
	git_repository_free(unchecked);
	return GIT_EOWNER;
}

char *worktree_top(const char *dir)
{
	if (git_libgit2_init() < 0)
		return NULL;
	const char *start = dir && *dir ? dir : ".";
	git_repository *repo = NULL;
	char *top = NULL;
	/* safe.directory guards against running another user's configuration; nothing of the
	 * repository is read here but its place. */
	int err = worktree_repo_open(&repo, start, NULL);
	if (err == GIT_EOWNER)
		err = open_unchecked(&repo, start);
	if (err == 0) {
		if (git_repository_workdir(repo))
			top = repo_top(repo);
		git_repository_free(repo);
	}
	git_libgit2_shutdown();
	return top;
}
