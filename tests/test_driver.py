"""Driver-level capture: the driver allocation API is traced however a program
reaches it (linked, dlsym, cuGetProcAddress old and new, the runtime's entry
points, per-thread-stream variants, a static-cudart-like program that links no
CUDA library), a runtime call that the runtime turns into a driver call is one
event, and the virtual-memory API counts physical memory exactly. Programs:
tests/progs/driver_paths.c and vmm.c against the fake libcuda.so.1."""
import json
import os
import re

from gtlib import GPUTRACE, WITH_NVML, TraceTest, base_env, prog, query, run

# The planted pattern of driver_paths.c: (api, bytes, device) per allocation,
# in call order, and the free API of each, in free order (same order).
PATTERN = [('cuMemAlloc_v2', 1000, 0), ('cuMemAllocPitch_v2', 1024 * 3, 0), ('cuMemAllocManaged', 4000, 0),
           ('cuMemAllocHost_v2', 5000, -1), ('cuMemHostAlloc', 6000, -1), ('cuMemAllocAsync', 7000, 0),
           ('cuMemAllocFromPoolAsync', 8000, 0)]
FREES = ['cuMemFree_v2'] * 3 + ['cuMemFreeHost'] * 2 + ['cuMemFreeAsync'] * 2
ASYNC_CALLS = 4  # cuMemAllocAsync, cuMemAllocFromPoolAsync and two cuMemFreeAsync
G = 2 << 20      # vmm.c's granularity


def fake_addresses_only(stdout):
    """Host memory (pinned, managed) is real heap memory whose addresses vary
    from run to run; the fake device addresses (0x2.../0x3...) do not."""
    return re.sub(r'0x(?![23][0-9a-f]{11}\b)[0-9a-f]+', 'HOST', stdout)


def printed(stdout):
    """(api, ptr, size) lines and the fake driver's counters from driver_paths."""
    allocs, counts = [], {}
    for line in stdout.splitlines():
        w = line.split()
        if len(w) == 3:
            allocs.append((w[0], int(w[1], 16), int(w[2])))
        elif len(w) == 2:
            counts[w[0]] = int(w[1])
    return allocs, counts


class DriverPathsTest(TraceTest):
    def traced_pattern(self, exe, mode):
        """Runs exe MODE under the shim and checks the trace against the
        planted pattern; returns the fake driver's counters."""
        p, db = self.trace([prog(exe), mode], name=mode + '.db')
        self.assertEqual(p.returncode, 0, p.stderr)
        allocs, counts = printed(p.stdout)
        self.assertEqual([(a, s) for a, _, s in allocs], [(a, s) for a, s, _ in PATTERN])
        rows = query(db, "SELECT api, ptr, size, device, result FROM events_v WHERE op = 'alloc' ORDER BY id")
        self.assertEqual([r[:3] for r in rows], allocs, mode)
        self.assertEqual([(r[3], r[4]) for r in rows], [(d, 0) for _, _, d in PATTERN], mode)
        frees = query(db, "SELECT api, size FROM events_v WHERE op = 'free' ORDER BY id")
        self.assertEqual(frees, [(f, s) for f, (_, s, _) in zip(FREES, PATTERN)], mode)
        # one event per call: nothing from the runtime, nothing twice
        self.assertEqual(query(db, 'SELECT count(*) FROM events'), [(2 * len(PATTERN),)])
        self.assertEqual(query(db, 'SELECT count(*) FROM live_at_exit'), [(0,)])
        self.assertEqual(query(db, 'SELECT peak_device_bytes FROM processes'),
                         [(sum(s for _, s, d in PATTERN if d == 0 and 'Managed' not in _ and 'Async' not in _),)])
        self.assertIntegrity(db)
        return counts

    def test_driver_api_linked_directly(self):
        self.traced_pattern('driver_paths', 'direct')

    def test_driver_api_through_dlsym_on_a_libcuda_handle(self):
        self.traced_pattern('driver_paths', 'dlsym')

    def test_driver_api_through_cuGetProcAddress_v2(self):
        counts = self.traced_pattern('driver_paths', 'procaddress')
        # asked for version 3000, the program got the untraced 32-bit cuMemAlloc
        # (checked in the program against dlsym) and it ran once, unrecorded
        self.assertEqual(counts['v1'], 1)

    def test_driver_api_through_the_pre_12_cuGetProcAddress(self):
        self.traced_pattern('driver_paths', 'procaddress1')

    def test_driver_api_through_cudaGetDriverEntryPointByVersion(self):
        self.traced_pattern('driver_paths', 'entrypoint')

    def test_driver_api_through_deprecated_cudaGetDriverEntryPoint(self):
        self.traced_pattern('driver_paths', 'entrypoint0')

    def test_per_thread_variants_asked_from_cuGetProcAddress_reach_the_ptsz_functions(self):
        counts = self.traced_pattern('driver_paths', 'perthread')
        self.assertEqual(counts['ptsz'], ASYNC_CALLS)

    def test_per_thread_stream_build_calls_the_ptsz_exports(self):
        self.assertEqual(self.traced_pattern('driver_paths_ptsz', 'direct')['ptsz'], ASYNC_CALLS)

    def test_per_thread_stream_build_through_the_runtime_ptsz_entry_point(self):
        self.traced_pattern('driver_paths_ptsz', 'entrypoint')

    def test_static_cudart_like_program_through_dlopen_and_cuGetProcAddress(self):
        counts = self.traced_pattern('driver_static_like', 'procaddress')
        self.assertEqual(counts['v1'], 1)

    def test_static_cudart_like_program_through_dlopen_and_dlsym(self):
        self.traced_pattern('driver_static_like', 'dlsym')

    def test_runtime_through_dlsym_on_a_libcudart_handle_is_one_event_per_call(self):
        p, db = self.trace([prog('driver_static_like'), 'runtime'])
        self.assertEqual(p.returncode, 0, p.stderr)
        ptr = int(p.stdout.split()[1], 16)
        self.assertEqual(query(db, 'SELECT api, ptr, size, layer FROM events_v ORDER BY id'),
                         [('cudaMalloc', ptr, 3000, 'runtime'), ('cudaFree', ptr, 3000, 'runtime')])

    def test_runtime_call_that_becomes_a_driver_call_is_recorded_once(self):
        # the fake runtime's cudaMalloc/cudaFree call cuMemAlloc_v2/cuMemFree_v2
        # through pointers from cuGetProcAddress_v2, which the shim wrapped
        p, db = self.trace([prog('each_api')])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(query(db, "SELECT count(*) FROM events_v WHERE layer = 'driver'"), [(0,)])
        self.assertEqual(query(db, "SELECT count(*) FROM events_v WHERE api IN ('cudaMalloc', 'cudaFree')"),
                         [(1 + 4,)])  # each_api: one cudaMalloc; cudaFree of it, managed, pitched and 3D
        p, db = self.trace([prog('threads'), '4', '1000'], name='threads.db')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(query(db, "SELECT api, count(*) FROM events_v GROUP BY api ORDER BY api"),
                         [('cudaFree', 4000), ('cudaMalloc', 4000)])

    def test_program_output_and_exit_code_unchanged_on_every_path(self):
        for exe, mode in [('driver_paths', 'procaddress'), ('driver_paths', 'entrypoint'),
                          ('driver_static_like', 'dlsym'), ('driver_paths_ptsz', 'direct')]:
            bare = run([prog(exe), mode], preload=False, env=base_env(), cwd=self.dir)
            traced, _ = self.trace([prog(exe), mode], name=exe + mode + '.db')
            self.assertEqual((fake_addresses_only(traced.stdout), traced.returncode),
                             (fake_addresses_only(bare.stdout), bare.returncode), (exe, mode))
            self.assertIn('cuMemAlloc_v2 0x300000000000 1000', bare.stdout)

    def test_disabled_shim_hands_out_the_real_functions_and_writes_nothing(self):
        p, _ = self.trace([prog('driver_static_like'), 'procaddress'], name='off.db',
                          env_extra={'GPUTRACE_DISABLE': 1})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(printed(p.stdout)[0][0][0], 'cuMemAlloc_v2')
        self.assertFalse(os.path.exists(os.path.join(self.dir, 'off.db')))


class LookupRaceTest(TraceTest):
    """lookup_race.c: entry-point lookups racing dlopen/dlclose on another
    thread, next to a cudart that lacks cudaGetDriverEntryPointByVersion."""

    def test_lookups_racing_dlopen_make_progress_and_leave_no_dlerror(self):
        p, db = self.trace([prog('lookup_race'), prog('libcudart.so.12'), prog('libleaf.so'), '2'], timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout.splitlines(), ['lookup 0, dlerror after it: none', 'progress on both threads'])


class ProbeTest(TraceTest):
    """probe_cuda.c asks dlsym(RTLD_DEFAULT, ...) whether CUDA functions are
    loaded, before and after loading libcuda.so.1. The shim exports those
    names; the answers must still be the program's own."""

    def test_is_cuda_loaded_probes_answer_as_without_the_shim(self):
        bare = run([prog('probe_cuda')], preload=False)
        p, db = self.trace([prog('probe_cuda')])
        self.assertEqual((bare.returncode, p.returncode), (0, 0), p.stderr)
        self.assertEqual(p.stdout, bare.stdout)
        # before: nothing defines them; after: the driver's, and no runtime
        self.assertIn('before cuGetProcAddress: not found (dlerror set)', p.stdout)
        self.assertIn('before cudaMalloc: not found (dlerror set)', p.stdout)
        self.assertIn('after cuMemAlloc_v2: found', p.stdout)
        self.assertIn('after cudaMalloc: not found (dlerror set)', p.stdout)
        self.assertFalse(os.path.exists(db), 'no CUDA call was made: no trace file')


class VmmGrowTest(TraceTest):
    """vmm_grow.c: N chunks mapped into one range and released at once, then
    one cuMemUnmap of the whole range frees all N handles."""

    def test_one_unmap_that_frees_thousands_of_handles(self):
        n = 12000   # each freed handle once cost the writer a stack frame: ~4000 overflowed it
        p, db = self.trace([prog('vmm_grow'), str(n)], env_extra={'FAKE_CUDA_DEVICE_BYTES': n * G})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, 'mapped and freed %d chunks\n' % n)
        self.assertEqual(query(db, "SELECT api, count(*), sum(size) FROM events_v WHERE api LIKE 'cuMem%' "
                                   "AND api NOT LIKE 'cuMemAddress%' GROUP BY api ORDER BY api"),
                         [('cuMemCreate', n, n * G), ('cuMemMap', n, n * G), ('cuMemRelease_while_mapped', n, n * G),
                          ('cuMemUnmap', 1, n * G), ('cuMemUnmap_last_mapping', n, n * G)])
        self.assertEqual(query(db, 'SELECT peak_device_bytes FROM processes'), [(n * G,)])
        self.assertEqual(query(db, "SELECT count(*) FROM live_at_exit WHERE memory = 'device'"), [(0,)])
        self.assertIntegrity(db)


class VmmTest(TraceTest):
    """vmm.c: h1 = 2G and h2 = 1G on device 0, hh = 1G on the host; h1 mapped
    twice; h2 and h1 released while mapped; one unmap frees both."""

    def setUp(self):
        super().setUp()
        p, self.db = self.trace([prog('vmm')])
        self.assertEqual(p.returncode, 0, p.stderr)
        w = p.stdout.split()
        self.h1, self.h2, self.hh, self.va = (int(x, 16) for x in (w[1], w[2], w[3], w[5]))

    def test_device_bytes_count_physical_memory_once_whatever_the_mappings(self):
        live = [r[0] for r in query(self.db, "SELECT live_bytes FROM memory_timeline WHERE memory = 'device' "
                                             "ORDER BY t_ns")]
        # create h1, create h2, then both freed by the last unmap: never 2G counted twice
        self.assertEqual(live, [2 * G, 3 * G, 1 * G, 0])
        self.assertEqual(query(self.db, 'SELECT peak_device_bytes FROM processes'), [(3 * G,)])

    def test_release_while_mapped_holds_memory_until_the_last_unmap(self):
        rows = query(self.db, "SELECT api, ptr, size FROM events_v WHERE api LIKE 'cuMemRelease%' "
                              "OR api LIKE 'cuMemUnmap%' ORDER BY id")
        self.assertEqual(rows, [
            ('cuMemRelease', self.hh, G),
            ('cuMemRelease_while_mapped', self.h2, G),
            ('cuMemUnmap', self.va, 2 * G),
            ('cuMemRelease_while_mapped', self.h1, 2 * G),
            ('cuMemUnmap', self.va + 2 * G, 3 * G),
            ('cuMemUnmap_last_mapping', self.h1, 2 * G),
            ('cuMemUnmap_last_mapping', self.h2, G)])
        # each physical allocation ends at the unmap that removed its last mapping
        last_unmap = query(self.db, "SELECT max(t_ns) FROM events_v WHERE api = 'cuMemUnmap'")[0][0]
        self.assertEqual(query(self.db, "SELECT ptr, free_ns FROM allocations WHERE api = 'cuMemCreate' ORDER BY ptr"),
                         [(self.h1, last_unmap), (self.h2, last_unmap)])
        self.assertEqual(query(self.db, 'SELECT count(*) FROM live_at_exit'), [(0,)])

    def test_host_located_handle_is_host_memory(self):
        self.assertEqual(query(self.db, "SELECT api, memory, device, size FROM allocations WHERE ptr = ?", (self.hh,)),
                         [('cuMemCreate_host', 'host', -1, G)])
        self.assertEqual(query(self.db, "SELECT memory, device, max(live_bytes) FROM memory_timeline "
                                        "WHERE memory = 'host'"), [('host', -1, G)])
        self.assertEqual(query(self.db, "SELECT count(*) FROM memory_timeline WHERE device = -1 AND memory <> 'host'"),
                         [(0,)])

    def test_mappings_and_reservations_are_not_memory(self):
        self.assertEqual(query(self.db, "SELECT e.ptr, e.size, m.handle, e.device FROM events_v e "
                                        "JOIN mappings m ON m.event_id = e.id ORDER BY e.id"),
                         [(self.va, 2 * G, self.h1, 0), (self.va + 2 * G, 2 * G, self.h1, 0),
                          (self.va + 4 * G, G, self.h2, 0)])
        self.assertEqual(query(self.db, "SELECT DISTINCT memory FROM memory_timeline ORDER BY memory"),
                         [('device',), ('host',), ('reserve',)])
        self.assertEqual(query(self.db, "SELECT size FROM allocations WHERE memory = 'reserve'"), [(16 * G,)])

    def test_analyzer_summary_reports_the_physical_peak(self):
        p = run([GPUTRACE, 'summary', '--json', self.db], preload=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        peaks = {(x['memory'], x['device']): x['peak_bytes'] for x in json.loads(p.stdout)['peaks']}
        self.assertEqual(peaks, {('device', 0): 3 * G, ('host', -1): G})


class ArraysTest(TraceTest):
    """arrays.c: CUDA arrays through the runtime (which the stand-in, like the
    real one, turns into driver calls) and the driver: each is one event with
    the bytes its descriptor asks for, freed by its handle, and the two left
    live are what leaks and the device level show at exit."""

    def setUp(self):
        super().setUp()
        p, self.db = self.trace([prog('arrays')])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.made, self.leaked = [], []
        for line in p.stdout.splitlines():
            w = line.split()
            if w[0] == 'leak':
                self.leaked.append(int(w[1], 16))
            else:
                self.made.append((w[0], int(w[1], 16), int(w[2])))

    def test_each_array_is_one_event_with_the_bytes_its_descriptor_asks_for(self):
        self.assertEqual(query(self.db, "SELECT api, ptr, size FROM events_v WHERE op = 'alloc' ORDER BY id"),
                         self.made)
        self.assertEqual(query(self.db, "SELECT count(*) FROM events_v WHERE layer = 'driver' AND api NOT LIKE 'cu%Array%'"),
                         [(0,)])   # the runtime's calls reached the driver through the shim's wrappers, once each

    def test_frees_pair_by_handle_and_the_live_ones_remain(self):
        live = query(self.db, "SELECT ptr, size FROM allocations WHERE free_ns IS NULL ORDER BY ptr")
        sizes = {h: b for _, h, b in self.made}
        self.assertEqual(live, sorted((h, sizes[h]) for h in self.leaked))
        self.assertEqual(query(self.db, "SELECT api, size FROM events_v WHERE op = 'free' ORDER BY id"),
                         [('cudaFreeArray', 1000), ('cudaFreeArray', 8192), ('cudaFreeArray', 2560),
                          ('cudaFreeArray', 0), ('cudaFreeMipmappedArray', 43008), ('cuArrayDestroy', 4000),
                          ('cuMipmappedArrayDestroy', 585)])
        self.assertEqual(query(self.db, 'SELECT count(*) FROM drops'), [(0,)])

    def test_arrays_are_device_memory_in_the_analyzer(self):
        sizes = {h: b for _, h, b in self.made}
        peak = max(query(self.db, "SELECT live_bytes FROM memory_timeline WHERE memory = 'device'"))[0]
        # every array made before the first free was live at once
        self.assertEqual(peak, sum(b for _, _, b in self.made))
        p = run([GPUTRACE, 'summary', '--json', self.db], preload=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        peaks = {(x['memory'], x['device']): x['peak_bytes'] for x in json.loads(p.stdout)['peaks']}
        self.assertEqual(peaks, {('device', 0): peak})
        p = run([GPUTRACE, 'leaks', '--json', self.db], preload=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        j = json.loads(p.stdout)
        self.assertEqual(j['at_end_bytes'] + j['total_bytes'] + j['held_for_run_bytes'] + j['held_steady_bytes'],
                         sum(sizes[h] for h in self.leaked))


class HostRegisterTest(TraceTest):
    """host_register.c: the program's own memory page-locked through the
    runtime and the driver (its export and cuGetProcAddress) is pinned host
    memory from registration to unregistration, one event per call (the
    runtime's call reaches the driver through the shim's wrapper and is not
    counted twice); a refused registration is a failed call, never an
    out-of-memory failure. Before, none of these calls was traced: a
    framework pinning its buffers this way (PyTorch's
    pinned_use_cuda_host_register) showed no host memory at all."""

    def setUp(self):
        super().setUp()
        p, self.db = self.trace([prog('host_register')])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.calls = [(w[0], int(w[1], 16), int(w[2]), int(w[3])) for w in map(str.split, p.stdout.splitlines())]

    def test_each_call_is_one_event_with_the_range_and_result_the_program_saw(self):
        rows = query(self.db, "SELECT api, coalesce(ptr, 0), size, result, device FROM events_v ORDER BY id")
        self.assertEqual([r[:4] for r in rows if r[3] == 0], [c for c in self.calls if c[3] == 0])
        self.assertEqual([(r[0], r[3]) for r in rows if r[3]], [(c[0], c[3]) for c in self.calls if c[3]])
        self.assertEqual({r[4] for r in rows}, {-1})
        self.assertEqual([r[3] for r in rows if r[3]], [712, 713])   # refusals the stand-in gave, in order

    def test_registered_memory_is_host_memory_until_unregistered(self):
        live = query(self.db, "SELECT ptr, size, memory FROM allocations WHERE free_ns IS NULL")
        last = self.calls[-1]
        self.assertEqual(live, [(last[1], 30000, 'host')])
        p = run([GPUTRACE, 'summary', '--json', self.db], preload=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        peaks = {(x['memory'], x['device']): (x['peak_bytes'], x['final_bytes']) for x in json.loads(p.stdout)['peaks']}
        self.assertEqual(peaks, {('host', -1): (30000, 30000)})

    def test_a_refused_registration_is_not_an_out_of_memory_failure(self):
        p = run([GPUTRACE, 'oom', '--json', self.db], preload=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        d = json.loads(p.stdout)
        self.assertEqual(d['failures'], [])
        self.assertEqual([(o['api'], o['requested_bytes'], o['result'], o['result_name']) for o in d['other_failures']],
                         [('cudaHostRegister', 5000, 712, 'already registered')])

    def test_a_refused_free_is_listed_with_its_call_site(self):
        # counted in summary's failed calls and listed nowhere (a helper's
        # probe: double frees and bad pointers found only with SQL)
        d = json.loads(run([GPUTRACE, 'oom', '--json', self.db], preload=False).stdout)
        self.assertEqual([(f['api'], f['result'], f['result_name']) for f in d['failed_frees']],
                         [('cudaHostUnregister', 713, 'not registered')])
        self.assertTrue(d['failed_frees'][0]['call_site'].startswith('main ('), d['failed_frees'][0])
        text = run([GPUTRACE, 'oom', self.db], preload=False).stdout
        self.assertIn('Failed frees: 1 (a free CUDA refused', text)
        self.assertIn(': cudaHostUnregister: not registered (result 713), from main (', text)
        self.assertIn('2 failed calls: gputrace oom lists them', run([GPUTRACE, 'summary', self.db], preload=False).stdout)


class StaticRuntimeTeardownTest(TraceTest):
    """A statically linked runtime tears CUDA down in an atexit handler of its
    own (the stand-in's FAKE_CUDA_TEARDOWN_AT_EXIT): a program that exits a
    moment after its first CUDA call (an nvcc sample) still gets its devices
    and the ledger's samples, read before that teardown. On an H200 a 6 ms
    program built by plain nvcc had no devices, so no NVML samples and no
    ledger: the writer reached them at its next round, after the teardown."""

    def test_devices_and_samples_are_read_before_the_runtime_tears_down(self):
        for run_no in range(5):   # the race it closes was lost on most runs
            p, db = self.trace([prog('each_api')], name='t%d.db' % run_no,
                               env_extra={'FAKE_CUDA_TEARDOWN_AT_EXIT': '1', 'GPUTRACE_CUPTI': '0',
                                          'LD_LIBRARY_PATH': WITH_NVML})
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(query(db, 'SELECT count(*) FROM devices'), [(1,)])
            self.assertEqual(query(db, "SELECT count(*) FROM notes WHERE component = 'devices'"), [(0,)])
            kinds = [r[0] for r in query(db, 'SELECT t_ns FROM memory_samples ORDER BY t_ns')]
            self.assertGreaterEqual(len(kinds), 2, 'a first sample and the exit sample')

    def test_exit_is_not_held_when_the_trace_could_not_be_created(self):
        # the wait for the devices before the runtime's teardown waited its
        # whole 500 ms for a writer that had given up on the file
        import statistics
        import time
        walls = []
        for _ in range(3):
            t0 = time.monotonic()
            p = run([prog('each_api')], env=base_env(GPUTRACE_OUTPUT='/nonexistent/dir/t.db', GPUTRACE_CUPTI='0',
                                                    FAKE_CUDA_TEARDOWN_AT_EXIT='1'), cwd=self.dir)
            walls.append(time.monotonic() - t0)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn('cannot create trace file', p.stderr)
        self.assertLess(statistics.median(walls), 0.35, walls)



class DeviceResetTest(TraceTest):
    """device_reset.c: cases that allocate and reset the device instead of
    freeing (a test suite's way; a CUDA sample's at its end). The reset's
    frees were never seen: 5 cases of 256 MiB read a peak of 1.25 GiB on a
    512 MiB device and leaks called it all never freed (a helper's probe).
    The reset is one event, then a free row for each allocation it gave back
    (device, managed, pinned host; a pool's allocations outlive it, as on an
    H200), through the runtime or the driver's cuGetProcAddress pointer (the
    runtime's reset reaches the driver's through the shim: not twice)."""

    CASES = 5

    def traced(self, how):
        p, db = self.trace([prog('device_reset'), str(self.CASES)] + ([how] if how.startswith('driver') else []),
                           name=how + '.db', env_extra={'FAKE_CUDA_DEVICE_BYTES': str(512 << 20)})
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split(), sum((['case', str(c), 'reset', '0'] for c in range(self.CASES)), []))
        return db

    def test_a_reset_frees_what_it_gave_back_and_no_more(self):
        for how, api in (('runtime', 'cudaDeviceReset'), ('driver', 'cuDevicePrimaryCtxReset_v2'),
                         ('driver-v1', 'cuDevicePrimaryCtxReset')):
            db = self.traced(how)
            self.assertEqual(query(db, "SELECT api, device, result FROM events_v WHERE api GLOB '*Reset*'"),
                             [(api, 0, 0)] * self.CASES, how)
            # where the program reset the device: its call stack, as an allocation's
            self.assertEqual(query(db, "SELECT DISTINCT f.function FROM events_v e JOIN stack_frames sf ON sf.stack_id = "
                                       "e.stack_id JOIN frames f ON f.id = sf.frame_id WHERE e.api GLOB '*Reset*' AND "
                                       "f.function = 'main'"), [('main',)], how)
            freed = query(db, "SELECT a.api, count(*), sum(a.size) FROM allocations a JOIN events_v f "
                              "ON f.id = a.free_id WHERE f.api = 'reset_free' GROUP BY a.api ORDER BY 1")
            self.assertEqual(freed, [('cudaMalloc', 4 * self.CASES, 4 * self.CASES * (64 << 20)),
                                     ('cudaMallocHost', self.CASES, self.CASES * (4 << 20)),
                                     ('cudaMallocManaged', self.CASES, self.CASES * (8 << 20))], how)
            live = query(db, "SELECT api, count(*) FROM allocations WHERE free_ns IS NULL GROUP BY api")
            self.assertEqual(live, [('cudaMallocAsync', self.CASES)], how)
            d = json.loads(run([GPUTRACE, 'summary', '--json', db], preload=False).stdout)
            peaks = {(x['memory'], x['device']): x['peak_bytes'] for x in d['peaks']}
            self.assertEqual(peaks[('device', 0)], 4 * (64 << 20), how)   # one case's, not five
            leaks = json.loads(run([GPUTRACE, 'leaks', '--json', db], preload=False).stdout)
            self.assertEqual(leaks['total_bytes'] + leaks['at_end_bytes'] + leaks['held_for_run_bytes'],
                             self.CASES * (2 << 20), how)   # only the pool's, which outlive the resets

    def test_a_reset_leaves_pinned_memory_another_devices_context_made(self):
        # pinned memory made while device 0 was current survives device 1's reset (a review: it read freed,
        # and its cudaFreeHost then freed nothing in the trace)
        p, db = self.trace([prog('device_reset'), '1', 'other-device'], name='other.db',
                           env_extra={'FAKE_CUDA_DEVICE_COUNT': '2'})
        self.assertEqual((p.returncode, p.stdout.split()), (0, ['reset', '0', 'freehost', '0']), p.stderr)
        ends = query(db, "SELECT a.api, a.device, f.api FROM allocations a LEFT JOIN events_v f ON f.id = a.free_id "
                         "ORDER BY a.alloc_id")
        self.assertEqual(ends, [('cudaMallocHost', -1, 'cudaFreeHost'), ('cudaMalloc', 1, 'reset_free')])
