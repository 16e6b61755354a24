"""Lightning's BatchSizeFinder (Tuner.scale_batch_size, mode 'binsearch',
steps_per_trial 3, no margin taken off) on sweep_models.py's models and data,
in one process:
prints JSON {batch_size, trials, trial_batch_sizes, find_seconds,
process_seconds}. find_seconds is the search alone; process_seconds adds
Python's and Lightning's start. For check_sweep.py.
usage: lightning_finder.py --model conv|transformer [--init-val 2] [--max-trials 25]"""
import argparse
import inspect
import json
import os
import sys
import time

T0 = time.monotonic()
import torch  # noqa: E402
import pytorch_lightning as pl  # noqa: E402
from pytorch_lightning.tuner import Tuner  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sweep_models as sm  # noqa: E402


class Indices(torch.utils.data.Dataset):
    """Sample indices only: the samples themselves are made on the GPU."""

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        return i


class Module(pl.LightningModule):
    def __init__(self, name):
        super().__init__()
        self.name = name
        self.batch_size = 2
        self.net = sm.build(name)
        self.trials = []

    def train_dataloader(self):
        return torch.utils.data.DataLoader(Indices(), batch_size=self.batch_size, shuffle=False)

    def on_train_start(self):
        self.trials.append(self.batch_size)

    def training_step(self, idx, batch_idx):
        x, y = sm.batch(self.name, idx.shape[0], device=self.device)
        return sm.loss_of(self.name, self.net, x, y)

    def configure_optimizers(self):
        return sm.optimizer(self.name, self)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--model', choices=('conv', 'transformer', 'gpt2'), required=True)
    ap.add_argument('--init-val', type=int, default=2)
    ap.add_argument('--max-trials', type=int, default=25)
    a = ap.parse_args()
    torch.manual_seed(0)
    m = Module(a.model)
    trainer = pl.Trainer(accelerator='gpu', devices=1, max_steps=3, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False, default_root_dir='/tmp/lightning-sweep')
    kw = dict(mode='binsearch', steps_per_trial=3, init_val=a.init_val, max_trials=a.max_trials,
              batch_arg_name='batch_size')
    if 'margin' in inspect.signature(Tuner.scale_batch_size).parameters:
        kw['margin'] = 0.0   # Lightning 2.6 takes 5% off what it found by default: compare what it found
    t0 = time.monotonic()
    found = Tuner(trainer).scale_batch_size(m, **kw)
    find_s = time.monotonic() - t0
    print(json.dumps({'batch_size': found, 'trials': len(m.trials), 'trial_batch_sizes': m.trials,
                      'find_seconds': round(find_s, 2), 'process_seconds': round(time.monotonic() - T0, 2)}))


if __name__ == '__main__':
    main()
