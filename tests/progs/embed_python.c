/* A C program that embeds CPython (links libpython): it calls CUDA before
 * Py_Initialize (2001 bytes) and after Py_FinalizeEx (2002 bytes), where no
 * Python frame exists, and in between runs the script argv[1] (with
 * argv[1..] as its sys.argv), whose allocations come from Python frames.
 * test_pystacks.py checks the three. */
#include <Python.h>
#include <cuda_runtime_api.h>
#include <stdio.h>

static void alloc_free(size_t size)
{
    void *p = NULL;
    cudaMalloc(&p, size);
    cudaFree(p);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: embed_python SCRIPT [ARG]...\n");
        return 2;
    }
    alloc_free(2001);
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.parse_argv = 0;
    PyStatus st = PyConfig_SetBytesArgv(&config, argc - 1, argv + 1);
    if (!PyStatus_Exception(st))
        st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
        fprintf(stderr, "embed_python: cannot start Python: %s\n", st.err_msg ? st.err_msg : "?");
        return 1;
    }
    FILE *f = fopen(argv[1], "r");
    int rc = f ? PyRun_SimpleFileExFlags(f, argv[1], 1, NULL) : -1;
    if (Py_FinalizeEx() < 0)
        rc = -1;
    alloc_free(2002);
    return rc == 0 ? 0 : 1;
}
