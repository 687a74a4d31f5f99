/* Host and command-line parts of a run's metadata (see gitmeta.h): the CPU a profile was taken
 * on, so that runs on different machines are not compared blindly, and the command as a user
 * would type it again. */
#include "runner/meta/gitmeta.h"
#include "common/error.h"
#include "common/strbuf.h"
#include "common/xalloc.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

/* Copies s with leading/trailing blanks dropped and inner runs of blanks squeezed to one
 * space (some kernels pad "model name" values); owned. */
static char *squeeze_blanks(const char *s)
{
	struct strbuf sb = STRBUF_INIT;
	int pending = 0;

	for (; *s; s++) {
		if (isspace((unsigned char)*s)) {
			pending = sb.len > 0;
			continue;
		}
		if (pending)
			strbuf_addch(&sb, ' ');
		pending = 0;
		strbuf_addch(&sb, *s);
	}
	return strbuf_detach(&sb, NULL);
}

/* The first "model name" of /proc/cpuinfo (x86, and arm64 on recent kernels); owned or NULL. */
static char *cpuinfo_model(void)
{
	FILE *f = fopen("/proc/cpuinfo", "re");
	char *line = NULL, *out = NULL;
	size_t cap = 0;

	if (!f)
		return NULL;
	while (!out && getline(&line, &cap, f) > 0) {
		char *colon = strchr(line, ':');
		size_t klen;

		if (!colon)
			continue;
		klen = (size_t)(colon - line);
		while (klen && isspace((unsigned char)line[klen - 1]))
			klen--;
		if (klen == 10 && !strncmp(line, "model name", 10)) {
			out = squeeze_blanks(colon + 1);
			if (!*out) {
				free(out);
				out = NULL;
			}
		}
	}
	free(line);
	fclose(f);
	return out;
}

void gitmeta_host(struct run_meta *m)
{
	char *model = cpuinfo_model();
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (model) {
		free(m->cpu_model);
		m->cpu_model = model;
	} else {
		struct utsname u;
		run_meta_set(&m->cpu_model, uname(&u) == 0 ? u.machine : "");
	}
	m->cpu_count = n > 0 && n < 1000000 ? (int)n : 1;
}

int host_parse_stat(const char *text, const char *where, double *busy)
{
	/* "cpu  user nice system idle iowait irq softirq steal guest guest_nice": guest time is
	 * already in user (and guest_nice in nice). */
	if (strncmp(text, "cpu ", 4))
		return cp_error("%s:1: no \"cpu\" line first", where);
	const char *p = text + 4;
	unsigned long long v[8];
	for (int k = 0; k < 8; k++) {
		while (*p == ' ')
			p++;
		if (!isdigit((unsigned char)*p)) {
			if (k >= 4 && (*p == '\n' || !*p)) { /* kernels before 2.6.11: no steal */
				for (; k < 8; k++)
					v[k] = 0;
				break;
			}
			return cp_error("%s:1:%d: expected a count of ticks", where,
			                (int)(p - text) + 1);
		}
		char *end;
		v[k] = strtoull(p, &end, 10);
		p = end;
	}
	*busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]);
	return 0;
}

static double rusage_seconds(int who)
{
	struct rusage ru;
	if (getrusage(who, &ru) < 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

void host_busy_mark(struct host_busy *m)
{
	memset(m, 0, sizeof(*m));
	/* A test hook, docs/run.md: another file stands in for /proc/stat. */
	const char *path = getenv("CIPROF_TEST_PROC_STAT");
	FILE *f = fopen(path && *path ? path : "/proc/stat", "re");
	char buf[512];
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	long tck = sysconf(_SC_CLK_TCK);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	m->wall = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	m->tick = tck > 0 ? 1.0 / (double)tck : 0.01;
	m->cpus = cpus > 0 ? (int)cpus : 1;
	double busy;
	if (n && tck > 0 && host_parse_stat(buf, path && *path ? path : "/proc/stat", &busy) == 0) {
		m->machine = busy / (double)tck;
		m->ok = 1;
	}
	m->self = rusage_seconds(RUSAGE_SELF);
	m->children = rusage_seconds(RUSAGE_CHILDREN);
}

double host_busy_cpus(const struct host_busy *a, const struct host_busy *b)
{
	double wall = b->wall - a->wall;
	if (!a->ok || !b->ok || wall < HOST_BUSY_MIN_TICKS * b->tick)
		return -1;
	double d = (b->machine - a->machine) - (b->self - a->self) - (b->children - a->children);
	/* /proc/stat's ticks are coarser than getrusage's and the clock's: keep to the machine. */
	double cpus = d / wall;
	return cpus < 0 ? 0 : cpus > b->cpus ? b->cpus : cpus;
}

/* Characters that never need quoting in a POSIX shell word. */
static int shell_safe(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("@%+=:,./-_", *s))
			return 0;
	return 1;
}

char *gitmeta_command_string(char *const *argv)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; argv && argv[i]; i++) {
		const char *a = argv[i];

		if (i)
			strbuf_addch(&sb, ' ');
		if (shell_safe(a)) {
			strbuf_addstr(&sb, a);
			continue;
		}
		strbuf_addch(&sb, '\'');
		for (; *a; a++) {
			if (*a == '\'')
				strbuf_addstr(&sb, "'\\''");
			else
				strbuf_addch(&sb, *a);
		}
		strbuf_addch(&sb, '\'');
	}
	return strbuf_detach(&sb, NULL);
}
