"""A training job longer than the shim's first kernel window (every kernel
for the first 5 s of GPU work, then 1 s of every 20 s), under PyTorch's
default allocator, warm from its first step (no cudaMalloc per step):
an MLP, one step every --step-ms (the rest of the step waits, as a job
waiting for its data does), for --seconds. --keep-every N keeps one 24 MiB
tensor every N steps (a cache that creeps up: each one a segment of its
own); 0 keeps nothing. Prints key=value lines:
  steps=N           steps run
  reserved_first=B  memory_reserved() after the first step
  reserved_end=B    and after the last
  keep_line=L       the line that keeps the tensors
--jax: a jitted JAX MLP step in place of PyTorch's (under JAX's
preallocation its steps allocate nothing; XLA's compilation takes the first
kernel window), keeping nothing; prints steps=N only.
usage: long_run.py [--seconds 60] [--step-ms 100] [--keep-every 50] [--jax]"""
import argparse
import time

ap = argparse.ArgumentParser()
ap.add_argument('--seconds', type=float, default=60)
ap.add_argument('--step-ms', type=float, default=100)
ap.add_argument('--keep-every', type=int, default=50)
ap.add_argument('--jax', action='store_true')
a = ap.parse_args()


def paced(step_fn):
    """Runs step_fn every --step-ms for --seconds; returns the steps run."""
    t_end, n = time.monotonic() + a.seconds, 0
    while time.monotonic() < t_end:
        t0 = time.monotonic()
        step_fn(n)
        n += 1
        left = a.step_ms / 1000 - (time.monotonic() - t0)
        if left > 0:
            time.sleep(left)
    return n


if a.jax:
    import jax
    import jax.numpy as jnp
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    state = {'w': [jax.random.normal(keys[i], (1024, 1024)) * 0.02 for i in range(3)]}
    xs = jax.random.normal(keys[3], (256, 1024))

    @jax.jit
    def train_step(ws, x):
        def loss(ws):
            h = x
            for w in ws:
                h = jnp.tanh(h @ w)
            return jnp.mean(h ** 2)
        return [w - 0.01 * g for w, g in zip(ws, jax.grad(loss)(ws))]

    def jax_step(_):
        state['w'] = train_step(state['w'], xs)
        state['w'][0].block_until_ready()

    print('steps=%d' % paced(jax_step))
    raise SystemExit(0)

import torch  # noqa: E402
torch.manual_seed(0)
dev = torch.device('cuda')
model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(256, 1024, device=dev)
kept = []
reserved_first = None


def torch_step(step):
    global reserved_first
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=False)
    if a.keep_every and step and step % a.keep_every == 0:
        kept.append(torch.empty(24 << 20, dtype=torch.uint8, device=dev))
    torch.cuda.synchronize()
    if reserved_first is None:
        reserved_first = torch.cuda.memory_reserved()


print('steps=%d' % paced(torch_step))
print('reserved_first=%d' % reserved_first)
print('reserved_end=%d' % torch.cuda.memory_reserved())
print('keep_line=%d' % next(i + 1 for i, l in enumerate(open(__file__)) if 'kept.append(' in l))
