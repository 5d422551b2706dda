import math

import pytest
import torch
import torch.nn.functional as F

from ncbook import book, data, losses, models, train


def _tiny():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(96, 10, generator=g)
    y = torch.arange(96) % 3
    x[:, :3] += 2 * F.one_hot(y, 3).float()
    return x, y


def _model():
    torch.manual_seed(0)
    return models.MLP(10, (16,), 4, 3)


class StatefulLoss(torch.nn.Module):
    """A loss with state and an epoch hook, like the reweighting and MR2 losses."""

    needs_features = True

    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))
        self.epoch = -1

    def set_epoch(self, epoch):
        self.epoch = epoch

    def forward(self, logits, labels, features):
        self.calls += 1
        return F.cross_entropy(logits, labels) + 1e-3 * features.pow(2).mean() * (1 + self.epoch % 2)


def test_resume_gives_the_same_weights_as_an_uninterrupted_run(tmp_path):
    x, y = _tiny()
    kwargs = dict(epochs=4, batch_size=16, lr=0.1, schedule="cosine", warmup_epochs=1, nc_every=2, progress=False,
                  augment=lambda xb, g: xb + 0.01 * torch.randn(xb.shape, generator=g))
    full_model, full_loss = _model(), StatefulLoss()
    full = train.fit(full_model, full_loss, (x, y), checkpoint_dir=tmp_path / "a", **kwargs)

    def interrupt(epoch, model, record):
        if epoch == 1:
            raise KeyboardInterrupt

    part_model, part_loss = _model(), StatefulLoss()
    with pytest.raises(KeyboardInterrupt):
        train.fit(part_model, part_loss, (x, y), checkpoint_dir=tmp_path / "b", callback=interrupt, **kwargs)
    torch.manual_seed(123)  # disturb global RNG: resume must restore it
    resumed_model, resumed_loss = _model(), StatefulLoss()
    resumed = train.fit(resumed_model, resumed_loss, (x, y), checkpoint_dir=tmp_path / "b", **kwargs)
    for (k, a), b in zip(full_model.state_dict().items(), resumed_model.state_dict().values()):
        assert torch.equal(a, b), k
    assert torch.equal(full_loss.calls, resumed_loss.calls)
    assert full["train_loss"] == resumed["train_loss"]
    assert len(resumed) == 4


def test_checkpoint_loads_with_weights_only(tmp_path):
    x, y = _tiny()
    train.fit(_model(), F.cross_entropy, (x, y), epochs=1, batch_size=32, checkpoint_dir=tmp_path, progress=False)
    state = train.load_checkpoint(tmp_path / "last.pt")
    assert state["epoch"] == 0 and "model" in state


def test_fit_learns_and_records_metrics():
    x, y = _tiny()
    hist = train.fit(_model(), F.cross_entropy, (x, y), epochs=20, batch_size=16, lr=0.1, test=(x, y), nc_every=5,
                     progress=False)
    assert hist.final["train_acc"] > 0.9
    assert hist["nc1"][4] is not None and hist["nc1"][0] is None
    assert len(hist.final["class_loss"]) == 3 and len(hist.final["class_acc"]) == 3


def test_nan_loss_raises_with_epoch():
    x, y = _tiny()
    with pytest.raises(ValueError, match=r"the loss became nan at epoch 0"):
        train.fit(_model(), lambda logits, labels: logits.sum() * math.nan, (x, y), epochs=1, progress=False)


def test_bad_arguments():
    x, y = _tiny()
    with pytest.raises(ValueError, match="schedule must be one of"):
        train.fit(_model(), F.cross_entropy, (x, y), epochs=1, schedule="linear")
    with pytest.raises(ValueError, match="epochs must be an integer >= 1; got 0"):
        train.fit(_model(), F.cross_entropy, (x, y), epochs=0)
    with pytest.raises(ValueError, match="lr must be a positive"):
        train.fit(_model(), F.cross_entropy, (x, y), epochs=1, lr=-1.0)


def test_results_round_trip(tmp_path):
    path = book.save_result(tmp_path, chapter="nc_primer", setting="cifar10-ce", seed=1,
                             metrics={"acc": torch.tensor(0.5), "per_class": torch.tensor([0.1, float("nan")])},
                             wall_seconds=3.0, config={"lr": 0.1})
    assert path.name == "cifar10-ce-seed1.json"
    [rec] = book.load_results(tmp_path, "nc_primer")
    assert rec["metrics"] == {"acc": 0.5, "per_class": [pytest.approx(0.1), None]}
    assert rec["config"] == {"lr": 0.1} and rec["seed"] == 1
    from ncbook import native_bf16

    assert rec["bf16_native"] is native_bf16()  # the precision amp=True trained in, with the device
    assert book.load_results(tmp_path / "nothing") == []
    book.record_claim(tmp_path, kind="check", chapter="nc_primer", claim="c", ours=1.0, setting="s",
                       profile="quick", tolerance={"above": 0})
    assert len(book.load_results(tmp_path)) == 1  # claims are not results
    with pytest.raises(ValueError, match="setting must be letters"):
        book.save_result(tmp_path, chapter="x", setting="a b", seed=0, metrics={}, wall_seconds=0)


def test_claims_replace_by_claim_and_profile(tmp_path):
    kw = dict(kind="check", chapter="seli", claim="w_min/w_maj at R = 10", setting="closed form", derived=0.7079,
              derived_how="closed form", tolerance={"abs": 1e-3, "against": "derived"})
    book.record_claim(tmp_path, ours=0.70, profile="quick", **kw)
    book.record_claim(tmp_path, ours=0.7079, profile="quick", **kw)
    book.record_claim(tmp_path, ours=0.71, profile="full", **kw)
    claims = book.load_claims(tmp_path)
    assert [(c["profile"], c["ours"]) for c in claims] == [("quick", 0.7079), ("full", 0.71)]
    assert (tmp_path / "claims" / "full" / "seli.json").exists()  # full records are kept apart (committed)
    with pytest.raises(ValueError, match=r"profile must be one of \['quick', 'gpu', 'full'\]"):
        book.record_claim(tmp_path, ours=1.0, profile="fast", **kw)


def _square(x):
    return {"x": x, "y": x * x}


def test_run_parallel_keeps_order_and_matches_serial():
    configs = [{"x": i} for i in range(5)]
    assert train.run_parallel(_square, configs, workers=1) == [{"x": i, "y": i * i} for i in range(5)]
    assert train.run_parallel(_square, configs, workers=2) == train.run_parallel(_square, configs, workers=1)
    with pytest.raises(ValueError, match="workers must be >= 1"):
        train.run_parallel(_square, configs, workers=0)


class _NaNAfter(torch.nn.Module):
    """Features that turn NaN from the ``bad``-th forward call on (a planted divergence)."""

    def __init__(self, bad):
        super().__init__()
        self.lin, self.calls, self.bad = torch.nn.Linear(10, 4), 0, bad

    def features(self, x):
        self.calls += 1
        h = self.lin(x)
        return h * float("nan") if self.calls > self.bad else h


def test_contrastive_trainers_stop_on_a_non_finite_loss_naming_the_step():
    from ncbook import losses

    x, y = _tiny()
    with pytest.raises(ValueError, match=r"the loss became nan at step 3; training stopped"):
        train.fit_contrastive(_NaNAfter(3), x, y, k=2, steps=150, batch_size=8, device="cpu")
    with pytest.raises(ValueError, match=r"the loss became nan at step 5; training stopped"):
        train.fit_weighted_contrastive(_NaNAfter(5), x, y, losses.supcon_weights, temperature=0.5, steps=150, batch_size=16,
                                       device="cpu")


def test_contrastive_trainers_take_temperature_by_that_name():
    from ncbook import losses

    x, y = _tiny()
    with pytest.raises(ValueError, match="temperature must be a positive finite number; got 0.0"):
        train.fit_contrastive(_NaNAfter(3), x, y, k=2, temperature=0.0, steps=1, device="cpu")
    with pytest.raises(ValueError, match="temperature must be a positive finite number; got 0.0"):
        train.fit_weighted_contrastive(_NaNAfter(3), x, y, losses.supcon_weights, temperature=0.0, steps=1, device="cpu")
    with pytest.raises(TypeError, match="'t'"):
        train.fit_contrastive(_NaNAfter(3), x, y, t=0.5, steps=1, device="cpu")
    with pytest.raises(TypeError, match="'tau'"):
        train.fit_weighted_contrastive(_NaNAfter(3), x, y, losses.supcon_weights, tau=0.5, steps=1, device="cpu")


def test_loss_protocols():
    from ncbook.train._core import EpochAware, FeatureLoss

    loss = StatefulLoss()
    assert isinstance(loss, FeatureLoss) and isinstance(loss, EpochAware)
    assert not isinstance(F.cross_entropy, EpochAware) and not isinstance(torch.nn.CrossEntropyLoss(), EpochAware)


def _amp_run(amp):
    x, y = _tiny()
    net = _model()
    hist = train.fit(net, F.cross_entropy, (x, y), epochs=3, batch_size=16, lr=0.1, nc_every=0, amp=amp,
                     progress=False)
    return net, hist


def test_amp_is_float32_where_bf16_is_not_native(monkeypatch):
    """amp=True on a device without bf16 products in hardware is exactly the float32 run."""
    import ncbook.train._loop as loop

    monkeypatch.setattr(loop, "native_bf16", lambda device=None: False)
    (a, ha), (b, hb) = _amp_run(True), _amp_run(False)
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(va, vb), ka
    assert ha["train_loss"] == hb["train_loss"]


def test_amp_uses_bf16_products_and_keeps_float32_state(monkeypatch):
    """Where bf16 is native, amp changes the products (so the run differs a little) but not the state."""
    import ncbook.train._loop as loop

    monkeypatch.setattr(loop, "native_bf16", lambda device=None: True)  # CPU autocast runs anywhere, slowly
    seen = []
    hook = torch.nn.modules.module.register_module_forward_hook(
        lambda mod, inp, out: seen.append(out.dtype) if isinstance(mod, torch.nn.Linear) else None)
    try:
        (a, ha), (b, hb) = _amp_run(True), _amp_run(False)
    finally:
        hook.remove()
    assert torch.bfloat16 in seen and torch.float32 in seen
    assert all(v.dtype in (torch.float32, torch.int64) for v in a.state_dict().values())
    diff = max(float((va - vb).abs().max()) for va, vb in zip(a.state_dict().values(), b.state_dict().values()))
    assert 0 < diff < 0.1
    assert ha["train_loss"][-1] == pytest.approx(hb["train_loss"][-1], rel=0.05)


def test_native_bf16_answers_per_device():
    from ncbook import native_bf16

    assert native_bf16("meta") is False
    assert isinstance(native_bf16("cpu"), bool)
    if not torch.cuda.is_available():
        assert native_bf16("cuda") is False


# ---------------------------------------------------------------------------------------------- resume: a run knows itself
def _base_run():
    x, y = _tiny()
    return dict(model=_model, loss=lambda: F.cross_entropy, train=(x, y),
                kw=dict(epochs=2, batch_size=16, lr=0.1, seed=0, nc_every=0, eval_every=0, progress=False))


def _changed(kind):
    """The base run with one setting changed; returns (model factory, loss factory, train, kwargs, field named)."""
    run = _base_run()
    x, y = run["train"]
    kw = dict(run["kw"])
    model, loss, data = run["model"], run["loss"], run["train"]
    if kind == "loss":
        loss, field = (lambda: losses.FocalLoss(gamma=1.0)), "loss"
    elif kind == "loss parameter":
        return (model, lambda: losses.FocalLoss(gamma=2.0), data, kw, "loss"), (lambda: losses.FocalLoss(gamma=1.0))
    elif kind == "loss buffer":
        return (model, lambda: losses.WeightedCrossEntropy([1.0, 2.0, 3.0]), data, kw, "loss"), (
            lambda: losses.WeightedCrossEntropy([1.0, 2.0, 4.0]))
    elif kind == "model width":
        model, field = (lambda: (torch.manual_seed(0), models.MLP(10, (24,), 4, 3))[1]), "model"
    elif kind == "initial weights":
        model, field = (lambda: (torch.manual_seed(1), models.MLP(10, (16,), 4, 3))[1]), "initial_weights"
    elif kind == "data subset":
        data, field = (x[:80], y[:80]), "train_x"
    elif kind == "data content":
        data, field = (x + 1e-3, y), "train_x"
    elif kind == "data order":
        perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(5))
        data, field = (x[perm], y[perm]), "train_x"
    elif kind == "labels":
        data, field = (x, (y + 1) % 3), "train_y"
    elif kind == "test set":
        kw["test"], field = (x[:10], y[:10]), "test"
    elif kind == "augment":
        kw["augment"], field = (lambda xb, g: xb + 0.01 * torch.randn(xb.shape, generator=g)), "augment"
    else:  # one of fit's own keywords
        name, value = {"seed": ("seed", 1), "epochs": ("epochs", 3), "batch size": ("batch_size", 32),
                       "lr": ("lr", 0.05), "optimizer": ("optimizer", "adamw"), "schedule": ("schedule", "step"),
                       "schedule parameter": ("gamma", 0.5), "momentum": ("momentum", 0.5),
                       "weight decay": ("weight_decay", 1e-3), "warm-up": ("warmup_epochs", 1),
                       "milestones": ("milestones", (1,)), "eval cadence": ("eval_every", 1)}[kind]
        kw[name], field = value, name
    return (model, loss, data, kw, field), run["loss"]


RESUME_CHANGES = ["loss", "loss parameter", "loss buffer", "model width", "initial weights", "data subset", "data content",
                  "data order", "labels", "test set", "augment", "seed", "epochs", "batch size", "lr", "optimizer",
                  "schedule", "schedule parameter", "momentum", "weight decay", "warm-up", "milestones", "eval cadence"]


@pytest.mark.parametrize("kind", RESUME_CHANGES)
def test_resume_refuses_a_run_with_another_setting_naming_it(tmp_path, kind):
    (model, loss, data, kw, field), first_loss = _changed(kind)
    base = _base_run()
    train.fit(base["model"](), first_loss(), base["train"], checkpoint_dir=tmp_path, **base["kw"])
    with pytest.raises(ValueError, match=rf"belongs to another run; these settings differ:\n  {field}: .* in the checkpoint, .* now"):
        train.fit(model(), loss(), data, checkpoint_dir=tmp_path, **kw)
    # resume="never" starts afresh: the run is the one a fresh folder gives, and its checkpoint replaces the old one
    fresh_model, fresh_dir = model(), tmp_path / "fresh"
    again_model = model()
    train.fit(fresh_model, loss(), data, checkpoint_dir=fresh_dir, **kw)
    train.fit(again_model, loss(), data, checkpoint_dir=tmp_path, resume="never", **kw)
    for (k, a), b in zip(fresh_model.state_dict().items(), again_model.state_dict().values()):
        assert torch.equal(a, b), k
    train.fit(model(), loss(), data, checkpoint_dir=tmp_path, resume="must", **kw)  # now it is this run's checkpoint


def test_resume_of_the_same_run_returns_the_finished_run_and_names_every_difference(tmp_path):
    base = _base_run()
    net = base["model"]()
    hist = train.fit(net, base["loss"](), base["train"], checkpoint_dir=tmp_path, **base["kw"])
    rerun = base["model"]()  # rerunning the cell: a fresh model from the same seed, the same call
    again = train.fit(rerun, base["loss"](), base["train"], checkpoint_dir=tmp_path, resume="must", **base["kw"])
    assert again.records == hist.records
    for (k, a), b in zip(net.state_dict().items(), rerun.state_dict().values()):
        assert torch.equal(a, b), k
    kw = dict(base["kw"], epochs=3, lr=0.2)
    with pytest.raises(ValueError) as err:
        train.fit(base["model"](), losses.FocalLoss(), base["train"], checkpoint_dir=tmp_path, **kw)
    text = str(err.value)
    assert "epochs: 2 in the checkpoint, 3 now" in text and "lr: 0.1 in the checkpoint, 0.2 now" in text
    assert 'loss: "torch.nn.functional.cross_entropy" in the checkpoint' in text and "FocalLoss" in text
    assert "seed" not in text and "train_x" not in text  # only what differs


def test_resume_options_and_old_checkpoints(tmp_path):
    base = _base_run()
    args = (base["train"],)
    with pytest.raises(FileNotFoundError, match="resume='must' but there is no checkpoint"):
        train.fit(base["model"](), F.cross_entropy, *args, checkpoint_dir=tmp_path, resume="must", **base["kw"])
    with pytest.raises(ValueError, match="resume='must' needs a checkpoint_dir"):
        train.fit(base["model"](), F.cross_entropy, *args, resume="must", **base["kw"])
    with pytest.raises(ValueError, match=r"resume must be one of \['auto', 'never', 'must'\]"):
        train.fit(base["model"](), F.cross_entropy, *args, checkpoint_dir=tmp_path, resume=True, **base["kw"])
    train.fit(base["model"](), F.cross_entropy, *args, checkpoint_dir=tmp_path, **base["kw"])
    state = train.load_checkpoint(tmp_path / "last.pt")
    assert len(state["fingerprint_digest"]) == 32 and state["fingerprint"]["epochs"] == 2
    del state["fingerprint"], state["fingerprint_digest"]  # a checkpoint of an older ncbook
    train.save_checkpoint(tmp_path / "last.pt", state)
    with pytest.raises(ValueError, match=r"has no run fingerprint \(it was written by an older ncbook\)"):
        train.fit(base["model"](), F.cross_entropy, *args, checkpoint_dir=tmp_path, **base["kw"])
    train.fit(base["model"](), F.cross_entropy, *args, checkpoint_dir=tmp_path, resume="never", **base["kw"])
    assert "fingerprint" in train.load_checkpoint(tmp_path / "last.pt")


def test_fingerprint_describes_callables_stably():
    from ncbook.train._fingerprint import describe_callable, tensor_digest

    x = torch.arange(12.0).reshape(3, 4)
    assert tensor_digest(x) == tensor_digest(x.clone()) != tensor_digest(x.flip(0))
    assert tensor_digest(x) != tensor_digest(x.double()) and tensor_digest(x) != tensor_digest(x.reshape(4, 3))
    assert tensor_digest(x.to(torch.bfloat16)) == tensor_digest(x.to(torch.bfloat16).clone())
    f1 = lambda xb, g: xb * 2.0  # noqa: E731
    f2 = lambda xb, g: xb * 3.0  # noqa: E731
    assert describe_callable(f1) != describe_callable(f2)
    assert describe_callable(f1) == describe_callable(lambda xb, g: xb * 2.0)
    import functools

    assert describe_callable(functools.partial(losses.focal_loss, gamma=2.0)) != describe_callable(
        functools.partial(losses.focal_loss, gamma=1.0))
    assert describe_callable(losses.MR2Loss(3)) == describe_callable(losses.MR2Loss(3))
    assert describe_callable(losses.MR2Loss(3)) != describe_callable(losses.MR2Loss(3, lam=0.2))
    assert describe_callable(F.cross_entropy) == "torch.nn.functional.cross_entropy"
