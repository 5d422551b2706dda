"""The one training core every trainer runs on: draw a batch, compute its loss, take an SGD step.

The trainers differ only in what they hand to :func:`run_steps`: :func:`ncbook.train.fit` draws each
rank's slice of an epoch's permutation and calls a classification loss on logits (and features);
:func:`ncbook.train.fit_contrastive` draws anchors, positives and UCL/SCL negatives; and
:func:`ncbook.train.fit_weighted_contrastive` draws a batch and its prior weights. The loop itself
(zero the gradients, backward, optimiser step, schedule step, keep the loss) and the check that
stops a run whose loss is no longer finite live here once.

What a loss may ask of the loop is written down as two protocols: :class:`FeatureLoss` (it is
called with the penultimate features too) and :class:`EpochAware` (it is told each epoch).
"""

from __future__ import annotations

import contextlib
import functools
from typing import Callable, Iterable, Iterator, Protocol, runtime_checkable

import torch

__all__ = ["EpochAware", "FeatureLoss", "check_finite", "check_feature_model", "check_sgd", "kept_mode", "keeps_mode",
           "run_steps"]


@runtime_checkable
class EpochAware(Protocol):
    """A loss told the epoch at the start of every epoch (DRW switches, EMA resets, batch counts)."""

    def set_epoch(self, epoch: int) -> None: ...


@runtime_checkable
class FeatureLoss(Protocol):
    """A loss that reads the penultimate features: ``needs_features = True`` and
    ``loss(logits (b, C), labels (b,), features (b, d)) -> scalar``."""

    needs_features: bool

    def __call__(self, logits: torch.Tensor, labels: torch.Tensor, features: torch.Tensor) -> torch.Tensor: ...


@contextlib.contextmanager
def kept_mode(model: torch.nn.Module) -> Iterator[torch.nn.Module]:
    """Give ``model`` back in the train/eval mode of every submodule it came in with.

    A trainer switches the model to training mode and an evaluation to eval mode; the caller's next
    steps must not find BatchNorm frozen (eval) or its statistics moving (train) because of that. Each
    submodule's flag is restored, so a model with a frozen part keeps it frozen.
    """
    modes = [(m, m.training) for m in model.modules()]
    try:
        yield model
    finally:
        for m, training in modes:
            m.training = training


def keeps_mode(fn: Callable) -> Callable:
    """Decorate a public function whose first argument is ``model``: it returns the model in the modes it came in.

    A value that is not a module is passed through untouched (the function's own check refuses it).
    """
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        model = args[0] if args else kwargs.get("model")
        if not isinstance(model, torch.nn.Module):
            return fn(*args, **kwargs)
        with kept_mode(model):
            return fn(*args, **kwargs)
    return wrapper


@contextlib.contextmanager
def _eval_mode(model: torch.nn.Module) -> Iterator[torch.nn.Module]:
    """``model`` in eval mode inside the block, in the modes it came in with after it."""
    with kept_mode(model):
        model.eval()
        yield model


def check_feature_model(model):
    """A module with ``features(x) -> (n, d)`` (the contrastive trainers' protocol), else ``TypeError``."""
    from torch import nn

    if not isinstance(model, nn.Module) or not callable(getattr(model, "features", None)):
        raise TypeError(f"model must be a torch.nn.Module with features(x) -> (n, d) (see ncbook.models); "
                        f"got {type(model).__name__}.")
    return model


def check_sgd(*, lr, momentum, weight_decay):
    """The SGD settings every trainer takes, validated once: ``(lr, momentum, weight_decay)`` as floats."""
    from .._validation import check_nonnegative, check_positive

    return (check_positive("lr", lr), check_nonnegative("momentum", momentum),
            check_nonnegative("weight_decay", weight_decay))


def call_loss(loss_fn, logits, labels, features):
    """``loss_fn(logits, labels[, features])`` following the :class:`FeatureLoss` protocol."""
    if getattr(loss_fn, "needs_features", False):
        return loss_fn(logits, labels, features)
    return loss_fn(logits, labels)


def run_steps(optimizer: torch.optim.Optimizer, scheduler, steps: Iterable[int],
              loss_at: Callable[[int], torch.Tensor]) -> torch.Tensor:
    """One optimiser step per ``s`` in ``steps`` on the scalar ``loss_at(s)``; the losses, detached.

    Parameters
    ----------
    optimizer : torch.optim.Optimizer
    scheduler : learning-rate scheduler stepped after every optimiser step
    steps : iterable of int
        Step numbers handed to ``loss_at`` (the trainer's sampler reads them).
    loss_at : callable
        ``loss_at(s)`` draws the batch of step ``s`` and returns its loss (a scalar with a graph).

    Returns
    -------
    Tensor of shape (number of steps,) on the loss's device (no host synchronisation per step).
    """
    losses = []
    for s in steps:
        loss = loss_at(s)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.detach())
    return torch.stack(losses)


def check_finite(losses: torch.Tensor, *, first_step: int, lr: float, epoch: int | None = None) -> None:
    """Raise ``ValueError`` naming the epoch and step of the first loss that is NaN or infinite.

    ``losses[i]`` belongs to step ``first_step + i`` (counted within ``epoch`` when given).
    """
    bad = ~torch.isfinite(losses)
    if bool(bad.any()):
        i = int(torch.nonzero(bad)[0])
        where = f"epoch {epoch}, step {first_step + i}" if epoch is not None else f"step {first_step + i}"
        raise ValueError(f"the loss became {losses[i].item()} at {where}; training stopped. Lower lr (now {lr}).")
