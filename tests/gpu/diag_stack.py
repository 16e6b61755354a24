"""Where each thread of a hung process waits, on the GPU machine (no gdb there):
per thread its syscall and the code addresses found on its stack, named by the
nearest symbol nm gives (a crude scan: stale frames show up too). Session 50
found with it CUPTI's flush waiting for ever after a longjmp out of cudaFree.
usage: diag_stack.py PID"""
import sys, os, struct, subprocess, bisect
pid = int(sys.argv[1])
maps = []
allmaps = []
for line in open('/proc/%d/maps' % pid):
    f = line.split()
    lo, hi = (int(x, 16) for x in f[0].split('-'))
    allmaps.append((lo, hi))
    if 'x' in f[1] and len(f) > 5:
        maps.append((lo, hi, int(f[2], 16), f[5]))
syms = {}
def symtab(path):
    if path in syms: return syms[path]
    out = []
    for flag in ('-D', ''):
        try:
            r = subprocess.run(['nm', flag, '--defined-only', path] if flag else ['nm', '--defined-only', path], capture_output=True, text=True)
            for l in r.stdout.splitlines():
                p = l.split()
                if len(p) == 3 and p[1] in 'tTwW':
                    out.append((int(p[0], 16), p[2]))
        except Exception: pass
    out.sort(); syms[path] = out; return out
def name(addr):
    for lo, hi, off, path in maps:
        if lo <= addr < hi:
            # file offset -> vaddr assumed equal for PIC libs (first load segment at 0)
            base = lo - off
            rel = addr - base
            st = symtab(path)
            i = bisect.bisect_right(st, (rel, '\xff')) - 1
            s = '%s+0x%x' % (st[i][1], rel - st[i][0]) if i >= 0 and rel - st[i][0] < 0x100000 else '?'
            return '%s:%s' % (os.path.basename(path), s)
    return None
mem = open('/proc/%d/mem' % pid, 'rb')
for t in sorted(os.listdir('/proc/%d/task' % pid), key=int):
    sc = open('/proc/%d/task/%s/syscall' % (pid, t)).read().split()
    comm = open('/proc/%d/task/%s/comm' % (pid, t)).read().strip()
    print('== tid', t, comm, 'syscall', sc[0])
    if len(sc) < 9: continue
    sp, pc = int(sc[-2], 16), int(sc[-1], 16)
    print('   pc', name(pc))
    try:
        end = [hi for lo, hi in allmaps if lo <= sp < hi][0]; mem.seek(sp); data = mem.read(min(32768, end - sp))
    except Exception as e:
        print('  ', e); continue
    n = 0
    for i in range(0, len(data) - 8, 8):
        v = struct.unpack_from('<Q', data, i)[0]
        nm_ = name(v)
        if nm_:
            print('   ', nm_); n += 1
            if n > 28: break
