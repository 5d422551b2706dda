"""Every exercise's public and hidden cases pass the chapter's own solution on any machine.

The chapter's solution (read from the chapter with ``chapter_solutions``, as the assignments are built)
runs on every public case and on the hidden cases of two students, with float64 and float32 inputs,
one and two torch (and BLAS) threads, and every floating-point input moved by a few units in the last
place: all pass. The reference runs on the same moved inputs; the comparison allows only the one
tolerance rule (``ncbook.exercises._core.allowed_error``), whose float32 term is the inputs' precision.
A solution that is wrong by more than that rule allows fails (the last test), so these can fail.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_limits

from ncbook.exercises import EXERCISES
from ncbook.exercises._core import collect

from tool_loader import load_tool

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ["nc_primer", "seli", "contrastive_imbalance", "weighted_contrastive", "inverse_reweighting", "mr2_margins"]


def _tool():
    return load_tool("tools/assignments.py")


def _solutions() -> dict[str, object]:
    """exercise name -> the chapter's solution function (the function its check cell passes)."""
    import itertools

    import torch.nn.functional as F

    import ncbook
    from ncbook import contrastive, geometry, losses, metrics, reweighting, ufm

    tool = _tool()
    found = {}
    for chapter in CHAPTERS:
        md = ROOT / "book" / f"{chapter}.md"
        ns = {"np": np, "torch": torch, "F": F, "math": math, "itertools": itertools, "ncbook": ncbook,
              "contrastive": contrastive, "geometry": geometry, "losses": losses, "metrics": metrics,
              "reweighting": reweighting, "ufm": ufm}
        for solution in tool.chapter_solutions(md).values():
            for source in solution.code:
                try:
                    exec(compile(source, md.name, "exec"), ns)
                except Exception:  # a cell that also uses the chapter's variables: its defs ran first
                    pass
        _, _, questions = tool.assignment_notebooks(md, exercises_only=True)
        for part in (p for q in questions for p in q.auto):
            if callable(ns.get(part.function)):
                found[part.exercise] = ns[part.function]
    return found


SOLUTIONS = _solutions()


def _moved(value, rng: np.random.Generator, dtype):
    """``value`` in ``dtype`` (float tensors and arrays only), each entry moved by 1-4 ulps of that dtype."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        arr = _moved(value.detach().cpu().numpy(), rng, dtype)
        return torch.from_numpy(arr)
    if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
        arr = value.astype(dtype)
        eps = np.finfo(dtype).eps
        steps = rng.integers(1, 5, arr.shape) * rng.choice([-1.0, 1.0], arr.shape)
        symmetric = arr.ndim == 2 and arr.shape[0] == arr.shape[1] and np.array_equal(arr, arr.T)
        if symmetric:  # a Gram or a weight matrix stays symmetric, its diagonal as it was
            steps = np.triu(steps, 1) + np.triu(steps, 1).T
        return (arr * (1 + steps * eps).astype(dtype)).astype(dtype)
    if isinstance(value, float) and math.isfinite(value) and value not in (0.0, 1.0):
        return float(value * (1 + int(rng.integers(1, 5)) * float(np.finfo(np.float64).eps)))
    return value


def _cases(name: str) -> list[dict]:
    spec = EXERCISES[name]
    return spec.public_cases() + spec.hidden_cases(b"robustness secret", "ada") + \
        spec.hidden_cases(b"robustness secret", "grace")


@pytest.mark.parametrize("name", sorted(SOLUTIONS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["float64", "float32"])
@pytest.mark.parametrize("threads", [1, 2])
def test_the_chapter_solution_passes_every_case_on_any_machine(name, dtype, threads):
    spec = EXERCISES[name]
    rng = np.random.default_rng(threads * 7 + (dtype == np.float32))
    cases = [{k: _moved(v, rng, dtype) for k, v in case.items()} for case in _cases(name)]
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with threadpool_limits(limits=threads):
            verdicts = spec.verdicts(cases, collect(SOLUTIONS[name], cases, spec.watched()))
    finally:
        torch.set_num_threads(before)
    failed = [(i, v) for i, v in enumerate(verdicts) if v is not None]
    assert not failed, f"{name}: case {failed[0][0]} of {len(cases)}: {failed[0][1]}"


def test_every_graded_exercise_of_a_chapter_has_its_solution_here():
    tool = _tool()
    graded = {p.exercise for c in CHAPTERS
              for q in tool.assignment_notebooks(ROOT / "book" / f"{c}.md", exercises_only=True)[2] for p in q.auto}
    assert graded and graded <= set(SOLUTIONS), sorted(graded - set(SOLUTIONS))


def test_a_solution_off_by_more_than_the_rule_fails():
    """The rule allows rounding, not a wrong answer: the solution times (1 + 1e-5) fails its check."""
    for name in ("etf_cost_ratio", "scl_collapse_k1", "bound_ratio"):
        spec, solution = EXERCISES[name], SOLUTIONS[name]
        cases = spec.public_cases()
        off = collect(lambda **kw: 1.00001 * np.asarray(solution(**kw), dtype=float), cases)
        assert any(v is not None for v in spec.verdicts(cases, off)), name
