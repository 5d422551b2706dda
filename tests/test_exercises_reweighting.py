"""The reweighting chapter's autograder checks: the reference passes, planted mistakes fail helpfully."""

import torch
import torch.nn.functional as F

from ncbook.exercises import (
    check_balanced_batch_loss,
    check_effective_number_weights,
    check_inverse_weights,
    check_loss_imbalance,
    check_macro_factors,
)
from ncbook.metrics import loss_imbalance
from ncbook.reweighting import effective_number_weights, inverse_weights, macro_factors

torch.set_num_threads(1)


def naive_inverse_weights(class_losses, prior=None, alpha=0.0):  # one class at a time
    prior = torch.ones_like(class_losses) if prior is None else prior
    present = [c for c in range(len(class_losses)) if not torch.isnan(class_losses[c])]
    lbar = sum(class_losses[c] for c in present) / len(present)
    return torch.stack([(lbar * class_losses[c] + alpha * prior[c]) / (class_losses[c] ** 2 + alpha)
                        if c in present else prior[c] for c in range(len(class_losses))])


def test_forwarding_to_the_package_is_rejected():
    res = check_inverse_weights(lambda class_losses, prior, alpha: inverse_weights(class_losses, prior=prior, alpha=alpha, eps=0.0))
    assert not res and "calls ncbook.reweighting.inverse_weights" in res.message
    assert "itself" in check_macro_factors(macro_factors).message
    assert not check_effective_number_weights(lambda counts, beta: effective_number_weights(counts, beta))
    assert not check_loss_imbalance(lambda class_losses: loss_imbalance(class_losses))


def test_inverse_weights_check():
    assert check_inverse_weights(naive_inverse_weights)

    def no_nan_handling(class_losses, prior, alpha):
        lbar = class_losses.mean()
        return (lbar * class_losses + alpha * prior) / (class_losses ** 2 + alpha)

    res = check_inverse_weights(no_nan_handling)
    assert not res and "expected" in res.message and "class_losses" in res.message

    def forgot_prior(class_losses, prior, alpha):
        return naive_inverse_weights(class_losses, alpha=alpha)

    res = check_inverse_weights(forgot_prior)
    assert not res and "prior" in res.message


def test_macro_factors_check():
    def by_hand(batch_counts, gamma):
        beta = [max(float(b), 1.0) ** -gamma for b in batch_counts]
        return torch.tensor(beta, dtype=torch.float64) * len(beta) / sum(beta)

    assert check_macro_factors(by_hand)
    res = check_macro_factors(lambda batch_counts, gamma: batch_counts.clamp(min=1) ** -gamma)  # not normalised
    assert not res and "expected" in res.message


def test_effective_number_weights_check():
    def by_hand(counts, beta):
        w = torch.tensor([(1 - beta) / (1 - beta ** int(n)) for n in counts], dtype=torch.float64)
        return w * len(w) / w.sum()

    assert check_effective_number_weights(by_hand)

    def sums_to_one(counts, beta):
        w = (1 - beta) / (1 - beta ** counts.double())
        return w / w.sum()

    res = check_effective_number_weights(sums_to_one)
    assert not res and "largest error" in res.message


def test_loss_imbalance_check():
    assert check_loss_imbalance(lambda class_losses: class_losses.std(correction=0) / class_losses.mean())
    res = check_loss_imbalance(lambda class_losses: class_losses.std() / class_losses.mean())  # sample std
    assert not res and "expected" in res.message


def test_balanced_batch_loss_check():
    def reference(logits, labels, num_classes):
        ce = F.cross_entropy(logits, labels, reduction="none")
        return torch.stack([ce[labels == k].mean() for k in labels.unique()]).mean()

    assert check_balanced_batch_loss(reference)
    res = check_balanced_batch_loss(lambda logits, labels, num_classes: F.cross_entropy(logits, labels))
    assert not res and "expected" in res.message

    def nan_for_absent(logits, labels, num_classes):
        ce = F.cross_entropy(logits, labels, reduction="none")
        return torch.stack([ce[labels == k].mean() for k in range(num_classes)]).mean()

    assert not check_balanced_batch_loss(nan_for_absent)

    def not_implemented(logits, labels, num_classes):
        raise NotImplementedError

    res = check_balanced_batch_loss(not_implemented)
    assert not res and "not implemented" in res.message
