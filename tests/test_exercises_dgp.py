"""The chapter's autograder checks pass the reference and fail planted mistakes helpfully."""

import math

import numpy as np
import torch

from ncbook.dgp import euclidean_dgp
from ncbook.losses import w_info_nce
from ncbook.exercises import check_euclidean_shift, check_simplex_epsilon, check_w_info_nce

torch.set_num_threads(1)


def reference_w_info_nce(z, weights, tau):
    n = z.shape[0]
    off = ~torch.eye(n, dtype=torch.bool)
    u = torch.nn.functional.normalize(z, dim=1)
    s = (u @ u.T / tau).masked_fill(~off, float("-inf"))
    log_q = torch.where(off, s - torch.logsumexp(s, dim=1, keepdim=True), torch.zeros_like(s))
    w = torch.as_tensor(weights) * off
    p = w / w.sum(dim=1, keepdim=True)
    return -(p * log_q).sum(dim=1).mean()


def diagonal_kept(z, weights, tau):
    """Planted bug: the anchor counts itself as a positive and a negative."""
    u = torch.nn.functional.normalize(z, dim=1)
    s = u @ u.T / tau
    p = torch.as_tensor(weights) / torch.as_tensor(weights).sum(dim=1, keepdim=True)
    return -(p * torch.log_softmax(s, dim=1)).sum(dim=1).mean()


def naive_exp(z, weights, tau):
    """Planted bug: exp without log-sum-exp overflows at small tau."""
    n = z.shape[0]
    off = ~torch.eye(n, dtype=torch.bool)
    u = torch.nn.functional.normalize(z, dim=1)
    e = torch.exp(u @ u.T / tau) * off
    q = e / e.sum(dim=1, keepdim=True)
    w = torch.as_tensor(weights) * off
    p = w / w.sum(dim=1, keepdim=True)
    return -(p * torch.log(torch.where(off, q, torch.ones_like(q)))).sum(dim=1).mean()


def test_check_w_info_nce():
    assert check_w_info_nce(reference_w_info_nce)
    res = check_w_info_nce(lambda z, weights, tau: w_info_nce(z, weights, temperature=tau))
    assert not res and "calls ncbook.losses.w_info_nce" in res.message
    res = check_w_info_nce(diagonal_kept)
    assert not res and "expected" in res.message
    res = check_w_info_nce(naive_exp)
    assert not res and ("nan" in res.message or "inf" in res.message or "expected" in res.message)


def test_check_simplex_epsilon():
    assert check_simplex_epsilon(lambda num_classes, tau: math.exp(-num_classes / ((num_classes - 1) * tau)))
    res = check_simplex_epsilon(lambda num_classes, tau: math.exp(-1 / ((num_classes - 1) * tau)))  # forgot the C
    assert not res and "num_classes" in res.message


def test_check_euclidean_shift():
    res = check_euclidean_shift(lambda weights, tau: euclidean_dgp(weights, tau).shift)
    assert not res and "calls ncbook.dgp.euclidean_dgp" in res.message
    def complement(weights, tau):
        w = np.asarray(weights, dtype=float)
        n = len(w)
        v = np.linalg.qr(np.c_[np.ones(n), np.eye(n)[:, : n - 1]])[0][:, 1:]
        d0 = -tau * np.log(w)
        np.fill_diagonal(d0, 0.0)
        j = np.eye(n) - np.ones((n, n)) / n
        return -2 * np.linalg.eigvalsh(v.T @ (-0.5 * j @ d0 @ j) @ v)[0]

    assert check_euclidean_shift(complement)
    # planted bug: forgot the factor 2 (B(delta) = B_0 + (delta / 2) J)
    res = check_euclidean_shift(lambda weights, tau: complement(weights, tau) / 2)
    assert not res and "expected" in res.message
