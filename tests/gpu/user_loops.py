"""Training and inference loops written the way users write them, with no
code for the tracer and no ranges of their own (tests/gpu/check_user_loops.py
drives them). Each prints key=value lines the check compares with the trace:
  steps=N             the loop's iterations
  kept_per_step=B     (leaky) bytes PyTorch's allocator holds more after each step
  kept_line=L         (leaky) the line of this file that makes what is kept
Modes:
  trainer   Hugging Face Trainer, a small GPT-2 from its config, --steps steps
  accum     an MLP, 4 micro-batches of gradient accumulation per optimizer step
  generate  a small GPT-2's generate() over --steps prompts, under no_grad
  leaky     an MLP whose loop keeps every step's loss with its graph (the
            classic `losses.append(loss)`): the saved activations pile up
  pinned    a conv net fed by a DataLoader with 2 workers and pin_memory
  split     an MLP split across two GPUs in one process (needs 2): per device
            D, reservedD=, max_reservedD= and max_allocatedD= lines
  evalevery a conv net evaluated on 3 batches under no_grad every 5 steps
  varlen    a small GPT-2 trained on a new sequence length every step (16..256)
  emptycache  an MLP that calls torch.cuda.empty_cache() after every step
  amp       a conv net under float16 autocast with a GradScaler
  compiled  an MLP under torch.compile (inductor's default mode)
  infer     a 12-layer GPT-2's forward passes under no_grad, batches of 8 x 128
  infer-varlen  the same on a new sequence length every batch (16..256)
  keepfeat  an MLP whose loop keeps each step's hidden features on the GPU
            "for later analysis" (a 4 MiB tensor a step, with its graph's
            node), ending normally: also kept_per_step=, kept_line= and,
            for the default allocator, reserved_per_step= (the mean growth
            of memory_reserved() from step 3 on)
  twoloops  an MLP trained for --steps steps, then tested on 30 batches
            under no_grad (a loop of another kind at the end)
  hfeval    Hugging Face Trainer evaluating on 3 batches every 5 steps
  ckpt      an MLP of 4 blocks under activation checkpointing
            (torch.utils.checkpoint: the forward runs again in backward)
  cudnnbench  a conv net with torch.backends.cudnn.benchmark on (its first
            step tries algorithms, each with its own workspace)
  lastbatch a conv net fed by a DataLoader whose last batch is smaller
  epochs    the same for 3 epochs of 7 batches, the last of each smaller
            (steps= counts every batch)
usage: user_loops.py MODE [--steps N]"""
import argparse
import os
import sys

import torch

ap = argparse.ArgumentParser()
ap.add_argument('mode', choices=['trainer', 'accum', 'generate', 'leaky', 'pinned', 'split', 'evalevery', 'varlen',
                                     'emptycache', 'amp', 'compiled', 'infer', 'infer-varlen', 'keepfeat',
                                     'twoloops', 'hfeval', 'ckpt', 'cudnnbench', 'lastbatch', 'epochs'])
ap.add_argument('--steps', type=int, default=20)
a = ap.parse_args()
torch.manual_seed(0)
dev = torch.device('cuda')


def small_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    return GPT2LMHeadModel(GPT2Config(vocab_size=2048, n_positions=256, n_embd=256, n_layer=2, n_head=4))


class Tokens(torch.utils.data.Dataset):
    """n sequences of 128 random tokens for the Hugging Face Trainer, the
    i-th from seed + i (labels: the tokens)."""
    def __init__(self, n, seed):
        self.n, self.seed = n, seed

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        ids = torch.randint(0, 2048, (128,), generator=torch.Generator().manual_seed(self.seed + i))
        return {'input_ids': ids, 'labels': ids}


def convnet():
    return torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(32, 64, 3, padding=1),
                               torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                               torch.nn.Linear(64, 10)).to(dev)


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 512),
                               torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(dev)


if a.mode == 'trainer':
    import tempfile
    from transformers import Trainer, TrainingArguments

    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, max_steps=a.steps, per_device_train_batch_size=8,
                                 report_to=[], save_strategy='no', logging_strategy='no', disable_tqdm=True,
                                 dataloader_num_workers=0)
        Trainer(model=small_gpt2(), args=args, train_dataset=Tokens(8 * a.steps, 0)).train()
    print('steps=%d' % a.steps)
elif a.mode == 'accum':
    model = mlp()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(a.steps):
        for micro in range(4):
            x = torch.randn(64, 512, device=dev)
            y = torch.randint(0, 10, (64,), device=dev)
            (torch.nn.functional.cross_entropy(model(x), y) / 4).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    print('steps=%d' % a.steps)
elif a.mode == 'generate':
    model = small_gpt2().to(dev).eval()
    with torch.no_grad():
        for step in range(a.steps):
            prompt = torch.randint(0, 2048, (4, 32), device=dev)
            model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=24, do_sample=False,
                           pad_token_id=0)
    torch.cuda.synchronize()
    print('steps=%d' % a.steps)
elif a.mode == 'leaky':
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    losses = []
    held = []
    for step in range(a.steps):
        x = torch.randn(256, 512, device=dev)
        y = torch.randint(0, 10, (256,), device=dev)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward(retain_graph=True)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss)   # the bug: the graph (and its saved activations) lives on
        torch.cuda.synchronize()
        held.append(torch.cuda.memory_allocated())
    steps = sorted(b - a_ for a_, b in zip(held[2:], held[3:]))
    print('steps=%d' % a.steps)
    print('kept_per_step=%d' % steps[len(steps) // 2])
    print('kept_line=%d' % [i + 1 for i, l in enumerate(open(__file__)) if 'model(x), y)' in l and 'loss =' in l][0])
    sys.stdout.flush()
    os._exit(0)   # as a job killed after training ends: what the list held is still live
elif a.mode == 'pinned':
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
                                torch.nn.Flatten(), torch.nn.Linear(32, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    data = torch.utils.data.TensorDataset(torch.randn(64 * a.steps, 3, 64, 64), torch.randint(0, 10, (64 * a.steps,)))
    loader = torch.utils.data.DataLoader(data, batch_size=64, num_workers=2, pin_memory=True)
    n = 0
    for x, y in loader:
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        n += 1
    torch.cuda.synchronize()
    print('steps=%d' % n)
elif a.mode == 'split':
    d0, d1 = torch.device('cuda:0'), torch.device('cuda:1')
    first = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU()).to(d0)
    second = torch.nn.Sequential(torch.nn.Linear(4096, 8192), torch.nn.ReLU(), torch.nn.Linear(8192, 10)).to(d1)
    opt = torch.optim.Adam(list(first.parameters()) + list(second.parameters()), lr=1e-3)
    for step in range(a.steps):
        x = torch.randn(512, 1024, device=d0)
        y = torch.randint(0, 10, (512,), device=d1)
        torch.nn.functional.cross_entropy(second(first(x).to(d1)), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    for d in (0, 1):
        torch.cuda.synchronize(d)
    print('steps=%d' % a.steps)
    for d in (0, 1):
        print('reserved%d=%d' % (d, torch.cuda.memory_reserved(d)))
        print('max_reserved%d=%d' % (d, torch.cuda.max_memory_reserved(d)))
        print('max_allocated%d=%d' % (d, torch.cuda.max_memory_allocated(d)))
elif a.mode == 'evalevery':
    model = convnet()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(a.steps):
        model.train()
        x, y = torch.randn(32, 3, 64, 64, device=dev), torch.randint(0, 10, (32,), device=dev)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % 5 == 4:
            model.eval()
            with torch.no_grad():
                correct = 0
                for _ in range(3):
                    xv = torch.randn(64, 3, 64, 64, device=dev)
                    correct += (model(xv).argmax(1) == 0).sum().item()
    torch.cuda.synchronize()
    print('steps=%d' % a.steps)
elif a.mode == 'varlen':
    model = small_gpt2().to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    lengths = torch.Generator().manual_seed(1)
    for step in range(a.steps):
        n = int(torch.randint(16, 257, (1,), generator=lengths))
        ids = torch.randint(0, 2048, (8, n), device=dev)
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    print('steps=%d' % a.steps)
elif a.mode == 'emptycache':
    model = mlp()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for step in range(a.steps):
        x, y = torch.randn(256, 512, device=dev), torch.randint(0, 10, (256,), device=dev)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del x, y
        torch.cuda.empty_cache()
    torch.cuda.synchronize()
    print('steps=%d' % a.steps)
elif a.mode == 'amp':
    model = convnet()
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    scaler = torch.amp.GradScaler('cuda')
    for step in range(a.steps):
        x, y = torch.randn(32, 3, 64, 64, device=dev), torch.randint(0, 10, (32,), device=dev)
        with torch.autocast('cuda', dtype=torch.float16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    print('steps=%d' % a.steps)
elif a.mode == 'compiled':
    model = torch.compile(mlp())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(a.steps):
        x, y = torch.randn(256, 512, device=dev), torch.randint(0, 10, (256,), device=dev)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    print('steps=%d' % a.steps)
elif a.mode in ('infer', 'infer-varlen'):
    from transformers import GPT2Config, GPT2LMHeadModel
    model = GPT2LMHeadModel(GPT2Config(vocab_size=2048, n_positions=256, n_embd=256, n_layer=12, n_head=4)).to(dev).eval()
    lengths = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for step in range(a.steps):
            n = int(torch.randint(16, 257, (1,), generator=lengths)) if a.mode == 'infer-varlen' else 128
            ids = torch.randint(0, 2048, (8, n), device=dev)
            model(input_ids=ids).logits.argmax(-1)
    torch.cuda.synchronize()
    print('steps=%d' % a.steps)
elif a.mode == 'keepfeat':
    model = torch.nn.Sequential(torch.nn.Linear(512, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    feats = []
    allocated, reserved = [], []
    for step in range(a.steps):
        x, y = torch.randn(256, 512, device=dev), torch.randint(0, 10, (256,), device=dev)
        hidden = model[:2](x)
        torch.nn.functional.cross_entropy(model[2:](hidden), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        feats.append(hidden)   # the bug: kept on the GPU (and with its graph's node) for later
        torch.cuda.synchronize()
        allocated.append(torch.cuda.memory_allocated())
        reserved.append(torch.cuda.memory_reserved())
    steps = sorted(b - a_ for a_, b in zip(allocated[2:], allocated[3:]))
    print('steps=%d' % a.steps)
    print('kept_per_step=%d' % steps[len(steps) // 2])
    print('reserved_per_step=%.1f' % ((reserved[-1] - reserved[2]) / (len(reserved) - 3)))
    print('kept_line=%d' % [i + 1 for i, l in enumerate(open(__file__)) if l.strip() == 'hidden = model[:2](x)'][0])
elif a.mode == 'twoloops':
    model = mlp()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(a.steps):
        x, y = torch.randn(256, 512, device=dev), torch.randint(0, 10, (256,), device=dev)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    model.eval()
    correct = 0
    with torch.no_grad():
        for _ in range(30):
            x = torch.randn(256, 512, device=dev)
            correct += int((model(x).argmax(1) == 0).sum())
    print('steps=%d' % a.steps)
elif a.mode == 'hfeval':
    import tempfile
    from transformers import Trainer, TrainingArguments

    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, max_steps=a.steps, per_device_train_batch_size=8,
                                 per_device_eval_batch_size=8, eval_strategy='steps', eval_steps=5,
                                 report_to=[], save_strategy='no', logging_strategy='no', disable_tqdm=True,
                                 dataloader_num_workers=0)
        Trainer(model=small_gpt2(), args=args, train_dataset=Tokens(8 * a.steps, 0),
                eval_dataset=Tokens(24, 100000)).train()
    print('steps=%d' % a.steps)
elif a.mode == 'ckpt':
    from torch.utils.checkpoint import checkpoint
    blocks = torch.nn.ModuleList(torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.GELU()) for _ in range(4)).to(dev)
    head = torch.nn.Linear(1024, 10).to(dev)
    opt = torch.optim.AdamW(list(blocks.parameters()) + list(head.parameters()), lr=1e-4)
    for step in range(a.steps):
        h, y = torch.randn(512, 1024, device=dev), torch.randint(0, 10, (512,), device=dev)
        for b in blocks:
            h = checkpoint(b, h, use_reentrant=False)
        torch.nn.functional.cross_entropy(head(h), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    print('steps=%d' % a.steps)
elif a.mode == 'cudnnbench':
    torch.backends.cudnn.benchmark = True
    model = convnet()
    opt = torch.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    for step in range(a.steps):
        x, y = torch.randn(32, 3, 64, 64, device=dev), torch.randint(0, 10, (32,), device=dev)
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    print('steps=%d' % a.steps)
elif a.mode in ('lastbatch', 'epochs'):
    model = convnet()
    opt = torch.optim.SGD(model.parameters(), lr=1e-2)
    epochs, per = (1, a.steps) if a.mode == 'lastbatch' else (3, 7)
    n_samples = 32 * per - 13
    data = torch.utils.data.TensorDataset(torch.randn(n_samples, 3, 64, 64), torch.randint(0, 10, (n_samples,)))
    loader = torch.utils.data.DataLoader(data, batch_size=32, shuffle=True)
    n = 0
    for epoch in range(epochs):
        for x, y in loader:
            x, y = x.to(dev), y.to(dev)
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            n += 1
    torch.cuda.synchronize()
    print('steps=%d' % n)
