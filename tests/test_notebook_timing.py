"""tools/notebook_timing.py: per-cell times from the kernel's timestamps, progress bars recognised (tqdm's
widget and its text bar), long silent cells listed; a failing cell is reported with the cells before it."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from tool_loader import load_tool

ROOT = Path(__file__).resolve().parents[1]
nt = load_tool("tools/notebook_timing.py")


def _notebook(*sources: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    for i, c in enumerate(nb.cells):
        c["id"] = f"c{i}"
    return nb


@pytest.mark.parametrize("outputs, expected", [
    ([{"output_type": "display_data", "data": {nt.WIDGET: {"model_id": "x"}, "text/plain": "  0%|  | 0/3"}}], True),
    ([{"output_type": "stream", "name": "stderr", "text": "100%|##########| 3/3 [00:01<00:00,  2.00it/s]\n"}], True),
    ([{"output_type": "stream", "name": "stderr", "text": "epochs:  10%|#         | 1/10 [00:05<00:45, 5.02s/it]"}], True),
    ([{"output_type": "stream", "name": "stdout", "text": "50 % done | 3 of 10"}], False),
    ([{"output_type": "execute_result", "data": {"text/plain": "0.91"}}], False),
    ([], False),
])
def test_progress_bars_are_recognised(outputs, expected):
    assert nt.shows_progress(outputs) is expected


def test_a_run_lists_the_long_cell_without_progress(tmp_path):
    nb = _notebook("import time\ntime.sleep(1.6)",
                   "from tqdm.auto import tqdm\nfor _ in tqdm(range(4)):\n    time.sleep(0.4)",
                   "x = 1")
    assert nt.execute(nb, tmp_path, timeout=60, env={"NCBOOK_PROGRESS": "1"}) is None
    rows = nt.timings(nb)
    assert [r.cell_id for r in rows] == ["c0", "c1", "c2"]
    assert rows[0].seconds == pytest.approx(1.6, abs=1.0) and rows[1].seconds == pytest.approx(1.6, abs=1.0)
    assert [r.progress for r in rows] == [False, True, False]
    assert [r.cell_id for r in nt.silent_long_cells(rows, threshold=1.0)] == ["c0"]
    assert nt.silent_long_cells(rows, threshold=5.0) == []


def test_a_failing_cell_is_reported_with_the_cells_before_it(tmp_path):
    nb = _notebook("y = 2", "raise RuntimeError('stop here')", "z = 3")
    error = nt.execute(nb, tmp_path, timeout=60, env={})
    assert error is not None and "stop here" in str(error)
    assert [r.cell_id for r in nt.timings(nb)] == ["c0", "c1"]


def test_a_chapter_is_timed_as_its_colab_notebook():
    nb, folder = nt.reader_notebook("nc_primer")
    assert nb.metadata["ncbook"]["reader_version_of"] == "book/nc_primer.md" and folder == ROOT / "book"
    with pytest.raises(SystemExit, match="no chapter 'nope'"):
        nt.reader_notebook("nope")
