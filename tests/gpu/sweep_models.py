"""Workloads for check_sweep.py: a small conv net and a small transformer whose
activations are large per sample (about 0.45 and 0.5 GiB), so their largest
batch on an 80 GB H100 is small (Lightning's finder: 178 for the conv net
under the default allocator) and a batch-size search ends in minutes. The memory is
bounded by the models, not by torch.cuda.set_per_process_memory_fraction,
which no trace could see. Trains --steps steps (SGD with momentum; gpt2: AdamW) on random
data made on the GPU; a torch.OutOfMemoryError ends the run (exit 1), as in a
real job. Also the LightningModule for Lightning's BatchSizeFinder
(lightning_finder.py), on the same models and data.
The gpt2 model is a workload none of the sweep's rules were tuned on: Hugging
Face's GPT2LMHeadModel (124M parameters, built from its config, no download),
sequence 1024, AdamW (its state made at the first step) under bf16 autocast.
usage: sweep_models.py --model conv|transformer|gpt2 --batch-size N [--steps 3]
Prints `batch_size=N`, `steps=N`, `max_allocated=B`, `max_reserved=B`, and
`steps_seconds=S` (with --report-free also `device_free=B`, `device_total=B`): the training loop's own wall time (first step to the last
synchronize), so that a caller timing the whole process can tell what the
rest (Python, torch, the CUDA context, the model, exit) cost."""
import argparse
import sys
import time

import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True

# conv: 6 conv+BN+ReLU layers of 128 channels at 256x256 (about 100 MiB of
# saved activations per layer and sample); transformer: 6 pre-norm layers,
# d_model 512, 8 heads, sequence 2048, vocabulary 8192 (about 650 MiB per sample)
IMAGE, CHANNELS, CONV_LAYERS = 256, 128, 6
VOCAB, D_MODEL, HEADS, LAYERS, SEQ = 8192, 512, 8, 6, 2048


def conv_net():
    layers = [nn.Conv2d(3, CHANNELS, 3, padding=1), nn.BatchNorm2d(CHANNELS), nn.ReLU()]
    for _ in range(CONV_LAYERS - 1):
        layers += [nn.Conv2d(CHANNELS, CHANNELS, 3, padding=1), nn.BatchNorm2d(CHANNELS), nn.ReLU()]
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(CHANNELS, 10)]
    return nn.Sequential(*layers)


class TinyLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D_MODEL)
        self.pos = nn.Parameter(torch.zeros(SEQ, D_MODEL))
        layer = nn.TransformerEncoderLayer(D_MODEL, HEADS, 4 * D_MODEL, dropout=0.0, batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = nn.Linear(D_MODEL, VOCAB)

    def forward(self, tokens):
        return self.head(self.enc(self.emb(tokens) + self.pos))


GPT2_SEQ = 1024


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config(n_positions=GPT2_SEQ))


def build(name):
    return {'conv': conv_net, 'transformer': TinyLM, 'gpt2': gpt2}[name]()


def optimizer(name, model):
    if name == 'gpt2':
        return torch.optim.AdamW(model.parameters(), lr=1e-4)
    return torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)


def batch(name, bs, device='cuda'):
    """Random inputs and targets of bs samples, made on the GPU."""
    if name == 'conv':
        return torch.randn(bs, 3, IMAGE, IMAGE, device=device), torch.randint(0, 10, (bs,), device=device)
    if name == 'gpt2':
        t = torch.randint(0, 50257, (bs, GPT2_SEQ), device=device)
        return t, t
    t = torch.randint(0, VOCAB, (bs, SEQ), device=device)
    return t, t


def loss_of(name, model, x, y):
    if name == 'gpt2':
        with torch.autocast('cuda', dtype=torch.bfloat16):
            return model(input_ids=x, labels=y).loss
    out = model(x)
    if name == 'conv':
        return nn.functional.cross_entropy(out, y)
    return nn.functional.cross_entropy(out.reshape(-1, VOCAB), y.reshape(-1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--model', choices=('conv', 'transformer', 'gpt2'), required=True)
    ap.add_argument('--batch-size', type=int, required=True)
    ap.add_argument('--steps', type=int, default=3)
    ap.add_argument('--warm-libs', action='store_true',
                    help='one step at batch size 1 before the loop: cuBLAS and cuDNN make their handles before the pool grows')
    ap.add_argument('--empty-cache', action='store_true',
                    help='torch.cuda.empty_cache() after each step: under backend:cudaMallocAsync the pool gives the '
                         'device back the chunks no allocation holds (cudaMemPoolTrimTo)')
    ap.add_argument('--report-free', action='store_true',
                    help='also print device_free= and device_total= (torch.cuda.mem_get_info) after the loop')
    a = ap.parse_args()
    torch.manual_seed(0)
    model = build(a.model).cuda()
    opt = optimizer(a.model, model)
    if a.warm_libs:
        x, y = batch(a.model, 1)
        loss_of(a.model, model, x, y).backward()
        opt.zero_grad(set_to_none=True)
        del x, y
    torch.cuda.synchronize()
    t0 = time.monotonic()
    for step in range(a.steps):
        torch.cuda.nvtx.range_push('step %d bs=%d' % (step, a.batch_size))
        x, y = batch(a.model, a.batch_size)
        opt.zero_grad(set_to_none=True)
        loss_of(a.model, model, x, y).backward()
        opt.step()
        del x, y
        if a.empty_cache:
            torch.cuda.empty_cache()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    steps_s = time.monotonic() - t0
    print('batch_size=%d\nsteps=%d\nmax_allocated=%d\nmax_reserved=%d\nsteps_seconds=%.3f' % (
        a.batch_size, a.steps, torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved(), steps_s))
    if a.report_free:
        free, total = torch.cuda.mem_get_info()
        print('device_free=%d\ndevice_total=%d' % (free, total))
    sys.stdout.flush()


if __name__ == '__main__':
    main()
