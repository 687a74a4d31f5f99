/* Launching the profiled command, shared by the sampling backends (perf.c, preload_backend.c):
 * fork behind a cork pipe, CIPROF_CONTROL_FD marks, the pseudo-terminal feeding the output
 * markers, signal forwarding through a signalfd, exec failures reported as errno through a
 * close-on-exec pipe. */
#ifndef CP_LAUNCH_H
#define CP_LAUNCH_H

#include "common/strbuf.h"
#include "runner/attribution/attribute.h"
#include "runner/attribution/markers.h"
#include "runner/runner.h"

#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

/* How many pollfd entries launch_pollfds fills: signalfd, control pipe, pty. */
#define LAUNCH_NFDS 3

struct launch {
	pid_t child;             /* the command, or -1 */
	int own_group;           /* the command leads its own process group (signals go to it) */
	int sfd;                 /* signalfd for INT/TERM/HUP/QUIT/CHLD (nonblocking), or -1 */
	int ctl_fd;              /* read end of the CIPROF_CONTROL_FD pipe (nonblocking), or -1 */
	int pty_fd;              /* pty master carrying the command's output, or -1 */
	int go_fd;               /* write end of the cork pipe, until launch_go */
	int err_fd;              /* read end of the exec-errno pipe, until launch_go */
	struct strbuf ctl_buf;   /* an incomplete control line */
	struct attrib *attrib;   /* borrowed */
	struct markers *markers; /* borrowed */
	sigset_t old_mask;
	struct sigaction old_pipe;
	int signals_saved;
	int exec_status; /* after RUNNER_ERR_EXEC: 127 (not found) or 126 (not executable) */
	double start;    /* CLOCK_MONOTONIC seconds when the command was released */
};

void launch_init(struct launch *l, struct attrib *a, struct markers *m);

/*
 * Blocks the forwarded signals (they are read from l->sfd), opens the pipes and the pty, and
 * forks opts->argv[0] corked: it waits in the child until launch_go. env lists extra
 * "NAME=VALUE" strings for the command's environment (borrowed, NULL-terminated; NULL for
 * none). 0, or -1 with cp_error (nothing is left running).
 */
int launch_start(struct launch *l, const struct runner_opts *opts, char *const *env);

/*
 * Releases the corked command and waits until it has exec'd. 0; RUNNER_ERR_EXEC when exec
 * failed (the child is reaped; cp_error holds "cannot run 'X': ...", l->exec_status the
 * status to exit with: 127 not found, 126 not executable); -1 on other failures
 * (the child is killed and reaped).
 */
int launch_go(struct launch *l, const char *argv0);

/* Kills and reaps a command that is still corked (the backend could not start sampling). */
void launch_abort(struct launch *l);

/* Fills pfds[0..LAUNCH_NFDS) with the fds to poll: signalfd, control pipe, pty. */
void launch_pollfds(const struct launch *l, struct pollfd *pfds);

/*
 * After a poll of the LAUNCH_NFDS entries from launch_pollfds: forwards signals sent to
 * ciprof to the command (to its whole process group when it leads one), reads marks and output
 * (before the samples they cover), stops polling closed fds. Returns 1 once the command has exited
 * (*status is its wait status), else 0.
 */
int launch_service(struct launch *l, struct pollfd *pfds, int *status);

/* At the end: reads what the control pipe and the pty still hold and ends the markers. */
void launch_drain_io(struct launch *l);

/* Closes everything. SIGINT/TERM/HUP/QUIT stay blocked and SIGPIPE ignored from here until
 * ciprof exits (signals that raced with the command's end are consumed), so that nothing
 * kills ciprof before it has written and stored the profile; SIGCHLD is unblocked again. */
void launch_release(struct launch *l);

/* The status ciprof exits with for a wait status: the exit code, 128+N for signal N. */
int launch_exit_status(int status);
uint64_t launch_now_ns(void);
double launch_now_seconds(void);
const char *launch_basename(const char *path);

#endif
