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

import hashlib
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch
import torch.distributed as dist
from torch import nn
from torch.nn import functional as F

from .._validation import (
    check_bool,
    check_callable,
    check_finite,
    check_in,
    check_int,
    check_labels,
    check_nonnegative,
    check_path,
    check_positive,
)
from ..metrics import neural_collapse, per_class_accuracy
from ..profiles import default_device, native_bf16, show_progress
from ._checkpoint import load_checkpoint, rng_state, save_checkpoint, seed_everything, set_rng_state
from ._core import EpochAware, _eval_mode, call_loss, keeps_mode, run_steps
from ._core import check_finite as check_finite_losses
from ._distributed import is_main_process, rank, world_size
from ._fingerprint import RunFingerprint, describe_callable, describe_value, tensor_digest
from ._schedule import SCHEDULES, _check_schedule_options, _multiplier

__all__ = ["History", "evaluate", "fit"]

RESUME = ("auto", "never", "must")


@dataclass
class History:
    """Per-epoch records of a run.

    ``history[key]`` is the list of that key over epochs; ``history.records`` the dicts;
    ``history.final`` the last record. An epoch whose features have no NC metrics (their class means
    coincide, e.g. a network whose features all died) records NaN for ``nc1`` ... ``nc4``, with a warning.
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



def _full_precision(t: torch.Tensor) -> torch.Tensor:
    """float32 for the half types autocast produces; float32 and float64 unchanged."""
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def _check_model(model) -> nn.Module:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module following the ncbook.models protocol; got {type(model).__name__}.")
    if not hasattr(model, "forward_features"):
        raise TypeError(f"model must have forward_features(x) -> (logits, features) (see ncbook.models); "
                        f"{type(model).__name__} has none.")
    return model


def _param_dtype(model: nn.Module) -> torch.dtype | None:
    """The floating dtype of the model's parameters (None for a model without any)."""
    return next((p.dtype for p in model.parameters() if p.is_floating_point()), None)


def _check_xy(name: str, pair, *, allow_none: bool = False, dtype: torch.dtype | None = None):
    """``(x, y)``: a tensor of inputs ``(n, ...)`` with finite values and ``n`` integer labels."""
    if pair is None and allow_none:
        return None
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise TypeError(f"{name} must be a pair (x, y) of tensors; got {type(pair).__name__}.")
    x, y = pair
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must hold a torch.Tensor x (inputs of shape (n, ...)); got {type(x).__name__}.")
    if x.ndim < 2 or x.shape[0] == 0:
        raise ValueError(f"{name} x must have shape (n, ...) with n >= 1 samples; got shape {tuple(x.shape)}.")
    if not x.is_floating_point():
        raise TypeError(f"{name} x must be floating point (the inputs the model takes); got dtype {x.dtype}. "
                        f"Convert (and normalise) it first.")
    if dtype is not None and x.dtype != dtype:
        raise TypeError(f"{name} x has dtype {x.dtype} but the model's parameters are {dtype}; convert one of them.")
    check_finite(f"{name} x", x)
    return x, check_labels(y, name=f"{name} y", n=x.shape[0])


@torch.no_grad()
def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, batch_size: int = 1024, device=None) -> dict:
    """Logits, features and per-class accuracy and loss of ``model`` on ``(x, y)`` in eval mode.

    Parameters
    ----------
    model : nn.Module following the :mod:`ncbook.models` protocol
    x : Tensor of shape (n, ...)
    y : Tensor of shape (n,), integer labels in ``[0, C)``
    batch_size : int, ``>= 1``
    device : str or torch.device, optional
        Defaults to the device of the model's parameters.

    Returns
    -------
    dict with ``logits`` (n, C), ``features`` (n, d), ``labels``, ``preds`` (all on CPU; float32,
    or float64 for a float64 model), ``acc`` (float), ``class_acc`` (list of C floats, NaN for
    absent classes), ``class_loss`` (list of C mean cross-entropies, NaN for absent classes). The forward
    passes run in eval mode; the model comes back in the modes it was given in, its BatchNorm statistics untouched.

    Raises
    ------
    TypeError, ValueError
        If ``model`` is not a module, ``x`` is not a non-empty finite tensor, ``y`` not ``n``
        integer labels in ``[0, C)``, or ``batch_size < 1``.
    """
    _check_model(model)
    x, y = _check_xy("(x, y)", (x, y), dtype=_param_dtype(model))
    batch_size = check_int("batch_size", batch_size, 1)
    out = _evaluate(model, x, y, batch_size=batch_size, device=device)
    if int(y.max()) >= out["logits"].shape[1]:
        raise ValueError(f"y must lie in [0, {out['logits'].shape[1]}) (the model's classes); got maximum {int(y.max())}.")
    return out


@torch.no_grad()
def _evaluate(model, x, y, *, batch_size: int = 1024, device=None) -> dict:
    device = next(model.parameters()).device if device is None else torch.device(device)
    outs, feats = [], []
    with _eval_mode(model):
        for i in range(0, x.shape[0], batch_size):
            logits, h = model.forward_features(x[i: i + batch_size].to(device))
            outs.append(_full_precision(logits).cpu())
            feats.append(_full_precision(h).cpu())
    logits, feats, y = torch.cat(outs), torch.cat(feats), y.cpu()
    c = logits.shape[1]
    if int(y.max()) >= c:
        return {"logits": logits}  # evaluate() names the fault
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
    ev = _evaluate(model, *train)
    rec["train_acc"], rec["class_loss"], rec["train_class_acc"] = ev["acc"], ev["class_loss"], ev["class_acc"]
    if nc_now:
        w = model.classifier.weight.detach()
        bias = None if model.classifier.bias is None else model.classifier.bias.detach()
        try:
            rec.update(neural_collapse(ev["features"], ev["labels"], w, bias=bias))
        except ValueError as err:  # undefined at this epoch: NaN in the record, never a number that reads as one
            warnings.warn(f"epoch {epoch}: the NC metrics are undefined ({err}); recorded as NaN.", RuntimeWarning,
                          stacklevel=2)
            rec.update(dict.fromkeys(("nc1", "nc2_w", "nc2_m", "nc3", "nc3_zhu", "nc4"), float("nan")))
    if test is not None:
        et = _evaluate(model, *test)
        rec["test_acc"], rec["class_acc"] = et["acc"], et["class_acc"]
    return rec


# ----------------------------------------------------------------------------- run settings and fingerprint
@dataclass(frozen=True)
class _FitSettings:
    """fit's own settings, validated once (the fingerprint reads them as they are here)."""

    epochs: int
    batch_size: int
    lr: float
    momentum: float
    weight_decay: float
    optimizer: str
    schedule: str
    warmup_epochs: int
    milestones: tuple
    gamma: float
    schedule_alpha: float
    nc_every: int
    eval_every: int
    seed: int

    @classmethod
    def checked(cls, *, epochs, batch_size, lr, momentum, weight_decay, optimizer, schedule, warmup_epochs, milestones,
                gamma, schedule_alpha, nc_every, eval_every, seed):
        schedule, milestones, gamma, schedule_alpha = _check_schedule_options(
            schedule, milestones, gamma, schedule_alpha, alpha_name="schedule_alpha")
        return cls(
            epochs=check_int("epochs", epochs, 1), batch_size=check_int("batch_size", batch_size, 1),
            lr=check_positive("lr", lr), momentum=check_nonnegative("momentum", momentum),
            weight_decay=check_nonnegative("weight_decay", weight_decay),
            optimizer=check_in("optimizer", optimizer, ("sgd", "adamw")), schedule=schedule,
            warmup_epochs=check_int("warmup_epochs", warmup_epochs, 0), milestones=milestones, gamma=gamma,
            schedule_alpha=schedule_alpha, nc_every=check_int("nc_every", nc_every, 0, what="0: never"),
            eval_every=check_int("eval_every", eval_every, 0, what="0: evaluate at the last epoch only"),
            seed=check_int("seed", seed, 0))


def _has_batchnorm(model: nn.Module) -> bool:
    return any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules())


def _data_field(x, y) -> dict:
    return {"x": describe_value(x), "y": describe_value(y)}


def _run_fingerprint(model, loss_fn, train, test, augment, settings: _FitSettings, use_amp: bool,
                     sync_batchnorm: bool) -> RunFingerprint:
    """Everything that determines the run (see :mod:`ncbook.train._fingerprint`)."""
    state = model.state_dict()
    shapes = {k: [list(v.shape), str(v.dtype)] for k, v in state.items()}
    weights = hashlib.blake2b("".join(tensor_digest(v) for v in state.values()).encode(), digest_size=16).hexdigest()
    per_rank_bn = world_size() > 1 and _has_batchnorm(model) and not sync_batchnorm
    fields = [
        ("model", repr(model)), ("parameter_shapes", shapes), ("initial_weights", weights),
        ("loss", describe_callable(loss_fn)),
        ("train_x", describe_value(train[0])), ("train_y", describe_value(train[1])),
        ("test", None if test is None else _data_field(*test)),
        ("augment", describe_callable(augment)),
        *((k, describe_value(v)) for k, v in vars(settings).items()),
        ("precision", "bf16" if use_amp else "float32"),
        ("batchnorm_world_size", world_size() if per_rank_bn else None),
    ]
    return RunFingerprint(tuple(fields))


def _resume_state(ckpt: Path | None, resume: str, fingerprint: RunFingerprint | None) -> dict | None:
    """The checkpoint to resume from, or None to start afresh; refuses one of another run."""
    if ckpt is None:
        if resume == "must":
            raise ValueError("resume='must' needs a checkpoint_dir to resume from.")
        return None
    if not ckpt.exists():
        if resume == "must":
            raise FileNotFoundError(f"resume='must' but there is no checkpoint at {ckpt}.")
        return None
    if resume == "never":
        return None
    state = load_checkpoint(ckpt, map_location="cpu")  # RNG states must stay on the CPU; load_state_dict moves the rest
    saved = state.get("fingerprint")
    if not isinstance(saved, dict):
        raise ValueError(f"{ckpt} has no run fingerprint (it was written by an older ncbook), so nothing says it is "
                         f"this run. Delete it, pass another checkpoint_dir, or pass resume='never' to start afresh "
                         f"(the checkpoint is then overwritten).")
    diff = fingerprint.differences(saved)
    if diff:
        raise ValueError(f"{ckpt} belongs to another run; these settings differ:\n  " + "\n  ".join(diff) +
                         "\nPass resume='never' to start afresh (the checkpoint is then overwritten), or another "
                         "checkpoint_dir.")
    return state


# ----------------------------------------------------------------------------- distributed
class _Features(nn.Module):
    """``forward`` = ``model.forward_features``, so that ``DistributedDataParallel`` sees the call."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model.forward_features(x)


def _data_parallel(model, global_batch: int, device, sync_batchnorm: bool, find_unused: bool = False):
    """The forward call and this rank's slice of each global batch (all of it without a process group).

    ``find_unused``: a loss that reads the features may leave the classifier without a gradient (as in one
    process, where it then keeps ``grad = None`` and no weight decay); DDP must be told to look for that.
    """
    ws = world_size()
    if ws == 1:
        return model.forward_features, slice(None)
    if global_batch % ws:
        raise ValueError(f"the batch of {global_batch} samples does not split over {ws} processes; "
                         f"choose a batch_size (or world size) that divides it.")
    if sync_batchnorm:
        model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    ids = [device.index] if device.type == "cuda" else None
    net = nn.parallel.DistributedDataParallel(_Features(model), device_ids=ids, find_unused_parameters=find_unused)
    part = global_batch // ws
    return net, slice(rank() * part, (rank() + 1) * part)


def _gather_batch(t: torch.Tensor) -> torch.Tensor:
    """The global batch's rows of ``t`` on every rank, in rank order; only this rank's rows carry a graph."""
    parts = [torch.empty_like(t) for _ in range(world_size())]
    dist.all_gather(parts, t.detach().contiguous())
    parts[rank()] = t
    return torch.cat(parts)


def _global_batch_loss(loss_fn, logits, labels, feats):
    """The loss of the global batch, computed identically on every rank, with a gradient that
    ``DistributedDataParallel``'s average over ranks turns into the global batch's gradient.

    Each rank holds the gradient of the global loss ``L`` with respect to its own rows only; the
    sum over ranks of these is the full gradient. DDP averages, so the value returned is ``L`` and
    its gradient is ``world_size`` times that of ``L``.
    """
    ws = world_size()
    loss = call_loss(loss_fn, _gather_batch(logits), labels, _gather_batch(feats))
    return loss * ws - loss.detach() * (ws - 1)


def _check_same_on_every_rank(losses: torch.Tensor, loss_fn, epoch: int) -> None:
    """Every rank computed the same global-batch losses, or the loss is not a function of the batch."""
    top, low = losses.clone(), losses.clone()
    dist.all_reduce(top, op=dist.ReduceOp.MAX)
    dist.all_reduce(low, op=dist.ReduceOp.MIN)
    gap = float((top - low).abs().max())
    if not gap <= 1e-5 * max(float(top.abs().max()), 1.0):
        raise ValueError(
            f"loss_fn ({type(loss_fn).__name__}) gave different values on the {world_size()} ranks for the same global "
            f"batch in epoch {epoch} (up to {gap:.3g} apart): it is not a function of the batch alone (random draws? "
            f"state of its own?), so fit cannot make the run equal to one process. Run it in one process.")


# ----------------------------------------------------------------------------- fit
@keeps_mode
def fit(model: nn.Module, loss_fn: Callable, train: tuple, *, epochs: int, batch_size: int = 128, lr: float = 0.05,
        momentum: float = 0.9, weight_decay: float = 5e-4, optimizer: str = "sgd", schedule: str = "cosine",
        warmup_epochs: int = 0, milestones=(), gamma: float = 0.1, schedule_alpha: float = 1.0,
        test: tuple | None = None, nc_every: int = 1,
        checkpoint_dir: str | Path | None = None, resume: str = "auto", seed: int = 0, device=None,
        augment: Callable | None = None, amp: bool = False, progress: bool | None = None,
        callback: Callable | None = None, sync_batchnorm: bool = False, eval_every: int = 1) -> History:
    """Train ``model`` with minibatch SGD, evaluate every epoch, checkpoint and resume.

    Parameters
    ----------
    model : nn.Module following the :mod:`ncbook.models` protocol
    loss_fn : callable
        See the module docstring for the protocol (features, ``set_epoch``, state).
    train : (x, y)
        Training tensors ``(n, ...)`` (finite) and ``(n,)`` (integer labels); moved to ``device``
        once (so CIFAR-sized sets train from GPU memory).
    epochs : int
        Passes over ``train``; each draws a fresh permutation and drops the last
        partial batch when ``n >= batch_size`` (BatchNorm needs more than one sample).
    batch_size, lr, momentum, weight_decay : numbers
        ``batch_size >= 1``, ``lr > 0``, ``momentum >= 0``, ``weight_decay >= 0``.
    optimizer : {"sgd", "adamw"}
    schedule : {"cosine", "step", "constant", "mittag_leffler"}
        Applied per step after ``warmup_epochs`` of linear warm-up; ``milestones`` are
        epochs for ``"step"`` (multiply by ``gamma`` at each); for ``"mittag_leffler"`` (see
        :func:`~ncbook.train.lr_lambda`) the first milestone is the switch epoch and ``schedule_alpha``
        the order, in ``(0, 1]``.
    test : (x, y), optional
        Evaluated every epoch (``test_acc``, per-class ``class_acc``).
    nc_every : int
        Compute NC1-NC4 on the training features every this many epochs (and at the
        last); 0 never.
    checkpoint_dir : path, optional
        Save ``last.pt`` there after every epoch, with the run's fingerprint (see
        :mod:`ncbook.train._fingerprint`: model and initial weights, loss and its settings and
        buffers, training and test data by content, augmentation, every setting of this call).
        If a checkpoint exists when ``fit`` starts, ``resume`` decides.
    resume : {"auto", "never", "must"}
        ``"auto"``: resume from the checkpoint when its fingerprint equals this call's (the run then
        finishes exactly as an uninterrupted run would; a finished run returns at once), and raise
        ``ValueError`` naming every field that differs when it does not. ``"never"``: start afresh
        and overwrite the checkpoint. ``"must"``: as ``"auto"``, but a missing checkpoint raises
        ``FileNotFoundError``.
    seed : int, ``>= 0``
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
        AVX512-BF16 or AMX; for the chapters' small digits MLPs the gain on such a CPU is small:
        ``benchmarks/bench_parallel_runs.py`` times both precisions); float32 elsewhere, without a message. Weights, their gradients, optimiser state,
        the loss and every evaluation stay in the model's dtype.
    progress : bool, optional
        A ``tqdm.auto`` bar over epochs; defaults to :func:`ncbook.profiles.show_progress`
        (off with ``NCBOOK_PROGRESS=0``).
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
    Under ``torchrun`` with ``world_size`` processes each rank forwards its ``batch_size / world_size`` slice of every
    global batch (the permutation and the augmentation are drawn identically on every rank) through
    ``DistributedDataParallel``. The logits and features of the whole global batch are then gathered
    on every rank and the loss is computed once on them, identically everywhere, so every loss of
    :mod:`ncbook.losses` gives the global batch's loss and gradient: weighted normalisers, per-batch
    class statistics, EMAs, batch counts and epoch switches are those of one process. A loss whose
    value differs between ranks on the same batch (random draws of its own) is refused after the
    first epoch. BatchNorm statistics stay per rank unless ``sync_batchnorm`` (CUDA). Rank 0 alone
    writes the checkpoint and shows progress; every rank evaluates and returns the same history.
    A checkpoint resumes under any world size that divides the batch (BatchNorm without
    ``sync_batchnorm``: the same world size).

    Returns
    -------
    History with per-epoch ``epoch``, ``train_loss``, ``train_acc``, ``class_loss`` (train,
    per class), ``train_class_acc``, ``test_acc``, ``class_acc`` (test, per class),
    ``seconds`` and, on NC epochs, ``nc1``, ``nc2_w``, ``nc2_m``, ``nc3``, ``nc3_zhu``, ``nc4`` (NaN, with a
    warning, on an epoch where they are undefined). The model comes back with every submodule in the
    train/eval mode it was given in; the loss receives logits and features in the model's dtype.

    Raises
    ------
    ValueError
        On bad arguments, a checkpoint of another run (or without a fingerprint), or when the loss
        becomes NaN or infinite (the message gives the epoch and step; lower the learning rate).
    TypeError
        On arguments of the wrong type.
    FileNotFoundError
        With ``resume="must"`` and no checkpoint.
    """
    _check_model(model)
    check_callable("loss_fn", loss_fn)
    train = _check_xy("train", train, dtype=_param_dtype(model))
    test = _check_xy("test", test, allow_none=True, dtype=_param_dtype(model))
    settings = _FitSettings.checked(
        epochs=epochs, batch_size=batch_size, lr=lr, momentum=momentum, weight_decay=weight_decay, optimizer=optimizer,
        schedule=schedule, warmup_epochs=warmup_epochs, milestones=milestones, gamma=gamma,
        schedule_alpha=schedule_alpha, nc_every=nc_every, eval_every=eval_every, seed=seed)
    check_in("resume", resume, RESUME)
    ckpt = None if check_path("checkpoint_dir", checkpoint_dir, allow_none=True) is None else Path(checkpoint_dir) / "last.pt"
    check_callable("augment", augment, allow_none=True)
    check_callable("callback", callback, allow_none=True)
    amp, sync_batchnorm = check_bool("amp", amp), check_bool("sync_batchnorm", sync_batchnorm)
    progress = show_progress() if check_bool("progress", progress, allow_none=True) is None else progress
    device = default_device() if device is None else torch.device(device)
    use_amp = amp and native_bf16(device)
    fingerprint = None if ckpt is None else _run_fingerprint(model, loss_fn, train, test, augment, settings, use_amp,
                                                             sync_batchnorm)
    return _fit(model, loss_fn, train, test, settings, ckpt, _resume_state(ckpt, resume, fingerprint), fingerprint,
                device, augment, use_amp, progress, callback, sync_batchnorm)


def _fit(model, loss_fn, train, test, cfg: _FitSettings, ckpt, state, fingerprint, device, augment, use_amp, progress,
         callback, sync_batchnorm) -> History:
    x, y = train[0].to(device), train[1].to(device)
    test = None if test is None else (test[0], test[1])
    n, batch_size, epochs = x.shape[0], cfg.batch_size, cfg.epochs
    drop_last = n >= batch_size
    steps_per_epoch = n // batch_size if drop_last else 1
    model.to(device)
    if isinstance(loss_fn, nn.Module):
        loss_fn.to(device)
    ws = world_size()
    forward, shard = _data_parallel(model, batch_size if drop_last else n, device, sync_batchnorm,
                                    find_unused=bool(getattr(loss_fn, "needs_features", False)))
    opt = _make_optimizer(model, cfg.optimizer, cfg.lr, cfg.momentum, cfg.weight_decay)
    total, warmup = epochs * steps_per_epoch, cfg.warmup_epochs * steps_per_epoch
    milestones = tuple(m * steps_per_epoch for m in cfg.milestones)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _multiplier(
        s, total, warmup, cfg.schedule, milestones, cfg.gamma, cfg.schedule_alpha))
    gen = torch.Generator(device="cpu").manual_seed(cfg.seed)
    aug_gen = torch.Generator(device=device).manual_seed(cfg.seed + 1)
    history, start = History(), 0
    if state is not None:
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
        seed_everything(cfg.seed)
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
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=use_amp):
                logits, feats = forward(xb[shard])
            logits, feats = _full_precision(logits), _full_precision(feats)
            if ws > 1:  # the global batch's loss on every rank (see _global_batch_loss)
                return _global_batch_loss(loss_fn, logits, yb, feats)
            return call_loss(loss_fn, logits, yb, feats)

        losses = run_steps(opt, sched, range(steps_per_epoch), loss_at).double()
        if ws > 1:
            _check_same_on_every_rank(losses, loss_fn, epoch)
        losses = losses.cpu()
        check_finite_losses(losses, epoch=epoch, first_step=0, lr=cfg.lr)
        nc_now = cfg.nc_every > 0 and ((epoch + 1) % cfg.nc_every == 0 or epoch == epochs - 1)
        # --- evaluation switch (eval_every): skipping an evaluation changes no parameter update
        eval_now = nc_now or epoch == epochs - 1 or (cfg.eval_every > 0 and (epoch + 1) % cfg.eval_every == 0)
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
                "history": history.records, "epoch": epoch,
                "fingerprint": fingerprint.as_dict(), "fingerprint_digest": fingerprint.digest,
            })
        if progress:
            bar.set_postfix(loss=f"{rec['train_loss']:.3f}", acc=f"{rec.get('test_acc', rec.get('train_acc', float('nan'))):.3f}")
        if callback is not None:
            callback(epoch, model, rec)
    return history
