"""One training loop for every chapter.

Letters: ``n`` samples, ``C`` classes, ``d`` feature dimension, ``b`` batch size.
Models follow the :mod:`ncbook.models` protocol (``forward_features``, ``classifier``).

Loss protocol (:mod:`ncbook.train._core`): ``loss_fn(logits, labels)`` returning a scalar; a
:class:`~ncbook.train._core.FeatureLoss` (``needs_features = True``) is called as
``loss_fn(logits, labels, features)``; an :class:`~ncbook.train._core.EpochAware` loss
(``set_epoch(epoch)``) is told the epoch at the start of every epoch (DRW switches, EMA resets).
If it is an ``nn.Module`` its ``state_dict()`` is checkpointed and restored on resume.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch
from torch import nn
from torch.nn import functional as F

from .._validation import check_in, check_nonnegative, check_positive
from ..metrics import neural_collapse, per_class_accuracy
from ..profiles import default_device, native_bf16
from ._checkpoint import load_checkpoint, rng_state, save_checkpoint, seed_everything, set_rng_state
from ._core import EpochAware, call_loss, check_finite, run_steps
from ._distributed import is_main_process, rank, world_size

__all__ = ["History", "evaluate", "fit", "lr_lambda", "mittag_leffler_alpha"]

SCHEDULES = ("cosine", "step", "constant", "mittag_leffler")


@dataclass
class History:
    """Per-epoch records of a run.

    ``history[key]`` is the list of that key over epochs; ``history.records`` the dicts;
    ``history.final`` the last record.
    """

    records: list = field(default_factory=list)

    def __getitem__(self, key: str) -> list:
        return [r.get(key) for r in self.records]

    def __len__(self) -> int:
        return len(self.records)

    @property
    def final(self) -> dict:
        return self.records[-1] if self.records else {}

    def keys(self) -> list:
        return list(self.records[0]) if self.records else []


def _mittag_leffler_neg(z: float, alpha: float) -> float:
    """``E_alpha(-z)`` for ``z >= 0``: its power series below 1, its leading asymptotic term from 1 on."""
    if z < 1.0:
        return max(sum((-z) ** k / math.gamma(alpha * k + 1) for k in range(32)), 0.0)
    return max(1.0 / (z * math.gamma(1.0 - alpha)), 0.0) if alpha < 1 else math.exp(-z)


def mittag_leffler_alpha(counts) -> float:
    r"""Order :math:`\alpha = 1/4 + 3/4\, H(n)/\log C` of the Mittag-Leffler schedule for class counts ``n``.

    ``H`` is the entropy of the class frequencies: balanced data give 1 (exponential-like decay),
    long tails a smaller order and a heavier tail of the learning rate.

    Parameters
    ----------
    counts : array-like of shape (C,), positive

    Returns
    -------
    float in ``[0.25, 1]``.

    References
    ----------
    The training script of the public code of Wang et al., arXiv:2605.10047 (the scheduler there;
    not described in the paper).

    Examples
    --------
    >>> mittag_leffler_alpha([10, 10, 10, 10])
    1.0
    """
    n = torch.as_tensor(counts, dtype=torch.float64)
    if n.ndim != 1 or n.numel() < 2 or bool((n <= 0).any()):
        raise ValueError(f"counts must be at least 2 positive numbers; got {counts!r}.")
    p = n / n.sum()
    return float(0.25 + 0.75 * (-(p * p.log()).sum() / math.log(n.numel())))


def lr_lambda(step: int, *, total_steps: int, warmup_steps: int, schedule: str, milestones=(), gamma: float = 0.1,
              alpha: float = 1.0) -> float:
    r"""Learning-rate multiplier at optimisation step ``step`` (0-based).

    Linear warm-up over ``warmup_steps``, then ``"cosine"`` decay to 0 at ``total_steps``,
    ``"step"`` decay by ``gamma`` at each milestone (in steps), ``"constant"``, or
    ``"mittag_leffler"``: :math:`E_\alpha(-z)` of the time after warm-up, the schedule of the
    inverse-reweighting paper's public code. Without a milestone :math:`z = s/(1-s)` with
    :math:`s` the fraction of post-warm-up steps done; with a milestone (the switch, in steps) :math:`z`
    runs linearly from 0 to 1 up to it and then as :math:`1 + s_2/(1-s_2)` over the remaining steps,
    where the asymptotic :math:`1/(z\,\Gamma(1-\alpha))` is used. ``alpha`` comes from
    :func:`mittag_leffler_alpha`.
    """
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if schedule == "mittag_leffler":
        eps = 1e-6
        t, span = step - warmup_steps, max(total_steps - warmup_steps, 1)
        switch = milestones[0] - warmup_steps if milestones else None
        if switch is None or switch <= 0 or switch >= span:
            frac = min(t / span, 1 - eps)
            return _mittag_leffler_neg(frac / (1 - frac), alpha)
        if t < switch:
            return _mittag_leffler_neg((1 - eps) * t / switch, alpha)
        frac = min((t - switch) / max(span - switch, 1), 1 - eps)
        return _mittag_leffler_neg(1 + frac / (1 - frac + eps), alpha)
    if schedule == "cosine":
        span = max(total_steps - warmup_steps, 1)
        return 0.5 * (1 + math.cos(math.pi * min(step - warmup_steps, span) / span))
    if schedule == "step":
        return gamma ** sum(step >= m for m in milestones)
    return 1.0


@torch.no_grad()
def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, batch_size: int = 1024, device=None) -> dict:
    """Logits, features and per-class accuracy and loss of ``model`` on ``(x, y)`` in eval mode.

    Parameters
    ----------
    model : nn.Module following the :mod:`ncbook.models` protocol
    x : Tensor of shape (n, ...)
    y : LongTensor of shape (n,)

    Returns
    -------
    dict with ``logits`` (n, C), ``features`` (n, d), ``labels``, ``preds`` (all on CPU),
    ``acc`` (float), ``class_acc`` (list of C floats, NaN for absent classes),
    ``class_loss`` (list of C mean cross-entropies, NaN for absent classes).
    """
    device = next(model.parameters()).device if device is None else torch.device(device)
    was_training = model.training
    model.eval()
    outs, feats = [], []
    for i in range(0, x.shape[0], batch_size):
        logits, h = model.forward_features(x[i: i + batch_size].to(device))
        outs.append(logits.float().cpu())
        feats.append(h.float().cpu())
    model.train(was_training)
    logits, feats, y = torch.cat(outs), torch.cat(feats), y.cpu()
    c = logits.shape[1]
    ce = F.cross_entropy(logits.double(), y, reduction="none")
    counts = torch.bincount(y, minlength=c).double()
    class_loss = torch.zeros(c, dtype=torch.float64).index_add_(0, y, ce) / counts
    class_loss[counts == 0] = float("nan")
    preds = logits.argmax(1)
    return {
        "logits": logits, "features": feats, "labels": y, "preds": preds,
        "acc": float((preds == y).double().mean()),
        "class_acc": per_class_accuracy(preds, y, c).tolist(),
        "class_loss": class_loss.tolist(),
    }


def _make_optimizer(model, optimizer, lr, momentum, weight_decay):
    if optimizer == "sgd":
        return torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
    return torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)


def _epoch_record(model, epoch, train, test, losses, seconds, nc_now):
    rec = {"epoch": epoch, "train_loss": sum(losses) / max(len(losses), 1), "seconds": seconds}
    ev = evaluate(model, *train)
    rec["train_acc"], rec["class_loss"], rec["train_class_acc"] = ev["acc"], ev["class_loss"], ev["class_acc"]
    if nc_now:
        w = model.classifier.weight.detach()
        bias = None if model.classifier.bias is None else model.classifier.bias.detach()
        rec.update(neural_collapse(ev["features"], ev["labels"], w, bias=bias))
    if test is not None:
        et = evaluate(model, *test)
        rec["test_acc"], rec["class_acc"] = et["acc"], et["class_acc"]
    return rec


def _check_same_run(path, saved: dict, asked: dict) -> None:
    diff = {k: (saved.get(k), v) for k, v in asked.items() if saved.get(k) != v}
    if diff:
        shown = ", ".join(f"{k}: {a!r} in the checkpoint, {b!r} asked" for k, (a, b) in diff.items())
        raise ValueError(f"{path} belongs to another run ({shown}); delete it or pass another checkpoint_dir.")


class _Features(nn.Module):
    """``forward`` = ``model.forward_features``, so that ``DistributedDataParallel`` sees the call."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model.forward_features(x)


def _data_parallel(model, global_batch: int, device, sync_batchnorm: bool):
    """The forward call and this rank's slice of each global batch (all of it without a process group)."""
    ws = world_size()
    if ws == 1:
        return model.forward_features, slice(None)
    if global_batch % ws:
        raise ValueError(f"the batch of {global_batch} samples does not split over {ws} processes; "
                         f"choose a batch_size (or world size) that divides it.")
    if sync_batchnorm:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    ids = [device.index] if device.type == "cuda" else None
    net = nn.parallel.DistributedDataParallel(_Features(model), device_ids=ids)
    part = global_batch // ws
    return net, slice(rank() * part, (rank() + 1) * part)


def fit(model: nn.Module, loss_fn: Callable, train: tuple, *, epochs: int, batch_size: int = 128, lr: float = 0.05,
        momentum: float = 0.9, weight_decay: float = 5e-4, optimizer: str = "sgd", schedule: str = "cosine",
        warmup_epochs: int = 0, milestones=(), gamma: float = 0.1, schedule_alpha: float = 1.0,
        test: tuple | None = None, nc_every: int = 1,
        checkpoint_dir: str | Path | None = None, seed: int = 0, device=None, augment: Callable | None = None,
        amp: bool = False, progress: bool = True, callback: Callable | None = None,
        sync_batchnorm: bool = False, eval_every: int = 1) -> History:
    """Train ``model`` with minibatch SGD, evaluate every epoch, checkpoint and resume.

    Parameters
    ----------
    model : nn.Module following the :mod:`ncbook.models` protocol
    loss_fn : callable
        See the module docstring for the protocol (features, ``set_epoch``, state).
    train : (x, y)
        Training tensors ``(n, ...)`` and ``(n,)``; moved to ``device`` once (so CIFAR-sized
        sets train from GPU memory).
    epochs : int
        Passes over ``train``; each draws a fresh permutation and drops the last
        partial batch when ``n >= batch_size`` (BatchNorm needs more than one sample).
    batch_size, lr, momentum, weight_decay : numbers
    optimizer : {"sgd", "adamw"}
    schedule : {"cosine", "step", "constant", "mittag_leffler"}
        Applied per step after ``warmup_epochs`` of linear warm-up; ``milestones`` are
        epochs for ``"step"`` (multiply by ``gamma`` at each); for ``"mittag_leffler"`` (see
        :func:`lr_lambda`) the first milestone is the switch epoch and ``schedule_alpha`` the order.
    test : (x, y), optional
        Evaluated every epoch (``test_acc``, per-class ``class_acc``).
    nc_every : int
        Compute NC1-NC4 on the training features every this many epochs (and at the
        last); 0 never.
    checkpoint_dir : path, optional
        Save ``last.pt`` there after every epoch; if it exists when ``fit`` starts, the run
        resumes from it and finishes exactly as an uninterrupted run would. A checkpoint of
        another run (epochs, batch size, lr, sample count, seed, schedule, optimizer or weight
        decay differ) raises ``ValueError``.
    seed : int
        Seeds initialisation-independent randomness (batch order, augmentation, dropout).
        Seed the model's initialisation yourself before building it.
    device : str or torch.device, optional
        Defaults to CUDA when available.
    augment : callable, optional
        ``augment(x_batch, generator) -> x_batch`` applied to training batches only.
    amp : bool
        Mixed precision: bf16 autocast of the training forward pass (so its matrix products, and
        those of their backward pass, run in bf16) where the device multiplies bf16 matrices in
        hardware (:func:`ncbook.native_bf16`: CUDA from compute capability 8.0, CPUs with
        AVX512-BF16 or AMX; on such a CPU a run of the chapters' digits MLPs is 1.8-2.6 times
        faster); float32 elsewhere, without a message. Weights, their gradients, optimiser state,
        the loss and every evaluation stay float32.
    progress : bool
        A ``tqdm.auto`` bar over epochs.
    callback : callable, optional
        ``callback(epoch, model, record)`` after each epoch's checkpoint.
    sync_batchnorm : bool
        Under ``torchrun`` (see :mod:`ncbook.train._distributed`): convert BatchNorm layers to
        ``SyncBatchNorm`` (CUDA only), so that batch statistics cover the global batch.

    eval_every : int
        Evaluate on ``train`` (and ``test``) every this many epochs and always at the last
        epoch (and on NC epochs); 0: at the last epoch only. Other epochs record only
        ``epoch``, ``train_loss`` and ``seconds``. Evaluation never touches the training state,
        so the parameters are the same for every value.

    Notes
    -----
    Under ``torchrun`` with ``W`` processes each rank trains on its ``batch_size / W`` slice of every
    global batch (the permutation and the augmentation are drawn identically on every rank) through
    ``DistributedDataParallel``; rank 0 alone writes the checkpoint and shows progress; every rank
    evaluates and returns the same history. A checkpoint resumes under any world size that divides
    the batch. A loss with state (EMAs, batch counts) sees only its rank's slice; rank 0's state is
    checkpointed.

    Returns
    -------
    History with per-epoch ``epoch``, ``train_loss``, ``train_acc``, ``class_loss`` (train,
    per class), ``train_class_acc``, ``test_acc``, ``class_acc`` (test, per class),
    ``seconds`` and, on NC epochs, ``nc1``, ``nc2_w``, ``nc2_m``, ``nc3``, ``nc3_zhu``, ``nc4``.

    Raises
    ------
    ValueError
        On bad arguments, or when the loss becomes NaN or infinite (the message gives
        the epoch and step; lower the learning rate).
    """
    if epochs < 1:
        raise ValueError(f"epochs must be >= 1; got {epochs}.")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1; got {batch_size}.")
    check_positive("lr", lr)
    check_nonnegative("weight_decay", weight_decay)
    check_in("schedule", schedule, SCHEDULES)
    check_in("optimizer", optimizer, ("sgd", "adamw"))
    if eval_every < 0:
        raise ValueError(f"eval_every must be >= 0 (0: evaluate at the last epoch only); got {eval_every}.")
    device = default_device() if device is None else torch.device(device)
    x, y = train[0].to(device), train[1].to(device)
    n = x.shape[0]
    drop_last = n >= batch_size
    steps_per_epoch = n // batch_size if drop_last else 1
    model.to(device)
    if isinstance(loss_fn, nn.Module):
        loss_fn.to(device)
    use_amp = bool(amp) and native_bf16(device)
    forward, shard = _data_parallel(model, batch_size if drop_last else n, device, sync_batchnorm)
    opt = _make_optimizer(model, optimizer, lr, momentum, weight_decay)
    total = epochs * steps_per_epoch
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_lambda(
        s, total_steps=total, warmup_steps=warmup_epochs * steps_per_epoch, schedule=schedule,
        milestones=[m * steps_per_epoch for m in milestones], gamma=gamma, alpha=schedule_alpha))
    gen = torch.Generator(device="cpu").manual_seed(seed)
    aug_gen = torch.Generator(device=device).manual_seed(seed + 1)
    history, start = History(), 0
    ckpt = None if checkpoint_dir is None else Path(checkpoint_dir) / "last.pt"
    run_config = {"epochs": int(epochs), "batch_size": int(batch_size), "lr": float(lr), "n": int(n), "seed": int(seed),
                  "schedule": schedule, "optimizer": optimizer, "weight_decay": float(weight_decay)}
    if ckpt is not None and ckpt.exists():
        state = load_checkpoint(ckpt, map_location="cpu")  # RNG states must stay on the CPU; load_state_dict moves the rest
        _check_same_run(ckpt, state.get("config", run_config), run_config)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        if isinstance(loss_fn, nn.Module):
            loss_fn.load_state_dict(state["loss"])
        gen.set_state(state["sampler"])
        aug_gen.set_state(state["augment"])
        set_rng_state(state["rng"])
        history.records = list(state["history"])
        start = state["epoch"] + 1
    else:
        seed_everything(seed)
    bar = range(start, epochs)
    progress = progress and is_main_process()
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(bar, total=epochs, initial=start, desc="epochs", leave=False)
    for epoch in bar:
        t0 = time.perf_counter()
        if isinstance(loss_fn, EpochAware):
            loss_fn.set_epoch(epoch)
        model.train()
        perm = torch.randperm(n, generator=gen).to(device)

        def loss_at(s):  # the sampler and step function of supervised training
            idx = perm[s * batch_size:(s + 1) * batch_size] if drop_last else perm
            xb, yb = x[idx], y[idx]
            if augment is not None:
                xb = augment(xb, aug_gen)  # the whole global batch on every rank: same draws as one process
            xb, yb = xb[shard], yb[shard]
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_amp):
                logits, feats = forward(xb)
            return call_loss(loss_fn, logits.float(), yb, feats.float())

        losses = run_steps(opt, sched, range(steps_per_epoch), loss_at).double()
        if world_size() > 1:  # every rank logs (and checks) the mean over ranks
            torch.distributed.all_reduce(losses)
            losses /= world_size()
        losses = losses.cpu()
        check_finite(losses, epoch=epoch, first_step=0, lr=lr)
        nc_now = nc_every > 0 and ((epoch + 1) % nc_every == 0 or epoch == epochs - 1)
        # --- evaluation switch (eval_every): skipping an evaluation changes no parameter update
        eval_now = nc_now or epoch == epochs - 1 or (eval_every > 0 and (epoch + 1) % eval_every == 0)
        if eval_now:
            rec = _epoch_record(model, epoch, (x, y), test, losses.tolist(), time.perf_counter() - t0, nc_now)
        else:
            rec = {"epoch": epoch, "train_loss": sum(losses.tolist()) / max(len(losses), 1), "seconds": time.perf_counter() - t0}
        # --- end of the evaluation switch
        history.records.append(rec)
        if ckpt is not None and is_main_process():
            save_checkpoint(ckpt, {
                "model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                "loss": loss_fn.state_dict() if isinstance(loss_fn, nn.Module) else {},
                "sampler": gen.get_state(), "augment": aug_gen.get_state().cpu(), "rng": rng_state(),
                "history": history.records, "epoch": epoch, "config": run_config,
            })
        if progress:
            bar.set_postfix(loss=f"{rec['train_loss']:.3f}", acc=f"{rec.get('test_acc', rec.get('train_acc', float('nan'))):.3f}")
        if callback is not None:
            callback(epoch, model, rec)
    return history
