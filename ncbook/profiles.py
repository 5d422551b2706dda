"""The quick/gpu/full profile switch, device choice, and the run-time plan of each chapter.

``quick`` runs every chapter on 2 CPU cores in about a minute, offline; ``gpu`` (the default on a
CUDA device) runs each chapter on the papers' data (CIFAR-10, long-tailed where the paper is) with
a shortened schedule planned to finish in about 10 minutes on one T4-class GPU; ``full`` runs the
papers' settings (hours: chosen explicitly, ``NCBOOK_PROFILE=full``).

``NCBOOK_SCALE=smoke`` (with ``NCBOOK_PROFILE=gpu`` or ``full``) keeps every code path of that
profile (CIFAR through torchvision, ResNet-32, on-device augmentation, checkpoints, results and
claims) but shrinks epochs, steps and sizes so that CI runs it on a CPU against the CIFAR
stand-in of :func:`ncbook.data.write_cifar_standin`. Its results go to a scratch folder, never
to ``results/``.

The plan (:data:`PLANS`, :func:`planned_seconds`, :func:`run_times`) turns each chapter's
parameters into the number of images its network cells train on and evaluate, and those into
minutes at an assumed training speed per device (:data:`DEVICE_SPEEDS`, each with its source).
Chapters measure the speed of the device they run on before each long cell
(:mod:`ncbook.train._cost`); the plan is what the README and the chapters' first cells state.
"""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass
from typing import Callable

import torch

from ._validation import check_callable, check_device, check_in, check_instance, check_path, check_positive, check_text

__all__ = ["profile", "scale", "default_device", "native_bf16", "usable_cores", "data_root", "results_dir", "checkpoint_dir", "show_progress", "PROFILES", "SCALES",
           "DeviceSpeed", "DEVICE_SPEEDS", "EVAL_SPEEDUP", "ChapterPlan", "PLANS", "planned_work", "planned_seconds", "run_times"]

PROFILES = ("quick", "gpu", "full")
SCALES = ("paper", "smoke")


def profile() -> str:
    """Return the active profile: ``"quick"``, ``"gpu"`` or ``"full"``.

    Read from the ``NCBOOK_PROFILE`` environment variable; when it is unset, ``"gpu"`` if a CUDA
    device is available (the papers' data, a schedule of about 10 minutes a chapter on a T4), else
    ``"quick"``. The papers' own schedules (``"full"``: hours) are never a default.

    Raises
    ------
    ValueError
        If ``NCBOOK_PROFILE`` is set to anything else.
    """
    value = os.environ.get("NCBOOK_PROFILE", "").strip().lower()
    if not value:
        return "gpu" if torch.cuda.is_available() else "quick"
    if value not in PROFILES:
        raise ValueError(f"NCBOOK_PROFILE must be one of {list(PROFILES)}; got {value!r}.")
    return value


def scale() -> str:
    """Return the active scale, ``"paper"`` (the default) or ``"smoke"``.

    Read from ``NCBOOK_SCALE``. ``"smoke"`` shrinks the gpu and full profiles' epochs, steps and
    sizes (every code path kept) for CI on a CPU; the quick profile ignores it.

    Raises
    ------
    ValueError
        If ``NCBOOK_SCALE`` is set to anything else.
    """
    value = os.environ.get("NCBOOK_SCALE", "").strip().lower() or "paper"
    if value not in SCALES:
        raise ValueError(f"NCBOOK_SCALE must be one of {list(SCALES)}; got {value!r}.")
    return value


def show_progress() -> bool:
    """Whether training loops and comparisons show progress bars: False when ``NCBOOK_PROGRESS=0``.

    The default of ``progress`` in :func:`ncbook.train.fit` and :func:`ncbook.train.run_parallel`.

    Raises
    ------
    ValueError
        If ``NCBOOK_PROGRESS`` is set to anything but ``"0"``, ``"1"`` or the empty string.

    Examples
    --------
    >>> isinstance(show_progress(), bool)   # False where NCBOOK_PROGRESS=0
    True
    """
    value = os.environ.get("NCBOOK_PROGRESS", "").strip()
    if value not in ("", "0", "1"):
        raise ValueError(f"NCBOOK_PROGRESS must be '0' (no progress bars), '1' or empty; got {value!r}.")
    return value != "0"


def default_device() -> torch.device:
    """``cuda`` when available, else ``cpu``."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def native_bf16(device: str | torch.device | None = None) -> bool:
    """Whether ``device`` multiplies bfloat16 matrices in hardware (so that bf16 autocast is faster).

    This decides what ``amp=True`` does in :func:`ncbook.train.fit`: bf16 autocast where it is
    native, float32 elsewhere (where bf16 products are emulated and slower than float32).

    Parameters
    ----------
    device : str or torch.device, optional
        Defaults to :func:`default_device`.

    Returns
    -------
    bool
        CUDA: ``torch.cuda.is_bf16_supported(including_emulation=False)`` (compute capability 8.0
        and later; a T4 answers False). CPU: the AVX512-BF16 or AMX instructions, from PyTorch's
        CPU feature probe. Any other device: False.

    Examples
    --------
    >>> native_bf16("meta")    # a device that computes nothing
    False
    >>> isinstance(native_bf16("cpu"), bool)   # True on CPUs with AVX512-BF16 or AMX
    True
    """
    device = default_device() if device is None else check_device("device", device)
    if device.type == "cuda":
        return torch.cuda.is_available() and torch.cuda.is_bf16_supported(including_emulation=False)
    if device.type == "cpu":
        probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")  # private probes: absent means no
        return any(getattr(torch.cpu, name, lambda: False)() for name in probes)
    return False


def usable_cores() -> int:
    """Cores this process may run on (its CPU affinity on Linux, else the machine's count).

    Examples
    --------
    >>> usable_cores() >= 1
    True
    """
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def data_root() -> str:
    """Folder for data sets: ``NCBOOK_DATA`` if set, else ``"data"`` (relative to the working directory).

    At the smoke scale without ``NCBOOK_DATA``: ``<tmp>/ncbook-standin``, where
    :func:`ncbook.data.cifar_tensors` writes the CIFAR stand-in when it is missing.
    """
    value = os.environ.get("NCBOOK_DATA", "").strip()
    if value:
        return value
    return os.path.join(tempfile.gettempdir(), "ncbook-standin") if scale() == "smoke" else "data"


#: Files at the root of an ncbook checkout: a working folder whose parent holds both is a folder of the
#: repository (``book/``, ``student/``), where records go to the repository's ``results/`` and ``checkpoints/``.
_CHECKOUT_MARKERS = ("_toc.yml", "_config.yml")


def _in_checkout(folder: str | os.PathLike | None = None) -> bool:
    """Whether ``folder`` (default: the working folder) sits directly in an ncbook checkout (``book/``,
    ``student/``): its parent holds the book's ``_toc.yml`` and ``_config.yml``.

    A chapter executed by the book build or the tests runs in ``book/``; a notebook opened alone (Colab's
    ``/content``, a download folder) does not, and :func:`results_dir` and :func:`checkpoint_dir` then keep
    what it writes inside its own folder.

    Parameters
    ----------
    folder : path, optional
        The folder a notebook runs in; default the working folder.

    Returns
    -------
    bool

    Raises
    ------
    TypeError, ValueError
        For a ``folder`` that is not a path.

    Examples
    --------
    >>> import tempfile
    >>> _in_checkout(tempfile.mkdtemp())      # an empty folder: a notebook on its own
    False
    """
    folder = os.getcwd() if check_path("folder", folder, allow_none=True) is None else os.fspath(folder)
    parent = os.path.dirname(os.path.abspath(folder))
    return all(os.path.isfile(os.path.join(parent, name)) for name in _CHECKOUT_MARKERS)


def results_dir(default: str | None = None) -> str:
    """Folder for recorded results, claims and cost records: ``NCBOOK_RESULTS`` if set, else ``default``.

    Without ``default``: ``../results`` (the repository's ``results/``) when the working folder is a folder of
    an ncbook checkout (:func:`_in_checkout`: the book build and the tests execute chapters in ``book/``),
    else ``results`` inside the working folder, so that a notebook opened alone (Colab's ``/content``, a
    download folder) writes nothing outside its own folder unless the reader sets ``NCBOOK_RESULTS``.

    At the smoke scale without ``NCBOOK_RESULTS``: ``<tmp>/ncbook-smoke-results``, so that stand-in
    numbers never land in the committed ``results/``.

    Parameters
    ----------
    default : path, optional
        The folder to use when ``NCBOOK_RESULTS`` is unset (relative paths from the working folder).

    Returns
    -------
    str

    Raises
    ------
    TypeError, ValueError
        For a ``default`` that is not a path; for an unknown ``NCBOOK_SCALE``.

    Examples
    --------
    >>> import os, tempfile
    >>> here = os.getcwd(); os.chdir(tempfile.mkdtemp())
    >>> results_dir() if not os.environ.get("NCBOOK_RESULTS") and scale() == "paper" else "results"
    'results'
    >>> os.chdir(here)
    """
    check_path("default", default, allow_none=True)
    value = os.environ.get("NCBOOK_RESULTS", "").strip()
    if value:
        return value
    if scale() == "smoke":
        return os.path.join(tempfile.gettempdir(), "ncbook-smoke-results")
    if default is None:
        return "../results" if _in_checkout() else "results"
    return os.fspath(default)


def checkpoint_dir(name: str, default: str | None = None) -> str:
    """Folder for the checkpoints of run ``name`` at the active profile: ``$NCBOOK_CHECKPOINTS/<profile>/name``,
    else ``default/<profile>/name``. Without ``default``: ``../checkpoints`` (git-ignored) in a folder of an
    ncbook checkout (:func:`_in_checkout`, as :func:`results_dir`), else ``checkpoints`` inside the working
    folder; at the smoke scale ``<tmp>/ncbook-smoke-checkpoints/<profile>/name``. Each profile keeps its own
    folder, so a gpu run never meets a full run's checkpoint.

    A gpu- or full-profile run that finds its ``last.pt`` there resumes from it (see
    :func:`ncbook.train.fit`). In Colab, mount Google Drive and point ``NCBOOK_CHECKPOINTS`` at a
    folder on it (``/content/drive/MyDrive/ncbook-checkpoints``): the checkpoints outlive the
    runtime, and rerunning the cell after a disconnect resumes where it stopped.

    Parameters
    ----------
    name : str
        The run's name (a chapter's stem).
    default : path, optional
        The base folder when ``NCBOOK_CHECKPOINTS`` is unset.

    Returns
    -------
    str

    Raises
    ------
    TypeError, ValueError
        For a ``name`` or ``default`` that is not a path; for an unknown profile or scale.

    Examples
    --------
    >>> checkpoint_dir("seli", default="ckpt").replace(os.sep, "/").split("/")[-1]
    'seli'
    """
    check_path("name", name)
    check_path("default", default, allow_none=True)
    base = os.environ.get("NCBOOK_CHECKPOINTS", "").strip()
    if not base:
        if scale() == "smoke":
            base = os.path.join(tempfile.gettempdir(), "ncbook-smoke-checkpoints")
        elif default is None:
            base = "../checkpoints" if _in_checkout() else "checkpoints"
        else:
            base = os.fspath(default)
    return os.path.join(base, profile(), name)


# ----------------------------------------------------------------------------- the run-time plan
@dataclass(frozen=True)
class DeviceSpeed:
    """The training speed a plan assumes on one kind of GPU, and where that number comes from.

    Parameters
    ----------
    device : str
        The GPU's name as :func:`torch.cuda.get_device_name` contains it (``"T4"``, ``"A100"``).
    train_images_per_s : float, > 0
        ResNet-32 (the chapters' network) training on 32x32 images at batch 128: forward, backward
        and an SGD step, crops and flips on the device, in ``precision``; images per second.
    precision : str
        What ``amp=True`` trains in on this device.
    source : str
        Where the number comes from (a measurement with its date, or an assumption and its reasoning).

    Raises
    ------
    TypeError, ValueError
        For a field of the wrong type, or a speed that is not a positive finite number.

    Examples
    --------
    >>> DeviceSpeed("L4", 6000, "bf16 autocast", "assumption").train_images_per_s
    6000.0
    """

    device: str
    train_images_per_s: float
    precision: str
    source: str

    def __post_init__(self):
        check_text("device", self.device)
        object.__setattr__(self, "train_images_per_s", check_positive("train_images_per_s", self.train_images_per_s))
        check_text("precision", self.precision)
        check_text("source", self.source)


#: ResNet-32 costs 412 MFLOP a training image and 138 MFLOP a forward pass (counted with
#: ``torch.utils.flop_counter.FlopCounterMode`` on ``ncbook.models.resnet32``): evaluation runs
#: about this many times as many images per second as training.
EVAL_SPEEDUP = 3.0

#: The plan's assumed speeds. No published ResNet-32 (CIFAR, batch 128) training throughput was found
#: for these devices, so each figure is an assumption, one parameter each, to be replaced by what
#: ``tools/run_full_gpu.sh`` measures on a lent GPU (it prints both side by side).
DEVICE_SPEEDS = (
    DeviceSpeed("T4", 4000.0, "float32 (a T4 has no native bf16, so amp=True trains in float32)",
                "assumption: about 20% of the T4's 8.1 TFLOP/s float32 peak (NVIDIA T4 datasheet) at "
                "412 MFLOP a training image; narrow 16-64 channel convolutions run far below peak"),
    DeviceSpeed("A100", 20000.0, "bf16 autocast (native from compute capability 8.0)",
                "assumption: at batch 128 a ResNet-32 step is bound by kernel launches, not arithmetic "
                "(about 470 kernels a step); not measured here"),
    DeviceSpeed("H100", 25000.0, "bf16 autocast",
                "assumption: launch-bound like the A100, with faster launches; not measured here"),
)


def _speed(device: str) -> DeviceSpeed:
    for entry in DEVICE_SPEEDS:
        if entry.device.lower() == str(device).lower():
            return entry
    raise ValueError(f"device must be one of {[d.device for d in DEVICE_SPEEDS]}; got {device!r}.")


@dataclass(frozen=True)
class ChapterPlan:
    """One chapter's plan: the parameters its ``parameters`` cell sets per profile, and its network work.

    Parameters
    ----------
    chapter : str
        The chapter's file stem.
    params : dict
        ``params[profile]`` (``"gpu"``, ``"full"``) holds the values of the chapter's parameters cell
        at the paper scale, a dict of name to value (a test executes that cell under each profile and
        compares).
    work : callable
        ``work(params[profile])`` returns, per long cell, ``(name, training images, evaluation images)``
        summed over that cell's runs, from those parameters and the data sizes the profile reads.
    quick_seconds : float, > 0
        A measurement of the whole chapter at the quick profile, in seconds.
    quick_source : str
        Where ``quick_seconds`` comes from (machine, load, date).

    Raises
    ------
    TypeError, ValueError
        For a field of the wrong type, a profile in ``params`` that is not one of :data:`PROFILES`,
        or a ``quick_seconds`` that is not a positive finite number.

    Examples
    --------
    >>> plan = ChapterPlan("demo", {"gpu": {"EPOCHS": 2}}, lambda p: [("net", 1000 * p["EPOCHS"], 0)], 30, "a guess")
    >>> plan.work(plan.params["gpu"])
    [('net', 2000, 0)]
    """

    chapter: str
    params: dict
    work: Callable[[dict], list]
    quick_seconds: float
    quick_source: str

    def __post_init__(self):
        check_text("chapter", self.chapter)
        check_instance("params", self.params, dict, what="profile -> dict of the parameters cell's values")
        for key, values in self.params.items():
            check_in("params (its profiles)", key, PROFILES)
            check_instance(f"params[{key!r}]", values, dict, what="the parameters cell's values")
        check_callable("work", self.work)
        object.__setattr__(self, "quick_seconds", check_positive("quick_seconds", self.quick_seconds))
        check_text("quick_source", self.quick_source)


# data sizes each profile reads (ncbook.data: the gpu subset of CIFAR-10 fits one 64 MiB carry)
_GPU_POOL = 14015          # CIFAR-10: the first max(n_c of CIFAR-10-LT IF 100, 500) training images of each class
_GPU_BALANCED = 5000       # CIFAR-10: the first 500 training images of each class
_GPU_TEST = 5000           # CIFAR-10: the first 500 test images of each class
_QUICK_SOURCE = ("measured: the book build with NCBOOK_PROFILE=quick on the 2 cores of an x86_64 machine of this "
                 "project's CI kind (AMD EPYC with AVX512-BF16), 2026-12-04, two chapters side by side (one core "
                 "each, NCBOOK_WORKERS=1), nothing else running: a chapter alone, with both cores, takes at most "
                 "this; a CPU without AVX512 takes up to about twice as long")


def _fit(n: int, epochs: int, batch: int, n_eval: int, evals: int) -> tuple[int, int]:
    """Training and evaluation images of one ``ncbook.train.fit`` run (drops the last partial batch)."""
    steps = n // batch if n >= batch else 1
    return epochs * steps * min(batch, n), evals * n_eval


def _lt_total(n_max: int, c: int, ratio: float) -> int:
    return sum(int(n_max * ratio ** (-i / (c - 1))) for i in range(c))


def _work_nc_primer(p):
    n, n_test = (_GPU_BALANCED, _GPU_TEST) if p["SUBSET"] else (50000, 10000)
    n_step = 5 * p["STEP_MAJ"] + 5 * p["STEP_MIN"]
    e_step = p["EPOCHS"] * n // n_step
    bal = _fit(n, p["EPOCHS"], p["BATCH"], n + n_test, -(-p["EPOCHS"] // p["NC_EVERY"]))  # NC epochs and the last
    step = _fit(n_step, e_step, p["BATCH"], n_step + n_test, 1)                            # evaluated at the end
    return [("balanced network", bal[0], bal[1] + n), ("STEP-imbalanced network", step[0], step[1] + n_step)]  # + the
    # training set once more at the end (the final classifier, features and class means)


def _work_seli(p):
    n_test = _GPU_TEST if p["SUBSET"] else 10000
    n = 5 * p["STEP_MAJ"] + 5 * p["STEP_MIN"]
    tr, ev = _fit(n, p["EPOCHS"], p["BATCH"], n + n_test, p["EPOCHS"])
    return [("STEP-imbalanced network", tr, ev + (p["EPOCHS"] // p["EVAL_EVERY"]) * n)]  # + the SELI callback


def _work_contrastive(p):
    def rows(pi1, k, n_maj=p["N_MAJ"]):                           # distinct rows one run forwards, and its class means
        n = n_maj + 2 * int(round(n_maj * (1 - pi1) / pi1 / 2))
        drawn = p["NET_BATCH"] * (2 + k)                          # anchors, positives, negatives per step
        unique = n * (1 - math.exp(-drawn / n))                   # each drawn row is forwarded once a step
        return int(p["NET_STEPS"] * unique), n
    tr = ev = 0
    for pi1 in p["PI_NET"]:
        t, n = rows(pi1, p["K_NET"])
        tr += 2 * t                                               # UCL and SCL
        ev += 2 * n                                               # class means of the unit features at the end
    gap_tr, gap_n = rows(0.9, p["K_GAP"], p["N_GAP"])             # one UCL run with K_GAP negatives at pi_1 = 0.9
    return [("contrastive networks", tr, ev), ("gap network", gap_tr, 2 * gap_n)]   # + the means at initialisation


def _work_weighted(p):
    n_test = _GPU_TEST if p["SUBSET"] else 10000
    n_net = sum(p["NET_COUNTS"])
    net = (2 * p["NET_STEPS"] * p["NET_BATCH"], 2 * n_net)
    reg = (2 * p["REG_STEPS"] * p["REG_BATCH"], 2 * min(2000, n_test))    # metrics on <= 2000 test images
    return [("supervised networks", *net), ("regression networks", *reg)]


def _work_inverse(p):
    sizes = {"cifar10": (5000, 10, _GPU_TEST if p["SUBSET"] else 10000), "cifar100": (500, 100, 10000)}
    tr = ev = 0
    for ds in p["DATASETS"]:
        n_max, c, n_test = sizes[ds]
        n = _lt_total(n_max, c, p["IMBALANCE"])
        for i, _ in enumerate(p["SEEDS"]):
            t, e = _fit(n, p["EPOCHS"], p["BATCH"], n + n_test, p["EPOCHS"] if i == 0 else 1)
            tr, ev = tr + 10 * t, ev + 10 * (e + n_test)        # ten methods; evaluate_on the test set after
    return [("comparison", tr, ev)]


def _work_mr2(p):
    n, n_test = (_GPU_BALANCED, _GPU_TEST) if p["SUBSET"] else (50000, 10000)
    epochs = max(1, round(p["STEPS"] * p["BATCH"] / n))
    runs = {"CE": p["SEEDS"], "comparison": 4 * p["SEEDS"] + len(p["C_BARS"]) + len(p["EMAS"]) + 2}  # + 2 cosine heads
    out = []
    for name, k in runs.items():
        t, e = _fit(n, epochs, p["BATCH"], n + n_test, 1)
        out.append((name, k * t, k * e))
    return out


_SELI_LAMBDAS = (1e-6, 1e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 2e-2, 3e-2, 5e-2)   # the ridge path (quick, gpu)

#: Each chapter's :class:`ChapterPlan`, by file stem: what its parameters cell sets at the gpu and full profiles,
#: the images its long cells train on and evaluate, and its measured quick-profile run time.
PLANS = {
    "nc_primer": ChapterPlan(
        "nc_primer",
        # read by ncbook.experiments.primer_setting. quick: digits, MLP 64-WIDTH-WIDTH-32 with BatchNorm, in float32
        # (AMP=False: the same arithmetic on CPUs with and without bf16); gpu and full: ResNet-32 on CIFAR-10. NC_EVERY:
        # epochs between the balanced run's NC measurements (and evaluations); STEP_MAJ, STEP_MIN: the STEP run's class
        # sizes (imbalance ratio STEP_MAJ / STEP_MIN), trained for as many steps as the balanced run; UFM_STEPS,
        # UFM_SEEDS: the UFM fits (gradient descent with momentum in float64 on the CPU, a fraction of a second each).
        {"quick": dict(DATASET="digits", SUBSET=None, WIDTH=256, EPOCHS=150, BATCH=128, LR=0.05, WD=5e-3, NC_EVERY=10,
                       AMP=False, STEP_MAJ=120, STEP_MIN=12, UFM_STEPS=600, UFM_SEEDS=3),
         "gpu": dict(DATASET="cifar10", SUBSET="gpu-balanced", EPOCHS=100, BATCH=128, LR=0.1, WD=5e-4, NC_EVERY=6,
                     AMP=True, STEP_MAJ=500, STEP_MIN=50, UFM_STEPS=600, UFM_SEEDS=3),
         "full": dict(DATASET="cifar10", SUBSET=None, EPOCHS=200, BATCH=128, LR=0.1, WD=5e-4, NC_EVERY=13, AMP=True,
                      STEP_MAJ=5000, STEP_MIN=500, UFM_STEPS=600, UFM_SEEDS=3)},
        _work_nc_primer, 13.0, _QUICK_SOURCE),
    "seli": ChapterPlan(
        "seli",
        # read by ncbook.experiments.seli_setting: the UFM runs (C = 4, half minorities, R in RATIOS, NGD and GD
        # steps), the ridge path (LAMBDAS), the STEP-imbalanced network (digits + MLP at quick, CIFAR-10 + ResNet-32
        # at gpu and full; WIDTH is the digits MLP's hidden width). The UFM and the ridge solves run on the CPU.
        # quick: NGD steps five times as long as gpu's and full's (1000 instead of 4000 steps of 0.1: the same
        # verdicts over 8 seeds, the minority cosine within 0.002 of SELI's), GD 1000 steps; the network an MLP
        # 64-256-256-32 for 100 epochs in float32 (AMP=False: the same arithmetic on CPUs with and without bf16);
        # before: 4000 + 4000 steps, 64-512-512-32 for 300 epochs in bf16 where the CPU has it (the same verdicts)
        {"quick": dict(UFM_DIM=8, N_MIN=5, RATIOS=(1, 10, 100), NGD_STEPS=1000, NGD_LR=0.5, GD_STEPS=1000, GD_LR=1.0,
                       RECORD=20, LAMBDAS=_SELI_LAMBDAS, DATASET="digits", SUBSET=None, EPOCHS=100, BATCH=128, LR=0.05,
                       WD=5e-3, EVAL_EVERY=5, STEP_MAJ=120, STEP_MIN=12, WIDTH=256, AMP=False),
         "gpu": dict(UFM_DIM=8, N_MIN=5, RATIOS=(1, 10, 100), NGD_STEPS=4000, NGD_LR=0.1, GD_STEPS=4000, GD_LR=1.0,
                     RECORD=20, LAMBDAS=_SELI_LAMBDAS, DATASET="cifar10", SUBSET="gpu", EPOCHS=200, BATCH=128, LR=0.1,
                     WD=5e-4, EVAL_EVERY=10, STEP_MAJ=500, STEP_MIN=50, WIDTH=None, AMP=True),
         "full": dict(UFM_DIM=8, N_MIN=5, RATIOS=(1, 10, 100), NGD_STEPS=8000, NGD_LR=0.1, GD_STEPS=100_000, GD_LR=1.0,
                      RECORD=100, LAMBDAS=tuple(10.0 ** k for k in (-8, -7, -6, -5, -4.5, -4, -3.5, -3, -2.5, -2, -1.8,
                                                                    -1.6, -1.5, -1.4, -1.3)),
                      DATASET="cifar10", SUBSET=None, EPOCHS=200, BATCH=128, LR=0.1, WD=5e-4, EVAL_EVERY=5,
                      STEP_MAJ=5000, STEP_MIN=500, WIDTH=None, AMP=True)},
        _work_seli, 18.0, _QUICK_SOURCE),
    "contrastive_imbalance": ChapterPlan(
        "contrastive_imbalance",
        {"quick": dict(DATASET="digits", SUBSET=None, N_MAJ=170, NET_STEPS=400, NET_BATCH=256, K_NET=4, PI_NET=(0.6, 0.9),
                       K_GAP=64, N_GAP=170),   # read by ncbook.experiments.contrastive_setting
         "gpu": dict(DATASET="cifar10", SUBSET="gpu", N_MAJ=5000, NET_STEPS=600, NET_BATCH=128, K_NET=4, PI_NET=(0.6, 0.9),
                     K_GAP=64, N_GAP=800),
         "full": dict(DATASET="cifar10", SUBSET=None, N_MAJ=5000, NET_STEPS=20000, NET_BATCH=256, K_NET=4, PI_NET=(0.6, 0.9),
                      K_GAP=64, N_GAP=1000)},
        _work_contrastive, 17.0, _QUICK_SOURCE),
    "weighted_contrastive": ChapterPlan(
        "weighted_contrastive",
        {"quick": dict(DATASET="digits", SUBSET=None, NET_COUNTS=[60] * 5 + [6] * 5, NET_STEPS=1000, NET_BATCH=128,
                       REG_STEPS=1200, REG_BATCH=256),   # read by ncbook.experiments.weighted_networks
         "gpu": dict(DATASET="cifar10", SUBSET="gpu", NET_COUNTS=[500] * 5 + [50] * 5, NET_STEPS=800, NET_BATCH=512,
                     REG_STEPS=800, REG_BATCH=512),
         "full": dict(DATASET="cifar10", SUBSET=None, NET_COUNTS=[5000] * 5 + [500] * 5, NET_STEPS=20000, NET_BATCH=1024,
                      REG_STEPS=20000, REG_BATCH=1024)},
        _work_weighted, 27.0, _QUICK_SOURCE),
    "inverse_reweighting": ChapterPlan(
        "inverse_reweighting",
        # quick: long-tailed digits (exponential profile), MLP 64-WIDTH-WIDTH-32 with BatchNorm, STEPS SGD steps a run
        # in float32 (AMP=False: the same arithmetic on CPUs with and without bf16), one "epoch" = REPEAT passes over
        # the data (the same verdicts as the former 64-512-512-32 MLP in bf16, 8 passes an epoch); gpu: CIFAR-10-LT alone, one seed, Cao et al.'s recipe shortened to
        # 12 epochs (1 warm-up epoch, then cosine; the DRW/IB/inverse switches keep their place at 80 % / 50 %);
        # full: Cao et al.'s recipe (ResNet-32, 200 epochs, 5 warm-up epochs, lr x0.01 at epochs 160 and 180).
        # MANY/FEW: the shot thresholds (scaled to digits sizes in quick); EVAL_EVERY: epochs between the first
        # seed's loss-curve points. Read by ncbook.experiments.reweighting_setting.
        {"quick": dict(DATASETS=["digits"], N_MAX=124, IMBALANCE=50, SEEDS=[0, 1, 2], BATCH=128, LR=0.05, WD=5e-3,
                       STEPS=1000, REPEAT=1, WIDTH=128, EVAL_EVERY=10, AMP=False, MANY=50, FEW=10),
         "gpu": dict(DATASETS=["cifar10"], SUBSET="gpu", IMBALANCE=100, SEEDS=[0], BATCH=128, LR=0.1, WD=2e-4, EPOCHS=12,
                     SCHEDULE="cosine", WARMUP=1, MILESTONES=(), EVAL_EVERY=1, AMP=True, MANY=100, FEW=20),
         "full": dict(DATASETS=["cifar10", "cifar100"], SUBSET=None, IMBALANCE=100, SEEDS=[0, 1, 2], BATCH=128, LR=0.1,
                      WD=2e-4, EPOCHS=200, SCHEDULE="step", WARMUP=5, MILESTONES=(160, 180), EVAL_EVERY=1, AMP=True,
                      MANY=100, FEW=20)},
        _work_inverse, 36.0, _QUICK_SOURCE),
    "mr2_margins": ChapterPlan(
        "mr2_margins",
        # read by ncbook.experiments.mr2_setting; the quick profile runs digits with pixel noise and an MLP
        {"quick": dict(DATASET="digits", SUBSET=None, NUM_CLASSES=10, NOISE=1.0, STEPS=800, BATCH=64, LR=0.05, WD=5e-3,
                       WARMUP=0, SEEDS=3, EMA=0.9, C_BARS=(0.5, 2.0), EMAS=(0.0, 0.99), AMP=False,
                       FIXED_MARGIN=1.0, LAMBDA_REP=0.1, COS_SCALE=16.0),
         "gpu": dict(DATASET="cifar10", SUBSET="gpu-balanced", NUM_CLASSES=10, NOISE=0.0, STEPS=36 * 39, BATCH=128,
                     LR=0.1, WD=5e-4, WARMUP=2, SEEDS=1, EMA=0.9, C_BARS=(0.5, 2.0), EMAS=(0.0, 0.99), AMP=True,
                     FIXED_MARGIN=1.0, LAMBDA_REP=0.1, COS_SCALE=16.0),
         "full": dict(DATASET="cifar100", SUBSET=None, NUM_CLASSES=100, NOISE=0.0, STEPS=200 * 390, BATCH=128, LR=0.1,
                      WD=5e-4, WARMUP=5, SEEDS=3, EMA=0.9, C_BARS=(0.5, 2.0), EMAS=(0.0, 0.99), AMP=True,
                      FIXED_MARGIN=1.0, LAMBDA_REP=0.1, COS_SCALE=16.0)},
        _work_mr2, 28.0, _QUICK_SOURCE),
}


def _plan(chapter: str) -> ChapterPlan:
    if chapter not in PLANS:
        raise ValueError(f"chapter must be one of {sorted(PLANS)}; got {chapter!r}.")
    return PLANS[chapter]


def planned_work(chapter: str, profile_name: str) -> list:
    """The network work of a chapter at a profile (paper scale): ``[(cell, training images, evaluation images)]``.

    Parameters
    ----------
    chapter : str
        A chapter's file stem, one of :data:`PLANS`.
    profile_name : {"gpu", "full"}
        The quick profile is measured, not planned.

    Returns
    -------
    list of (str, int, int)
        Per long cell: its name, the images it trains on and the images it evaluates, summed over its runs.

    Raises
    ------
    ValueError
        For an unknown chapter or profile.

    Examples
    --------
    >>> [(name, f"{t / 1e6:.2f} M") for name, t, _ in planned_work("seli", "gpu")]
    [('STEP-imbalanced network', '0.54 M')]
    """
    if profile_name not in ("gpu", "full"):
        raise ValueError(f"profile_name must be 'gpu' or 'full' (the quick profile is measured, not planned); "
                         f"got {profile_name!r}.")
    return _plan(chapter).work(_plan(chapter).params[profile_name])


def planned_seconds(chapter: str, profile_name: str, device: str = "T4") -> float:
    """Seconds of a chapter's network cells at a profile on a device, at the plan's assumed speed.

    Training images at ``DEVICE_SPEEDS[device].train_images_per_s``, evaluation images at
    :data:`EVAL_SPEEDUP` times that. The chapter's other cells (closed forms, solvers, the UFM) run on
    the CPU, under a minute each, and are not counted.

    Parameters
    ----------
    chapter : str
        One of :data:`PLANS`.
    profile_name : {"gpu", "full"}
    device : str
        A GPU of :data:`DEVICE_SPEEDS` by name (``"T4"``, ``"A100"``, ``"H100"``), not a torch device.

    Returns
    -------
    float
        Seconds.

    Raises
    ------
    ValueError
        For an unknown chapter, profile or device.

    Examples
    --------
    >>> planned_seconds("seli", "gpu", "T4") < 600          # planned to fit the 10 minutes
    True
    """
    speed = _speed(device).train_images_per_s
    return sum(t / speed + e / (EVAL_SPEEDUP * speed) for _, t, e in planned_work(chapter, profile_name))


def _minutes(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def run_times(chapter: str) -> str:
    """One line with a chapter's run time at each profile: quick measured, gpu and full planned.

    Parameters
    ----------
    chapter : str
        One of :data:`PLANS`.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        For an unknown chapter.

    Examples
    --------
    >>> print(run_times("seli"))  # doctest: +ELLIPSIS
    Run time (network cells...): quick ... on 2 CPU cores (measured); gpu ... on a T4, ... on an A100; full ...
    """
    plan = _plan(chapter)
    t4 = _speed("T4").train_images_per_s
    gpu = planned_seconds(chapter, "gpu", "T4")
    return (f"Run time (network cells; the plan assumes {t4:,.0f} ResNet-32 training images/s on a T4, an "
            f"assumption stated in ncbook.profiles.DEVICE_SPEEDS): quick {_minutes(plan.quick_seconds)} on 2 CPU "
            f"cores (measured); gpu {_minutes(gpu)} on a T4, {_minutes(planned_seconds(chapter, 'gpu', 'A100'))} "
            f"on an A100; full {_minutes(planned_seconds(chapter, 'full', 'T4'))} on a T4, "
            f"{_minutes(planned_seconds(chapter, 'full', 'A100'))} on an A100.")
