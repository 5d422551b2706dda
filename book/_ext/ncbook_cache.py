"""Cached chapter executions that never cross profiles or package versions.

With ``execute_notebooks: cache`` myst-nb keeps each executed notebook in a jupyter-cache
folder keyed on the notebook's code cells, so a prose-only edit rebuilds without executing
anything. That key does not see what the code imports: the profile (``NCBOOK_PROFILE``) and the
``ncbook`` package. This extension makes the cache folder itself carry them:

    <base>/<profile>-<hash of the ncbook sources and the numeric library versions>/

so a change of profile or of any file under ``ncbook/`` starts a different folder (every
chapter executes again), and the cache never serves one profile's outputs to another. ``<base>``
is ``$NCBOOK_EXECUTION_CACHE`` if set, else ``.jupyter_cache/`` at the repository root: outside
``_build/``, so a clean build (``rm -rf _build``) on the same machine reuses it.

Two pages depend on more than their own code:

* the claim records a chapter writes when it executes (``results/claims/<profile>/<stem>.json``)
  are kept next to the cached notebooks and put back before the build, so a chapter served from
  the cache still has its records, matching its cached outputs;
* the pages in :data:`FORCE` (the reproduction page, which reads those records) are executed on
  every read (``ncbook_order`` re-reads it whenever another page is re-read).

When the offline assets of ``tools/vendor_assets.sh`` are missing (no Node.js on the machine),
MathJax and the widget scripts fall back to the default online copies instead of pointing at
files that are not there.

Registered in ``_config.yml`` under ``sphinx: local_extensions``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from importlib import metadata
from pathlib import Path

FORCE = ("book/reproduction",)
LIBRARIES = ("numpy", "scipy", "torch", "cvxpy", "scikit-learn")
VENDOR = Path("book") / "_vendor"


def current_profile() -> str:
    """The profile the kernels will see: ``ncbook.profile()`` (it reads ``NCBOOK_PROFILE``)."""
    try:
        import ncbook

        return ncbook.profile()
    except Exception:  # no importable ncbook: the variable alone decides
        return os.environ.get("NCBOOK_PROFILE", "quick")


def package_hash(root: Path) -> str:
    """SHA-256 (16 hex digits) of every file under ``ncbook/`` (path and bytes) and the library versions."""
    digest = hashlib.sha256()
    pkg = root / "ncbook"
    for path in sorted(pkg.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    for name in LIBRARIES:
        try:
            digest.update(f"{name}=={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name} missing".encode())
    return digest.hexdigest()[:16]


def cache_base(root: Path) -> Path:
    base = os.environ.get("NCBOOK_EXECUTION_CACHE")
    return Path(base).resolve() if base else root / ".jupyter_cache"


def cache_folder(root: Path, profile: str) -> Path:
    return cache_base(root) / f"{profile}-{package_hash(root)}"


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
    folder = cache_folder(root, profile)
    folder.mkdir(parents=True, exist_ok=True)
    config.nb_execution_cache_path = str(folder)
    app.ncbook_claims = (root / "results" / "claims" / profile, folder / "claims")
    restored = _copy_json(folder / "claims", root / "results" / "claims" / profile)
    print(f"ncbook_cache: execution cache {folder} (profile {profile}); {restored} claim records restored")


def _online_assets(config) -> None:
    """No vendored MathJax: use the default online MathJax and widget scripts."""
    for name in ("mathjax_path", "nb_ipywidgets_js"):
        if name in config.values:
            default = config.values[name].default
            setattr(config, name, default(config) if callable(default) else default)
    print("ncbook_cache: book/_vendor has no MathJax (tools/vendor_assets.sh skipped): pages load MathJax online")


def force_execution(app, docname: str, source: list[str]) -> None:
    """``source-read``: ask myst-nb to execute the pages in :data:`FORCE` on every read."""
    if docname not in FORCE or app.config.nb_execution_mode != "cache":
        return
    text = source[0]
    if text.startswith("---\n") and "\nmystnb:" not in text.split("\n---", 2)[0]:
        source[0] = "---\nmystnb:\n  execution_mode: force\n" + text[len("---\n"):]


def save_claims(app, exception) -> None:
    """``build-finished``: keep the claim records next to the cached notebooks that wrote them."""
    pair = getattr(app, "ncbook_claims", None)
    if exception is None and pair is not None:
        _copy_json(*pair)


def setup(app):
    app.connect("config-inited", configure)
    app.connect("source-read", force_execution)
    app.connect("build-finished", save_claims)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
