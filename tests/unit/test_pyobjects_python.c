/* shim/pyobjects.c against the interpreter itself: for every instruction of
 * every code object compiled from a few standard-library modules, the line
 * decoded from the location table equals PyCode_Addr2Line's, and the names
 * read through the safe path equal the str objects' UTF-8. Built where
 * python3-embed of a version in shim/pylayout.h is found (tests/unit/meson.build). */
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "pylayout.h"
#include "pyobjects.h"
#include "tap.h"

static const struct py_layout *L;
static long compared, differed;

static void check_code(PyCodeObject *co)
{
    char c[192], name[512];
    memcpy(c, co, sizeof c);
    CHECK(gt_py_str(L, &PyUnicode_Type, co->co_qualname, name, sizeof name, true));
    const char *want = PyUnicode_AsUTF8(co->co_qualname);
    CHECKF(want && strcmp(name, want) == 0, "qualname %s, want %s", name, want ? want : "(null)");
    Py_ssize_t nbytes = Py_SIZE(co) * 2;
    for (int addr = -1; addr < nbytes; addr += addr < 0 ? 1 : 2) {
        int line = -99;
        bool ok = gt_py_remote_line(L, c, addr, &line);
        int expect = PyCode_Addr2Line(co, addr);
        compared++;
        if (!ok || line != expect) {
            differed++;
            CHECKF(0, "%s offset %d: %s %d, PyCode_Addr2Line %d", want, addr, ok ? "line" : "refused", line, expect);
        }
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(co->co_consts); i++)
        if (PyCode_Check(PyTuple_GET_ITEM(co->co_consts, i)))
            check_code((PyCodeObject *)PyTuple_GET_ITEM(co->co_consts, i));
}

static void test_lines_and_names_of_standard_library_code_are_the_interpreter_s(void)
{
    static const char *const modules[] = {"inspect", "argparse", "json.decoder", "dataclasses", "asyncio.tasks"};
    for (size_t m = 0; m < sizeof modules / sizeof *modules; m++) {
        char src[256];
        snprintf(src, sizeof src,
                 "import importlib.util as u\nspec = u.find_spec('%s')\n"
                 "code = compile(spec.loader.get_source('%s'), spec.origin, 'exec')\n", modules[m], modules[m]);
        PyObject *g = PyDict_New();
        PyObject *r = PyRun_String(src, Py_file_input, g, g);
        PyObject *code = r ? PyDict_GetItemString(g, "code") : NULL;
        CHECKF(code && PyCode_Check(code), "compiling %s", modules[m]);
        if (code && PyCode_Check(code))
            check_code((PyCodeObject *)code);
        Py_XDECREF(r);
        Py_DECREF(g);
    }
    printf("# %ld offsets compared, %ld differ\n", compared, differed);
    CHECK(compared > 10000);
}

int main(void)
{
    for (size_t i = 0; i < sizeof gt_py_layouts / sizeof *gt_py_layouts; i++)
        if (gt_py_layouts[i].version == PY_VERSION_HEX >> 16)
            L = &gt_py_layouts[i];
    Py_Initialize();
    if (L)
        TAP_RUN(test_lines_and_names_of_standard_library_code_are_the_interpreter_s);
    else
        printf("1..0 # SKIP no layout row for Python %s\n", PY_VERSION);
    Py_Finalize();
    return L ? tap_done() : 0;
}
