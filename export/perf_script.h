/* export/perf_script: the text `perf script` prints for a `perf record -g` recording, read as
 * a ciprof profile (the default fields: a header line per sample, then its call chain). */
#ifndef CP_EXPORT_PERF_SCRIPT_H
#define CP_EXPORT_PERF_SCRIPT_H

#include "model/profile.h"

#include <stddef.h>

/*
 * Adds every sample of text to p under test (NULL or "": outside tests). A sample is a header
 * line "COMM [PID[/TID]] [[CPU]] TIME: [PERIOD] EVENT: ..." followed by frame lines
 * "<TAB>ADDRESS SYMBOL[+0xOFF] (DSO)", leaf first, and a blank line. The stack becomes
 * COMM;root;...;leaf; "[unknown]" symbols stay "[unknown]" in their DSO (addresses change from
 * run to run). With cpu-clock or task-clock events, p->stats.period_ns is the mean period.
 * name is used in errors: "NAME:LINE:COLUMN: what". Returns 0, or -1 with cp_error set.
 */
int perf_script_parse(struct profile *p, const char *text, size_t len, const char *name,
                      const char *test);

#endif
