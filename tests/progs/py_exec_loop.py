"""Functions made by exec() in a loop, each dropped before the next: CPython
hands the next one's code object, and its line table, the addresses of the
last ones (the shim's frame cache keyed on those addresses named the other
function's line for half the allocations). Two sources alternate whose call
lies on a different line of "gen.py" and allocates a different size:
4096 bytes from line 2, 8192 bytes from line 3. Prints how many (code
object, line table) address pairs both sources had: the test needs some.
usage: py_exec_loop.py [N]"""
import ctypes
import gc
import sys

rt = ctypes.CDLL("libcudart.so.13")
p = ctypes.c_void_p()
SOURCES = ("def g(rt, ref):\n    rt.cudaMalloc(ref, 4096)\n",
           "def g(rt, ref):\n\n    rt.cudaMalloc(ref, 8192)\n")
rt.cudaMalloc(ctypes.byref(p), 1)
pairs = {}
for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3000):
    ns = {}
    exec(compile(SOURCES[i % 2], "gen.py", "exec"), ns)
    code = ns['g'].__code__
    pairs.setdefault((id(code), id(code.co_linetable)), set()).add(i % 2)
    del code
    ns['g'](rt, ctypes.byref(p))
    rt.cudaFree(p)
    del ns
    gc.collect()
print('shared=%d' % sum(1 for v in pairs.values() if len(v) == 2))
