/* The one work-tree discovery: where the git work tree holding a folder has its top, as libgit2
 * finds it (the same search gitmeta's repository open does). The database's default place and
 * .ciprof.yml are both found from it. */
#ifndef CP_WORKTREE_H
#define CP_WORKTREE_H

/* The top folder of the git work tree holding dir (NULL: the current directory), without a
 * trailing slash; NULL outside one (or in a bare repository). A work tree owned by another
 * user (a CI container's checkout) is found too: only its place is read. Owned string. */
char *worktree_top(const char *dir);

#endif
