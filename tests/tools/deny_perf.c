/* deny_perf ERRNO CMD...: runs CMD under a seccomp filter that makes perf_event_open fail with
 * ERRNO (a number or EPERM/EACCES/ENOSYS), as Docker's default seccomp profile does, or, for
 * ERRNO KILL or TRAP, kill its caller with SIGSYS, as systemd's SystemCallFilter= does. Tests
 * use it to prove ciprof's diagnosis of a refused perf_event_open without a privileged
 * container. */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int parse_errno(const char *s)
{
	if (!strcmp(s, "EPERM"))
		return EPERM;
	if (!strcmp(s, "EACCES"))
		return EACCES;
	if (!strcmp(s, "ENOSYS"))
		return ENOSYS;
	return atoi(s);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: deny_perf ERRNO|KILL|TRAP CMD [ARGS...]\n");
		return 2;
	}
	unsigned action;
	if (!strcmp(argv[1], "KILL"))
		action = SECCOMP_RET_KILL_PROCESS;
	else if (!strcmp(argv[1], "TRAP"))
		action = SECCOMP_RET_TRAP;
	else
		action = SECCOMP_RET_ERRNO | ((unsigned)parse_errno(argv[1]) & SECCOMP_RET_DATA);
	struct sock_filter filter[] = {
	        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
	        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_perf_event_open, 0, 1),
	        BPF_STMT(BPF_RET | BPF_K, action),
	        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof(filter) / sizeof(filter[0]), filter};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		perror("deny_perf: cannot install the seccomp filter");
		return 125;
	}
	execvp(argv[2], argv + 2);
	perror(argv[2]);
	return 127;
}
