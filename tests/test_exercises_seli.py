"""Autograder checks of the SELI chapter: the reference passes, planted mistakes fail helpfully."""

import numpy as np
import torch
import torch.nn.functional as F

from ncbook.exercises import check_log_mean_ce, check_minority_norm_ratio, check_sel_matrix, check_seli_classifier_gram
from ncbook.geometry import sel_matrix, seli_geometry, seli_step_closed_form
from ncbook.ufm import log_mean_ce


def test_sel_matrix_check():
    assert check_sel_matrix(sel_matrix)

    def one_hot_only(labels, num_classes):  # forgot to centre
        return np.eye(num_classes)[np.asarray(labels)].T

    res = check_sel_matrix(one_hot_only)
    assert not res and "expected" in res.message and "labels=" in res.message

    def transposed(labels, num_classes):  # PyTorch (n, C) instead of the paper's (C, n)
        return sel_matrix(labels, num_classes).T

    res = check_sel_matrix(transposed)
    assert not res and "shape" in res.message


def test_seli_classifier_gram_check():
    assert check_seli_classifier_gram(lambda counts: seli_geometry(counts).classifier_gram)

    def no_square_root(counts):
        c = len(counts)
        p = np.eye(c) - 1 / c
        return p @ np.diag(counts) @ p

    res = check_seli_classifier_gram(no_square_root)
    assert not res and "counts=" in res.message and "max error" in res.message

    def not_implemented(counts):
        raise NotImplementedError

    assert "not implemented yet" in check_seli_classifier_gram(not_implemented).message


def test_minority_norm_ratio_check():
    assert check_minority_norm_ratio(lambda **kw: seli_step_closed_form(**kw)["w_norm_ratio"])

    def squared(ratio, num_majority, num_minority):  # ratio of squared norms
        return seli_step_closed_form(ratio, num_majority, num_minority)["w_norm_ratio"] ** 2

    res = check_minority_norm_ratio(squared)
    assert not res and "ratio=10.0" in res.message


def test_log_mean_ce_check():
    assert check_log_mean_ce(lambda logits, labels: log_mean_ce(logits, labels))

    def naive(logits, labels):  # underflows to log(0) = -inf on separated logits
        return torch.log(F.cross_entropy(logits, labels))

    res = check_log_mean_ce(naive)
    assert not res and "-inf" in res.message
