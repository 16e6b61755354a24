"""A JAX training step whose XLA executable runs as command buffers (CUDA
graphs XLA builds itself, not a stream capture of the program's):
check_graphs.py. A 6-layer MLP, jit-compiled SGD step, 40 steps; XLA_FLAGS
gets --xla_gpu_graph_min_graph_size=1 so that even small fusions go into a
command buffer. Prints key=value lines:
  checksum=F          the parameters' sum after the last step (repr)
  bytes_in_use=B      memory_stats() of device 0 at the end, and
  pool_bytes=B        (the allocator's own figures; -1 where absent)
  bytes_reserved=B
usage: graph_jax.py (JAX's allocator from XLA_PYTHON_CLIENT_* as set)"""
import os

os.environ['XLA_FLAGS'] = (os.environ.get('XLA_FLAGS', '') + ' --xla_gpu_graph_min_graph_size=1').strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

key = jax.random.PRNGKey(0)
keys = jax.random.split(key, 8)
params = [jax.random.normal(keys[i], (1024, 1024), jnp.float32) * 0.02 for i in range(6)]
x = jax.random.normal(keys[6], (512, 1024), jnp.float32)
y = jax.random.normal(keys[7], (512, 1024), jnp.float32)


def loss(ps, x, y):
    h = x
    for w in ps:
        h = jnp.tanh(h @ w)
    return jnp.mean((h - y) ** 2)


@jax.jit
def step(ps, x, y):
    g = jax.grad(loss)(ps, x, y)
    return [w - 0.1 * gw for w, gw in zip(ps, g)]


for _ in range(40):
    params = step(params, x, y)
total = float(sum(jnp.sum(w) for w in params))
stats = jax.devices()[0].memory_stats() or {}
print('checksum=%.17e' % total)
for k in ('bytes_in_use', 'pool_bytes', 'bytes_reserved'):
    print('%s=%d' % (k, stats.get(k, -1)))
