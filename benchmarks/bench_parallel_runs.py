"""Concurrent vs one-after-another for the reweighting chapter's comparison (quick profile).

The comparison is 10 methods x 3 seeds of an MLP on long-tailed digits, 1000 SGD steps each.
Measured side by side in one run:

* one after another: every run in this process (one thread), evaluating every epoch, as the
  chapter did before;
* concurrent: :func:`ncbook.train.run_parallel` over the usable cores (one thread per worker),
  evaluating only what the chapter reads (every epoch for the first seed, whose curves are
  plotted; at the end for the others), worker start-up included.

Prints both wall times, their ratio (target: at least 3x on 2 cores) and whether every run's
final test accuracy is identical. Timings on a shared machine are noisy: read the ratio.

    python benchmarks/bench_parallel_runs.py                  # the chapter's 30 runs
    python benchmarks/bench_parallel_runs.py --seeds 1 --steps 300
    python benchmarks/bench_parallel_runs.py --breakdown      # also: concurrent with every-epoch evaluation
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.nn.functional as F

from ncbook import data, losses, metrics, models, reweighting, train

N_MAX, IMBALANCE, BATCH, LR, WD, REPEAT = 124, 50, 128, 0.05, 5e-3, 8


def cosine_head(model):
    """Unit-norm features and classifier rows, as in the chapter's LDAM-DRW model."""
    class _UnitRows(torch.nn.Module):
        def forward(self, w):
            return F.normalize(w, dim=1)

    torch.nn.utils.parametrize.register_parametrization(model.classifier, "weight", _UnitRows())
    model.normalize = True
    return model


def methods(counts, c, epochs):
    late, mid = int(0.8 * epochs), int(0.5 * epochs)
    irce = losses.InverseReweightedCE
    return {
        "CE": lambda: torch.nn.CrossEntropyLoss(),
        "Inv-Freq": lambda: losses.WeightedCrossEntropy(reweighting.inverse_frequency_weights(counts)),
        "CB": lambda: losses.WeightedCrossEntropy(reweighting.effective_number_weights(counts, 0.9999)),
        "Focal": lambda: losses.FocalLoss(gamma=1.0),
        "LDAM-DRW": lambda: losses.LDAMLoss(counts, drw_epoch=late),
        "LA (loss)": lambda: losses.LogitAdjustedLoss(counts, tau=1.0),
        "IB": lambda: losses.IBLoss(counts, start_epoch=mid),
        "inverse": lambda: irce(c, gamma=0.0, switch_epoch=late),
        "inverse + macro": lambda: irce(c, gamma=1.0, switch_epoch=late),
        "inverse + macro, detached": lambda: irce(c, gamma=1.0, switch_epoch=late, detach=True),
    }


def configs(steps: int, seeds: list[int], lazy_eval: bool) -> list[dict]:
    sp = data.load_digits(test_per_class=50, seed=0)
    counts = data.long_tailed_counts(N_MAX, 10, IMBALANCE)
    keep = data.make_imbalanced(sp.y_train, counts, seed=0)
    x_tr, y_tr = sp.x_train[keep], sp.y_train[keep]
    epochs = steps // ((len(y_tr) * REPEAT) // BATCH)
    train_set = (x_tr.repeat(REPEAT, 1), y_tr.repeat(REPEAT))
    test = (sp.x_test, sp.y_test)
    out = []
    for name, make_loss in methods(counts, 10, epochs).items():
        for seed in seeds:
            model = (lambda: cosine_head(models.MLP(num_classes=10))) if name == "LDAM-DRW" else (lambda: models.MLP(num_classes=10))
            out.append(dict(model=model, loss=make_loss, train=train_set, seed=seed, evaluate_on={"test": test},
                            epochs=epochs, batch_size=BATCH, lr=LR, weight_decay=WD, test=test, nc_every=epochs,
                            eval_every=(1 if seed == seeds[0] else 0) if lazy_eval else 1))
    return out


def cpu_timed_run(**config) -> tuple[float, float]:
    """One run; its final test accuracy and the CPU seconds it used (its process's own time)."""
    start = time.process_time()
    out = train.fit_run(**config)
    return out["evaluations"]["test"]["acc"], time.process_time() - start


def timed(cfgs: list[dict], workers: int) -> tuple[float, list, float]:
    """Wall seconds, final accuracies and the runs' total CPU seconds."""
    start = time.perf_counter()
    outs = train.run_parallel(cpu_timed_run, cfgs, workers=workers)
    return time.perf_counter() - start, [acc for acc, _ in outs], sum(cpu for _, cpu in outs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=None, help="default: the usable cores")
    parser.add_argument("--breakdown", action="store_true", help="also time concurrent runs evaluating every epoch")
    args = parser.parse_args()
    torch.set_num_threads(1)
    seeds = list(range(args.seeds))
    workers = args.workers or len(os.sched_getaffinity(0))
    t_serial, acc_serial, cpu_serial = timed(configs(args.steps, seeds, lazy_eval=False), workers=1)
    t_conc, acc_conc, cpu_conc = timed(configs(args.steps, seeds, lazy_eval=True), workers=workers)
    n = len(acc_serial)
    print(f"{n} runs x {args.steps} steps, {workers} workers x 1 thread (load average {os.getloadavg()[0]:.1f}; "
          f"a loaded machine: read the ratio)")
    print(f"one after another, every-epoch evaluation: {t_serial:6.1f} s")
    print(f"concurrent, evaluating what is read:       {t_conc:6.1f} s   speed-up {t_serial / t_conc:.2f}x (target 3x)")
    if args.breakdown:
        t_every, acc_every, _ = timed(configs(args.steps, seeds, lazy_eval=False), workers=workers)
        print(f"concurrent, every-epoch evaluation:        {t_every:6.1f} s   speed-up {t_serial / t_every:.2f}x "
              f"(processes alone); identical: {acc_every == acc_serial}")
    print(f"CPU seconds of the runs: {cpu_serial:.1f} one after another, {cpu_conc:.1f} concurrent; on an idle machine "
          f"the ratio would be about {cpu_serial / (cpu_conc / workers):.2f}x (worker start-up not counted)")
    print(f"every run's final test accuracy identical to the run alone: {acc_conc == acc_serial}; "
          f"mean accuracy {sum(acc_conc) / n:.4f}")


if __name__ == "__main__":
    main()
