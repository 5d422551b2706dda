"""Concurrent vs one-after-another for the reweighting chapter's comparison (quick profile).

The comparison is 10 methods x 3 seeds of an MLP on long-tailed digits, 1000 SGD steps each.
Measured side by side in one run:

* A, one after another (the chapter before): every run in this process, one thread, float32,
  evaluating every epoch;
* B, concurrent, float32: :func:`ncbook.train.run_parallel` over the usable cores (one thread
  per worker), evaluating only what the chapter reads (every epoch for the first seed, whose
  curves are plotted; at the end for the others), worker start-up included;
* C, concurrent with ``amp=True`` (the chapter now): as B, with bf16 matrix products where the
  CPU has them in hardware (:func:`ncbook.native_bf16`); float32 elsewhere, where C is B.

Prints the wall times and the ratios A/B and A/C (target: A/C at least 3x on 2 cores), checks
that every concurrent run gives the numbers of the same run alone (B against A; C against a
lone run of each method's first seed), and prints each method's mean test accuracy in float32
and with ``amp`` beside the largest seed standard deviation, to show what the precision changes.
Timings on a shared machine are noisy: read the ratios.

    python benchmarks/bench_parallel_runs.py                  # the chapter's 30 runs
    python benchmarks/bench_parallel_runs.py --seeds 1 --steps 300
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F

from ncbook import data, losses, models, native_bf16, reweighting, train, usable_cores

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


def configs(steps: int, seeds: list[int], lazy_eval: bool, amp: bool) -> list[dict]:
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
                            eval_every=(1 if seed == seeds[0] else 0) if lazy_eval else 1, amp=amp, name=name))
    return out


def cpu_timed_run(name: str, **config) -> tuple[str, float, float]:
    """One run; its method, final test accuracy and the CPU seconds it used (its process's own time)."""
    start = time.process_time()
    out = train.fit_run(**config)
    return name, out["evaluations"]["test"]["acc"], time.process_time() - start


def timed(cfgs: list[dict], workers: int) -> tuple[float, list, list, float]:
    """Wall seconds, methods, final accuracies and the runs' total CPU seconds."""
    start = time.perf_counter()
    outs = train.run_parallel(cpu_timed_run, cfgs, workers=workers)
    return (time.perf_counter() - start, [m for m, _, _ in outs], [acc for _, acc, _ in outs],
            sum(cpu for _, _, cpu in outs))


def by_method(names: list[str], accs: list[float]) -> dict:
    groups: dict = {}
    for name, acc in zip(names, accs):
        groups.setdefault(name, []).append(acc)
    return {m: (statistics.mean(a), statistics.pstdev(a)) for m, a in groups.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=None, help="default: the usable cores")
    args = parser.parse_args()
    torch.set_num_threads(1)
    seeds = list(range(args.seeds))
    workers = args.workers or usable_cores()
    t_a, names, acc_a, cpu_a = timed(configs(args.steps, seeds, lazy_eval=False, amp=False), workers=1)
    t_b, _, acc_b, cpu_b = timed(configs(args.steps, seeds, lazy_eval=True, amp=False), workers=workers)
    t_c, _, acc_c, cpu_c = timed(configs(args.steps, seeds, lazy_eval=True, amp=True), workers=workers)
    lone = [c for c in configs(args.steps, seeds, lazy_eval=True, amp=True) if c["seed"] == seeds[0]]
    _, _, acc_lone, _ = timed(lone, workers=1)
    first = [acc for c, acc in zip(configs(args.steps, seeds, lazy_eval=True, amp=True), acc_c) if c["seed"] == seeds[0]]
    n = len(acc_a)
    print(f"{n} runs x {args.steps} steps, {workers} workers x 1 thread; bf16 products in hardware: "
          f"{native_bf16('cpu')} (load average {os.getloadavg()[0]:.1f}; a loaded machine: read the ratios)")
    print(f"A one after another, float32, every-epoch evaluation: {t_a:6.1f} s")
    print(f"B concurrent, float32, evaluating what is read:       {t_b:6.1f} s   A/B {t_a / t_b:.2f}x")
    print(f"C concurrent, amp, evaluating what is read:           {t_c:6.1f} s   A/C {t_a / t_c:.2f}x (target 3x)")
    print(f"CPU seconds of the runs: A {cpu_a:.1f}, B {cpu_b:.1f}, C {cpu_c:.1f}; on an idle machine A/B would be "
          f"about {cpu_a / (cpu_b / workers):.2f}x and A/C {cpu_a / (cpu_c / workers):.2f}x (worker start-up not counted)")
    print(f"concurrent runs identical to the runs alone: B = A {acc_b == acc_a}; C = C alone (first seed) {first == acc_lone}")
    fp32, mixed = by_method(names, acc_b), by_method(names, acc_c)
    print(f"{'method':28s} {'float32':>15s} {'amp':>15s}   test accuracy, mean ± std over {len(seeds)} seeds")
    for m in fp32:
        print(f"{m:28s} {fp32[m][0]:.3f} ± {fp32[m][1]:.3f}   {mixed[m][0]:.3f} ± {mixed[m][1]:.3f}")
    shift = max(abs(fp32[m][0] - mixed[m][0]) for m in fp32)
    sd = max(v[1] for v in list(fp32.values()) + list(mixed.values()))
    print(f"largest change of a method's mean: {shift:.3f}; largest seed std: {sd:.3f}; best method float32 "
          f"{max(fp32, key=lambda m: fp32[m][0])!r}, amp {max(mixed, key=lambda m: mixed[m][0])!r}")


if __name__ == "__main__":
    main()
