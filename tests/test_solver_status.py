"""Status contract of every UFM solver (cvxpy's discipline, see ``ncbook._status``).

"optimal" only when the certificate holds; "inaccurate" is returned with an
``InaccurateSolutionWarning``; no usable solution raises ``SolverError``.
"""

import warnings

import numpy as np
import pytest
import torch

import ncbook
from ncbook import InaccurateSolutionWarning, SolverError
from ncbook.losses import supcon_weights
from ncbook.ufm import fit_contrastive_ufm, fit_free_embeddings, fit_prototypes, ridge_optimum, train_ufm


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error", InaccurateSolutionWarning)
        return fn(*args, **kwargs)


def test_status_vocabulary_is_exported():
    assert ncbook.SolverError is SolverError and issubclass(SolverError, RuntimeError)
    assert issubclass(InaccurateSolutionWarning, UserWarning)


# ---- train_ufm ---------------------------------------------------------------------------------

def test_train_ufm_certified_run_is_optimal_and_silent():
    res = _quiet(train_ufm, [20, 20, 2], 4, steps=300, record_every=300)
    assert res.status == "optimal" and res.grad_norm <= 1e-6


def test_train_ufm_short_ridge_run_is_inaccurate_with_a_warning():
    with pytest.warns(InaccurateSolutionWarning, match=r"train_ufm: solution inaccurate \(gradient norm"):
        res = train_ufm([5, 5, 1], 3, lam_w=1e-2, lam_h=1e-2, optimizer="gd", steps=3)
    assert res.status == "inaccurate" and res.grad_norm > 1e-6


def test_train_ufm_divergence_is_not_silent():
    # plain GD with an absurd step: the objective overflows; the last finite iterate comes back
    with pytest.warns(InaccurateSolutionWarning, match="non-finite objective at step"):
        res = train_ufm([5, 5, 1], 3, lam_w=1.0, lam_h=1.0, optimizer="gd", lr=1e6, steps=50)
    assert res.status == "inaccurate"
    assert torch.isfinite(res.W).all() and torch.isfinite(res.H).all() and np.isfinite(res.objective)


def test_train_ufm_without_a_finite_start_raises():
    with pytest.raises(SolverError, match="not finite at the start"):
        train_ufm([5, 5, 1], 3, lam_w=1.0, lam_h=1.0, init_scale=1e200, steps=5)


# ---- ridge_optimum -----------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["fista", "cvxpy"])
def test_ridge_optimum_optimal_route(method):
    assert _quiet(ridge_optimum, [5, 5, 1], 1e-2, method=method).status == "optimal"


def test_ridge_optimum_iteration_limit_is_inaccurate():
    with pytest.warns(InaccurateSolutionWarning, match="ridge_optimum: solution inaccurate"):
        assert ridge_optimum([5, 1], 1e-4, max_iter=3).status == "inaccurate"


# ---- free-embedding fits -----------------------------------------------------------------------

def test_free_embedding_fit_status():
    w = supcon_weights(torch.tensor([0, 0, 1, 1]))
    fit = _quiet(fit_free_embeddings, w, temperature=0.5, dim=3, similarity="euclidean")
    assert fit.status == "optimal"
    with pytest.warns(InaccurateSolutionWarning, match=r"fit_free_embeddings: solution inaccurate \(largest gradient"):
        fit = fit_free_embeddings(w, temperature=0.5, dim=3, adam_steps=1, lbfgs_steps=0)
    assert fit.status == "inaccurate"
    with pytest.raises(SolverError, match="not finite"):
        fit_free_embeddings(w, temperature=0.5, dim=3, adam_steps=0, lbfgs_steps=0, init=np.full((4, 3), np.nan))


def test_prototype_fit_status():
    om = torch.eye(2, dtype=torch.float64)
    assert _quiet(fit_prototypes, [3, 1], om, temperature=0.5, dim=2).status == "optimal"
    with pytest.warns(InaccurateSolutionWarning, match="fit_prototypes"):
        assert fit_prototypes([3, 1], om, temperature=0.5, dim=2, adam_steps=1, lbfgs_steps=0).status == "inaccurate"


# ---- contrastive UFM ---------------------------------------------------------------------------

def test_contrastive_ufm_status():
    torch.set_num_threads(1)
    assert _quiet(fit_contrastive_ufm, [2, 1, 1], 1, steps=3000, lr=1.0, tol=1e-8).status == "optimal"
    with pytest.warns(InaccurateSolutionWarning, match="fit_contrastive_ufm"):
        assert fit_contrastive_ufm([2, 1, 1], 1, steps=2).status == "inaccurate"
