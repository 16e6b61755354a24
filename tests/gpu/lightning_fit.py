"""A PyTorch Lightning training run as users write one (Trainer.fit, no NVTX
ranges, no code for the tracer): sweep_models.py's model (default the
transformer; SGD with momentum) for --steps optimizer steps at --batch-size, with a
validation loop of 2 batches every --val-every steps when asked. Lightning's
logs go to a temporary directory. For check_loops.py.
usage: lightning_fit.py [--model transformer] [--batch-size 4] [--steps 30] [--val-every 0]"""
import argparse
import os
import sys
import tempfile

import torch
import pytorch_lightning as pl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lightning_finder as lf  # noqa: E402
import sweep_models as sm  # noqa: E402


class Module(lf.Module):
    def val_dataloader(self):
        return torch.utils.data.DataLoader(lf.Indices(), batch_size=self.batch_size, shuffle=False)

    def validation_step(self, idx, batch_idx):
        x, y = sm.batch(self.name, idx.shape[0], device=self.device)
        self.log('val_loss', sm.loss_of(self.name, self.net, x, y))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--model', choices=('conv', 'transformer'), default='transformer')
    ap.add_argument('--batch-size', type=int, default=4)
    ap.add_argument('--steps', type=int, default=30)
    ap.add_argument('--val-every', type=int, default=0)
    a = ap.parse_args()
    torch.manual_seed(0)
    m = Module(a.model) if a.val_every else lf.Module(a.model)
    m.batch_size = a.batch_size
    with tempfile.TemporaryDirectory() as d:
        kw = dict(val_check_interval=a.val_every, limit_val_batches=2, num_sanity_val_steps=0) if a.val_every else \
            dict(limit_val_batches=0)
        trainer = pl.Trainer(accelerator='gpu', devices=1, max_steps=a.steps, default_root_dir=d, logger=False,
                             enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False, **kw)
        trainer.fit(m)
    print('steps=%d' % trainer.global_step)
    print('max_allocated=%d' % torch.cuda.max_memory_allocated())


if __name__ == '__main__':
    main()
