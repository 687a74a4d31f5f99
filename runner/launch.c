/* Launching the profiled command for either backend (see launch.h): the command waits behind
 * a cork pipe until the sampler is ready, its exec failure comes back as an errno, signals
 * sent to ciprof are forwarded to it, and its marks and output feed the test attribution. */
#include "runner/launch.h"
#include "common/error.h"
#include "common/log.h"
#include "common/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

uint64_t launch_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

double launch_now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int launch_exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

const char *launch_basename(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* ---- marks and output ---- */

/* Writes all of buf to fd, waiting when it is full; gives up on a real error (EPIPE). */
static void write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct pollfd p = {fd, POLLOUT, 0};
			poll(&p, 1, 100);
			continue;
		}
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

/* Reads what the control pipe holds; each complete line is a mark. */
static void read_control(struct launch *l)
{
	char buf[4096];
	ssize_t n;
	while ((n = read(l->ctl_fd, buf, sizeof(buf))) > 0) {
		uint64_t t = launch_now_ns();
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n') {
				/* A line longer than any writer of ours makes: its start is kept,
				 * so its test keeps a name, cut (and counted) by attrib. */
				(void)strbuf_addch(&l->ctl_buf, buf[i]);
				continue;
			}
			if (attrib_control_line(l->attrib, l->ctl_buf.buf, t) < 0)
				log_verbose("%s", cp_last_error());
			strbuf_reset(&l->ctl_buf);
		}
	}
}

/* Copies the command's output from the pty to ciprof's stdout, feeding the markers. */
static int read_pty(struct launch *l)
{
	char buf[16384];
	ssize_t n;
	while ((n = read(l->pty_fd, buf, sizeof(buf))) > 0) {
		uint64_t t = launch_now_ns();
		write_all(STDOUT_FILENO, buf, (size_t)n);
		markers_feed(l->markers, l->attrib, buf, (size_t)n, t);
	}
	/* EIO: every holder of the slave side closed it. */
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) ? -1 : 0;
}

/* ---- launching ---- */

/* Whether fds a and b are the same open file (stdout and stderr to one terminal or file). */
static int same_file(int a, int b)
{
	struct stat sa, sb;
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* Opens a pty whose slave passes bytes through unchanged (no \n -> \r\n), sized like ours. */
static int open_pty(int *master, int *slave)
{
	*master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (*master < 0 || grantpt(*master) < 0 || unlockpt(*master) < 0)
		return -1;
	const char *name = ptsname(*master);
	*slave = name ? open(name, O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
	if (*slave < 0)
		return -1;
	struct termios tio;
	if (tcgetattr(*slave, &tio) == 0) {
		tio.c_oflag &= ~(tcflag_t)OPOST;
		tio.c_lflag &= ~(tcflag_t)ECHO;
		tcsetattr(*slave, TCSANOW, &tio);
	}
	struct winsize ws;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0)
		ioctl(*slave, TIOCSWINSZ, &ws);
	fcntl(*master, F_SETFL, fcntl(*master, F_GETFL) | O_NONBLOCK);
	return 0;
}

void launch_init(struct launch *l, struct attrib *a, struct markers *m)
{
	memset(l, 0, sizeof(*l));
	l->child = -1;
	l->sfd = l->ctl_fd = l->pty_fd = l->go_fd = l->err_fd = -1;
	strbuf_init(&l->ctl_buf, 4096);
	l->attrib = a;
	l->markers = m;
}

/* The signals ciprof forwards to the command while it runs and ignores once it has ended
 * (symbolizing and storing must not be cut short: docs/run.md). */
static const int forwarded_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

/* What ciprof was started with: the command inherits exactly this mask and SIGPIPE action,
 * however many runs one process makes (an earlier launch_release leaves its signals
 * blocked). */
static sigset_t caller_mask;
static struct sigaction caller_pipe;
static int caller_saved;

/* Whether ciprof is in its controlling terminal's foreground process group: a terminal's ^C
 * then reaches the whole group, the command and what it started included. */
static int in_terminal_foreground(void)
{
	int tty = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
	if (tty < 0)
		return 0; /* no controlling terminal: CI, cron, systemd */
	int fg = tcgetpgrp(tty) == getpgrp();
	close(tty);
	return fg;
}

/* The child after fork: environment, output on the pty, wait for the cork, exec. */
static void __attribute__((noreturn))
child_main(const struct runner_opts *opts, char *const *env, pid_t parent, int own_group, int go,
           int err, int ctl, int slave)
{
	sigprocmask(SIG_SETMASK, &caller_mask, NULL);
	/* Both sides set the group, so that it exists whichever runs first. */
	if (own_group)
		setpgid(0, 0);
	sigaction(SIGPIPE, &caller_pipe, NULL);
	/* A SIGKILLed ciprof must not leave its command running unprofiled. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(127);
	/* The control pipe's write end stays open across exec, for the marks, on a high
	 * number: the command's own files get the numbers they would get without ciprof. */
	struct rlimit nofile;
	long base = 1024;
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < (rlim_t)base)
		base = (long)nofile.rlim_cur;
	base = base - 24 > 3 ? base - 24 : 3;
	if (ctl < base) {
		int hi = fcntl(ctl, F_DUPFD, (int)base);
		if (hi >= 0) {
			close(ctl);
			ctl = hi;
		}
	}
	fcntl(ctl, F_SETFD, 0);
	char fdnum[16];
	snprintf(fdnum, sizeof(fdnum), "%d", ctl);
	setenv("CIPROF_CONTROL_FD", fdnum, 1);
	for (char *const *e = env; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		if (!eq)
			continue;
		char *name = xstrndup(*e, (size_t)(eq - *e));
		setenv(name, eq + 1, 1);
		free(name);
	}
	if (slave >= 0) {
		int both = same_file(STDOUT_FILENO, STDERR_FILENO) || isatty(STDERR_FILENO);
		dup2(slave, STDOUT_FILENO);
		if (both)
			dup2(slave, STDERR_FILENO);
	}
	char c;
	ssize_t n;
	do
		n = read(go, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(127); /* the sampler gave up */
	execvp(opts->argv[0], opts->argv);
	int e = errno ? errno : ENOEXEC;
	if (write(err, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

int runner_uses_pty(const struct runner_opts *opts)
{
	return opts->pty > 0 || (opts->pty == 0 && isatty(STDOUT_FILENO));
}

int launch_start(struct launch *l, const struct runner_opts *opts, char *const *env)
{
	int go[2] = {-1, -1}, err[2] = {-1, -1}, ctl[2] = {-1, -1}, slave = -1;
	int ret = 0;
	sigset_t mask;
	struct sigaction ign = {.sa_handler = SIG_IGN};
	int use_pty = runner_uses_pty(opts);

	sigemptyset(&mask);
	for (size_t i = 0; i < sizeof(forwarded_signals) / sizeof(forwarded_signals[0]); i++)
		sigaddset(&mask, forwarded_signals[i]);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &l->old_mask);
	/* A closed stdout must not kill ciprof while it copies the command's output. */
	sigaction(SIGPIPE, &ign, &l->old_pipe);
	if (!caller_saved) {
		caller_mask = l->old_mask;
		caller_pipe = l->old_pipe;
		caller_saved = 1;
	}
	l->signals_saved = 1;
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 || pipe2(ctl, O_CLOEXEC) < 0) {
		ret = cp_error_errno("cannot create pipes");
		goto out;
	}
	l->sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (l->sfd < 0) {
		ret = cp_error_errno("cannot create a signalfd");
		goto out;
	}
	if (use_pty && open_pty(&l->pty_fd, &slave) < 0) {
		log_warn("cannot open a pseudo-terminal (%s): output markers are off",
		         strerror(errno));
		if (l->pty_fd >= 0)
			close(l->pty_fd);
		l->pty_fd = -1;
		if (slave >= 0)
			close(slave);
		slave = -1;
	}

	/* Outside a terminal's foreground group (CI, kill, timeout) nothing sends a signal to
	 * the processes CMD starts: CMD leads a process group of its own and forwarded signals
	 * go to all of it, as timeout(1) does, so that a cancel of `bash -c "make test"` stops
	 * the tests, not bash alone. In the foreground, CMD stays in ciprof's group, which the
	 * terminal's ^C and job control reach whole. */
	l->own_group = !in_terminal_foreground();
	fflush(NULL);
	pid_t parent = getpid();
	l->child = fork();
	if (l->child < 0) {
		ret = cp_error_errno("cannot fork");
		goto out;
	}
	if (l->child == 0) {
		close(go[1]);
		close(err[0]);
		close(ctl[0]);
		child_main(opts, env, parent, l->own_group, go[0], err[1], ctl[1], slave);
	}
	if (l->own_group)
		setpgid(l->child, l->child);
	l->go_fd = go[1];
	go[1] = -1;
	l->err_fd = err[0];
	err[0] = -1;
	l->ctl_fd = ctl[0];
	ctl[0] = -1;
	fcntl(l->ctl_fd, F_SETFL, fcntl(l->ctl_fd, F_GETFL) | O_NONBLOCK);
out:
	for (int i = 0; i < 2; i++) {
		if (go[i] >= 0)
			close(go[i]);
		if (err[i] >= 0)
			close(err[i]);
		if (ctl[i] >= 0)
			close(ctl[i]);
	}
	if (slave >= 0)
		close(slave);
	return ret;
}

void launch_abort(struct launch *l)
{
	if (l->child > 0) {
		kill(l->own_group ? -l->child : l->child, SIGKILL);
		waitpid(l->child, NULL, 0);
		l->child = -1;
	}
}

int launch_go(struct launch *l, const char *argv0)
{
	l->start = launch_now_seconds();
	if (write(l->go_fd, "g", 1) != 1) {
		int ret = cp_error_errno("cannot release the command");
		launch_abort(l);
		return ret;
	}
	close(l->go_fd);
	l->go_fd = -1;
	int exec_errno = 0;
	ssize_t n;
	do
		n = read(l->err_fd, &exec_errno, sizeof(exec_errno));
	while (n < 0 && errno == EINTR);
	close(l->err_fd);
	l->err_fd = -1;
	if (n == (ssize_t)sizeof(exec_errno)) {
		waitpid(l->child, NULL, 0);
		l->child = -1;
		cp_error("cannot run '%s': %s", argv0, strerror(exec_errno));
		/* The shells' convention: 127 not found, 126 found but not executable. */
		l->exec_status = exec_errno == ENOENT || exec_errno == ENOTDIR ? 127 : 126;
		return RUNNER_ERR_EXEC;
	}
	return 0;
}

void launch_pollfds(const struct launch *l, struct pollfd *pfds)
{
	pfds[0] = (struct pollfd){l->sfd, POLLIN, 0};
	pfds[1] = (struct pollfd){l->ctl_fd, POLLIN, 0};
	pfds[2] = (struct pollfd){l->pty_fd, POLLIN, 0};
}

int launch_service(struct launch *l, struct pollfd *pfds, int *status)
{
	struct signalfd_siginfo si;
	while (read(l->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			continue;
		/* A terminal's ^C already reached the whole foreground group, the command
		 * included; forward only signals sent to ciprof alone (kill, timeout). */
		if (si.ssi_code != SI_KERNEL && l->child > 0) {
			log_verbose("forwarding signal %d to the command%s", (int)si.ssi_signo,
			            l->own_group ? "'s process group" : "");
			kill(l->own_group ? -l->child : l->child, (int)si.ssi_signo);
		}
	}
	/* Marks and output first: they must be known before the samples they cover. */
	if (pfds[1].revents)
		read_control(l);
	if (pfds[2].revents && read_pty(l) < 0)
		pfds[2].fd = -1;
	if (pfds[1].revents & POLLHUP)
		pfds[1].fd = -1; /* every writer closed it */
	if (l->child > 0 && waitpid(l->child, status, WNOHANG) == l->child) {
		l->child = -1;
		return 1;
	}
	return 0;
}

void launch_drain_io(struct launch *l)
{
	if (l->ctl_fd >= 0)
		read_control(l);
	if (l->pty_fd >= 0) {
		read_pty(l);
		markers_flush(l->markers, l->attrib, launch_now_ns());
	}
}

void launch_release(struct launch *l)
{
	if (l->sfd >= 0) {
		/* Consume signals that raced with the command's end (a terminal's ^C reaches
		 * both): unblocking them now would kill ciprof before it writes the profile. */
		struct signalfd_siginfo si;
		while (read(l->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			;
		close(l->sfd);
		l->sfd = -1;
	}
	if (l->signals_saved) {
		/* The command has ended: from here on ciprof symbolizes and stores, which a
		 * second ^C or a CI runner's SIGTERM must not cut short, so the forwarded
		 * signals stay blocked and SIGPIPE ignored (a closed stdout is a write error)
		 * until ciprof exits. Only SIGCHLD gets its old state back. */
		sigset_t keep = l->old_mask;
		for (size_t i = 0; i < sizeof(forwarded_signals) / sizeof(forwarded_signals[0]);
		     i++)
			sigaddset(&keep, forwarded_signals[i]);
		sigprocmask(SIG_SETMASK, &keep, NULL);
		l->signals_saved = 0;
	}
	int *fds[] = {&l->go_fd, &l->err_fd, &l->ctl_fd, &l->pty_fd};
	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
	strbuf_release(&l->ctl_buf);
}
