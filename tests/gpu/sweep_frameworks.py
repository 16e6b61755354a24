"""Workloads of other frameworks for check_sweep_frameworks.py: the sweep's
rules were tuned on PyTorch, and these allocate otherwise.
  jax:  a 6-layer conv net (128 channels at 256x256, NHWC), one jitted SGD
        step; by default JAX preallocates 75% of the device at its first
        operation (on CUDA 13, one cuMemCreate), and with
        XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform
        every buffer is its own allocation, freed when it dies.
  jax-mlp: 32 dense layers of 256 over 256 vectors a sample (for the
        platform allocator's sweep: many runs at large batch sizes, each
        must end in seconds; at a width of 1024 a run near the boundary
        took 71 s on an H200, 9.4 ms a sample, and 20 runs took 464 s:
        the time at the boundary grows with the width, session 34).
  cupy: a filter in the frequency domain on 4096x4096 float32 images
        (rfft2, a product, irfft2, an update), through CuPy's memory pool
        (cudaMalloc, cached) and cuFFT's plans and work areas.
Random data made on the GPU; --steps steps. An out-of-memory error ends the
run with the framework's own exception (exit 1), as in a real job.
usage: sweep_frameworks.py --framework jax|jax-mlp|cupy --batch-size N [--steps 3]
Prints batch_size=N, steps=N and steps_seconds=S (the loop's own wall time)."""
import argparse
import sys
import time

IMAGE, CHANNELS, LAYERS, CLASSES = 256, 128, 6, 10
FFT_SIDE = 4096
MLP_WIDTH, MLP_DEPTH, MLP_SEQ = 256, 32, 256   # a sample: 256 vectors, ~8 MiB of activations


def jax_loop(step, data, params, key, steps):
    """steps jitted steps on fresh data; the loop's wall time."""
    import jax
    jax.block_until_ready(params)
    t0 = time.monotonic()
    for i in range(steps):
        x, y = data(jax.random.fold_in(key, i))
        params, value = step(params, x, y)
        del x, y
    jax.block_until_ready((params, value))
    return time.monotonic() - t0


def jax_steps(bs, steps):
    import jax
    import jax.numpy as jnp
    from jax import lax

    def init(key):
        keys = jax.random.split(key, LAYERS + 1)
        convs = [jax.random.normal(keys[i], (3, 3, 3 if i == 0 else CHANNELS, CHANNELS)) * 0.05 for i in range(LAYERS)]
        return {'convs': convs, 'head': jax.random.normal(keys[-1], (CHANNELS, CLASSES)) * 0.05}

    def loss(params, x, y):
        for w in params['convs']:
            x = jax.nn.relu(lax.conv_general_dilated(x, w, (1, 1), 'SAME', dimension_numbers=('NHWC', 'HWIO', 'NHWC')))
        logits = x.mean(axis=(1, 2)) @ params['head']
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    @jax.jit
    def step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 1e-3 * g, params, grads), value

    @jax.jit
    def data(key):
        kx, ky = jax.random.split(key)
        return jax.random.normal(kx, (bs, IMAGE, IMAGE, 3)), jax.random.randint(ky, (bs,), 0, CLASSES)

    key = jax.random.PRNGKey(0)
    params = init(key)
    return jax_loop(step, data, params, key, steps)


def jax_mlp_steps(bs, steps):
    """MLP_DEPTH dense layers of MLP_WIDTH over MLP_SEQ vectors a sample
    (with one vector a sample the largest batch was past 1.4 million, a
    bisection of 20 runs of a minute each; session 33): its matmuls are
    cuBLAS's, fast without XLA's autotuning; the conv net's convolutions with autotuning off
    ran at about 0.25 TFLOP/s on an H200 (batch size 370 past 75 s at 100%
    utilization, session 33) and with it on spent minutes autotuning."""
    import jax
    import jax.numpy as jnp

    def loss(params, x, y):
        for w in params[:-1]:
            x = jax.nn.relu(x @ w)
        logits = (x @ params[-1]).mean(axis=1)   # over the sequence
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    @jax.jit
    def step(params, x, y):
        value, grads = jax.value_and_grad(loss)(params, x, y)
        return [p - 1e-3 * g for p, g in zip(params, grads)], value

    @jax.jit
    def data(key):
        kx, ky = jax.random.split(key)
        return jax.random.normal(kx, (bs, MLP_SEQ, MLP_WIDTH)), jax.random.randint(ky, (bs,), 0, CLASSES)

    key = jax.random.PRNGKey(0)
    keys = jax.random.split(key, MLP_DEPTH + 1)
    params = [jax.random.normal(keys[i], (MLP_WIDTH, MLP_WIDTH)) * MLP_WIDTH ** -0.5 for i in range(MLP_DEPTH)]
    params.append(jax.random.normal(keys[-1], (MLP_WIDTH, CLASSES)) * MLP_WIDTH ** -0.5)
    return jax_loop(step, data, params, key, steps)


def cupy_steps(bs, steps):
    import cupy as cp
    x = cp.random.standard_normal((bs, FFT_SIDE, FFT_SIDE), dtype=cp.float32)
    fy = cp.fft.rfftfreq(FFT_SIDE).astype(cp.float32)
    fx = cp.fft.fftfreq(FFT_SIDE).astype(cp.float32)
    keep = cp.exp(-(fx[:, None] ** 2 + fy[None, :] ** 2) * 50).astype(cp.complex64)   # a low-pass filter
    cp.cuda.Device().synchronize()
    t0 = time.monotonic()
    for _ in range(steps):
        f = cp.fft.rfft2(x)
        f *= keep
        y = cp.fft.irfft2(f, s=(FFT_SIDE, FFT_SIDE))
        del f
        x -= 1e-3 * (x - y)
        del y
    float(x[0, 0, 0])
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--framework', choices=('jax', 'jax-mlp', 'cupy'), required=True)
    ap.add_argument('--batch-size', type=int, required=True)
    ap.add_argument('--steps', type=int, default=3)
    a = ap.parse_args()
    seconds = {'jax': jax_steps, 'jax-mlp': jax_mlp_steps, 'cupy': cupy_steps}[a.framework](a.batch_size, a.steps)
    print('batch_size=%d\nsteps=%d\nsteps_seconds=%.3f' % (a.batch_size, a.steps, seconds))
    sys.stdout.flush()


if __name__ == '__main__':
    main()
