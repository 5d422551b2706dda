"""Speed of the contrastive Gram-matrix program: how time grows with C, and the two targets.

Run:  python benchmarks/bench_contrastive.py [--max-classes 1000] [--skip-cvxpy]

Prints, from one run:

* the large-k route (long-tailed lambda, ratio 10, exponential profile) for C = 10 ... 1000:
  wall and CPU seconds, iterations, certified gap, the growth exponent between rows
  (log t2/t1 / log C2/C1) and the C = 1000 time as a ratio of the 60 s target;
* the exact route (k = 4) for C = 10, 20, 30, 40, and C = 40 as a ratio of the 10 s target;
* the C = 5, k = 4 exact program against the plain cvxpy + Clarabel formulation (same run).

CPU seconds (``time.process_time``) are printed beside wall seconds: on a shared machine the
wall time also counts the waits for a core.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np

from ncbook._status import InaccurateSolutionWarning
from ncbook.contrastive import num_multiset_terms, solve_gram

LARGE_K_CLASSES = (10, 30, 100, 300, 1000)
EXACT_CLASSES = (10, 20, 30, 40)
TARGETS = {"large_k": (1000, 60.0), "exact": (40, 10.0)}


def long_tailed(c: int, ratio: float = 10.0) -> np.ndarray:
    """Exponential profile: lambda_c proportional to ratio ** (-c / (C - 1))."""
    lam = ratio ** (-np.arange(c) / (c - 1))
    return lam / lam.sum()


def timed(*args, **kwargs):
    wall, cpu = time.perf_counter(), time.process_time()
    res = solve_gram(*args, **kwargs)
    return res, time.perf_counter() - wall, time.process_time() - cpu


def table(title: str, rows: list[tuple], route: str) -> None:
    print(title)
    print(f"  {'C':>5} {'terms':>9} {'solver':>7} {'iters':>6} {'wall s':>8} {'CPU s':>8} {'gap':>8} "
          f"{'status':>10} {'growth':>7}")
    prev = None
    for c, terms, res, wall, cpu in rows:
        growth = "" if prev is None else f"{math.log(cpu / prev[1]) / math.log(c / prev[0]):7.2f}"
        print(f"  {c:5d} {terms:>9} {res.solver:>7} {res.iterations:6d} {wall:8.2f} {cpu:8.2f} {res.gap:8.1e} "
              f"{res.status:>10} {growth:>7}")
        prev = (c, max(cpu, 1e-6))
    c_target, limit = TARGETS[route]
    for c, _, res, wall, cpu in rows:
        if c == c_target:
            print(f"  C = {c}: {wall:.1f} s wall ({cpu:.1f} s CPU) = {wall / limit:.2f} x the {limit:.0f} s target; "
                  f"certified gap {res.gap:.1e} (target <= 1e-9)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--max-classes", type=int, default=1000, help="largest C of the large-k table")
    parser.add_argument("--skip-cvxpy", action="store_true", help="skip the plain cvxpy reference")
    args = parser.parse_args()

    rows = []
    for c in (c for c in LARGE_K_CLASSES if c <= args.max_classes):
        res, wall, cpu = timed(long_tailed(c), math.inf, method="large_k")
        rows.append((c, "-", res, wall, cpu))
    table("large-k route, long-tailed lambda (ratio 10):", rows, "large_k")

    rows = []
    for c in EXACT_CLASSES:
        res, wall, cpu = timed(long_tailed(c), 4)
        rows.append((c, num_multiset_terms(c, 4), res, wall, cpu))
    table("exact route, k = 4, long-tailed lambda (ratio 10):", rows, "exact")

    if not args.skip_cvxpy:
        lam = long_tailed(5)
        ours, wall, _ = timed(lam, 4)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InaccurateSolutionWarning)
            ref, ref_wall, _ = timed(lam, 4, solver="CLARABEL")
        print(f"C = 5, k = 4: newton {wall:.2f} s, plain cvxpy + Clarabel {ref_wall:.2f} s "
              f"({ref_wall / wall:.0f}x; status {ref.status}, gap {ref.gap:.1e}), "
              f"max|A_clarabel - A_newton| = {np.abs(ref.solution - ours.solution).max():.1e}")


if __name__ == "__main__":
    main()
