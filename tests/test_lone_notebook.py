"""Nothing a notebook writes lands outside its own folder unless the reader chose the folder.

A chapter notebook opened alone (Colab's ``/content``, a download folder) writes its records (cost
estimates, claims, results) and checkpoints inside its own folder; in a folder of this checkout
(``book/``: the book build, the notebook tests) they go to the repository's ``results/`` and
``checkpoints/`` as before; ``NCBOOK_RESULTS``/``NCBOOK_CHECKPOINTS`` choose any folder. The install
cell every chapter starts with stops with a clear message when pip cannot install ``ncbook``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
from pathlib import Path

import jupytext
import nbclient
import nbformat
import pytest

import ncbook

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _no_chosen_folders(monkeypatch):
    for name in ("NCBOOK_RESULTS", "NCBOOK_CHECKPOINTS", "NCBOOK_SCALE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NCBOOK_PROFILE", "quick")


def test_a_lone_folder_keeps_its_records_and_a_checkout_writes_to_results(tmp_path, monkeypatch):
    alone = tmp_path / "content"
    alone.mkdir()
    monkeypatch.chdir(alone)
    assert ncbook.results_dir() == "results"
    assert ncbook.checkpoint_dir("seli") == os.path.join("checkpoints", "quick", "seli")
    repo = tmp_path / "repo"
    (repo / "book").mkdir(parents=True)
    for name in ("_toc.yml", "_config.yml"):
        (repo / name).write_text("")
    monkeypatch.chdir(repo / "book")
    assert ncbook.results_dir() == "../results"                       # the book build: the repository's results/
    assert ncbook.checkpoint_dir("seli") == os.path.join("../checkpoints", "quick", "seli")
    monkeypatch.chdir(ROOT / "book")
    assert (Path.cwd() / ncbook.results_dir()).resolve() == ROOT / "results"   # this checkout's chapters
    monkeypatch.chdir(alone)
    monkeypatch.setenv("NCBOOK_RESULTS", str(tmp_path / "chosen"))
    monkeypatch.setenv("NCBOOK_CHECKPOINTS", str(tmp_path / "drive"))
    assert ncbook.results_dir() == str(tmp_path / "chosen")
    assert ncbook.checkpoint_dir("seli") == os.path.join(str(tmp_path / "drive"), "quick", "seli")
    assert ncbook.results_dir(default="elsewhere") == str(tmp_path / "chosen")  # the reader's choice wins


WRITER = '''
import ncbook, torch
from ncbook import book, models, train
RESULTS, CHECKPOINTS = ncbook.results_dir(), ncbook.checkpoint_dir("lone")
tp = train.Throughput(0.01, 0.1, 1e-4, 16, "cpu (1 thread)", "float32", 2)
COST = train.ChapterCost("lone", results=RESULTS, checkpoints=CHECKPOINTS)
COST.add("network", 0.5, tp)
COST.announce("network")
'''
TRAIN = '''
torch.manual_seed(0)
x, y = torch.randn(32, 4), torch.arange(32) % 2
model = models.MLP(in_dim=4, hidden=(8,), feat_dim=4, num_classes=2)
train.fit(model, torch.nn.functional.cross_entropy, (x, y), epochs=1, batch_size=16, progress=False,
          checkpoint_dir=CHECKPOINTS)
book.save_result(RESULTS, chapter="lone", setting="demo", seed=0, metrics={"acc": 0.5}, wall_seconds=1.0)
book.record_claim(RESULTS, kind="check", chapter="lone", claim="one half", ours=0.5, derived=0.5,
                  derived_how="by hand", setting="demo", profile=ncbook.profile(), tolerance={"abs": 1e-9, "against": "derived"})
'''


def _written(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_a_notebook_opened_alone_writes_only_inside_its_folder(tmp_path):
    """Cost record, result, claim and checkpoint of a notebook run in an empty folder: all inside it."""
    outside = tmp_path / "above"
    home = outside / "content"
    home.mkdir(parents=True)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(WRITER), nbformat.v4.new_code_cell(TRAIN)])
    nbclient.NotebookClient(nb, timeout=180, kernel_name="python3",
                            resources={"metadata": {"path": str(home)}}).execute()
    written = _written(outside)
    print("written:", written)
    assert written and all(path.startswith("content/") for path in written), written
    assert "content/results/costs/quick/lone.json" in written                  # the timed cell's record
    assert "content/results/lone/demo-seed0.json" in written
    assert "content/results/claims/quick/lone.json" in written
    assert "content/checkpoints/quick/lone/last.pt" in written


# --------------------------------------------------------------------------- the install cell
def _install_cells() -> dict[str, str]:
    cells = {}
    for path in sorted((ROOT / "book").glob("*.md")):
        if "jupytext" not in path.read_text(encoding="utf-8")[:400]:
            continue
        found = [c.source for c in jupytext.read(path).cells
                 if c.cell_type == "code" and "NCBOOK_PIP_TARGET" in c.source]
        assert len(found) == 1, f"{path.name}: {len(found)} install cells"
        cells[path.stem] = found[0]
    return cells


def test_every_chapter_has_the_same_install_cell():
    cells = _install_cells()
    assert len(cells) >= 7, sorted(cells)
    texts = {re.sub(r"\s+#.*", "", text).strip() for text in cells.values()}
    assert len(texts) == 1, "the chapters' install cells differ: keep one text (tools/colab_proxy.py rewrites it)"


def test_the_install_cell_says_what_failed_and_what_to_do(tmp_path, monkeypatch, capsys):
    """No repository and no wheel: a RuntimeError naming the target, pip's own words, the pip command,
    a wheel and NCBOOK_PIP_TARGET, instead of a bare CalledProcessError."""
    source = next(iter(_install_cells().values()))
    missing = tmp_path / "ncbook-0.1.0-py3-none-any.whl"                  # a wheel that is not there: pip fails at once
    monkeypatch.setenv("NCBOOK_PIP_TARGET", str(missing))
    monkeypatch.setenv("PIP_NO_INDEX", "1")                                # never the network
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ncbook" else real(name, *a))
    with pytest.raises(RuntimeError) as info:
        exec(compile(source, "install-cell", "exec"), {"__name__": "__main__"})  # noqa: S102 - our chapters' cell
    message = str(info.value)
    print(message)
    assert message.startswith(f"Could not install ncbook from {str(missing)!r}")
    assert "does not exist" in message                                    # pip's own reason
    for hint in ("pip install", "wheel", "NCBOOK_PIP_TARGET", "run this cell again"):
        assert hint in message, hint
    assert sys.executable  # the cell ran pip with this interpreter
