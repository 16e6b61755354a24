"""A CUDA graph that lives across the shim's kernel windows (check_attach.py):
before the fix, a graph launched while CUPTI was attached failed with
"unspecified launch failure" once CUPTI was detached.
usage: graph_replay.py MODE SECONDS
MODE attached: capture + instantiate at once (CUPTI attached, first window),
     replay until SECONDS; detached: eager work until 2.5 s (CUPTI detached
     after 1 s of work), then capture, replay until SECONDS; nodetach: as
     attached, after starting a CUPTI profiler session of the program's own
     (the shim then never detaches, windows only toggle activity kinds).
Prints captured_at= (seconds after the model), replays=, mismatches= (replays
whose output differs from the eager result)."""
import ctypes, sys, time, torch
mode, seconds = sys.argv[1], float(sys.argv[2])
torch.manual_seed(0)
m = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024) for _ in range(8)]).cuda().eval()
x = torch.randn(256, 1024, device='cuda')
t0 = time.monotonic()
if mode == 'nodetach':
    path = [l.split()[-1] for l in open('/proc/self/maps') if 'libcupti.so' in l][0]
    class P(ctypes.Structure):
        _fields_ = [('structSize', ctypes.c_size_t), ('pPriv', ctypes.c_void_p)]
    p = P(ctypes.sizeof(P), None)
    print('profiler_init=%d' % ctypes.CDLL(path).cuptiProfilerInitialize(ctypes.byref(p)))
with torch.no_grad():
    ref = m(x).float()
    if mode == 'detached':
        while time.monotonic() - t0 < 2.5:
            m(x); torch.cuda.synchronize()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            m(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = m(x)
    print('captured_at=%.2f' % (time.monotonic() - t0), flush=True)
    n = bad = 0
    while time.monotonic() - t0 < seconds:
        g.replay(); torch.cuda.synchronize()
        bad += int(not torch.equal(y.float(), ref)); n += 1
print('replays=%d' % n)
print('mismatches=%d' % bad)
