"""Training-like loops of CuPy and JAX for check_framework_loops.py: what
`leaks` and `growth` say where the allocator is not PyTorch's.
  cupy: a frequency-domain filter on 1024x1024 float32 images (rfft2, a
        product, irfft2, an update), through CuPy's memory pool;
  jax:  three jitted dense layers and an SGD update (run it with
        XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform
        for a buffer per allocation, or as JAX starts: 75% preallocated).
--keep-mib M: each step keeps M MiB more (a list of arrays made at the line
marked KEEP: the leak the checks look for); 0 keeps nothing. No NVTX ranges
unless --nvtx (CuPy's own cupy.cuda.nvtx; JAX: libnvToolsExt by ctypes, else CuPy's).
--cupy-allocator none|async: CuPy without its pool (an array a cudaMalloc) or
with the driver's stream-ordered pool (an array a cudaMallocAsync), the
settings `gputrace growth` names for a trace per array.
usage: framework_loops.py --framework cupy|jax [--steps 20] [--keep-mib 1] [--nvtx] [--cupy-allocator pool]
Prints steps=N, kept_bytes=B and keep_line=L (the KEEP line's number)."""
import argparse
import ctypes
import inspect
import sys

SIDE, WIDTH, BATCH = 1024, 1024, 256
KEPT = []   # what the loop keeps, alive until the process ends (a leak: a list at module level)


def nvtx_range():
    """push(name), pop() through libnvToolsExt (what NVTX's Python package calls)."""
    import glob
    import os
    names = ['libnvToolsExt.so.1', 'libnvToolsExt.so']
    for d in sys.path:   # pip's NVIDIA wheels (PyTorch's dependency nvidia-nvtx)
        names += sorted(glob.glob(os.path.join(d, 'nvidia', '*nvtx*', 'lib', 'libnvToolsExt.so*')))
    lib = None
    for name in names:
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            pass
    if lib is None:   # NVTX 3 compiled into CuPy (no libnvToolsExt on the GPU machine)
        from cupy.cuda import nvtx
        return nvtx.RangePush, nvtx.RangePop
    lib.nvtxRangePushA.argtypes = [ctypes.c_char_p]
    return lambda n: lib.nvtxRangePushA(n.encode()), lib.nvtxRangePop


def cupy_loop(steps, keep_bytes, use_nvtx, allocator='pool'):
    import cupy as cp
    if allocator == 'none':     # no pool: every array its own cudaMalloc and cudaFree
        cp.cuda.set_allocator(None)
    elif allocator == 'async':  # the driver's stream-ordered pool: cudaMallocAsync per array
        cp.cuda.set_allocator(cp.cuda.MemoryAsyncPool().malloc)
    if use_nvtx:
        from cupy.cuda import nvtx
        push, pop = nvtx.RangePush, nvtx.RangePop
    x = cp.random.standard_normal((4, SIDE, SIDE), dtype=cp.float32)
    fy = cp.fft.rfftfreq(SIDE).astype(cp.float32)
    fx = cp.fft.fftfreq(SIDE).astype(cp.float32)
    keep = cp.exp(-(fx[:, None] ** 2 + fy[None, :] ** 2) * 50).astype(cp.complex64)
    kept = KEPT
    for i in range(steps):
        if use_nvtx:
            push('step')
        f = cp.fft.rfft2(x)
        f *= keep
        y = cp.fft.irfft2(f, s=(SIDE, SIDE))
        del f
        x -= 1e-3 * (x - y)
        del y
        if keep_bytes:
            kept.append(cp.full(keep_bytes // 4, float(i), dtype=cp.float32))   # KEEP
        float(x[0, 0, 0])
        if use_nvtx:
            pop()
    return sum(k.nbytes for k in kept)


def jax_loop(steps, keep_bytes, use_nvtx, allocator=None):
    import jax
    import jax.numpy as jnp
    push = pop = None
    if use_nvtx:
        push, pop = nvtx_range()

    @jax.jit
    def step(params, x):
        def loss(p):
            h = x
            for w in p:
                h = jnp.tanh(h @ w)
            return jnp.mean(h * h)
        g = jax.grad(loss)(params)
        return [p - 1e-3 * d for p, d in zip(params, g)]

    key = jax.random.PRNGKey(0)
    params = [jax.random.normal(jax.random.fold_in(key, k), (WIDTH, WIDTH)) * WIDTH ** -0.5 for k in range(3)]
    kept = KEPT
    for i in range(steps):
        if push:
            push('step')
        x = jax.random.normal(jax.random.fold_in(key, 100 + i), (BATCH, WIDTH))
        params = step(params, x)
        if keep_bytes:
            kept.append(jnp.full((keep_bytes // 4,), float(i), dtype=jnp.float32))   # KEEP
        jax.block_until_ready(params)
        if pop:
            pop()
    jax.block_until_ready(kept)
    return sum(k.nbytes for k in kept)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--framework', choices=('cupy', 'jax'), required=True)
    ap.add_argument('--steps', type=int, default=20)
    ap.add_argument('--keep-mib', type=float, default=0)
    ap.add_argument('--nvtx', action='store_true')
    ap.add_argument('--cupy-allocator', choices=('pool', 'none', 'async'), default='pool')
    a = ap.parse_args()
    loop = cupy_loop if a.framework == 'cupy' else jax_loop
    kept = loop(a.steps, int(a.keep_mib * (1 << 20)), a.nvtx, a.cupy_allocator)
    src = inspect.getsource(loop).splitlines()
    first = inspect.getsourcelines(loop)[1]
    line = next(first + k for k, s in enumerate(src) if s.rstrip().endswith('# KEEP'))
    print('steps=%d\nkept_bytes=%d\nkeep_line=%d' % (a.steps, kept, line))
    sys.stdout.flush()


if __name__ == '__main__':
    main()
