"""What a trainer or a model helper does to the user's objects: dtypes reach the loss, modes come back.

* **Dtypes**: every trainer (:func:`ncbook.train.fit` with every training loss of ``tests/loss_zoo.py``,
  :func:`~ncbook.train.fit_run`, :func:`~ncbook.train.fit_contrastive`, :func:`~ncbook.train.fit_weighted_contrastive`)
  hands its loss the dtype of the user's tensors: a float64 model and data give the loss float64 logits and
  features, and the loss answers in float64; prior weights a weight function returns in float64 stay float64
  (a float32 cast made a float64 kernel overflow to "weights must be finite", or underflow to a loss of 0).
* **Modes**: every public callable that takes a model (found by parameter name over every subpackage's
  ``__all__``) gives it back with each submodule in the train/eval mode it came in (a helper that left the
  model in eval mode stopped the user's next steps from updating BatchNorm statistics).

Each check is shown to fail on the old behaviour, planted back.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import math
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).parent))
import loss_zoo  # noqa: E402
import ncbook.train._contrastive as contrastive_trainer  # noqa: E402
import ncbook.train._weighted as weighted_trainer  # noqa: E402
from ncbook import losses, models, train  # noqa: E402

torch.set_num_threads(1)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _data(n=24, dim=12, c=loss_zoo.C, dtype=torch.float32, seed=1):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % c
    x = torch.randn(n, dim, generator=g, dtype=torch.float64)
    x[:, :c] += 1.5 * F.one_hot(y, c).double()
    return x.to(dtype), y


def _mlp(dtype=torch.float32, batchnorm=False, c=loss_zoo.C, dim=12):
    torch.manual_seed(0)
    return models.MLP(dim, (16,), 8, c, batchnorm=batchnorm).to(dtype)


# ----------------------------------------------------------------------------------------------- dtypes
class _Spy(nn.Module):
    """A loss that records the dtypes it is called with and answers with, around the real one."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.needs_features = bool(getattr(inner, "needs_features", False))
        self.seen = []

    def set_epoch(self, epoch):
        if hasattr(self.inner, "set_epoch"):
            self.inner.set_epoch(epoch)

    def forward(self, logits, labels, features=None):
        out = self.inner(logits, labels, features) if self.needs_features else self.inner(logits, labels)
        self.seen.append((logits.dtype, None if features is None else features.dtype, out.dtype))
        return out


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=str)
@pytest.mark.parametrize("name", sorted(loss_zoo.TRAINING_LOSSES))
def test_fit_hands_every_loss_the_users_dtype(name, dtype):
    x, y = _data(dtype=dtype)
    spy = _Spy(loss_zoo.make(name))
    train.fit(_mlp(dtype), spy, (x, y), epochs=2, batch_size=8, lr=0.01, nc_every=0, eval_every=0, progress=False)
    assert spy.seen, "the loss was never called"
    for logits_dtype, features_dtype, out_dtype in spy.seen:
        assert logits_dtype == dtype and features_dtype in (None, dtype)
        assert out_dtype == dtype, f"{name} answered in {out_dtype} to {dtype} inputs"


def test_fit_run_hands_the_loss_the_users_dtype():
    x, y = _data(dtype=torch.float64)
    spies = []

    def make_loss():
        spies.append(_Spy(F.cross_entropy))
        return spies[-1]

    train.fit_run(lambda: _mlp(torch.float64), make_loss, (x, y), seed=0, epochs=1, batch_size=8, nc_every=0,
                  eval_every=0)
    assert spies and all(s[0] == torch.float64 and s[2] == torch.float64 for s in spies[-1].seen)


def _record(monkeypatch, module, name):
    seen, real = [], getattr(module, name)

    def spy(*args, **kwargs):
        seen.append([a.dtype for a in args if isinstance(a, torch.Tensor)])
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return seen


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=str)
def test_fit_contrastive_hands_the_loss_the_users_dtype(dtype, monkeypatch):
    seen = _record(monkeypatch, contrastive_trainer, "generalized_contrastive_loss")
    x, y = _data(dtype=dtype)
    train.fit_contrastive(_mlp(dtype), x, y, k=2, steps=3, batch_size=6, lr=0.01, seed=0)
    assert seen and all(d == [dtype, dtype, dtype] for d in seen)


def _weighted_dtypes(monkeypatch, weight_fn, dtype=torch.float32):
    seen = _record(monkeypatch, weighted_trainer, "w_info_nce")
    x, y = _data(dtype=dtype)
    train.fit_weighted_contrastive(_mlp(dtype), x, y, weight_fn, temperature=0.5, steps=3, batch_size=8, seed=0)
    return seen


@pytest.mark.parametrize("weights_dtype", [torch.float64, torch.float32], ids=str)
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32], ids=str)
def test_fit_weighted_contrastive_keeps_the_features_and_the_weights_dtypes(dtype, weights_dtype, monkeypatch):
    seen = _weighted_dtypes(monkeypatch, lambda t: losses.supcon_weights(t).to(weights_dtype), dtype)
    assert seen and all(d == [dtype, weights_dtype] for d in seen), seen


def _first_losses(weight_fn, steps=2):
    x, y = _data()
    run = train.fit_weighted_contrastive(_mlp(), x, y, weight_fn, temperature=0.5, steps=steps, batch_size=8, seed=0,
                                         log_every=1)
    return run.losses


@pytest.mark.parametrize("scale", [1e-60, 1e60])
def test_weights_beyond_float32_train_as_they_score(scale):
    """Prior weights are scale-free (targets are rows normalised): SupCon weights times 1e-60 or 1e60, valid
    in float64 and what the loss takes directly, train exactly as SupCon. Through float32 they were 0 (a loss of
    0, nothing learnt) or infinite ('weights must be finite')."""
    ref = _first_losses(losses.supcon_weights)
    got = _first_losses(lambda t: losses.supcon_weights(t) * scale)
    assert got == pytest.approx(ref, rel=1e-6) and min(got) > 0.1


def test_the_dtype_check_catches_a_float32_cast(monkeypatch):
    """The old trainer cast the weights to float32 before the loss: both checks above report it."""
    seen = _record(monkeypatch, weighted_trainer, "w_info_nce")  # what the loss receives ...
    loss = weighted_trainer.w_info_nce
    monkeypatch.setattr(weighted_trainer, "w_info_nce", lambda z, w, **kw: loss(z, w.float(), **kw))  # ... after a cast
    x, y = _data()
    train.fit_weighted_contrastive(_mlp(), x, y, losses.supcon_weights, temperature=0.5, steps=2, batch_size=8)
    assert seen and all(d == [torch.float32, torch.float32] for d in seen)  # the dtype test above would fail
    with pytest.raises(ValueError, match="weights must be finite"):
        _first_losses(lambda t: losses.supcon_weights(t) * 1e60)
    assert _first_losses(lambda t: losses.supcon_weights(t) * 1e-60) == [0.0, 0.0]


# ----------------------------------------------------------------------------------------------- modes
def _with_bn():
    torch.manual_seed(0)
    return models.MLP(12, (16,), 8, loss_zoo.C, batchnorm=True)


def _calls():
    """callable -> a call of it on ``model`` (a module with BatchNorm), small and fast."""
    x, y = _data()
    cheap = dict(epochs=1, batch_size=8, nc_every=0, eval_every=0, progress=False)
    return {
        "embed": lambda m: train.embed(m, x),
        "evaluate": lambda m: train.evaluate(m, x, y),
        "class_mean_cosines": lambda m: train.class_mean_cosines(m, x, y),
        "fit": lambda m: train.fit(m, F.cross_entropy, (x, y), **cheap),
        "fit_run": lambda m: train.fit_run(m, lambda: F.cross_entropy, (x, y), seed=0, epochs=1, batch_size=8,
                                           nc_every=0, eval_every=0),
        "fit_contrastive": lambda m: train.fit_contrastive(m, x, y, k=2, steps=2, batch_size=6, lr=0.01),
        "fit_weighted_contrastive": lambda m: train.fit_weighted_contrastive(m, x, y, losses.supcon_weights,
                                                                             temperature=0.5, steps=2, batch_size=8),
        "measure_fit": lambda m: train.measure_fit(m, F.cross_entropy, (x, y), batch_size=8, steps=(1, 2)),
        "measure_steps": lambda m: train.measure_steps(
            functools.partial(train.fit_weighted_contrastive, weight_fn=losses.supcon_weights, temperature=0.5,
                              batch_size=8), m, x, y, images_per_step=8.0, steps=(1, 2)),
        "measure_contrastive": lambda m: train.measure_contrastive(train.fit_contrastive, m, x, y, batch_size=6, k=2,
                                                                   setting="ucl", steps=(1, 2)),
        "FeatureClassifier": lambda m: models.FeatureClassifier(m, 8, loss_zoo.C),
    }


MODEL_PARAMETERS = ("model", "net", "body", "module")
#: public callables that take a model but are not run here, with the reason
FACTORY = "its model is a factory (a zero-argument callable): it builds its own networks, none of the caller's"
MODEL_EXCUSED = {"ContrastiveRun": "the frozen record fit_weighted_contrastive returns: it holds the model, runs nothing",
                 "compare_mr2": FACTORY, "compare_reweighting": FACTORY, "mr2_baseline": FACTORY,
                 "seli_network": FACTORY, "primer_network": FACTORY}
SUBPACKAGES = ["ncbook", "ncbook.geometry", "ncbook.metrics", "ncbook.losses", "ncbook.contrastive", "ncbook.dgp",
               "ncbook.margins", "ncbook.reweighting", "ncbook.ufm", "ncbook.data", "ncbook.models", "ncbook.train",
               "ncbook.profiles", "ncbook.plotting", "ncbook.exercises", "ncbook.book", "ncbook.experiments"]


def _takes_a_model():
    found = {}
    for modname in SUBPACKAGES:
        mod = importlib.import_module(modname)
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if not callable(obj):
                continue
            try:
                params = inspect.signature(obj.__init__ if inspect.isclass(obj) else obj).parameters
            except (TypeError, ValueError):
                continue
            if any(p in params for p in MODEL_PARAMETERS):
                found[name] = f"{modname}.{name}"
    return found


def test_every_callable_that_takes_a_model_is_run():
    found = _takes_a_model()
    missing = set(found) - set(_calls()) - set(MODEL_EXCUSED)
    assert not missing, f"add a call to _calls() (or a reason to MODEL_EXCUSED) for: {sorted(found[m] for m in missing)}"
    assert not set(_calls()) - set(found), "calls for callables that no longer take a model"
    assert not set(MODEL_EXCUSED) - set(found), "excuses for callables that no longer take a model"
    print(f"model-mode check: {len(found)} public callables take a model")


def _modes(model):
    return [m.training for m in model.modules()]


def _starting_states():
    """All eval; and train with one BatchNorm frozen (eval), as a user fine-tuning with frozen statistics has it."""
    evaluating = _with_bn().eval()
    mixed = _with_bn().train()
    next(m for m in mixed.modules() if isinstance(m, nn.BatchNorm1d)).eval()
    return {"eval": evaluating, "train with a frozen BatchNorm": mixed}


def _mode_fault(call):
    for state, model in _starting_states().items():
        before = _modes(model)
        call(model)
        if _modes(model) != before:
            return f"from {state}: modes {before} became {_modes(model)}"
    return None


@pytest.mark.parametrize("name", sorted(_calls()))
def test_the_model_comes_back_in_its_modes(name):
    problem = _mode_fault(_calls()[name])
    assert problem is None, f"{name} changed the model's train/eval modes {problem}"


def test_the_mode_check_catches_a_helper_that_leaves_eval_mode():
    def old_embed(model, x):  # the old helper: eval mode, never restored
        model.eval()
        with torch.no_grad():
            return model.features(x).double()

    x, _ = _data()
    assert _mode_fault(lambda m: old_embed(m, x)) is not None
    assert _mode_fault(lambda m: m.train()) is not None  # and one that leaves train mode


def test_a_kept_mode_still_trains_batchnorm_after_a_helper():
    """The user's next training steps after embed() update BatchNorm's running statistics."""
    model = _with_bn().train()
    x, _ = _data()
    train.embed(model, x)
    bn = next(m for m in model.modules() if isinstance(m, nn.BatchNorm1d))
    before = bn.running_mean.clone()
    model(x)
    assert not torch.allclose(bn.running_mean, before)
    assert math.isfinite(float(bn.running_mean.abs().sum()))


@pytest.mark.parametrize("name", ["embed", "evaluate", "class_mean_cosines", "measure_fit", "measure_steps",
                                  "measure_contrastive"])
def test_helpers_leave_the_models_state_alone(name):
    """An evaluation or a cost probe never moves the model's parameters or its BatchNorm statistics (a helper that
    ran its forward passes in training mode updated them)."""
    model = _with_bn().train()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    _calls()[name](model)
    after = model.state_dict()
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert not changed, f"{name} changed {changed}"
