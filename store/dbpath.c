/* store/dbpath.c: where the database lives when --db is not given. */
#include "store/store.h"
#include "common/xalloc.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *store_worktree_top(void)
{
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	/* Walk up to the work tree's top: a ".git" folder, or a ".git" file (worktrees,
	 * submodules). */
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", cwd);
	for (;;) {
		struct stat st;
		char *git = xasprintf("%s/.git", strcmp(dir, "/") ? dir : "");
		int found = stat(git, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode));
		free(git);
		if (found)
			return xstrdup(dir);
		char *slash = strrchr(dir, '/');
		if (!slash || !strcmp(dir, "/"))
			break;
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	return NULL;
}

char *store_default_path(void)
{
	const char *env = getenv("CIPROF_DB");
	if (env && *env)
		return xstrdup(env);
	char *top = store_worktree_top();
	if (!top)
		return xstrdup(".ciprof/ciprof.db");
	char *path = xasprintf("%s/.ciprof/ciprof.db", strcmp(top, "/") ? top : "");
	free(top);
	return path;
}
