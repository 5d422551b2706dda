"""Cached chapter executions that never cross profiles or package versions.

With ``execute_notebooks: cache`` myst-nb keeps each executed notebook in a jupyter-cache
folder keyed on the notebook's code cells, so a prose-only edit rebuilds without executing
anything. That key does not see what else changes what a chapter computes. This extension makes
the cache folder itself carry it (:func:`cache_key`):

    <base>/<profile>-<scale>-<hash of the key>/

where the key holds the profile (``ncbook.profile()``), the scale (``ncbook.scale()``: a smoke
build and a paper-scale build of the full profile never share outputs), the Python version and
the versions of the libraries in :data:`LIBRARIES`, every file under ``ncbook/`` (path and bytes),
the data the kernels will find (for each CIFAR data set under ``ncbook.data_root()``: its files'
names and sizes, the stand-in's manifest, a packed archive) and the recorded full-profile runs
under ``ncbook.results_dir()`` that the chapters display. A change of any of them starts a
different folder (every chapter executes again), and the cache never serves one setting's outputs
to another. ``key.json`` in the folder says what it was keyed on. ``<base>`` is
``$NCBOOK_EXECUTION_CACHE`` if set, else ``.jupyter_cache/`` at the repository root: outside
``_build/``, so a clean build (``rm -rf _build``) on the same machine reuses it.

Two pages depend on more than their own code:

* the claim records a chapter writes when it executes (``<results>/claims/<profile>/<stem>.json``,
  ``<results>`` being ``ncbook.results_dir()`` as the kernels see it: ``results/``, or a scratch
  folder at the smoke scale) are kept next to the cached notebooks and put back before the build,
  so a chapter served from the cache still has its records, matching its cached outputs;
* the pages in :data:`FORCE` (the reproduction page, which reads those records) are executed on
  every read (``ncbook_order`` re-reads it whenever another page is re-read).

Chapters execute side by side. myst-nb executes a notebook while Sphinx reads it, one page after
another, and most chapters use one core. Before the read (``env-before-read-docs``) this extension
finds the chapters whose code has no cached run and executes them with jupyter-cache's own
execution function, ``$NCBOOK_BUILD_WORKERS`` at a time (default: the usable cores; ``1``: one
after another); when several run at once they fill the cores, so their kernels get
``NCBOOK_WORKERS=1`` (each comparison runs in its chapter's own process: the same numbers, see
``ncbook.train.run_parallel``). Each executed notebook goes into the cache exactly as myst-nb would
put it there, and the read takes it from the cache. Each chapter prints a line as it starts and as it
ends, with its seconds, and while chapters run a line a minute names them and their current cells.
The pages in :data:`FORCE` are left to the read (they run after every chapter).

Each cell of a chapter may run its chapter's time limit (:func:`chapter_limit`,
:mod:`ncbook_failures`: ``NCBOOK_CELL_TIMEOUT_FACTOR`` times the chapter's estimate on an idle
machine, at least ``execute: timeout``; ``NCBOOK_CELL_TIMEOUT`` sets one limit for every cell). A
chapter fails when a cell raises (in the build a failed self-check raises: ``NCBOOK_STRICT_CHECKS=1``),
passes its limit or kills the kernel, or when its page reads a glue key that no cell set. A failed
chapter is reported as an error of its page whose first line names the chapter, the cell (number,
line in the ``.md`` file, first source line) and the cause; it is not executed again during the read:
its page is read as one that says it failed (a banner, no outputs, its glued numbers marked "not
computed"), and the build's last lines list the failed chapters and the build exits with status 1
(:func:`report_failures`), with or without ``-W``.

A page with no cached run is read again in every incremental build (``env-get-outdated``), even if
its file did not change, and so is a page that failed in the last build (``failures.json`` in the
cache folder): a page whose execution failed is never cached, so the build fails every time until
the cell is mended, not only the first.

Every kernel of the build (side by side before the read, or started by myst-nb while it reads a
page) gets ``NCBOOK_PROGRESS=0`` (a page shows no progress bars; ``ncbook.profiles.show_progress()``
reads it, while the same cells run in a notebook show them) and ``NCBOOK_STRICT_CHECKS=1``.

When the offline assets of ``tools/vendor_assets.sh`` are missing (no Node.js on the machine),
MathJax and the widget scripts fall back to the default online copies instead of pointing at
files that are not there.

Registered in ``_config.yml`` under ``sphinx: local_extensions``.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import ncbook_failures as failures  # book/_ext: what a failed chapter says, and its cells' time limits

FORCE = ("book/reproduction",)
PROGRESS_ENV = "NCBOOK_PROGRESS"  # "0": ncbook.profiles.show_progress() is False (no tqdm bars in the pages)
STRICT_ENV = "NCBOOK_STRICT_CHECKS"  # "1": a failed check raises (ncbook.exercises.CheckResult)
KERNEL_LOG_LEVEL = "--IPKernelApp.log_level=ERROR"  # no "Kernel is running over TCP without encryption" per kernel
HEARTBEAT_S = 60.0  # while chapters execute, a line every minute says which run and for how long
FAILURES_FILE = "failures.json"  # in the cache folder: the pages that failed in the last build, read again in the next
LIBRARIES = ("numpy", "scipy", "torch", "torchvision", "cvxpy", "clarabel", "scikit-learn", "matplotlib", "joblib")
VENDOR = Path("book") / "_vendor"
FACTOR_ENV_TEXT = (f"{failures.FACTOR_ENV} x the chapter's estimate, at least execute: timeout; "
                   f"{failures.TIMEOUT_ENV} sets one limit for every cell")


def current_profile() -> str:
    """The profile the kernels will see: ``ncbook.profile()`` (it reads ``NCBOOK_PROFILE``)."""
    try:
        import ncbook

        return ncbook.profile()
    except Exception:  # no importable ncbook: the variable alone decides
        return os.environ.get("NCBOOK_PROFILE", "quick")


def current_scale() -> str:
    """The scale the kernels will see: ``ncbook.scale()`` (it reads ``NCBOOK_SCALE``)."""
    try:
        import ncbook

        return ncbook.scale()
    except Exception:
        return os.environ.get("NCBOOK_SCALE", "").strip().lower() or "paper"


def package_hash(root: Path) -> str:
    """SHA-256 (16 hex digits) of every file under ``ncbook/`` (path and bytes), byte code left out."""
    digest = hashlib.sha256()
    pkg = root / "ncbook"
    for path in sorted(pkg.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def library_versions() -> dict[str, str]:
    """The installed version of each library in :data:`LIBRARIES` (``"missing"`` if absent)."""
    versions = {}
    for name in LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "missing"
    return versions


def _kernel_path(root: Path, value: str) -> Path:
    """A path as a kernel resolves it: the chapters execute in ``book/``."""
    path = Path(value)
    return path if path.is_absolute() else (root / "book" / path).resolve()


def kernel_data_root(root: Path) -> Path:
    """``ncbook.data_root()`` as the kernels resolve it (``NCBOOK_DATA``, the smoke stand-in, or ``book/data``)."""
    try:
        import ncbook

        value = ncbook.data_root()
    except Exception:
        value = os.environ.get("NCBOOK_DATA", "").strip() or "data"
    return _kernel_path(root, value)


def kernel_results_dir(root: Path) -> Path:
    """``ncbook.results_dir()`` as the kernels resolve it (``NCBOOK_RESULTS``, a smoke scratch folder, or ``results/``).

    The kernels run in ``book/`` of this checkout, where the default is ``../results``; this process runs
    at the root, so the default is passed explicitly."""
    try:
        import ncbook

        value = ncbook.results_dir(default="../results")
    except Exception:
        value = os.environ.get("NCBOOK_RESULTS", "").strip() or "../results"
    return _kernel_path(root, value)


CIFAR = {"cifar10": "cifar-10-batches-py", "cifar100": "cifar-100-python"}  # torchvision's folders
STANDIN_MANIFEST = "ncbook-standin.json"


def data_fingerprint(data_root: Path) -> dict[str, Any]:
    """What the chapters will find under ``data_root``, per CIFAR data set.

    For each data set: ``"absent"``, or its files' names and sizes (the real archives' contents are
    fixed by torchvision's checksums) and, for a stand-in, the SHA-256 of its manifest (which holds
    the md5 of every file); a packed archive (``ncbook-<name>.tar.xz``) by name and size.
    """
    found: dict[str, Any] = {}
    for name, folder in CIFAR.items():
        entry: dict[str, Any] = {}
        path = data_root / folder
        if path.is_dir():
            entry["files"] = {p.relative_to(path).as_posix(): p.stat().st_size
                              for p in sorted(path.rglob("*")) if p.is_file()}
            manifest = path / STANDIN_MANIFEST
            if manifest.is_file():
                entry["stand-in manifest"] = hashlib.sha256(manifest.read_bytes()).hexdigest()[:16]
        packed = data_root / f"ncbook-{name}.tar.xz"
        if packed.is_file():
            entry["packed"] = packed.stat().st_size
        found[name] = entry or "absent"
    return found


def recorded_runs_hash(results: Path) -> str:
    """SHA-256 (16 hex digits) of the recorded full-profile runs the chapters display (``<results>/<chapter>/*.json``).

    The claim records and cost estimates (``<results>/claims/``, ``<results>/costs/``) are what the chapters
    write while they run, not what they read, and stay out.
    """
    from ncbook.book import WRITTEN_WHILE_RUNNING

    digest = hashlib.sha256()
    if results.is_dir():
        for path in sorted(results.glob("*/**/*.json")):
            rel = path.relative_to(results)
            if rel.parts[0] not in WRITTEN_WHILE_RUNNING:
                digest.update(rel.as_posix().encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def cache_key(root: Path, profile: str | None = None) -> dict[str, Any]:
    """Everything outside a chapter's code cells that changes what it computes, as plain data:
    profile, scale, Python and library versions, the ``ncbook`` sources, the data present and the
    recorded runs the chapters display."""
    return {
        "profile": profile or current_profile(),
        "scale": current_scale(),
        "python": platform.python_version(),
        "libraries": library_versions(),
        "ncbook": package_hash(root),
        "data": data_fingerprint(kernel_data_root(root)),
        "recorded runs": recorded_runs_hash(kernel_results_dir(root)),
    }


def cache_base(root: Path) -> Path:
    base = os.environ.get("NCBOOK_EXECUTION_CACHE")
    return Path(base).resolve() if base else root / ".jupyter_cache"


def cache_folder(root: Path, profile: str | None = None, key: dict | None = None) -> Path:
    """``<base>/<profile>-<scale>-<hash of the key>`` (``key`` defaults to :func:`cache_key`)."""
    key = cache_key(root, profile) if key is None else key
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return cache_base(root) / f"{key['profile']}-{key['scale']}-{digest}"


def _copy_json(src: Path, dst: Path) -> int:
    if not src.is_dir():
        return 0
    dst.mkdir(parents=True, exist_ok=True)
    n = 0
    for path in src.glob("*.json"):
        shutil.copy2(path, dst / path.name)
        n += 1
    return n


def configure(app, config) -> None:
    """``config-inited``: point the execution cache at the keyed folder; restore claim records."""
    root = Path(app.srcdir)
    if not (root / VENDOR / "mathjax" / "tex-chtml.js").is_file():
        _online_assets(config)
    if config.nb_execution_mode != "cache":
        return
    base = cache_base(root)
    if base.is_relative_to(root.resolve()) or base.is_relative_to(root):  # never read cached notebooks as pages
        rel = base.relative_to(root.resolve() if base.is_relative_to(root.resolve()) else root).as_posix()
        config.exclude_patterns = [*config.exclude_patterns, rel, f"{rel}/**"]
    profile = current_profile()
    key = cache_key(root, profile)
    folder = cache_folder(root, key=key)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "key.json").write_text(json.dumps(key, indent=1, sort_keys=True) + "\n")
    config.nb_execution_cache_path = str(folder)
    records = kernel_results_dir(root) / "claims" / profile  # where the kernels write this profile's records
    app.ncbook_claims = (records, folder / "claims")
    restored = _copy_json(folder / "claims", records)
    print(f"ncbook_cache: execution cache {folder} (profile {profile}, scale {key['scale']}); "
          f"{restored} claim records restored")


def quiet_progress(app, config) -> None:
    """``config-inited``: ``NCBOOK_PROGRESS=0`` for every kernel of the build (no progress bars on a page)."""
    os.environ[PROGRESS_ENV] = "0"


def strict_checks(app, config) -> None:
    """``config-inited``: ``NCBOOK_STRICT_CHECKS=1`` for every kernel of the build: a failed self-check raises
    (``ncbook.exercises.CheckResult``), so a chapter whose solution fails its own check fails the build."""
    os.environ[STRICT_ENV] = "1"


def _online_assets(config) -> None:
    """No vendored MathJax: use the default online MathJax and widget scripts."""
    for name in ("mathjax_path", "nb_ipywidgets_js"):
        if name in config.values:
            default = config.values[name].default
            setattr(config, name, default(config) if callable(default) else default)
    print("ncbook_cache: book/_vendor has no MathJax (tools/vendor_assets.sh skipped): pages load MathJax online")


def force_execution(app, docname: str, source: list[str]) -> None:
    """``source-read``: the page as myst-nb should read it.

    * a page whose chapter failed in this build (:func:`execute_side_by_side`) is read as a page that says so
      (:func:`ncbook_failures.failed_page`: a banner with the cause, no execution, its glued numbers marked
      "not computed");
    * the pages in :data:`FORCE` are executed on every read;
    * a notebook page that myst-nb executes itself gets its chapter's cell time limit
      (``execution_timeout``, :func:`chapter_limit`).
    """
    failure = getattr(app, "ncbook_failures", {}).get(docname)
    if failure is not None:
        source[0] = failures.failed_page(source[0], failure)
        return
    config = getattr(app, "config", None)
    mode = getattr(config, "nb_execution_mode", "cache")
    if mode == "off" or not source[0].startswith("---\n"):
        return
    head = source[0].split("\n---", 1)[0]
    if "jupytext" not in head and "kernelspec" not in head:
        return
    options = {"execution_mode": "force"} if mode == "cache" and docname in FORCE and "\nmystnb:" not in head else {}
    floor = getattr(config, "nb_execution_timeout", None)
    limit = chapter_limit(Path(app.srcdir), docname, floor)
    if limit.seconds > 0 and "execution_timeout" not in head:
        options["execution_timeout"] = limit.seconds
    if options:
        source[0] = failures.set_file_options(source[0], **options)


def chapter_limit(root: Path, doc: str, floor: int | None) -> failures.CellLimit:
    """The time limit of each cell of page ``doc`` (:func:`ncbook_failures.cell_limit`) at the kernels'
    profile and scale, with their cost records."""
    return failures.cell_limit(doc.rsplit("/", 1)[-1], floor=floor, profile=current_profile(), scale=current_scale(),
                               results=kernel_results_dir(root))


def build_workers() -> int:
    """Cores the build may fill with chapters: ``$NCBOOK_BUILD_WORKERS``, else the usable cores."""
    value = os.environ.get("NCBOOK_BUILD_WORKERS")
    if value is not None:
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"NCBOOK_BUILD_WORKERS must be a positive integer; got {value!r}.")
        return int(value)
    from ncbook import usable_cores

    return usable_cores()


@dataclass
class Stale:
    """A page read as a notebook whose code has no run in the cache."""

    doc: str
    path: Path
    notebook: Any
    read_fmt: dict | None
    comparison: bool = False  # its code calls run_parallel: independent runs, the long chapters


def _stale_notebooks(env, docnames, cache) -> list[Stale]:
    """Every page in ``docnames`` (but :data:`FORCE`) read as a notebook with no cached run."""
    from myst_nb.core.read import create_nb_reader

    stale = []
    for doc in docnames:
        if doc in FORCE:
            continue
        path = Path(env.doc2path(doc))
        text = path.read_text(encoding="utf-8")
        reader = create_nb_reader(str(path), env.myst_config, env.mystnb_config, text)
        if reader is None:
            continue
        notebook = reader.read(text)
        try:
            cache.match_cache_notebook(notebook)
        except KeyError:
            comparison = any(c.cell_type == "code" and "run_parallel(" in c.source for c in notebook.cells)
            stale.append(Stale(doc, path, notebook, reader.read_fmt, comparison))
    return stale


@dataclass
class Run:
    """One chapter's execution as it goes: when it started, which cell runs since when."""

    doc: str
    start: float = 0.0
    cell_index: int | None = None
    cell_start: float | None = None

    def on_cell_execute(self, cell=None, cell_index=None, **_) -> None:  # nbclient's hook, before each cell
        self.cell_index, self.cell_start = cell_index, time.time()


def _execute(item: Stale, limit: failures.CellLimit, allow_errors, run: Run) -> tuple[BaseException | None, float]:
    """Execute one notebook in place in its own folder (as myst-nb does); its error (or None) and seconds."""
    from jupyter_cache.executors.utils import single_nb_execution

    run.start = time.time()
    print(f"ncbook_cache: {item.doc}: started (a cell may run {limit.text()})", flush=True)
    try:
        result = single_nb_execution(item.notebook, cwd=str(item.path.parent), timeout=limit.seconds,
                                     allow_errors=allow_errors, meta_override=True, on_cell_execute=run.on_cell_execute,
                                     extra_arguments=[KERNEL_LOG_LEVEL])
    except Exception as err:  # a dead or missing kernel
        return err, time.time() - run.start
    return result.err, result.time


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.1f} min"


def _heartbeat(runs: list[Run], item_of: dict) -> None:
    now = time.time()
    parts = []
    for run in runs:
        cell = ""
        if run.cell_index is not None and run.cell_start is not None:
            where, _ = failures._code_cell(item_of[run.doc].notebook, run.cell_index, "")
            cell = f", {where.split(' (')[0]} for {_minutes(now - run.cell_start)}"
        parts.append(f"{run.doc} {_minutes(now - run.start)}{cell}")
    if parts:
        print(f"ncbook_cache: still running: {'; '.join(parts)}", flush=True)


def _source_path(root: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _check_cached_glue(app, env, docnames, stale_docs: set, cache) -> tuple[list[failures.Failure], int]:
    """Pages served from the cache: a glue key the page reads that the cached run never set is a failure.
    Returns the failures and how many pages are served from the cache."""
    from myst_nb.core.read import create_nb_reader

    found, served = [], 0
    for doc in docnames:
        if doc in FORCE or doc in stale_docs:
            continue
        path = Path(env.doc2path(doc))
        text = path.read_text(encoding="utf-8")
        reader = create_nb_reader(str(path), env.myst_config, env.mystnb_config, text)
        if reader is None:
            continue
        try:
            _, notebook = cache.merge_match_into_notebook(reader.read(text))
        except KeyError:
            continue
        served += 1
        failure = failures.glue_failure(doc, _source_path(Path(app.srcdir), path), text, notebook)
        if failure is not None:
            app.ncbook_failures[doc] = failure
            found.append(failure)
            print(f"ncbook_cache: {doc}: FAILED (served from the cache): {failure.summary}", flush=True)
    return found, served


def _report(failure: failures.Failure) -> None:
    """Log a failure as an error of its page (first line: chapter, cell and cause); ``-W`` fails the build."""
    from sphinx.util import logging as sphinx_logging

    location = (failure.doc, failure.line) if failure.line else failure.doc
    message = failure.summary + (f"\n{failure.details}" if failure.details else "")
    sphinx_logging.getLogger("ncbook_cache").error(message, location=location)


def execute_side_by_side(app, env, docnames: list[str]) -> None:
    """``env-before-read-docs``: execute the chapters with no cached run side by side; cache what succeeds.

    One chapter per core (``NCBOOK_BUILD_WORKERS``). When several run at once they fill the cores, so their
    kernels see ``NCBOOK_WORKERS=1`` and run their comparisons (``run_parallel``) in their own process, with
    the same numbers. The comparisons go first (the longest chapters), then the longest first from the last
    build's timings when there are any. Each chapter prints a line when it starts and when it ends (with its
    seconds), and a line every minute says which chapters and cells are running.

    Each cell may run its chapter's time limit (:func:`chapter_limit`). A chapter that fails (a cell raises
    or passes its limit, the kernel dies, or its page reads a glue key no cell set) is not cached: it is
    reported as an error of its page whose first line names the chapter, the cell and the cause, its page
    says it failed (:func:`force_execution`), and the build ends with a failing status
    (:func:`report_failures`). Pages served from the cache are checked for unset glue keys too.
    """
    config = env.mystnb_config
    if config.execution_mode != "cache":
        return
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    if getattr(app, "ncbook_failures", None) is None:
        app.ncbook_failures = {}
    root = Path(app.srcdir)
    cache = get_cache(config.execution_cache_path)
    stale = _stale_notebooks(env, docnames, cache)
    failed, served = _check_cached_glue(app, env, docnames, {item.doc for item in stale}, cache)
    if served or not stale:
        print(f"ncbook_cache: {served} chapters served from the cache, {len(stale)} to execute", flush=True)
    if not stale:
        for failure in failed:
            _report(failure)
        return
    workers = min(build_workers(), len(stale))
    timings_path = cache_base(root) / "timings.json"
    try:
        timings = json.loads(timings_path.read_text())
    except (OSError, ValueError):
        timings = {}
    stale.sort(key=lambda item: (not item.comparison, -timings.get(item.doc, 0.0)))
    limits = {item.doc: chapter_limit(root, item.doc, config.execution_timeout) for item in stale}
    each = ", ".join(f"{doc.rsplit('/', 1)[-1]} {limit.text()}" for doc, limit in limits.items())
    print(f"ncbook_cache: executing {len(stale)} chapters, {workers} at a time; a cell may run: {each} "
          f"({FACTOR_ENV_TEXT})", flush=True)
    start, executed_failed, saved = time.perf_counter(), 0, os.environ.get("NCBOOK_WORKERS")
    if workers > 1:
        os.environ["NCBOOK_WORKERS"] = "1"  # inherited by the kernels started below (and NCBOOK_PROGRESS=0, NCBOOK_STRICT_CHECKS=1)
    runs = {item.doc: Run(item.doc) for item in stale}
    item_of = {item.doc: item for item in stale}
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(_execute, item, limits[item.doc], config.execution_allow_errors, runs[item.doc]): item
                       for item in stale}
            pending = set(futures)
            while pending:  # cache and report each chapter as it finishes; a line a minute while they run
                done, pending = wait(pending, timeout=HEARTBEAT_S, return_when=FIRST_COMPLETED)
                if not done:
                    _heartbeat([runs[futures[f].doc] for f in pending if runs[futures[f].doc].start], item_of)
                for future in done:
                    item = futures[future]
                    err, seconds = future.result()
                    run, source_path = runs[item.doc], _source_path(root, item.path)
                    if err is not None:  # not cached: executed again in the next build, until mended
                        ran = time.time() - run.cell_start if run.cell_start is not None else None
                        failure = failures.describe_failure(item.doc, source_path, item.notebook, err,
                                                            cell_index=run.cell_index, ran_s=ran, limit=limits[item.doc])
                    else:  # every cell ran: cached; an unset glue key is a fault of the page, checked at every build
                        record = cache.add_nb_to_project(str(item.path), **({"read_data": item.read_fmt} if item.read_fmt else {}))
                        cache.cache_notebook_bundle(CacheBundleIn(item.notebook, record.uri, data={"execution_seconds": seconds}),
                                                    check_validity=False, overwrite=True)
                        timings[item.doc] = round(seconds, 1)
                        failure = failures.glue_failure(item.doc, source_path, item.path.read_text(encoding="utf-8"),
                                                        item.notebook)
                    if failure is not None:
                        failed.append(failure)
                        executed_failed += 1
                        app.ncbook_failures[item.doc] = failure
                        print(f"ncbook_cache: {item.doc}: FAILED after {seconds:.1f} s: {failure.summary}", flush=True)
                    else:
                        print(f"ncbook_cache: {item.doc}: executed in {seconds:.1f} s", flush=True)
    finally:
        if saved is None:
            os.environ.pop("NCBOOK_WORKERS", None)
        else:
            os.environ["NCBOOK_WORKERS"] = saved
    print(f"ncbook_cache: {len(stale) - executed_failed} chapters executed ({executed_failed} failed) in "
          f"{time.perf_counter() - start:.1f} s of wall time", flush=True)
    timings_path.parent.mkdir(parents=True, exist_ok=True)
    timings_path.write_text(json.dumps(timings, indent=1, sort_keys=True))
    for failure in failed:  # after every chapter has run: -W without --keep-going stops at the first
        _report(failure)


def reread_uncached(app, env, added, changed, removed) -> list[str]:
    """``env-get-outdated``: re-read every notebook page with no cached run, even if its file did not change,
    and every page that failed in the last build (:data:`FAILURES_FILE`).

    A failed execution is never cached, so a page that failed in the last build is read (and
    executed) again: an incremental build with ``-W`` fails as long as a cell fails, as a clean
    build does.
    """
    if env.mystnb_config.execution_mode != "cache":
        return []
    from jupyter_cache import get_cache

    known = set(env.all_docs) - added - changed - removed  # pages Sphinx would not read again
    cache = get_cache(env.mystnb_config.execution_cache_path)
    again = [item.doc for item in _stale_notebooks(env, sorted(known), cache)]
    again += [doc for doc in _failed_last_time(env) if doc in known and doc not in again]
    return again + [doc for doc in FORCE if doc in env.found_docs] if again else []


def _failures_path(env) -> Path:
    return Path(env.mystnb_config.execution_cache_path) / FAILURES_FILE


def _failed_last_time(env) -> list[str]:
    try:
        return list(json.loads(_failures_path(env).read_text()))
    except (OSError, ValueError, TypeError):
        return []


def save_claims(app, exception) -> None:
    """``build-finished``: keep the claim records next to the cached notebooks that wrote them."""
    pair = getattr(app, "ncbook_claims", None)
    if exception is None and pair is not None:
        _copy_json(*pair)


def report_failures(app, exception) -> None:
    """``build-finished``: the build's last lines say which chapters failed, and the build fails.

    The failed pages are remembered (:data:`FAILURES_FILE`) so that the next build reads them again.
    """
    found = getattr(app, "ncbook_failures", None)
    env = getattr(app, "env", None)
    if env is not None and getattr(env, "mystnb_config", None) is not None \
            and env.mystnb_config.execution_mode == "cache" and found is not None:
        path = _failures_path(env)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(sorted(found), indent=1) + "\n")
        except OSError:
            pass
    if not found:
        return
    lines = [f"ncbook_cache: THE BOOK DID NOT BUILD: {len(found)} chapter{'s' if len(found) > 1 else ''} failed "
             "(their pages say so; the errors above give the tracebacks):"]
    lines += [f"ncbook_cache:   {found[doc].summary}" for doc in sorted(found)]
    lines.append("ncbook_cache: mend them and build again: the failed pages are read again, the chapters whose "
                 "cells failed execute again.")
    print("\n".join(lines), flush=True)
    if exception is None:
        app.statuscode = 1


def setup(app):
    app.connect("config-inited", configure)
    app.connect("config-inited", quiet_progress)
    app.connect("config-inited", strict_checks)
    app.connect("source-read", force_execution)
    app.connect("env-get-outdated", reread_uncached)
    app.connect("env-before-read-docs", execute_side_by_side)
    app.connect("build-finished", save_claims)
    app.connect("build-finished", report_failures)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
