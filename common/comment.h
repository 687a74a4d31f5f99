/* What report/ (which writes the PR comment) and forge/ (which posts it) agree on, defined once:
 * the hidden marker that makes a comment ciprof's, and the forges' limits on a comment's size. */
#ifndef CP_COMMENT_H
#define CP_COMMENT_H

/* The first line of every Markdown report and of every comment ciprof posts: the comment bot
 * finds its own comment by it. With --id NAME: "<!-- ciprof-report id=NAME -->"
 * (report_marker). */
#define COMMENT_MARKER "<!-- ciprof-report -->"

/* GitHub's limit on a comment's body, in characters: the Markdown report is kept within it.
 * GitLab's limit on a note. */
#define COMMENT_GITHUB_LIMIT 65536
#define COMMENT_GITLAB_LIMIT 1000000

#endif
