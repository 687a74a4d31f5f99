/* bench/scale: growth of JUnit matching with the number of cases (CPU time at N and 8N, side
 * by side in one process) and the memory of a perf map line with a 50 MB name. */
#include "model/profile.h"
#include "common/xalloc.h"
#include "runner/attribution/junit.h"
#include "runner/symbols/symbolize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double cpu_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds of junit_attach for n cases, half of them profiled tests. */
static double attach_seconds(int n)
{
	struct profile *p = profile_new();
	struct profile_frame f = {.function = profile_intern(p, "f")};
	uint32_t node = profile_node(p, 0, profile_frame(p, &f));
	char name[64];
	for (int i = 0; i < n; i += 2) {
		snprintf(name, sizeof(name), "Suite.t%d", i);
		profile_add(p, profile_intern(p, name), node, 1);
	}
	struct junit j;
	junit_init(&j);
	for (int i = 0; i < n; i++) {
		ALLOC_GROW(j.cases, j.n + 1, j.alloc);
		snprintf(name, sizeof(name), "t%d", i);
		j.cases[j.n++] =
		        (struct junit_case){xstrdup("Suite"), xstrdup(name), 0, JUNIT_PASSED};
	}
	double t0 = cpu_seconds();
	junit_attach(&j, p);
	double t = cpu_seconds() - t0;
	junit_release(&j);
	profile_free(p);
	return t;
}

static long max_rss_mb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss / 1024;
}

int main(void)
{
	long before = max_rss_mb();
	size_t n = 50u << 20;
	char *text = xmalloc(n + 64);
	int off = snprintf(text, 64, "7f0000001000 20 ");
	memset(text + off, 'x', n);
	strcpy(text + off + n, "\n");
	struct perfmap m = {0};
	perfmap_parse(&m, text, strlen(text), "perf-1.map");
	printf("perf map with a 50 MB name: kept %zu bytes of it; peak RSS %ld MB before parsing, "
	       "%ld MB after (the text itself is 50 MB)\n",
	       strlen(m.entries[0].name), before, max_rss_mb());
	perfmap_release(&m);
	free(text);

	double small = attach_seconds(37500), large = attach_seconds(300000);
	printf("junit_attach: 37500 cases %.3f CPU-s, 300000 cases %.3f CPU-s, ratio %.1f "
	       "(8 = linear, 64 = quadratic)\n",
	       small, large, small > 0 ? large / small : 0);

	return 0;
}
