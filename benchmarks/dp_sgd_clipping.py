"""DP-SGD's clipped mean gradient: linear layers by their outer-product norm against every
per-sample gradient materialised, side by side in one run.

    python -m benchmarks.dp_sgd_clipping [--clients 20 --batch 32 --repeats 3 --threads 1]

One local step of a round's clients (KDP-FL: 20 clients x batch 32), per model, through
:func:`fedcore.engine.local.client_gradient_fn` (what training runs) and through
:func:`materialised_clipped_grad` (Abadi et al. 2016, Alg. 1 the direct way: ``vmap(grad)``
over the batch gives every parameter's per-sample gradient, e.g. ``[32, 512, 3136]`` for
cnn_kdp's fc layer). Prints the best of ``repeats`` seconds of each, the speed-up, the
largest relative difference of the two results, and the load average (the cores are shared).
``tests/test_models.py`` checks the two agree on every model.
"""
from __future__ import annotations

import argparse
import os
import time

import torch
from torch.func import functional_call, grad, vmap

from fedcore.engine.local import client_gradient_fn, cross_entropy
from fedcore.models import build_model


def materialised_clipped_grad(model: torch.nn.Module, clip: float):
    """``f(params[m], buffers, x[m,B,...], y[m,B], mask[m,B]) -> grads[m]``: each client's
    masked mean of per-sample gradients clipped to L2 norm ``clip`` (Abadi et al. 2016,
    Alg. 1), every per-sample gradient materialised."""
    def sample_loss(params, buffers, x, y):
        logits = functional_call(model, (params, buffers), (x.unsqueeze(0),))
        return cross_entropy(logits, y.unsqueeze(0)).sum()

    per_sample = vmap(grad(sample_loss), in_dims=(None, None, 0, 0))

    def clipped(params, buffers, x, y, mask):
        g = per_sample(params, buffers, x, y)
        norm = sum(v.reshape(v.shape[0], -1).pow(2).sum(1) for v in g.values()).sqrt()
        factor = (clip / (norm + 1e-12)).clamp(max=1.0) * mask
        return {k: torch.tensordot(factor, v, dims=1) / mask.sum().clamp(min=1.0) for k, v in g.items()}
    return vmap(clipped, in_dims=(0, None, 0, 0, 0))


def _best(fn, repeats: int) -> tuple[float, dict]:
    out, best = fn(), float("inf")   # the first call warms vmap up
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=20)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--models", default="cnn_kdp,cnn_uldp,mlp,logreg")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}; "
          f"{args.clients} clients x batch {args.batch}, one step, {args.threads} thread(s)")
    print(f"{'model':10} {'params':>10} {'outer-product s':>16} {'materialised s':>15} {'speed-up':>9} {'max rel diff':>13}")
    for name in args.models.split(","):
        model = build_model(name, (1, 28, 28), 10)
        params = {k: v.detach() + 0.01 * torch.randn(args.clients, *v.shape) for k, v in model.named_parameters()}
        buffers = dict(model.named_buffers())
        x = torch.randn(args.clients, args.batch, 1, 28, 28)
        y = torch.randint(0, 10, (args.clients, args.batch))
        mask = torch.ones(args.clients, args.batch)
        fast, a = _best(lambda: client_gradient_fn(model, 1.0)(params, buffers, x, y, mask), args.repeats)
        slow, b = _best(lambda: materialised_clipped_grad(model, 1.0)(params, buffers, x, y, mask), args.repeats)
        diff = max(((a[k] - b[k]).abs().max() / b[k].abs().max().clamp(min=1e-12)).item() for k in b)
        n = sum(v[0].numel() for v in params.values())
        print(f"{name:10} {n:>10,} {fast:>16.3f} {slow:>15.3f} {slow / fast:>8.2f}x {diff:>13.1e}")
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
