/* What pyframes.c shares with pybackward.c (and nothing else): the layout in
 * force, the interpreter's state, and turning a (code object, instruction)
 * into a frame id. Hot path; all of it needs gt_py_layout() != NULL. */
#ifndef GPUTRACE_PYFRAMES_H
#define GPUTRACE_PYFRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "pylayout.h"
#include "shim.h"

#define GT_PY_CODE_HEAD 192   /* bytes of a code object that gt_py_frame_id and gt_py_incomplete read */
#define GT_PY_FRAME_HEAD 72   /* bytes of a frame that hold f_code, previous, prev_instr, owner (3.11, 3.12) */

const struct py_layout *gt_py_layout(void);   /* NULL: Python frames are off */
uint64_t gt_py_epoch(void);                  /* changes with every call recorded on a thread running Python */
bool gt_py_running(void);                     /* initialized and not finalizing: thread states may be read */
const char *gt_py_this_thread_state(void);    /* NULL: this thread has none */
const char *gt_py_first_thread_state(void);   /* the main interpreter's newest thread state; NULL: unknown */
const void *gt_py_code_type(void);            /* &PyCode_Type */
uint64_t gt_py_frame_id(const char *code, const char *c, const char *instr, bool remote);
bool gt_py_incomplete(const struct py_layout *L, const char *f, const char *code, const char *c);

#define RD(type, base, off) (*(type const *)((const char *)(base) + (off)))

#endif
