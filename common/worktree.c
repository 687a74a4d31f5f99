/* common/worktree: the git work tree's top, found by libgit2 (see worktree.h). */
#include "common/worktree.h"
#include "common/xalloc.h"

#include <git2.h>
#include <string.h>

char *worktree_top(const char *dir)
{
	if (git_libgit2_init() < 0)
		return NULL;
	const char *start = dir && *dir ? dir : ".";
	git_repository *repo = NULL;
	int err = git_repository_open_ext(&repo, start, 0, NULL);
	if (err == GIT_EOWNER) {
		/* safe.directory guards against running another user's configuration; nothing
		 * of the repository is read here but its place. */
		int was = 1;
		git_libgit2_opts(GIT_OPT_GET_OWNER_VALIDATION, &was);
		git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0);
		err = git_repository_open_ext(&repo, start, 0, NULL);
		git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, was);
	}
	char *top = NULL;
	if (err == 0) {
		const char *wd = git_repository_workdir(repo);
		if (wd) {
			top = xstrdup(wd);
			size_t n = strlen(top);
			while (n > 1 && top[n - 1] == '/')
				top[--n] = '\0';
		}
		git_repository_free(repo);
	}
	git_libgit2_shutdown();
	return top;
}
