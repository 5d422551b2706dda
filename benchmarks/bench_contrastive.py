"""Speed of the contrastive Gram-matrix program: our solvers against the plain cvxpy formulation.

Run:  python benchmarks/bench_contrastive.py [--skip-cvxpy]

Prints wall times, the ratio against the plain cvxpy + Clarabel formulation (tolerances 1e-10)
from the same run, the largest entry-wise difference of the solutions, and the certified gaps.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from ncbook.contrastive import num_multiset_terms, solve_gram


def long_tailed(c: int, ratio: float = 10.0) -> np.ndarray:
    lam = ratio ** (-np.arange(c) / (c - 1))
    return lam / lam.sum()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skip-cvxpy", action="store_true", help="skip the slow plain cvxpy reference")
    args = parser.parse_args()

    lam = long_tailed(20)
    print(f"C = 20, k = 4, long-tailed lambda (ratio 10): {num_multiset_terms(20, 4)} multiset terms")
    newton = solve_gram(lam, 4, setting="ucl")
    print(f"  newton (barrier, structured Hessian): {newton.seconds:7.2f} s, gap {newton.gap:.1e}, "
          f"{newton.iterations} Newton steps")
    bm = solve_gram(lam, 4, setting="ucl", method="bm", allow_inaccurate=True)
    print(f"  bm (Burer-Monteiro, first order):     {bm.seconds:7.2f} s, gap {bm.gap:.1e}, "
          f"max|A_bm - A_newton| = {np.abs(bm.solution - newton.solution).max():.1e}")
    if not args.skip_cvxpy:
        start = time.perf_counter()
        ref = solve_gram(lam, 4, setting="ucl", solver="CLARABEL", allow_inaccurate=True)
        wall = time.perf_counter() - start
        print(f"  plain cvxpy + Clarabel (tol 1e-10):  {wall:7.2f} s (status {ref.status}), "
              f"max|A_clarabel - A_newton| = {np.abs(ref.solution - newton.solution).max():.1e}, "
              f"|S diff| = {abs(ref.objective - newton.objective):.1e}")
        print(f"  speed-up of newton over plain cvxpy: {wall / newton.seconds:.0f}x")

    lam = long_tailed(100)
    big = solve_gram(lam, 255, setting="ucl", method="large_k")
    print(f"C = 100, k = 255 (large-k route, solver {big.solver}): {big.seconds:7.2f} s, gap {big.gap:.1e}, "
          f"status {big.status}")

    print("exact-program (newton) times by (C, k):")
    for c in (5, 10, 20):
        row = []
        for k in (1, 2, 3, 4):
            res = solve_gram(long_tailed(c), k, setting="ucl")
            row.append(f"k={k}: {res.seconds:6.2f} s ({num_multiset_terms(c, k):>6} terms)")
        print(f"  C = {c:3d}: " + "; ".join(row))


if __name__ == "__main__":
    main()
