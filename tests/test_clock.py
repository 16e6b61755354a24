"""The time stamps of allocations and frees (shim/stamp.c): on the
time-stamp counter, mapped by the writer to CLOCK_MONOTONIC, or by
clock_gettime, each event's time lies between the program's own
CLOCK_MONOTONIC readings taken just before and just after its call (an
allocation is stamped after the call returns, a free before the real free
runs), on two threads at once; the trace's `clock` note says which way.
GPUTRACE_CLOCK=tsc runs the counter path on any x86-64 processor with an
invariant counter, whatever the kernel's clocksource; unset runs it only where
the kernel's clocksource is tsc (else clock_gettime, said with the clocksource
in the note); monotonic never does. The program's threads and the writer share one core, since whether the counters
of two cores agree is what the kernel's choice of clocksource judges.""" 
import platform
import sys
import unittest

from gtlib import SANITIZER, TraceTest, query

PROGRAM = r'''
import ctypes, os, sys, threading, time
# one core for every thread, the shim's writer too (it starts inside the first call): the counter's
# agreement between cores is the kernel's to judge (the clocksource it chose), not this test's
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
rt = ctypes.CDLL("libcudart.so.13")
rt.cudaFree.argtypes = [ctypes.c_void_p]
lines = []
def work(base, n):
    p = ctypes.c_void_p()
    for i in range(n):
        a = time.monotonic_ns(); rt.cudaMalloc(ctypes.byref(p), base + i); b = time.monotonic_ns()
        q = p.value
        c = time.monotonic_ns(); rt.cudaFree(q); d = time.monotonic_ns()
        lines.append("alloc %d %d %d" % (base + i, a, b))
        lines.append("free %d %d %d" % (q, c, d))
threads = [threading.Thread(target=work, args=(base, 3000)) for base in (1 << 20, 1 << 21)]
for t in threads: t.start()
for t in threads: t.join()
print("\n".join(lines))
'''


@unittest.skipIf(SANITIZER == 'thread', 'a Python the ThreadSanitizer runtime did not build crashes with it '
                                        'preloaded (the thread stage runs no Python program)')
class ClockTest(TraceTest):

    def check_between(self, clock):
        env = {'GPUTRACE_CLOCK': clock} if clock else {}
        p, db = self.trace([sys.executable, '-c', PROGRAM], env_extra=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        note = [m for (m,) in query(db, "SELECT message FROM notes WHERE component = 'clock'")]
        self.assertEqual(len(note), 1, note)
        start = query(db, 'SELECT start_mono_ns FROM processes')[0][0]
        allocs = {size: t + start for size, t in query(db, "SELECT size, t_ns FROM events_v WHERE op = 'alloc'")}
        frees = {}
        for ptr, t in query(db, "SELECT ptr, t_ns FROM events_v WHERE op = 'free' ORDER BY id"):
            frees.setdefault(ptr, []).append(t + start)
        outside, n = [], 0
        seen_free = {}
        for line in p.stdout.splitlines():
            op, key, before, after = line.split()
            key, before, after = int(key), int(before), int(after)
            if op == 'alloc':
                t = allocs[key]
            else:   # an address is freed many times: its frees in order
                k = seen_free.get(key, 0)
                seen_free[key] = k + 1
                t = frees[key][k]
            n += 1
            if not before <= t <= after:
                outside.append('%s %d: %d not in [%d, %d]' % (op, key, t, before, after))
        self.assertEqual(n, 12000)
        self.assertEqual(outside, [], '%d of %d events outside their call' % (len(outside), n))
        return note[0]

    @unittest.skipUnless(platform.machine() == 'x86_64', 'the time-stamp counter is x86-64\'s')
    def test_counter_stamps_lie_inside_their_calls(self):
        note = self.check_between('tsc')
        if 'not invariant' in note:
            self.skipTest('this processor\'s counter is not invariant: ' + note)
        self.assertIn('time-stamp counter', note)
        self.assertIn('GPUTRACE_CLOCK=tsc', note)

    def test_clock_gettime_stamps_lie_inside_their_calls(self):
        note = self.check_between('monotonic')
        self.assertIn('clock_gettime', note)

    def test_unset_follows_the_kernels_clocksource(self):
        try:
            with open('/sys/devices/system/clocksource/clocksource0/current_clocksource') as f:
                source = f.read().strip()
        except OSError:
            source = 'unknown'
        invariant = False
        try:
            with open('/proc/cpuinfo') as f:
                invariant = any(line.startswith('flags') and ' constant_tsc' in line and ' nonstop_tsc' in line
                                for line in f)
        except OSError:
            pass
        note = self.check_between(None)
        if platform.machine() == 'x86_64' and source == 'tsc' and invariant:
            self.assertIn('time-stamp counter', note)
            self.assertIn('the default where the kernel\'s clocksource is tsc', note)
        elif platform.machine() == 'x86_64' and source == 'tsc':
            self.skipTest('clocksource tsc, but /proc/cpuinfo does not say the counter is invariant: ' + note)
        else:
            self.assertIn('clock_gettime', note)
            self.assertIn('the kernel\'s clocksource is %s, not tsc' % source, note)

    def test_an_unknown_value_is_said_and_ignored(self):
        p, db = self.trace([sys.executable, '-c', 'import ctypes\nctypes.CDLL("libcudart.so.13").cudaFree(None)\n'
                            'p = ctypes.c_void_p()\nctypes.CDLL("libcudart.so.13").cudaMalloc(ctypes.byref(p), 64)'],
                           env_extra={'GPUTRACE_CLOCK': 'rdtsc'})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('ignoring GPUTRACE_CLOCK=rdtsc (expected tsc or monotonic)', p.stderr)
        self.assertEqual(query(db, "SELECT count(*) FROM events_v WHERE op = 'alloc'"), [(1,)])
