/* report.h - the parts of `gputrace report` (one self-contained HTML page):
 * the page itself (report.c) and the memory-over-time data (report_timeline.c). */
#ifndef GT_REPORT_H
#define GT_REPORT_H
#include <stdint.h>

#include "analyzer.h"

/* A series with more changes than this is drawn from per-bucket min/max. */
#define GT_REPORT_MAX_POINTS 4000
#define GT_REPORT_BUCKETS 1500

/* Writes key "series" (live bytes per memory level and device, NVML used
 * bytes per device) into the open JSON object j; *end_ns gets the trace's
 * end. Returns an exit status. */
int gt_report_timeline(struct gt_ctx *c, struct gt_json *j, int64_t *end_ns);

#endif
