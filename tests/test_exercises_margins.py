"""The MR2 autograder checks pass the reference and fail planted mistakes with useful messages."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ncbook.exercises import check_margin_cross_entropy, check_mr2_margins, check_representation_margin_loss
from ncbook.losses import margin_cross_entropy, representation_margin_loss
from ncbook.margins import mr2_margins
from ncbook.plotting import group_accuracy_bars, variability_scatter

torch.set_num_threads(1)


def naive_mr2_margins(mean_sq_norms, mean_sq_devs, c_bar):  # the chapter's solution
    t = (torch.as_tensor(mean_sq_norms) + torch.as_tensor(mean_sq_devs)) ** (1 / 3)
    return c_bar * len(t) * t / t.sum()


def naive_margin_ce(logits, labels, margins, reduction="none"):  # one row at a time
    out = torch.stack([torch.logsumexp(logits[i] / margins[labels[i]], 0) - logits[i, labels[i]] / margins[labels[i]]
                       for i in range(len(labels))])
    return out if reduction == "none" else out.mean()


def naive_rep_loss(features, labels, sbar, *, skip_singletons=True):  # loops over anchors and positives
    values = []
    for i in range(len(labels)):
        d2 = [((features[j] - features[i]) ** 2).sum() - 2 * sbar for j in range(len(labels))
              if j != i and labels[j] == labels[i]]
        if d2:
            values.append(torch.log1p(torch.exp(torch.stack(d2)).sum()))
        elif not skip_singletons:
            values.append(torch.zeros((), dtype=features.dtype))
    return torch.stack(values).mean()


def test_forwarding_to_the_package_is_rejected():
    res = check_mr2_margins(lambda mean_sq_norms, mean_sq_devs, c_bar: mr2_margins(mean_sq_norms, mean_sq_devs, c_bar=c_bar))
    assert not res and "calls ncbook.margins.mr2_margins" in res.message
    assert "itself" in check_margin_cross_entropy(margin_cross_entropy).message
    res = check_representation_margin_loss(lambda features, labels, sbar: representation_margin_loss(features, labels, sbar))
    assert not res and "representation_margin_loss" in res.message


def test_mr2_margins_check():
    assert check_mr2_margins(naive_mr2_margins)

    def square_root(mean_sq_norms, mean_sq_devs, c_bar):  # wrong exponent
        t = (mean_sq_norms + mean_sq_devs).sqrt()
        return c_bar * len(t) * t / t.sum()

    res = check_mr2_margins(square_root)
    assert not res and "expected [0.7645" in res.message and "mean_sq_devs=[ 1.  4. 23.]" in res.message

    def no_c_bar(mean_sq_norms, mean_sq_devs, c_bar):
        t = (mean_sq_norms + mean_sq_devs) ** (1 / 3)
        return len(t) * t / t.sum()

    res = check_mr2_margins(no_c_bar)
    assert not res and "c_bar=0.7" in res.message

    def todo(mean_sq_norms, mean_sq_devs, c_bar):
        raise NotImplementedError

    assert "not implemented yet" in check_mr2_margins(todo).message


def test_margin_cross_entropy_check():
    assert check_margin_cross_entropy(naive_margin_ce)

    def all_rows_by_column(logits, labels, margins):  # divides column c by gamma_c (wrong)
        return F.cross_entropy(logits / margins, labels, reduction="none")

    res = check_margin_cross_entropy(all_rows_by_column)
    assert not res and "expected [0.10039 0.46437 1.27452]" in res.message

    def mean_instead(logits, labels, margins):
        return naive_margin_ce(logits, labels, margins, reduction="mean")

    res = check_margin_cross_entropy(mean_instead)
    assert not res and "shape ()" in res.message


def test_representation_check():
    assert check_representation_margin_loss(naive_rep_loss)

    def counts_singletons(features, labels, sbar):  # averages over every anchor, singletons as 0
        return naive_rep_loss(features, labels, sbar, skip_singletons=False)

    res = check_representation_margin_loss(counts_singletons)
    assert not res and "expected 0.97408" in res.message

    def no_margin(features, labels, sbar):
        return naive_rep_loss(features, labels, 0.0)

    assert not check_representation_margin_loss(no_margin)


def test_plots_return_axes_with_correlation():
    ax = variability_scatter([1.0, 2.0, 3.0], [0.9, 0.8, 0.6], title="x")
    r = np.corrcoef([1.0, 2.0, 3.0], [0.9, 0.8, 0.6])[0, 1]
    assert ax.get_title() == f"x: r = {r:.2f}" and len(ax.texts) == 3
    with pytest.raises(ValueError, match="same shape"):
        variability_scatter([1.0, 2.0], [0.5])
    ax = group_accuracy_bars({"CE": {"easy": 0.9, "hard": 0.5}, "MR2": {"easy": 0.91, "hard": 0.6}},
                             errors={"CE": {"easy": 0.01, "hard": 0.02}, "MR2": {"easy": 0.01, "hard": 0.02}})
    assert len(ax.patches) == 4 and math.isclose(ax.patches[3].get_height(), 0.6)
    with pytest.raises(ValueError, match="at least one method"):
        group_accuracy_bars({})
