"""GPU check of `gputrace leaks` on real models nobody here wrote (issue 11,
part 5): torchvision's ResNet-50 and a Hugging Face BERT (built from its
config: no download), trained 30 steps under backend:cudaMallocAsync with
AdamW and ended by os._exit right after the last step (as a killed job
ends), no ranges of their own. A clean job must read clean:
- no leak (nothing allocated in a later iteration and never freed);
- held for the run >= the parameters plus the optimizer's state (what
  PyTorch says they take), and named as such;
- the iterations found automatically: 30 (or the report says it cannot tell).
Also under the default allocator for ResNet-50 (iterations from kernels).
And a job that dies in its second step (ResNet-50, cudaMallocAsync, its own
NVTX ranges "step 0", "step 1"; an allocation past the device after step 1's
forward, as an OOM kills a job with its activations live): its two steps are
the iterations (not a pattern of its layers inside step 1, which read as
92 GiB of leaks in session 33), and leaks says accumulation is not told; and
the same job dying in its first step: that step is the one iteration, or
none is found, and no activation is called a leak.
About 2 minutes.
usage: check_leaks_real.py --build BUILD --out DIR"""
import argparse
import json
import os
import subprocess

from gpucheck import counters, finish, fresh_db, report, run

ap = argparse.ArgumentParser()
ap.add_argument('--build', required=True)
ap.add_argument('--out', required=True)
ap.add_argument('--steps', type=int, default=30)
a = ap.parse_args()
shim = os.path.abspath(os.path.join(a.build, 'shim', 'libgputrace.so'))
gputrace = os.path.abspath(os.path.join(a.build, 'analyzer', 'gputrace'))
os.makedirs(a.out, exist_ok=True)

WORKLOAD = r'''
import os, sys, torch
model_name, steps = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)
dev = torch.device('cuda')
if model_name == 'resnet50':
    import torchvision
    model = torchvision.models.resnet50(num_classes=1000).to(dev)
    def data():
        return torch.randn(32, 3, 224, 224, device=dev), torch.randint(0, 1000, (32,), device=dev)
    def loss_of(x, y):
        return torch.nn.functional.cross_entropy(model(x), y)
else:
    from transformers import BertConfig, BertForSequenceClassification
    model = BertForSequenceClassification(BertConfig(num_labels=2)).to(dev)
    def data():
        return torch.randint(0, 30000, (16, 128), device=dev), torch.randint(0, 2, (16,), device=dev)
    def loss_of(x, y):
        return model(input_ids=x, labels=y).loss
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(steps):
    x, y = data()
    opt.zero_grad(set_to_none=True)
    loss_of(x, y).backward()
    opt.step()
torch.cuda.synchronize()
params = sum(p.numel() * p.element_size() for p in model.parameters())
state = sum(t.numel() * t.element_size() for s in opt.state.values() for t in s.values() if torch.is_tensor(t))
print('params=%d' % params)
print('optimizer_state=%d' % state)
print('allocated=%d' % torch.cuda.memory_allocated())
sys.stdout.flush()
os._exit(0)
'''

DIES = r'''
import sys, torch, torchvision
dev = torch.device('cuda')
torch.manual_seed(0)
model = torchvision.models.resnet50(num_classes=1000).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(2):
    torch.cuda.nvtx.range_push('step %d' % step)
    x, y = torch.randn(32, 3, 224, 224, device=dev), torch.randint(0, 1000, (32,), device=dev)
    loss = torch.nn.functional.cross_entropy(model(x), y)
    if step == int(sys.argv[1]):
        torch.empty(2 * torch.cuda.get_device_properties(0).total_memory, dtype=torch.uint8, device=dev)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    torch.cuda.nvtx.range_pop()
'''


def dies_in_step(k):
    name = 'dies-in-step-%d' % k
    db = fresh_db(a.out, name)
    p = run(['python3', '-c', DIES, str(k)], shim=shim, db=db,
            env_extra={'GPUTRACE_QUIET': '1', 'PYTORCH_CUDA_ALLOC_CONF': 'backend:cudaMallocAsync'})
    if p.returncode == 0 or not os.path.exists(db):
        report(False, '%s: dies of its out-of-memory error and leaves a trace' % name, 'rc %d: %s' % (
            p.returncode, p.stderr[-300:]))
        return
    lk = json.loads(subprocess.run([gputrace, 'leaks', '--json', db], capture_output=True, text=True).stdout)
    tr = lk['traces'][0] if 'traces' in lk else lk
    sm = json.loads(subprocess.run([gputrace, 'summary', '--json', db], capture_output=True, text=True).stdout)
    st = sm['traces'][0] if 'traces' in sm else sm
    text = subprocess.run([gputrace, 'leaks', db], capture_output=True, text=True).stdout
    print('\n'.join('     | ' + l for l in text.splitlines()[:8]), flush=True)
    # died in step 1: its two steps; in step 0: that step, or none (no pattern inside it)
    want = [(2, 'nvtx')] if k else [(1, 'nvtx'), (0, 'none'), (None, 'none')]
    report((st.get('iterations'), st.get('iteration_source')) in want,
           '%s: its steps are the iterations, not a pattern inside one' % name, '%s from %s (%s)' % (
               st.get('iterations'), st.get('iteration_source'), (st.get('iteration_detection') or '')[:200]))
    # (with one step or none, what is live at exit is listed as such, "not told": total_bytes is not a
    # claim of accumulation there; with two, it is split into held for the run and in use at the end)
    report(tr.get('accumulation_told') is False and (not k or not tr.get('total_bytes')),
           '%s: leaks calls nothing a leak and says accumulation is not told' % name,
           'told %s, leak %s B, held for the run %s B, at end %s B' % (
               tr.get('accumulation_told'), tr.get('total_bytes'), tr.get('held_for_run_bytes'),
               tr.get('at_end_bytes')))


def one(model, alloc):
    name = '%s-%s' % (model, alloc)
    db = fresh_db(a.out, name)
    env = {'GPUTRACE_QUIET': '1'}
    if alloc == 'async':
        env['PYTORCH_CUDA_ALLOC_CONF'] = 'backend:cudaMallocAsync'
    p = run(['python3', '-c', WORKLOAD, model, str(a.steps)], shim=shim, db=db, env_extra=env)
    if p.returncode != 0 or not os.path.exists(db):
        missing = 'No module named' in p.stderr
        report(missing, '%s: runs' % name, ('SKIP: %s' % p.stderr.strip().splitlines()[-1]) if missing else
               'rc %d: %s' % (p.returncode, p.stderr[-400:]))
        return
    c = counters(p.stdout)
    lk = json.loads(subprocess.run([gputrace, 'leaks', '--json', db], capture_output=True, text=True).stdout)
    tr = lk['traces'][0] if 'traces' in lk else lk
    sm = json.loads(subprocess.run([gputrace, 'summary', '--json', db], capture_output=True, text=True).stdout)
    st = sm['traces'][0] if 'traces' in sm else sm
    n_it = st.get('iterations')
    its = '%s from %s (%s)' % (n_it, st.get('iteration_source'), st.get('iteration_detection'))
    print('   %s: torch params %d, optimizer state %d, allocated at exit %d; leaks: leak %s B in %s, held for the run '
          '%s B in %s, at end %s B, cached %s B, classified by iterations %s; iterations %s' % (
              name, c['params'], c['optimizer_state'], c['allocated'], tr.get('total_bytes'), tr.get('total_count'),
              tr.get('held_for_run_bytes'), tr.get('held_for_run_count'), tr.get('at_end_bytes'), tr.get('cached_bytes'),
              tr.get('classified_by_iterations'), its[:300]), flush=True)
    text = subprocess.run([gputrace, 'leaks', db], capture_output=True, text=True).stdout
    print('\n'.join('     | ' + l for l in text.splitlines()[:14]), flush=True)
    report(tr.get('classified_by_iterations') and tr.get('accumulation_told') and tr.get('total_bytes') == 0 and
           not tr.get('freed_after_loop_bytes'),
           '%s: a clean job reads clean (no leak, told from 3 or more iterations; nothing freed only after the loop)'
           % name, 'leak %s B, classified %s, told %s, freed after the loop %s B' % (
               tr.get('total_bytes'), tr.get('classified_by_iterations'), tr.get('accumulation_told'),
               tr.get('freed_after_loop_bytes')))
    if alloc == 'async':
        want = c['params'] + c['optimizer_state']
        held = tr.get('held_for_run_bytes') or 0
        report(held >= want, '%s: held for the run covers parameters and optimizer state' % name,
               'held %d B, parameters + state %d B (%+d)' % (held, want, held - want))
    report(n_it == a.steps, '%s: automatic iterations = the steps run' % name, 'found %s for %d steps' % (
        n_it, a.steps))


for model, alloc in (('resnet50', 'async'), ('bert', 'async'), ('resnet50', 'default')):
    try:
        one(model, alloc)
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        report(False, '%s-%s' % (model, alloc), 'raised %r' % e)
for k in (1, 0):
    try:
        dies_in_step(k)
    except Exception as e:  # noqa: BLE001
        report(False, 'dies-in-step-%d' % k, 'raised %r' % e)
finish()
