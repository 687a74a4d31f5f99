/* The one work-tree discovery: where the git work tree holding a folder has its top, as libgit2
 * finds it (the same search gitmeta's repository open does). The database's default place and
 * .ciprof.yml are both found from it. */
#ifndef CP_WORKTREE_H
#define CP_WORKTREE_H

/* The top folder of the git work tree holding dir (NULL: the current directory), without a
 * trailing slash; NULL outside one (or in a bare repository). A work tree owned by another
 * user (a CI container's checkout) is found too: only its place is read. Owned string. */
char *worktree_top(const char *dir);

struct git_repository;
/*
 * git_repository_open_ext(out, dir, 0, NULL), except that a repository libgit2 refuses because
 * another user owns it always comes back as GIT_EOWNER: libgit2 1.5.1 (Debian 12) says
 * GIT_ENOTFOUND ("config value 'safe.directory' was not found") when no safe.directory is set
 * at all. On GIT_EOWNER, *owner_top (when not NULL) is the refused work tree's top (or the
 * repository folder of a bare one), owned, for the 'git config --global --add safe.directory'
 * advice; else NULL. Returns libgit2's code; *out is owned (git_repository_free) on 0.
 */
int worktree_repo_open(struct git_repository **out, const char *dir, char **owner_top);

#endif
