/* store/dbpath.c: where the database lives when --db is not given. */
#include "store/store.h"
#include "common/worktree.h"
#include "common/xalloc.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *store_default_path(void)
{
	const char *env = getenv("CIPROF_DB");
	if (env && *env)
		return xstrdup(env);
	char *top = worktree_top(NULL);
	if (!top)
		return xstrdup(".ciprof/ciprof.db");
	char *path = xasprintf("%s/.ciprof/ciprof.db", strcmp(top, "/") ? top : "");
	free(top);
	return path;
}
