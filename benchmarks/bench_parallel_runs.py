"""Speed-up of running several training runs at once over running them one after another.

The reweighting comparison needs methods x seeds runs; on one GPU they overlap in worker
processes. Prints both wall times and the ratio. On a CPU the workers share the cores, so
expect at most the number of idle cores.

    python benchmarks/bench_parallel_runs.py [--runs 4] [--workers 4] [--epochs 20]
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from ncbook import data, models, train


def one_run(seed: int, epochs: int, device: str) -> dict:
    split = data.load_digits(test_per_class=50, seed=0)
    torch.manual_seed(seed)
    model = models.MLP()
    hist = train.fit(model, F.cross_entropy, (split.x_train, split.y_train), epochs=epochs, lr=0.05, weight_decay=5e-3,
                     test=(split.x_test, split.y_test), nc_every=0, seed=seed, device=device, progress=False)
    return {"seed": seed, "test_acc": hist.final["test_acc"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--epochs", type=int, default=20)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.set_num_threads(1)
    configs = [{"seed": s, "epochs": args.epochs, "device": device} for s in range(args.runs)]
    start = time.perf_counter()
    serial = train.run_parallel(one_run, configs, workers=1)
    t_serial = time.perf_counter() - start
    start = time.perf_counter()
    parallel = train.run_parallel(one_run, configs, workers=args.workers)
    t_parallel = time.perf_counter() - start
    same = all(abs(a["test_acc"] - b["test_acc"]) < 1e-9 for a, b in zip(serial, parallel))
    print(f"device {device}: {args.runs} runs one after another {t_serial:.1f} s, at once {t_parallel:.1f} s; "
          f"speed-up {t_serial / t_parallel:.2f}x; identical results: {same}")


if __name__ == "__main__":
    main()
