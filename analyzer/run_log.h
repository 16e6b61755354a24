/* run_log.h - `gputrace run`'s closing line (run_log.c): the files written by
 * every traced process of the command, or that none made a call it records. */
#ifndef GT_RUN_LOG_H
#define GT_RUN_LOG_H

/* Before the command starts: makes a private run log and names it in
 * GPUTRACE_RUN_LOG for the shim. -1 when it cannot (each process then says
 * its own line). */
int gt_run_log_begin(void);
/* After the command ends: one line on stderr, then the run log is removed. */
/* status: the command's; 126 or 127 with nothing traced is a command that
 * could not be run, already said: no closing line then. sig: the signal the
 * command died of, or 0. */
void gt_run_log_end(int status, int sig);

#endif
