"""A run done concurrently, in a worker process, gives the numbers of the same run done alone.

One test per loss of the chapters' comparisons, stateful ones included (LDAM-DRW's switch, IB's
start, the inverse weights' buffers and switch, MR2's running statistics), plus the weighted
contrastive runs. Both sides use one thread, so the float32 results must agree exactly; the
runs are short but long enough to cross every switch.
"""

from __future__ import annotations

import functools
import sys

import pytest
import torch
import torch.nn.functional as F

from ncbook import losses, models, reweighting, train

# this module's helpers travel to the workers by value, as a notebook's functions do
import cloudpickle

cloudpickle.register_pickle_by_value(sys.modules[__name__])

C = 4
COUNTS = [40, 24, 14, 8]
EPOCHS = 4       # switches at epoch 2: both regimes are trained
SWITCH = 2


def _data(seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.cat([torch.full((n,), c) for c, n in enumerate(COUNTS)])
    x = torch.randn(len(y), 12, generator=g) + 1.5 * F.one_hot(y, 12).float()
    return (x, y), (x[::3] + 0.1, y[::3])


def _mlp():
    return models.MLP(12, (32, 32), 8, C)


def _cosine_mlp():
    """The reweighting chapter's LDAM model: unit-norm features and classifier rows (a parametrization)."""
    class _UnitRows(torch.nn.Module):
        def forward(self, w):
            return F.normalize(w, dim=1)

    model = _mlp()
    torch.nn.utils.parametrize.register_parametrization(model.classifier, "weight", _UnitRows())
    model.normalize = True
    return model



LOSSES = {
    "CE": lambda: torch.nn.CrossEntropyLoss(),
    "Inv-Freq": lambda: losses.WeightedCrossEntropy(reweighting.inverse_frequency_weights(COUNTS)),
    "CB": lambda: losses.WeightedCrossEntropy(reweighting.effective_number_weights(COUNTS, 0.9999)),
    "Focal": lambda: losses.FocalLoss(gamma=1.0),
    "LDAM-DRW": lambda: losses.LDAMLoss(COUNTS, drw_epoch=SWITCH),
    "LA (loss)": lambda: losses.LogitAdjustedLoss(COUNTS, tau=1.0),
    "IB": lambda: losses.IBLoss(COUNTS, start_epoch=SWITCH),
    "inverse": lambda: losses.InverseReweightedCE(C, gamma=0.0, switch_epoch=SWITCH),
    "inverse + macro": lambda: losses.InverseReweightedCE(C, gamma=1.0, switch_epoch=SWITCH),
    "inverse + macro, detached": lambda: losses.InverseReweightedCE(
        C, gamma=1.0, switch_epoch=SWITCH, detach=True),
    "MR2 both": lambda: losses.MR2Loss(C, ema=0.9, lam=0.1),
    "MR2 rep.": lambda: losses.MR2Loss(C, ema=0.9, lam=0.1, logit_margins=False),
    "fixed margins": lambda: losses.FixedMarginLoss(torch.full((C,), 0.5)),
    "plain function": lambda: F.cross_entropy,
}


def _config(name, seed=1, eval_every=0, amp=False):
    train_set, test_set = _data()
    return dict(model=_cosine_mlp if name == "LDAM-DRW" else _mlp, loss=LOSSES[name], train=train_set, seed=seed,
                epochs=EPOCHS, batch_size=16, lr=0.05, weight_decay=5e-3, nc_every=EPOCHS, test=test_set,
                eval_every=eval_every, evaluate_on={"test": test_set}, return_loss=True, amp=amp)


def _alone(config):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return train.fit_run(**config)
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def concurrent():
    """Every loss's run, all at once in two worker processes (one thread each)."""
    names = list(LOSSES)
    results = train.run_parallel(train.fit_run, [_config(n) for n in names], workers=2)
    return dict(zip(names, results))


def _assert_same_run(a, b):
    assert a["state"].keys() == b["state"].keys()
    for key in a["state"]:
        assert torch.equal(a["state"][key], b["state"][key]), key
    assert a["history"].records == b["history"].records or all(
        {k: v for k, v in ra.items() if k != "seconds"} == {k: v for k, v in rb.items() if k != "seconds"}
        for ra, rb in zip(a["history"].records, b["history"].records))
    assert torch.equal(a["evaluations"]["test"]["logits"], b["evaluations"]["test"]["logits"])
    if isinstance(a["loss"], torch.nn.Module):
        sa, sb = a["loss"].state_dict(), b["loss"].state_dict()
        assert sa.keys() == sb.keys()
        for key in sa:
            assert torch.equal(sa[key], sb[key]), f"loss buffer {key}"


@pytest.mark.parametrize("name", list(LOSSES))
def test_concurrent_run_equals_run_alone(concurrent, name):
    _assert_same_run(concurrent[name], _alone(_config(name)))


AMP_LOSSES = ["CE", "LDAM-DRW", "inverse + macro", "MR2 both"]


@pytest.fixture(scope="module")
def concurrent_amp():
    """Runs with amp=True (bf16 products where the CPU has them, float32 elsewhere) in two workers."""
    return dict(zip(AMP_LOSSES, train.run_parallel(train.fit_run, [_config(n, amp=True) for n in AMP_LOSSES], workers=2)))


@pytest.mark.parametrize("name", AMP_LOSSES)
def test_concurrent_amp_run_equals_run_alone(concurrent_amp, name):
    _assert_same_run(concurrent_amp[name], _alone(_config(name, amp=True)))


def test_stateful_losses_crossed_their_switch(concurrent):
    """The runs are long enough to exercise the state the test is about (else it proves little)."""
    inv = concurrent["inverse + macro"]["loss"].state_dict()
    assert any(float(v.abs().sum()) > 0 for k, v in inv.items() if v.dtype.is_floating_point), inv
    mr2 = concurrent["MR2 both"]["loss"]
    assert torch.isfinite(mr2.margins()).all() and float(mr2.margins().std()) > 0
    # a different seed changes the result: the comparison can tell runs apart
    other = _alone(_config("IB", seed=2))
    assert not torch.equal(other["state"]["classifier.weight"], concurrent["IB"]["state"]["classifier.weight"])


def test_weighted_contrastive_run_concurrent_equals_alone():
    (x, y), _ = _data()
    weight_fns = [losses.supcon_weights, functools.partial(losses.soft_supcon_weights, epsilon=0.05)]

    def configs():
        out = []
        for wf in weight_fns:
            torch.manual_seed(0)
            out.append(dict(model=models.MLP(12, (32,), 8, C, normalize=True), x=x, targets=y, weight_fn=wf,
                            temperature=0.5, steps=30, batch_size=32, seed=0))
        return out

    together = train.run_parallel(train.fit_weighted_contrastive, configs(), workers=2)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        alone = [train.fit_weighted_contrastive(**c) for c in configs()]
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(together, alone):
        assert a.losses == b.losses
        for (ka, va), (kb, vb) in zip(a.model.state_dict().items(), b.model.state_dict().items()):
            assert ka == kb and torch.equal(va, vb), ka


def test_evaluation_switch_changes_no_parameter():
    """eval_every=0 evaluates at the last epoch only, and trains exactly the same parameters."""
    every, last = _alone(_config("inverse + macro", eval_every=1)), _alone(_config("inverse + macro", eval_every=0))
    for key in every["state"]:
        assert torch.equal(every["state"][key], last["state"][key]), key
    assert every["history"].final["class_loss"] == last["history"].final["class_loss"]
    assert all(r.get("class_loss") is not None for r in every["history"].records)
    assert [r.get("class_loss") is not None for r in last["history"].records] == [False] * (EPOCHS - 1) + [True]
    with pytest.raises(ValueError, match=r"eval_every must be an integer >= 0 \(0: evaluate at the last epoch only\)"):
        train.fit(_mlp(), F.cross_entropy, _data()[0], epochs=1, eval_every=-1, progress=False)


def _fails(x):
    if x == 3:
        raise RuntimeError(f"run {x} failed")
    return x


def test_run_parallel_order_errors_and_arguments():
    configs = [{"a": i, "b": i + 1} for i in range(5)]
    mul = lambda a, b: a * b  # noqa: E731 (a notebook-style lambda travels by value)
    assert train.run_parallel(mul, configs, workers=2) == [i * (i + 1) for i in range(5)]
    assert train.run_parallel(mul, configs, workers=1) == [i * (i + 1) for i in range(5)]
    with pytest.raises(RuntimeError, match="run 3 failed"):
        train.run_parallel(_fails, [{"x": 1}, {"x": 3}], workers=2)
    with pytest.raises(ValueError, match="workers must be >= 1"):
        train.run_parallel(mul, configs, workers=0)
    with pytest.raises(ValueError, match="threads_per_worker must be an integer >= 1"):
        train.run_parallel(mul, configs, threads_per_worker=0)


def test_ncbook_workers_sets_the_default_worker_count(monkeypatch):
    """NCBOOK_WORKERS=1 (what the book build gives chapters it runs side by side) runs here, in order."""
    import os

    monkeypatch.setenv("NCBOOK_WORKERS", "1")
    pid = lambda i: (i, os.getpid())  # noqa: E731
    assert train.run_parallel(pid, [{"i": i} for i in range(3)]) == [(i, os.getpid()) for i in range(3)]
    monkeypatch.setenv("NCBOOK_WORKERS", "2")
    assert {p for _, p in train.run_parallel(pid, [{"i": i} for i in range(4)])} != {os.getpid()}
    monkeypatch.setenv("NCBOOK_WORKERS", "0")
    with pytest.raises(ValueError, match="NCBOOK_WORKERS must be a positive integer"):
        train.run_parallel(pid, [{"i": 0}, {"i": 1}])


def _matmul_precision():
    from ncbook.train._parallel import _backend, _new_precision_api  # by reference: torch.backends.mkldnn does not pickle

    return _backend("mkldnn.matmul").fp32_precision if _new_precision_api() else torch.get_float32_matmul_precision()


def _settings_probe():
    """What a worker sees of the caller's global torch settings."""
    import os

    return {"dtype": torch.get_default_dtype(), "deterministic": torch.are_deterministic_algorithms_enabled(),
            "matmul": _matmul_precision(), "threads": torch.get_num_threads(),
            "env": os.environ.get("NCBOOK_PROBE")}


def test_workers_inherit_the_callers_torch_settings(monkeypatch):
    before = (torch.get_default_dtype(), torch.are_deterministic_algorithms_enabled(), torch.get_float32_matmul_precision())
    plain = _settings_probe()["matmul"]
    monkeypatch.setenv("NCBOOK_PROBE", "here")
    torch.set_default_dtype(torch.float64)
    torch.use_deterministic_algorithms(True)
    torch.set_float32_matmul_precision("medium")
    medium = _settings_probe()["matmul"]  # "bf16" products on CPUs with the per-backend API, else "medium"
    assert medium != plain
    try:
        seen = train.run_parallel(_settings_probe, [{}, {}, {}], workers=2, progress=False)
    finally:
        torch.set_default_dtype(before[0])
        torch.use_deterministic_algorithms(before[1])
        torch.set_float32_matmul_precision(before[2])
    for s in seen:
        assert s == {"dtype": torch.float64, "deterministic": True, "matmul": medium, "threads": 1, "env": "here"}
    monkeypatch.delenv("NCBOOK_PROBE")  # the next call, made with the defaults again, does not keep them
    for s in train.run_parallel(_settings_probe, [{}, {}], workers=2, progress=False):
        assert s["dtype"] == before[0] and s["matmul"] == _matmul_precision() != medium and s["env"] is None


def test_float64_comparison_in_workers_equals_workers_1():
    """The reported fault: under float64 the workers computed in float32 and fit_run crashed on a dtype mismatch."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        train_set, test_set = _data()
        assert train_set[0].dtype == torch.float64
        configs = [dict(model=_mlp, loss=LOSSES[name], train=train_set, seed=1, epochs=2, batch_size=16, lr=0.05,
                        nc_every=0, eval_every=0, evaluate_on={"test": test_set}, return_loss=True)
                   for name in ("CE", "LDAM-DRW", "MR2 both")]
        together = train.run_parallel(train.fit_run, configs, workers=2, progress=False)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            alone = train.run_parallel(train.fit_run, configs, workers=1, progress=False)
        finally:
            torch.set_num_threads(threads)
    finally:
        torch.set_default_dtype(before)
    for a, b in zip(together, alone):
        assert a["state"]["classifier.weight"].dtype == torch.float64
        assert a["evaluations"]["test"]["logits"].dtype == torch.float64
        _assert_same_run(a, b)


class _Bar:
    """A stand-in for tqdm.auto.tqdm that records what the bar was told."""

    made = []

    def __init__(self, *args, total=None, **kwargs):
        self.iterable, self.total, self.n, self.closed = (args[0] if args else None), total, 0, False
        _Bar.made.append(self)

    def update(self, k=1):
        self.n += k

    def close(self):
        self.closed = True

    def __iter__(self):  # fit's bar over epochs
        return iter(self.iterable)

    def set_postfix(self, **kwargs):
        pass


def test_run_parallel_progress_bar_counts_finished_runs(monkeypatch):
    import tqdm.auto

    monkeypatch.setattr(tqdm.auto, "tqdm", _Bar)
    _Bar.made.clear()
    monkeypatch.setenv("NCBOOK_PROGRESS", "1")
    assert train.run_parallel(_fails, [{"x": 1}, {"x": 2}, {"x": 4}], workers=2) == [1, 2, 4]
    assert [(b.total, b.n, b.closed) for b in _Bar.made] == [(3, 3, True)]
    assert train.run_parallel(_fails, [{"x": 1}, {"x": 2}], workers=1) == [1, 2]
    assert (_Bar.made[-1].total, _Bar.made[-1].n) == (2, 2)
    monkeypatch.setenv("NCBOOK_PROGRESS", "0")
    assert train.run_parallel(_fails, [{"x": 1}, {"x": 2}], workers=2) == [1, 2]
    assert len(_Bar.made) == 2  # no bar
    monkeypatch.setenv("NCBOOK_PROGRESS", "yes")
    with pytest.raises(ValueError, match="NCBOOK_PROGRESS must be '0'"):
        train.run_parallel(_fails, [{"x": 1}])
    with pytest.raises(TypeError, match="progress must be True or False or None"):
        train.run_parallel(_fails, [{"x": 1}], progress="no")
    with pytest.raises(TypeError, match=r"configs must hold dicts .* configs\[0\] is int"):
        train.run_parallel(_fails, [1, 2], progress=False)


def test_fit_progress_defaults_to_show_progress(monkeypatch):
    import tqdm.auto

    monkeypatch.setattr(tqdm.auto, "tqdm", _Bar)
    _Bar.made.clear()
    (x, y), _ = _data()
    monkeypatch.setenv("NCBOOK_PROGRESS", "0")
    train.fit(_mlp(), F.cross_entropy, (x, y), epochs=2, nc_every=0)
    assert _Bar.made == []
    monkeypatch.setenv("NCBOOK_PROGRESS", "1")
    train.fit(_mlp(), F.cross_entropy, (x, y), epochs=2, nc_every=0)
    assert [b.total for b in _Bar.made] == [2]


def test_cost_probe_in_workers_shows_no_progress_bar(monkeypatch):
    """The cost probe runs in the workers of a parallel cell to time them; it is part of the cost line, so it draws
    no "runs" bar of its own (with progress on, a bar appears only for the cell's runs)."""
    import tqdm.auto

    monkeypatch.setattr(tqdm.auto, "tqdm", _Bar)
    _Bar.made.clear()
    monkeypatch.setenv("NCBOOK_PROGRESS", "1")
    monkeypatch.setenv("NCBOOK_WORKERS", "2")
    (x, y), _ = _data()
    tp = train.measure_fit(_mlp, F.cross_entropy, (x, y), batch_size=8, steps=(1, 2), device="cpu", parallel_runs=2)
    assert tp.workers == 2, "the probe ran in no worker: the test would not see its bar"
    assert _Bar.made == []
