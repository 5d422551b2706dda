"""The execution cache extension (book/_ext/ncbook_cache.py) and the offline-asset step without npm."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from jupyter_cache import get_cache

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import ncbook_cache  # noqa: E402


def _tree(tmp_path, text="X = 1\n"):
    (tmp_path / "ncbook").mkdir(parents=True, exist_ok=True)
    (tmp_path / "ncbook" / "__init__.py").write_text(text)
    return tmp_path


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch):
    """Each test sets the variables it needs: none of the caller's leaks into a key."""
    for name in ("NCBOOK_PROFILE", "NCBOOK_SCALE", "NCBOOK_DATA", "NCBOOK_RESULTS", "NCBOOK_EXECUTION_CACHE"):
        monkeypatch.delenv(name, raising=False)


def test_cache_folder_is_keyed_on_profile_and_package(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    quick, full = ncbook_cache.cache_folder(root, "quick"), ncbook_cache.cache_folder(root, "full")
    assert quick != full and quick.parent == root / ".jupyter_cache"
    assert quick.name.startswith("quick-paper-") and full.name.startswith("full-paper-")
    assert ncbook_cache.cache_folder(root, "quick") == quick  # stable
    (root / "ncbook" / "__init__.py").write_text("X = 2\n")  # any package change moves the folder
    assert ncbook_cache.cache_folder(root, "quick") != quick
    (root / "ncbook" / "__pycache__").mkdir()
    (root / "ncbook" / "__pycache__" / "x.pyc").write_bytes(b"\0")  # byte code does not count
    moved = ncbook_cache.cache_folder(root, "quick")
    (root / "ncbook" / "__pycache__" / "x.pyc").write_bytes(b"\1")
    assert ncbook_cache.cache_folder(root, "quick") == moved
    monkeypatch.setenv("NCBOOK_EXECUTION_CACHE", str(tmp_path / "elsewhere"))
    assert ncbook_cache.cache_folder(root, "quick").parent == tmp_path / "elsewhere"


def test_smoke_and_paper_builds_never_share_outputs(tmp_path, monkeypatch):
    """Same profile, same code cells: the smoke scale gets its own cache folder and its own claim records."""
    root = _tree(tmp_path / "repo")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))           # the smoke scale's scratch folders
    monkeypatch.setenv("NCBOOK_PROFILE", "full")
    paper_key = ncbook_cache.cache_key(root)
    app_paper, config_paper = _app(root)
    ncbook_cache.configure(app_paper, config_paper)
    monkeypatch.setenv("NCBOOK_SCALE", "smoke")
    smoke_key = ncbook_cache.cache_key(root)
    app_smoke, config_smoke = _app(root)
    ncbook_cache.configure(app_smoke, config_smoke)
    assert (paper_key["scale"], smoke_key["scale"]) == ("paper", "smoke")
    assert config_paper.nb_execution_cache_path != config_smoke.nb_execution_cache_path
    assert Path(config_smoke.nb_execution_cache_path).name.startswith("full-smoke-")
    records_paper, records_smoke = app_paper.ncbook_claims[0], app_smoke.ncbook_claims[0]
    assert records_paper == root / "results" / "claims" / "full"     # the committed records
    assert records_smoke == scratch / "ncbook-smoke-results" / "claims" / "full"  # as the kernels write it
    # a smoke build's records are saved next to its cache and never restored into the paper build's
    records_smoke.mkdir(parents=True, exist_ok=True)
    (records_smoke / "seli.json").write_text("[]")
    ncbook_cache.save_claims(app_smoke, None)
    monkeypatch.delenv("NCBOOK_SCALE")
    app_again, config_again = _app(root)
    ncbook_cache.configure(app_again, config_again)
    assert config_again.nb_execution_cache_path == config_paper.nb_execution_cache_path
    assert not (records_paper / "seli.json").exists()
    key = json.loads((Path(config_smoke.nb_execution_cache_path) / "key.json").read_text())
    assert key == json.loads(json.dumps(smoke_key))                   # the folder says what it was keyed on


def test_cache_key_holds_libraries_python_data_and_recorded_runs(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    monkeypatch.setenv("NCBOOK_PROFILE", "full")
    key = ncbook_cache.cache_key(root)
    assert set(key) == {"profile", "scale", "python", "libraries", "ncbook", "data", "recorded runs"}
    assert {"torch", "numpy", "scipy", "cvxpy", "torchvision"} <= set(key["libraries"])
    base = ncbook_cache.cache_folder(root)

    real_version = ncbook_cache.metadata.version
    monkeypatch.setattr(ncbook_cache.metadata, "version",
                        lambda name: "0.0-other" if name == "scipy" else real_version(name))
    assert ncbook_cache.cache_folder(root) != base                    # a library upgrade
    monkeypatch.setattr(ncbook_cache.metadata, "version", real_version)
    monkeypatch.setattr(ncbook_cache.platform, "python_version", lambda: "3.99.0")
    assert ncbook_cache.cache_folder(root) != base                    # another Python
    monkeypatch.undo()
    monkeypatch.setenv("NCBOOK_PROFILE", "full")
    assert ncbook_cache.cache_folder(root) == base

    data = tmp_path / "data"
    monkeypatch.setenv("NCBOOK_DATA", str(data))
    assert ncbook_cache.cache_key(root)["data"] == {"cifar10": "absent", "cifar100": "absent"}
    no_data = ncbook_cache.cache_folder(root)
    folder = data / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    (folder / "data_batch_1").write_bytes(b"x" * 10)
    (folder / "ncbook-standin.json").write_text('{"md5": {"data_batch_1": "a"}}')
    standin = ncbook_cache.cache_folder(root)
    assert standin != no_data                                         # a stand-in appeared
    (folder / "ncbook-standin.json").write_text('{"md5": {"data_batch_1": "b"}}')
    assert ncbook_cache.cache_folder(root) != standin                 # another stand-in, same file sizes
    (folder / "ncbook-standin.json").unlink()
    (folder / "data_batch_1").write_bytes(b"x" * 11)
    assert ncbook_cache.cache_folder(root) not in (standin, no_data)   # real files
    real = ncbook_cache.cache_folder(root)
    (data / "ncbook-cifar100.tar.xz").write_bytes(b"packed")
    assert ncbook_cache.cache_folder(root) != real                    # a packed archive to unpack

    results = tmp_path / "elsewhere-results"
    monkeypatch.setenv("NCBOOK_RESULTS", str(results))
    before = ncbook_cache.cache_folder(root)
    (results / "claims" / "full").mkdir(parents=True)
    (results / "claims" / "full" / "seli.json").write_text("[]")   # what chapters write: not in the key
    assert ncbook_cache.cache_folder(root) == before
    (results / "inverse_reweighting").mkdir()
    (results / "inverse_reweighting" / "cifar10-summary-seed0.json").write_text("{}")  # what chapters read
    assert ncbook_cache.cache_folder(root) != before


def test_kernel_paths_resolve_from_the_chapters_folder(tmp_path, monkeypatch):
    root = _tree(tmp_path)
    assert ncbook_cache.kernel_results_dir(root) == (root / "results").resolve()
    assert ncbook_cache.kernel_data_root(root) == (root / "book" / "data").resolve()
    monkeypatch.setenv("NCBOOK_DATA", "../data")
    assert ncbook_cache.kernel_data_root(root) == (root / "data").resolve()


def _app(root, mode="cache"):
    values = {"mathjax_path": SimpleNamespace(default="default-mathjax"),
              "nb_ipywidgets_js": SimpleNamespace(default={"default.js": {}})}
    config = SimpleNamespace(nb_execution_mode=mode, nb_execution_cache_path="", exclude_patterns=["_build"],
                             mathjax_path="mathjax/tex-chtml.js", nb_ipywidgets_js={"vendored.js": {}}, values=values)
    return SimpleNamespace(srcdir=str(root), config=config), config


def test_configure_sets_the_cache_restores_and_saves_claims(tmp_path, monkeypatch):
    monkeypatch.setenv("NCBOOK_PROFILE", "quick")
    root = _tree(tmp_path)
    folder = ncbook_cache.cache_folder(root, "quick")
    (folder / "claims").mkdir(parents=True)
    (folder / "claims" / "seli.json").write_text("{}")
    app, config = _app(root)
    ncbook_cache.configure(app, config)
    assert config.nb_execution_cache_path == str(folder)
    assert ".jupyter_cache" in config.exclude_patterns  # cached notebooks are never read as pages
    assert (root / "results" / "claims" / "quick" / "seli.json").is_file()  # restored for cached chapters
    (root / "results" / "claims" / "quick" / "mr2_margins.json").write_text("{}")  # a chapter executed
    ncbook_cache.save_claims(app, None)
    assert (folder / "claims" / "mr2_margins.json").is_file()


def test_no_vendored_mathjax_falls_back_to_online_defaults(tmp_path):
    app, config = _app(_tree(tmp_path), mode="force")
    ncbook_cache.configure(app, config)
    assert config.mathjax_path == "default-mathjax" and config.nb_ipywidgets_js == {"default.js": {}}
    assert config.nb_execution_cache_path == ""  # force mode: the cache is left alone
    vendored = tmp_path / "book" / "_vendor" / "mathjax"
    vendored.mkdir(parents=True)
    (vendored / "tex-chtml.js").write_text("")
    app, config = _app(tmp_path, mode="force")
    ncbook_cache.configure(app, config)
    assert config.mathjax_path == "mathjax/tex-chtml.js"


def test_reproduction_page_is_executed_on_every_read(tmp_path):
    app, _ = _app(tmp_path)
    source = ["---\njupytext:\n  formats: ipynb,md:myst\n---\n# Reproduction\n"]
    ncbook_cache.force_execution(app, "book/reproduction", source)
    assert source[0].startswith('---\nmystnb:\n  execution_mode: "force"\njupytext:')
    chapter = ["---\njupytext: {}\n---\n# SELI\n"]
    ncbook_cache.force_execution(app, "book/seli", chapter)
    assert "mystnb" not in chapter[0]


def test_vendor_assets_skips_without_npm(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("bash", "dirname", "env"):
        os.symlink(shutil.which(tool), bindir / tool)
    out = subprocess.run(["bash", str(ROOT / "tools" / "vendor_assets.sh")], capture_output=True, text=True,
                         env={"PATH": str(bindir)})
    assert out.returncode == 0
    assert out.stdout.strip().splitlines() == [
        "vendor_assets.sh: npm not found; skipped (the pages will load MathJax and the widget scripts online)"]


def _notebook(path: Path, code: str) -> None:
    path.write_text("---\njupytext:\n  text_representation:\n    format_name: myst\nkernelspec:\n  name: python3\n"
                    "  display_name: Python 3\n---\n\n# A page\n\n```{code-cell} ipython3\n" + code + "\n```\n")


def test_stale_chapters_execute_side_by_side_into_the_cache(tmp_path, monkeypatch):
    """Two chapters overlap in time, both land in the cache; a failing one and a forced page do not."""
    from myst_nb.core.config import NbParserConfig
    from myst_parser.config.main import MdParserConfig

    stamp = "import time, pathlib; t0 = time.time(); time.sleep(2); pathlib.Path('{0}.txt').write_text(f'{{t0}} {{time.time()}}')"
    for name in ("a", "b"):
        _notebook(tmp_path / f"{name}.md", stamp.format(name))
    _notebook(tmp_path / "bad.md", "raise RuntimeError('planted')")
    (tmp_path / "book").mkdir()
    _notebook(tmp_path / "book" / "reproduction.md", "pathlib.Path('never.txt').write_text('')")
    folder = tmp_path / "cache"
    config = NbParserConfig(execution_mode="cache", execution_cache_path=str(folder), execution_timeout=60)
    env = SimpleNamespace(doc2path=lambda doc: str(tmp_path / f"{doc}.md"), myst_config=MdParserConfig(),
                          mystnb_config=config)
    monkeypatch.setenv("NCBOOK_EXECUTION_CACHE", str(tmp_path / "base"))
    monkeypatch.setenv("NCBOOK_BUILD_WORKERS", "3")
    ncbook_cache.execute_side_by_side(SimpleNamespace(srcdir=str(tmp_path)), env, ["a", "b", "bad", "book/reproduction"])
    (a0, a1), (b0, b1) = ([float(t) for t in (tmp_path / f"{n}.txt").read_text().split()] for n in ("a", "b"))
    assert a0 < b1 and b0 < a1, "the two chapters did not run at the same time"
    assert not (tmp_path / "book" / "never.txt").exists()  # the reproduction page is left to the read
    cache = get_cache(str(folder))
    stale = ncbook_cache._stale_notebooks(env, ["a", "b", "bad"], cache)
    assert [item.doc for item in stale] == ["bad"]  # a and b are served from the cache; bad executes at the read
    # an incremental build reads the failed page (and the reproduction page) again, not the cached ones
    env.all_docs, env.found_docs = {"a": 0, "b": 0, "bad": 0}, {"a", "b", "bad", "book/reproduction"}
    assert ncbook_cache.reread_uncached(None, env, set(), set(), set()) == ["bad", "book/reproduction"]
    assert ncbook_cache.reread_uncached(None, env, set(), {"bad"}, set()) == []  # already read again
    timings = (tmp_path / "base" / "timings.json").read_text()
    assert '"a"' in timings and '"bad"' not in timings


def test_build_workers_reads_the_variable(monkeypatch):
    monkeypatch.setenv("NCBOOK_BUILD_WORKERS", "1")
    assert ncbook_cache.build_workers() == 1
    monkeypatch.delenv("NCBOOK_BUILD_WORKERS")
    assert ncbook_cache.build_workers() >= 1
    monkeypatch.setenv("NCBOOK_BUILD_WORKERS", "two")
    with pytest.raises(ValueError, match="NCBOOK_BUILD_WORKERS must be a positive integer; got 'two'"):
        ncbook_cache.build_workers()


def test_chapters_side_by_side_run_their_comparisons_in_their_own_process(tmp_path, monkeypatch):
    """Kernels started side by side see NCBOOK_WORKERS=1; the build's own environment is left as it was."""
    from myst_nb.core.config import NbParserConfig
    from myst_parser.config.main import MdParserConfig

    code = "import os, pathlib; pathlib.Path('{0}.txt').write_text(os.environ.get('NCBOOK_WORKERS', 'unset'))"
    for name in ("a", "b"):
        _notebook(tmp_path / f"{name}.md", ("def run_parallel():\n    pass\n" if name == "b" else "") + code.format(name))
    config = NbParserConfig(execution_mode="cache", execution_cache_path=str(tmp_path / "cache"), execution_timeout=60)
    env = SimpleNamespace(doc2path=lambda doc: str(tmp_path / f"{doc}.md"), myst_config=MdParserConfig(),
                          mystnb_config=config)
    monkeypatch.setenv("NCBOOK_EXECUTION_CACHE", str(tmp_path / "base"))
    monkeypatch.setenv("NCBOOK_BUILD_WORKERS", "2")
    monkeypatch.setenv("NCBOOK_WORKERS", "5")
    stale = ncbook_cache._stale_notebooks(env, ["a", "b"], get_cache(str(tmp_path / "cache")))
    assert [(item.doc, item.comparison) for item in stale] == [("a", False), ("b", True)]
    ncbook_cache.execute_side_by_side(SimpleNamespace(srcdir=str(tmp_path)), env, ["a", "b"])
    assert (tmp_path / "a.txt").read_text() == (tmp_path / "b.txt").read_text() == "1"
    assert os.environ["NCBOOK_WORKERS"] == "5"
