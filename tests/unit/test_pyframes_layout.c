/* A row of the shim's CPython layout table (shim/pylayout.h) against
 * offsetof() in that version's headers, internal ones included: the offsets
 * pyframes.c reads frames with are the interpreter's own. Built for 3.11
 * where python3-embed 3.11 is found, and for 3.12 where a CPython 3.12's
 * headers are found under pyenv (tests/unit/meson.build). */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_code.h>
#include <internal/pycore_frame.h>
#include <stddef.h>

#include "pylayout.h"
#include "tap.h"

static const struct py_layout *row(unsigned long v)
{
    for (size_t i = 0; i < sizeof gt_py_layouts / sizeof gt_py_layouts[0]; i++)
        if (gt_py_layouts[i].version == v)
            return &gt_py_layouts[i];
    return NULL;
}

#define SAME(field, expr) CHECKF(L->field == (int)(expr), "%s: table %d, headers %d", #field, L->field, (int)(expr))

static void test_thread_state_and_frame_offsets_are_the_headers(void)
{
    const struct py_layout *L = row(PY_VERSION_HEX >> 16);
    CHECK(L != NULL);
    if (!L)
        return;
    SAME(ts_cframe, offsetof(PyThreadState, cframe));
    SAME(cf_current, offsetof(_PyCFrame, current_frame));
    SAME(fr_code, offsetof(_PyInterpreterFrame, f_code));
    SAME(fr_previous, offsetof(_PyInterpreterFrame, previous));
    SAME(fr_instr, offsetof(_PyInterpreterFrame, prev_instr));
    SAME(fr_owner, offsetof(_PyInterpreterFrame, owner));
#if PY_VERSION_HEX >= 0x030C0000
    CHECK(L->fr_is_entry == -1);   /* 3.12 marks an eval loop's entry by a frame owned by the C stack */
    SAME(owner_cstack, FRAME_OWNED_BY_CSTACK);
#else
    SAME(fr_is_entry, offsetof(_PyInterpreterFrame, is_entry));
    CHECK(L->owner_cstack == -1);
#endif
    SAME(owner_generator, FRAME_OWNED_BY_GENERATOR);
}

static void test_code_object_offsets_are_the_headers(void)
{
    const struct py_layout *L = row(PY_VERSION_HEX >> 16);
    if (!L)
        return;
    SAME(co_filename, offsetof(PyCodeObject, co_filename));
    SAME(co_qualname, offsetof(PyCodeObject, co_qualname));
    SAME(co_firstlineno, offsetof(PyCodeObject, co_firstlineno));
    SAME(co_linetable, offsetof(PyCodeObject, co_linetable));
    SAME(co_firsttraceable, offsetof(PyCodeObject, _co_firsttraceable));
    SAME(co_code, offsetof(PyCodeObject, co_code_adaptive));
#if PY_VERSION_HEX >= 0x030C0000
    SAME(co_version, offsetof(PyCodeObject, co_version));
#else
    CHECK(L->co_version == -1);   /* 3.11's code objects carry no such number */
#endif
    CHECK(offsetof(PyBytesObject, ob_sval) == 32);   /* code_identity reads a line table's bytes there */
    CHECK(sizeof(_Py_CODEUNIT) == 2);  /* pyframes.c counts code units of 2 bytes */
    CHECK(offsetof(PyVarObject, ob_size) == 16);
}

static void test_string_offsets_are_the_headers(void)
{
    const struct py_layout *L = row(PY_VERSION_HEX >> 16);
    if (!L)
        return;
    SAME(str_ascii_data, sizeof(PyASCIIObject));
    SAME(str_compact_data, sizeof(PyCompactUnicodeObject));
    SAME(str_utf8_length, offsetof(PyCompactUnicodeObject, utf8_length));
    SAME(str_utf8, offsetof(PyCompactUnicodeObject, utf8));
    CHECK(offsetof(PyASCIIObject, length) == 16);
    CHECK(offsetof(PyASCIIObject, hash) == 24);
    CHECK(offsetof(PyASCIIObject, state) == 32);
    /* kind in bits 2-4, compact 5, ascii 6 of state's first word */
    PyASCIIObject o;
    memset(&o, 0, sizeof o);
    o.state.kind = 4;
    o.state.compact = 1;
    o.state.ascii = 1;
    uint32_t w;
    memcpy(&w, (char *)&o + offsetof(PyASCIIObject, state), 4);
    CHECKF(w == (4u << 2 | 1u << 5 | 1u << 6), "state word 0x%x", w);
}

int main(void)
{
    TAP_RUN(test_thread_state_and_frame_offsets_are_the_headers);
    TAP_RUN(test_code_object_offsets_are_the_headers);
    TAP_RUN(test_string_offsets_are_the_headers);
    return tap_done();
}
