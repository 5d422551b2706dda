r"""Loss imbalance across classes.

Letters: ``C`` classes, ``L_c`` the mean loss of class ``c`` (on the training set,
or in a batch).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._validation import as_float64

__all__ = ["loss_imbalance"]


def loss_imbalance(class_losses: Any) -> torch.Tensor:
    r"""Relative spread of the per-class mean losses, ``rho = std_c(L_c) / mean_c(L_c)``.

    ``rho = 0`` exactly when every class has the same mean loss, which is the case at
    a simplex-ETF neural-collapse configuration with equal norms (by symmetry). The
    standard deviation is the population one (divide by ``C``). NaN entries (classes
    without samples) are ignored. Leading dimensions are kept: a ``(T, C)`` history
    of per-class losses gives ``(T,)``.

    This formula is ours: the inverse-reweighting paper measures a loss imbalance
    too, but its exact definition is not reproduced here.

    Parameters
    ----------
    class_losses : array-like of shape (..., C)
        Per-class mean losses, ``>= 0`` (NaN for an absent class).

    Returns
    -------
    Tensor of shape (...), float64; NaN where the mean loss is 0 or no class is present.

    Raises
    ------
    ValueError
        If a loss is negative or infinite, or the input is a scalar.

    References
    ----------
    Motivated by Wang, Tong, Xie, Gao, "Rethinking Loss Reweighting for Imbalance
    Learning as an Inverse Problem: A Neural Collapse Point of View", ICML 2026,
    arXiv:2605.10047 (equal per-class loss as the target under neural collapse).

    Examples
    --------
    >>> float(loss_imbalance([1.0, 3.0]))
    0.5
    """
    x = class_losses.detach().cpu().double() if isinstance(class_losses, torch.Tensor) else \
        torch.as_tensor(as_float64(class_losses, "class_losses"))
    if x.ndim == 0 or x.shape[-1] == 0:
        raise ValueError(f"class_losses must have shape (..., C) with C >= 1; got shape {tuple(x.shape)}.")
    present = ~torch.isnan(x)
    if bool(torch.isinf(x).any()) or bool(((x < 0) & present).any()):
        raise ValueError(f"class_losses must be finite and >= 0 (NaN for an absent class); got {_short(x)}.")
    k = present.sum(-1).double()
    filled = torch.where(present, x, torch.zeros_like(x))
    mean = filled.sum(-1) / k
    var = torch.where(present, (x - mean.unsqueeze(-1)) ** 2, torch.zeros_like(x)).sum(-1) / k
    return torch.where(mean > 0, var.sqrt() / mean, torch.full_like(mean, float("nan")))


def _short(x: torch.Tensor) -> str:
    return np.array2string(x.numpy(), threshold=8, precision=4)
