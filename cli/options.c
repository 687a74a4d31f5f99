/* Option parsing driven by one table per command, which also prints that command's --help. */
#include "cli/cli.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "common/error.h"
#include "common/log.h"
#include "common/xalloc.h"

void cli_print_usage(FILE *out, const char *cmd, const char *usage_line, const char *description,
                     const struct cli_option *opts)
{
	fprintf(out, "usage: ciprof %s %s\n\n%s\n", cmd, usage_line, description);
	fputs("\noptions:\n", out);
	for (const struct cli_option *o = opts; o->long_name; o++) {
		char left[64];
		int n;
		if (o->id < 256)
			n = snprintf(left, sizeof(left), "-%c, --%s", o->id, o->long_name);
		else
			n = snprintf(left, sizeof(left), "    --%s", o->long_name);
		if (o->arg && n > 0 && (size_t)n < sizeof(left))
			snprintf(left + n, sizeof(left) - (size_t)n, " %s", o->arg);
		enum config_key k;
		if (o->help[0] == '=' && config_key_find(o->help + 1, &k) == 0) {
			char *help = config_option_help(k);
			fprintf(out, "  %-26s %s\n", left, help);
			free(help);
		} else {
			fprintf(out, "  %-26s %s\n", left, o->help);
		}
	}
	fputs("  -q, --quiet                only warnings and errors\n"
	      "  -v, --verbose              say more (twice: debug)\n"
	      "  -h, --help                 show this help\n",
	      out);
}

int cli_config_arg(const char *cmd, const struct cli_option *opts, int id, const char *arg,
                   double *num)
{
	const struct cli_option *o = opts;
	while (o->long_name && o->id != id)
		o++;
	enum config_key k;
	if (!o->long_name || o->help[0] != '=' || config_key_find(o->help + 1, &k) < 0)
		return cli_usage_error(cmd, "internal: option %d is not a config option", id);
	struct config tmp;
	config_init(&tmp);
	int r = config_set(&tmp, k, arg, CONFIG_FLAG);
	if (r < 0)
		cli_usage_error(cmd, "--%s: %s", o->long_name, cp_last_error());
	else if (num)
		*num = config_number(&tmp, k);
	config_release(&tmp);
	return r;
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("ciprof: ", stderr);
	if (cmd)
		fprintf(stderr, "%s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	return EXIT_USAGE;
}

int cli_parse_int(const char *s, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int cli_parse(int argc, char **argv, const char *cmd, const char *usage_line,
              const char *description, const struct cli_option *opts,
              int (*on_opt)(void *ctx, int id, const char *arg), void *ctx, int *first_arg)
{
	size_t n = 0;
	while (opts[n].long_name)
		n++;
	struct option *lo = xcalloc(n + 4, sizeof(*lo));
	char *shortopts = xcalloc(2 * n + 6, 1);
	char *sp = shortopts;
	*sp++ = '+'; /* stop at the first non-option: it starts the profiled command */
	*sp++ = ':';
	for (size_t i = 0; i < n; i++) {
		lo[i].name = opts[i].long_name;
		lo[i].has_arg = opts[i].arg ? required_argument : no_argument;
		lo[i].val = opts[i].id;
		if (opts[i].id < 256) {
			*sp++ = (char)opts[i].id;
			if (opts[i].arg)
				*sp++ = ':';
		}
	}
	/* Every command takes -h, -q and -v, after its name as well as before it. */
	lo[n] = (struct option){"help", no_argument, NULL, 'h'};
	lo[n + 1] = (struct option){"quiet", no_argument, NULL, 'q'};
	lo[n + 2] = (struct option){"verbose", no_argument, NULL, 'v'};
	*sp++ = 'h';
	*sp++ = 'q';
	*sp++ = 'v';
	int ret = 0;
	optind = 1;
	opterr = 0;
	for (;;) {
		int c = getopt_long(argc, argv, shortopts, lo, NULL);
		if (c == -1)
			break;
		if (c == 'h') {
			cli_print_usage(stdout, cmd, usage_line, description, opts);
			ret = 1;
			goto out;
		}
		if (c == 'q') {
			log_set_level(LOG_QUIET);
			continue;
		}
		if (c == 'v') {
			log_set_level(log_level() < LOG_NORMAL ? LOG_VERBOSE : log_level() + 1);
			continue;
		}
		if (c == '?') {
			if (optopt)
				cli_usage_error(cmd, "unknown option '-%c'; see 'ciprof %s --help'",
				                optopt, cmd);
			else
				cli_usage_error(cmd, "unknown option '%s'; see 'ciprof %s --help'",
				                argv[optind - 1], cmd);
			ret = -1;
			goto out;
		}
		if (c == ':') {
			cli_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
			ret = -1;
			goto out;
		}
		if (on_opt(ctx, c, optarg) < 0) {
			ret = -1;
			goto out;
		}
	}
	*first_arg = optind;
out:
	free(lo);
	free(shortopts);
	return ret;
}

int cli_finish_stdout(void)
{
	int bad = fflush(stdout) != 0 || ferror(stdout);
	if (fclose(stdout) != 0)
		bad = 1;
	if (bad) {
		fprintf(stderr, "ciprof: error: cannot write to standard output: %s\n",
		        strerror(errno));
		return EXIT_RUNTIME;
	}
	return EXIT_OK;
}

int cli_parse_report_format(const char *cmd, const char *arg, enum report_format *out)
{
	if (!strcmp(arg, "md") || !strcmp(arg, "markdown"))
		*out = REPORT_FORMAT_MD;
	else if (!strcmp(arg, "html"))
		*out = REPORT_FORMAT_HTML;
	else if (!strcmp(arg, "svg"))
		*out = REPORT_FORMAT_SVG;
	else if (!strcmp(arg, "json"))
		*out = REPORT_FORMAT_JSON;
	else {
		cli_usage_error(cmd, "--format takes md, html, svg or json, not '%s'", arg);
		return -1;
	}
	return 0;
}

int cli_parse_backend(const char *cmd, const char *arg, enum runner_backend *out)
{
	if (!strcmp(arg, "auto"))
		*out = RUNNER_BACKEND_AUTO;
	else if (!strcmp(arg, "perf"))
		*out = RUNNER_BACKEND_PERF;
	else if (!strcmp(arg, "preload"))
		*out = RUNNER_BACKEND_PRELOAD;
	else {
		if (cmd)
			cli_usage_error(cmd, "--backend takes auto, perf or preload, not '%s'",
			                arg);
		return -1;
	}
	return 0;
}

int cli_parse_unwind(const char *cmd, const char *arg, enum runner_unwind *out)
{
	if (!strcmp(arg, "fp"))
		*out = RUNNER_UNWIND_FP;
	else if (!strcmp(arg, "dwarf"))
		*out = RUNNER_UNWIND_DWARF;
	else if (!strcmp(arg, "fp-only"))
		*out = RUNNER_UNWIND_FP_ONLY;
	else {
		cli_usage_error(cmd, "--unwind takes fp, fp-only or dwarf, not '%s'", arg);
		return -1;
	}
	return 0;
}
