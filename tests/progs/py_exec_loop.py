"""Code objects made at the addresses of freed ones, with their line tables at
the addresses of the freed ones' tables: CPython's allocator hands a freed
block straight back to the next request of its size (the shim's frame cache
keyed on those addresses named the other function's line for half the
allocations). Two sources whose call lies on a different line of "gen.py"
and allocates a different size (4096 bytes from line 2, 8192 from line 3)
compile to the same bytecode and line tables of one length; each round makes
a fresh code object from one of them (code.replace with a fresh copy of its
line table: its name and file are shared, its address and its table's are
the ones just freed), calls it and drops it. The source of round i is the
parity of i's set bits (Thue-Morse: no period, so an allocator that hands
out two addresses in turn still gives each to both sources; on 3.12 the copy
and its temporary share a size class and alternate, and sources taken in
turn i % 2 never shared an address). Prints how many (code object, line
table) address pairs both sources had: the test needs some.
With --counter-at OFFSET (CPython 3.12: where libpython keeps
_Py_next_func_version, from its symbol table), the counter that numbers code
objects is first set 16 short of running out, so that nearly every code
object made here has co_version 0, as after 2^32 code objects.
usage: py_exec_loop.py [N] [--counter-at OFFSET]"""
import ctypes
import sys
import types

rt = ctypes.CDLL("libcudart.so.13")
p = ctypes.c_void_p()
SOURCES = ("def g(rt, ref):\n    rt.cudaMalloc(ref, 4096)\n",
           "def g(rt, ref):\n\n    rt.cudaMalloc(ref, 8192)\n")


def code_of(src):
    ns = {}
    exec(compile(src, "gen.py", "exec"), ns)
    return ns['g'].__code__


made = [code_of(s) for s in SOURCES]
base = made[0]
if len(made[0].co_linetable) != len(made[1].co_linetable) or made[0].co_code != made[1].co_code:
    sys.exit('the two sources must compile to one bytecode and line tables of one length')
tables = [c.co_linetable for c in made]
consts = [c.co_consts for c in made]
rt.cudaMalloc(ctypes.byref(p), 1)
if '--counter-at' in sys.argv:
    offset = int(sys.argv[sys.argv.index('--counter-at') + 1], 0)
    with open('/proc/self/maps') as maps:
        lib = next(int(line.split('-')[0], 16) for line in maps
                   if 'libpython3.12' in line and line.split()[2] == '00000000')
    ctypes.c_uint32.from_address(lib + offset).value = 0xFFFFFFF0
pairs = {}
for i in range(int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 3000):
    src = bin(i).count('1') & 1
    table = bytes(bytearray(tables[src]))   # a new object: a freed table's address
    code = base.replace(co_linetable=table, co_consts=consts[src])
    pairs.setdefault((id(code), id(code.co_linetable)), set()).add(src)
    del table
    types.FunctionType(code, globals())(rt, ctypes.byref(p))
    rt.cudaFree(p)
    del code
print('shared=%d' % sum(1 for v in pairs.values() if len(v) == 2))
