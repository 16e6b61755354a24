/* Reading the CPython objects a frame names (a str's text, a code object's
 * line table) without calling Python: in place for the calling thread's own
 * objects, or through process_vm_readv for another thread's (pybackward.c),
 * which may be freed while we read. Depends on nothing but the layout. */
#ifndef GPUTRACE_PYOBJECTS_H
#define GPUTRACE_PYOBJECTS_H

#include <stdbool.h>
#include <stddef.h>

#include "pylayout.h"

/* Copies n bytes at src (this process) into dst through process_vm_readv:
 * false (errno set) instead of a fault when src is not mapped. */
bool gt_py_copy(const void *src, void *dst, size_t n);
/* remote: gt_py_copy; else a plain copy (the caller knows the memory is alive) */
bool gt_py_fetch(const void *src, void *dst, size_t n, bool remote);
void gt_py_copy_after_fork(void);   /* fork child: a new pid */

/* str object s's text as UTF-8 into out (cap bytes, at least 8; a longer
 * text keeps its end after "...", from a character's first byte; bytes
 * Python keeps as surrogates (surrogateescape) as "\xNN"; "?" for a str
 * that is not compact). remote: every byte through gt_py_copy. False: s is
 * NULL, unreadable, or not a str (its type is not unicode_type). */
bool gt_py_str(const struct py_layout *L, const void *unicode_type, const void *s, char *out, size_t cap,
               bool remote);

/* The line PyCode_Addr2Line would give for byte offset addr (< 0: the first
 * line) from c, a copy of a code object's first bytes, decoding its
 * co_linetable (3.11/3.12's location table) read through gt_py_copy. line:
 * -1 where the table says the instruction has none. False: unreadable or
 * malformed. */
bool gt_py_remote_line(const struct py_layout *L, const char *c, int addr, int *line);

#endif
