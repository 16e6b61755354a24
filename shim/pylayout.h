/* The struct offsets pyframes.c reads CPython's frames with, one row per
 * known version (64-bit default builds). A header of its own so that
 * tests/unit/test_pyframes_layout.c can compare a row with the offsetof()
 * values of the installed Python headers. */
#ifndef GPUTRACE_PYLAYOUT_H
#define GPUTRACE_PYLAYOUT_H

struct py_layout {
    unsigned long version;      /* Py_Version >> 16: 0x030B = 3.11 */
    int ts_cframe, cf_current;  /* PyThreadState.cframe, _PyCFrame.current_frame */
    int fr_code, fr_previous, fr_instr, fr_owner; /* _PyInterpreterFrame: f_code, previous, prev_instr, owner */
    int fr_is_entry;            /* 3.11: is_entry (a frame that starts an eval loop); -1: none */
    int owner_generator, owner_cstack; /* FRAME_OWNED_BY_GENERATOR, _CSTACK (3.12's eval-loop entries); -1: none */
    int co_filename, co_qualname, co_firstlineno, co_linetable, co_firsttraceable, co_code; /* co_code: co_code_adaptive */
    int co_version;             /* 3.12: a number no other code object has (-1: none, 3.11) */
    int str_ascii_data, str_compact_data;  /* sizeof PyASCIIObject, PyCompactUnicodeObject */
    int str_utf8_length, str_utf8;         /* PyCompactUnicodeObject.utf8_length, .utf8 */
};

/* 3.11: checked against the installed headers by tests/unit/test_pyframes_layout.c.
 * 3.12, from CPython v3.12's headers (each field counted by hand):
 *   cpython/pystate.h: struct _ts {prev, next, interp (0, 8, 16); _status (a
 *     32-bit bitfield, 24); six ints: py_recursion_remaining,
 *     py_recursion_limit, c_recursion_remaining, recursion_headroom, tracing,
 *     what_event (28..48); _PyCFrame *cframe (56)}; _PyCFrame
 *     {current_frame (0), previous} (use_tracing is gone);
 *   internal/pycore_frame.h: _PyInterpreterFrame {f_code (0), previous (8),
 *     f_funcobj, f_globals, f_builtins, f_locals, frame_obj (16..48),
 *     prev_instr (56), stacktop (64), return_offset (u16, 68), owner (70)};
 *     FRAME_OWNED_BY_CSTACK = 3: the entry frame each _PyEval_EvalFrameDefault
 *     call pushes (no is_entry field any more);
 *   cpython/code.h (_PyCode_DEF): PyObject_VAR_HEAD (24), co_consts,
 *     co_names, co_exceptiontable (24..40), twelve 32-bit fields co_flags ..
 *     co_version (48..96: co_flags, co_argcount, co_posonlyargcount,
 *     co_kwonlyargcount, co_stacksize, co_firstlineno (68), co_nlocalsplus,
 *     co_framesize, co_nlocals, co_ncellvars, co_nfreevars, co_version (92):
 *     set from _Py_next_func_version, which every new code object increments,
 *     in Objects/codeobject.c init_code), co_localsplusnames,
 *     co_localspluskinds, co_filename (112), co_name (120), co_qualname (128),
 *     co_linetable (136), co_weakreflist, _co_cached,
 *     _co_instrumentation_version, _co_monitoring (144..168),
 *     _co_firsttraceable (176), co_extra (184), co_code_adaptive (192);
 *   cpython/unicodeobject.h: PyASCIIObject {ob_refcnt, ob_type, length (16),
 *     hash (24), state (32)} = 40 bytes (wstr is gone), PyCompactUnicodeObject
 *     {utf8_length (40), utf8 (48)} = 56 bytes; state's bits: interned 0-1,
 *     kind 2-4, compact 5, ascii 6 (as in 3.11). */
enum { GT_PY_311, GT_PY_312 };   /* rows of gt_py_layouts; pyframes.c walks 3.12's frames with its row as constants */
static const struct py_layout gt_py_layouts[] = {
    [GT_PY_311] = {0x030B, 56, 8, 32, 48, 56, 69, 68, 1, -1, 112, 128, 72, 136, 168, 184, -1, 48, 72, 48, 56},
    [GT_PY_312] = {0x030C, 56, 0, 0, 8, 56, 70, -1, 1, 3, 112, 128, 68, 136, 176, 192, 92, 40, 56, 40, 48},
};

#endif
