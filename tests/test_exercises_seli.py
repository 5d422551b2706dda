"""Autograder checks of the SELI chapter: independent solutions pass, forwarding and planted mistakes fail helpfully."""

import numpy as np
import torch
import torch.nn.functional as F

from ncbook.exercises import check_log_mean_ce, check_minority_norm_ratio, check_sel_matrix, check_seli_classifier_gram
from ncbook.geometry import sel_matrix, seli_geometry, seli_step_closed_form
from ncbook.ufm import log_mean_ce


def my_sel_matrix(labels, num_classes):  # the chapter's solution
    y = np.asarray(labels)
    onehot = np.zeros((num_classes, y.size))
    onehot[y, np.arange(y.size)] = 1.0
    return onehot - 1.0 / num_classes


def my_classifier_gram(counts):
    c = len(counts)
    p = np.eye(c) - 1.0 / c
    vals, vecs = np.linalg.eigh(p @ np.diag(np.asarray(counts, dtype=float)) @ p)
    return (vecs * np.sqrt(np.clip(vals, 0, None))) @ vecs.T


def my_minority_norm_ratio(ratio, num_majority, num_minority):
    k_maj, k_min = num_majority, num_minority
    c = k_maj + k_min
    mu = (ratio * k_min + k_maj) / c
    maj = np.sqrt(ratio) * (1 - 1 / k_maj) + np.sqrt(mu) * k_min / (c * k_maj)
    mino = (1 - 1 / k_min) + np.sqrt(mu) * k_maj / (c * k_min)
    return np.sqrt(mino / maj)


def my_log_mean_ce(logits, labels):  # log-sum-exp of log CE_i, exact for separated logits
    others = logits.masked_fill(F.one_hot(labels, logits.shape[1]).bool(), -float("inf"))
    s = torch.logsumexp(others - logits.gather(1, labels[:, None]), dim=1)  # log sum_j exp(z_j - z_y)
    log_ce = torch.where(s < -30, s, torch.log(F.softplus(s)))              # log log(1 + e^s)
    return torch.logsumexp(log_ce, 0) - np.log(len(labels))


def test_sel_matrix_check():
    assert check_sel_matrix(my_sel_matrix)

    def one_hot_only(labels, num_classes):  # forgot to centre
        return np.eye(num_classes)[np.asarray(labels)].T

    res = check_sel_matrix(one_hot_only)
    assert not res and "expected" in res.message and "labels=" in res.message

    def transposed(labels, num_classes):  # PyTorch (n, C) instead of the paper's (C, n)
        return my_sel_matrix(labels, num_classes).T

    res = check_sel_matrix(transposed)
    assert not res and "shape" in res.message


def test_submitting_the_package_function_fails():
    res = check_sel_matrix(sel_matrix)
    assert not res and "ncbook.geometry.sel_matrix itself" in res.message

    def forwards(labels, num_classes):
        return sel_matrix(labels, num_classes)

    res = check_sel_matrix(forwards)
    assert not res and "calls ncbook.geometry.sel_matrix" in res.message
    res = check_seli_classifier_gram(lambda counts: seli_geometry(counts).classifier_gram)
    assert not res and "seli_geometry" in res.message
    assert not check_minority_norm_ratio(lambda **kw: seli_step_closed_form(**kw)["w_norm_ratio"])
    assert not check_log_mean_ce(lambda logits, labels: log_mean_ce(logits, labels))


def test_renamed_parameter_names_the_expected_signature():
    def renamed(labels, C):
        return my_sel_matrix(labels, C)

    res = check_sel_matrix(renamed)
    assert not res and "renamed(labels, C)" in res.message and "(labels, num_classes)" in res.message
    assert "TypeError" not in res.message.split("(")[0]


def test_matrices_print_on_aligned_lines():
    res = check_sel_matrix(lambda labels, num_classes: 2 * my_sel_matrix(labels, num_classes))
    lines = res.message.splitlines()
    assert len(lines) >= 6  # expected and got each span one line per row
    expected_at = next(i for i, line in enumerate(lines) if "expected (shape (3, 2))" in line)
    rows = lines[expected_at + 1:expected_at + 4]
    assert [r.index("[") for r in rows][1:] == [rows[1].index("[")] * 2  # rows start in one column
    assert all(r.rstrip().endswith("]") or r.rstrip().endswith("]]") for r in rows)


def test_seli_classifier_gram_check():
    assert check_seli_classifier_gram(my_classifier_gram)

    def no_square_root(counts):
        c = len(counts)
        p = np.eye(c) - 1 / c
        return p @ np.diag(counts) @ p

    res = check_seli_classifier_gram(no_square_root)
    assert not res and "counts=" in res.message and "largest error" in res.message

    def not_implemented(counts):
        raise NotImplementedError

    assert "not implemented yet" in check_seli_classifier_gram(not_implemented).message


def test_minority_norm_ratio_check():
    assert check_minority_norm_ratio(my_minority_norm_ratio)

    def squared(ratio, num_majority, num_minority):  # ratio of squared norms
        return my_minority_norm_ratio(ratio, num_majority, num_minority) ** 2

    res = check_minority_norm_ratio(squared)
    assert not res and "ratio=10.0" in res.message


def test_log_mean_ce_check():
    assert check_log_mean_ce(my_log_mean_ce)

    def naive(logits, labels):  # underflows to log(0) = -inf on separated logits
        return torch.log(F.cross_entropy(logits, labels))

    res = check_log_mean_ce(naive)
    assert not res and "-inf" in res.message and "nan" not in res.message
    assert "expected -800" in res.message and "non-finite" in res.message


def _grid_collapse_lambda(counts, grid=np.geomspace(1e-4, 1e-1, 40)):
    """An independent solution: the first grid point where the minority classifiers coincide."""
    from ncbook import geometry, ufm
    for lam in grid:
        w = ufm.ridge_optimum(counts, lam).classifiers
        if np.linalg.norm(w[2:], axis=1).min() == 0 or geometry.cosine_matrix(w)[2, 3] > 1 - 1e-6:
            return lam
    return np.nan


def test_check_collapse_lambda():
    from ncbook.exercises import check_collapse_lambda
    assert check_collapse_lambda(_grid_collapse_lambda)
    res = check_collapse_lambda(lambda counts: 4 * _grid_collapse_lambda(counts))   # too large
    assert not res and "too large" in res.message
    res = check_collapse_lambda(lambda counts: _grid_collapse_lambda(counts) / 4)   # too small
    assert not res and "do not coincide" in res.message

    def stub(counts):
        raise NotImplementedError
    assert "not implemented yet" in check_collapse_lambda(stub).message
