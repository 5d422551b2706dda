"""A batch that no file breaks: limits the kernel enforces, bounded outputs, time-outs named, a fuzzed folder.

The fast tests check each limit where it is enforced: a sandbox's memory together (shared memory included),
its number of tasks, what the grader reads from it, the size of the executed notebook kept, and that a
harvest that runs past its limit is reported as a time-out. The ``notebook`` test grades one folder holding
an honest notebook, an untouched one and over 200 mutations of them (JSON, metadata, cells, outputs, names,
links, folders): the batch finishes, every entry has exactly one row, the honest rows are as they should be,
every CSV reads back with Python's ``csv``, and nothing outside the results folder changes.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from tool_loader import load_tool

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from grading import sandbox  # noqa: E402

import grading_cheats as cheats  # noqa: E402


def _tool():
    return load_tool("tools/assignments.py")


needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")


def _confined(script: str, limits: sandbox.Limits, tmp_path) -> tuple[str, list[str], sandbox.Confinement]:
    """Run ``script`` as a sandbox's runner with ``limits``: (its stdout, the limits it reached, how it was capped)."""
    tool = _tool()
    runner = tmp_path / "runner.py"
    runner.write_text(script)
    conf = sandbox.confinement()
    cmd, cage = conf.wrap(tool.sandbox_command(limits, runner=runner), limits)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    reached = cage.events()
    cage.close()
    return proc.stdout, reached, conf


@needs_bwrap
def test_a_sandbox_s_memory_is_capped_together_shared_memory_included(tmp_path):
    """The issue's 5 GiB shared-memory mapping passed a 4 GiB per-process limit: here 1 GiB of /dev/shm in a
    sandbox of 512 MiB ends it, and the grader learns that the memory limit was reached."""
    script = ("import mmap, os\nprint('start', flush=True)\nfd = os.open('/dev/shm/big', os.O_RDWR | os.O_CREAT)\n"
              "os.ftruncate(fd, 1 << 30)\nm = mmap.mmap(fd, 1 << 30)\nfor i in range(0, 1 << 30, 1 << 20):\n"
              "    m[i:i + (1 << 20)] = b'x' * (1 << 20)\nprint('filled', flush=True)\n")
    limits = sandbox.Limits(memory=512 << 20, folder=2 << 30)
    out, reached, conf = _confined(script, limits, tmp_path)
    if conf.kind == "rlimits":
        pytest.skip("no cgroup here: " + conf.note)
    assert "start" in out and "filled" not in out
    assert any("memory limit" in r for r in reached), reached


@needs_bwrap
def test_a_sandbox_s_processes_are_capped(tmp_path):
    script = ("import os, time\nkids = 0\nfor _ in range(200):\n    try:\n        pid = os.fork()\n"
              "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(5)\n        os._exit(0)\n"
              "    kids += 1\nprint('forked', kids, flush=True)\n")
    out, reached, conf = _confined(script, sandbox.Limits(processes=32), tmp_path)
    if conf.kind == "rlimits":
        pytest.skip("no cgroup here: " + conf.note)
    assert int(out.split()[-1]) < 32 and any("processes" in r for r in reached), (out, reached)


@needs_bwrap
def test_a_sandbox_s_cpu_time_is_capped_together(tmp_path):
    """Six busy processes, each in a session of its own, made a classmate graded beside them 2.6 times slower
    against the same wall-clock limits. With a CPU quota of a quarter CPU, four such processes get a quarter CPU
    between them (without it they would take what the machine has, here 2 cores), and the quota shows as
    throttled periods."""
    script = ("import os, time\nstart = time.monotonic()\nkids = []\nfor _ in range(4):\n    pid = os.fork()\n"
              "    if pid == 0:\n        os.setsid()\n        end = time.monotonic() + 3\n"
              "        while time.monotonic() < end:\n            pass\n        os._exit(0)\n    kids.append(pid)\n"
              "for pid in kids:\n    os.waitpid(pid, 0)\nt = os.times()\n"
              "print(t.children_user + t.children_system, time.monotonic() - start, flush=True)\n")
    runner = tmp_path / "runner.py"
    runner.write_text(script)
    conf = sandbox.confinement()
    if not conf.cpu:
        pytest.skip("no CPU controller here: " + conf.note)
    limits = sandbox.Limits(cpus=0.25)
    cmd, cage = conf.wrap(_tool().sandbox_command(limits, runner=runner), limits)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        stat = cage.cpu_stat()
    finally:
        cage.close()
    used, wall = map(float, proc.stdout.split())
    assert used <= 0.25 * wall * 1.5 + 0.2, (used, wall)  # about a quarter CPU for the four together
    assert stat.get("nr_throttled", 0) > 0, stat
    assert "CPU time (a CPU quota" in conf.note


def test_the_grader_reads_a_bounded_amount_and_is_never_held_by_silence(tmp_path):
    flood = [sys.executable, "-c", "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n"]
    channel = sandbox.Channel(flood, env=dict(os.environ), max_bytes=4 << 20, max_line=1 << 20)
    start = time.monotonic()
    event = channel.next(60)
    assert event == {"event": "overflow"} and time.monotonic() - start < 30
    channel.close()
    quiet = sandbox.Channel([sys.executable, "-c", "import time; time.sleep(600)"], env=dict(os.environ))
    start = time.monotonic()
    assert quiet.next(1.5) is None and time.monotonic() - start < 10
    quiet.close()
    assert quiet.proc.poll() is not None  # killed, not left behind


def test_the_executed_notebook_kept_fits_its_budget():
    runner = load_tool("tools/grade_runner.py")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"print({i})") for i in range(40)])
    for cell in nb.cells:
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="y" * 15_000),
                        nbformat.v4.new_output("display_data", data={"image/png": "A" * 900_000,
                                                                     "text/plain": "<Figure>"})]
    notes = runner._trim(nb, 8 << 20)
    assert len(json.dumps(nb)) <= 8 << 20 and notes and notes[0] == {"cell": 39, "code": "outputs_dropped"}
    assert nb.cells[-1].outputs  # what fits is kept


def test_a_harvest_that_runs_past_its_limit_is_reported_as_a_time_out(tmp_path):
    """Under load a harvest time-out was reported as "function not defined" with an empty error column."""
    tool = _tool()
    build = tool.build("nc_primer", tmp_path / "build", exercises_only=True, verify=False, check_imports=False,
                       log=lambda *_: None)
    solutions = nbformat.read(build / "solutions" / "nc_primer.ipynb", as_version=4)
    slow = cheats.replace_functions(solutions, {"zero_threshold": "import time\n\ndef zero_threshold(num_classes, "
                                                                  "per_class):\n    time.sleep(600)"})
    grader = tool.Grader(build, b"a secret of sixteen bytes", tool.Limits(harvest_timeout=3, notebook_timeout=120),
                         sandbox=False)
    judged, problems, seconds = grader.judge(slow, "ada")
    assert [o.error for o in judged["zero_threshold"].public] == ["timeout"] * len(grader.public["zero_threshold"])
    assert any("zero_threshold: its public cases ran past the time limit (3 s)" in p for p in problems), problems
    others = [p.exercise for _, p in grader.parts if p.exercise != "zero_threshold"]
    assert all(o.error is None for e in others for o in judged[e].public)  # the others are judged all the same
    assert all(o.error is None for e in others for o in judged[e].hidden)


# --------------------------------------------------------------------------- run sandboxes never beside judges
class _Played:
    """A sandbox that plays the runner or the judge quickly, and notes when it was alive: a run takes 0.6 s for a
    notebook whose STUDENT is "slow" (0.05 s otherwise), a judge 0.2 s."""

    alive: list = []

    def __init__(self, kind: str):
        self.kind, self.queue, self.started, self.cage = kind, [], time.monotonic(), None
        self.proc = type("P", (), {"returncode": 0})()

    def send(self, obj):
        if self.kind == "run":
            slow = "slow" in json.dumps(obj["notebook"])
            self.queue += [("sleep", 0.6 if slow else 0.05), {"event": "notebook", "notebook": obj["notebook"]},
                           {"event": "done", "codes": []}]
        elif "cells" in obj:
            self.queue += [("sleep", 0.2), {"event": "ready", "codes": [], "bound": {}}]
        elif obj.get("stage") in ("public", "hidden"):
            import base64

            from ncbook.exercises._harvest import Outcome, pack_outcomes, unpack_cases

            for item in obj["items"]:
                n = len(unpack_cases(base64.b64decode(item["cases"])))
                self.queue.append({"event": "outcomes", "index": item["index"], "npz": base64.b64encode(
                    pack_outcomes([Outcome(error="not_implemented")] * n)).decode()})
            self.queue.append({"event": "stage-done"})
        return True

    def next(self, timeout):
        while self.queue and isinstance(self.queue[0], tuple):
            time.sleep(self.queue.pop(0)[1])
        return self.queue.pop(0) if self.queue else {"event": "eof"}

    def close_input(self):
        pass

    def close(self):
        _Played.alive.append((self.kind, self.started, time.monotonic()))
        return []

    def last_error_line(self):
        return ""


def test_no_run_sandbox_is_alive_while_a_judge_sandbox_is(tmp_path, monkeypatch):
    """A run sandbox (the full package) and a judge sandbox alive at once can talk (POSIX locks on the Python
    binary): one student's run answered another's hidden cases. Every notebook runs first, then every notebook is
    judged, whatever the jobs and the run times; and the grader refuses to start one kind beside the other."""
    tool = _tool()
    build = tool.build("nc_primer", tmp_path / "build", exercises_only=True, verify=False, check_imports=False,
                       log=lambda *_: None)
    untouched = nbformat.read(build / "student" / "nc_primer.ipynb", as_version=4)
    subs = tmp_path / "subs"
    subs.mkdir()
    for i, who in enumerate(["fast", "slow", "fast", "slow", "fast"]):
        nb = cheats.copy_nb(untouched)
        next(c for c in nb.cells if cheats.meta(c).get("role") == "identity").source = f'STUDENT = "{who}"\n# {i}'
        nbformat.write(nb, subs / f"{i}_{who}.ipynb")
    _Played.alive = []
    monkeypatch.setattr(tool.Grader, "_start", lambda self, runner, package, cap: (
        _Played("run" if Path(runner).name == "grade_runner.py" else "judge"), None))
    rows = tool.grade("nc_primer", subs, tmp_path / "out", secret=b"a secret of sixteen bytes", build_dir=build,
                      jobs=2, sandbox=False, calibrate=False, limits=tool.Limits(), log=lambda *_: None)
    assert len(rows) == 5 and all(r["error"] == "" for r in rows), [r["error"] for r in rows]
    runs = [(a, b) for k, a, b in _Played.alive if k == "run"]
    judges = [(a, b) for k, a, b in _Played.alive if k == "judge"]
    assert len(runs) == 5 and len(judges) == 5 * len(tool.Grader(build, b"x" * 16, tool.Limits(), sandbox=False).groups)
    assert max(b for _, b in runs) <= min(a for a, _ in judges), "a judge sandbox started beside a run sandbox"
    grader = tool.Grader(build, b"a secret of sixteen bytes", tool.Limits(), sandbox=False)
    monkeypatch.setattr(grader, "_start", lambda runner, package, cap: (_Played("run"), None))
    with grader._sandbox("run", tool.RUNNER, tool.package_dir(), 1 << 20):
        with pytest.raises(tool.SandboxOverlap, match="may not start while a run sandbox is alive"):
            with grader._sandbox("judge", tool.JUDGE, tool.package_dir(), 1 << 20):
                pass
    with grader._sandbox("judge", tool.JUDGE, tool.package_dir(), 1 << 20):  # the run has ended: allowed
        pass


# --------------------------------------------------------------------------- a fuzzed folder
def _mutations(good: bytes, good_nb: dict, secret: Path) -> dict:
    """name -> bytes (or a callable that makes the entry): more than 200 ways a file can be broken or odd."""
    out: dict = {}
    text = good.decode()
    for i, cut in enumerate(range(0, len(good), max(1, len(good) // 60))):  # truncations
        out[f"trunc_{i:03d}.ipynb"] = good[:cut]
    for i, pos in enumerate(range(10, len(good), max(1, len(good) // 30))):  # invalid bytes and encodings
        out[f"bytes_{i:02d}.ipynb"] = good[:pos] + b"\xff\xfe\x80" + good[pos:]
    out["utf16.ipynb"] = text.encode("utf-16")
    out["bom.ipynb"] = b"\xef\xbb\xbf" + good  # a BOM: read as the notebook it is
    huge = "9" * 5000
    for i, where in enumerate(['"nbformat": 4', '"execution_count": null', '"nbformat_minor": 5']):
        out[f"bigint_{i}.ipynb"] = text.replace(where, where.split(":")[0] + ": " + huge, 1).encode()
    out["bigint_cell.ipynb"] = json.dumps({"cells": [{"cell_type": "code", "source": "x", "metadata": {},
                                                      "outputs": [], "execution_count": None}]}).replace(
        '"execution_count": null', f'"execution_count": {huge}').encode()
    out["deep.ipynb"] = b'{"cells": ' + b"[" * 50_000 + b"]" * 50_000 + b"}"
    for i, top in enumerate(["[]", "null", "3", '"notebook"', "{}", '{"cells": {}}', '{"cells": "x"}',
                             '{"cells": null}', '{"cells": [1, 2]}', '{"cells": [[]]}']):
        out[f"shape_{i}.ipynb"] = top.encode()

    def mutate(name, change):
        nb = json.loads(json.dumps(good_nb))
        change(nb)
        out[name] = json.dumps(nb).encode()

    kinds = [["exercise"], {"a": 1}, 5, None, True, "x" * 500, [[["deep"]]], 1e308, -1, ""]
    for i, value in enumerate(kinds):  # wrong metadata types, in our metadata and elsewhere
        mutate(f"meta_ex_{i}.ipynb", lambda nb, v=value: [c.setdefault("metadata", {}).update(
            {"ncbook": {"exercise": v, "role": v}}) for c in nb["cells"]])
        mutate(f"meta_nb_{i}.ipynb", lambda nb, v=value: nb.__setitem__("metadata", v))
        mutate(f"meta_cell_{i}.ipynb", lambda nb, v=value: [c.__setitem__("metadata", v) for c in nb["cells"]])
        mutate(f"cell_type_{i}.ipynb", lambda nb, v=value: nb["cells"][3].__setitem__("cell_type", v))
        mutate(f"source_{i}.ipynb", lambda nb, v=value: nb["cells"][3].__setitem__("source", v))
        mutate(f"outputs_{i}.ipynb", lambda nb, v=value: [c.__setitem__("outputs", v) for c in nb["cells"]])
    mutate("huge_cell.ipynb", lambda nb: nb["cells"].append({"cell_type": "code", "metadata": {}, "outputs": [],
                                                             "execution_count": None, "source": "#" * 2_000_000}))
    mutate("many_cells.ipynb", lambda nb: nb.__setitem__("cells", nb["cells"] * 600))
    mutate("huge_outputs.ipynb", lambda nb: [c.__setitem__("outputs", [{"output_type": "stream", "name": "stdout",
                                                                        "text": "z" * 300_000}]) for c in nb["cells"]
                                             if c["cell_type"] == "code"])
    mutate("no_cells.ipynb", lambda nb: nb.__setitem__("cells", []))
    out["empty.ipynb"] = b""
    out["zeros.ipynb"] = b"\0" * 4096
    for i, name in enumerate(["notes.txt", "solution.py", "README", ".hidden", ".DS_Store", "x.IPYNB.bak",
                              "archive.zip", "image.png", "data.json", "noext"]):  # not notebooks
        out[name] = good if i % 2 else b"plain text"
    for i in range(10):  # names that differ only in spaces or case, and odd names (two of them run: empty)
        out[["mallory smith.ipynb", "mallory_smith.ipynb", "Mallory_Smith.ipynb", "mallory  smith.ipynb",
             "MALLORY SMITH.ipynb", "=cmd|' -C calc'!A0.ipynb", "café.ipynb", "tab\tname.ipynb",
             "new\nline.ipynb", "-dash.ipynb"][i]] = b'{"cells": [], "metadata": {}}' if i in (0, 1) else b"{"
    out[os.fsdecode(b"bad\xffname.ipynb")] = b"{"
    out["a" * 240 + ".ipynb"] = b"[]"
    links = {"link_secret.ipynb": secret, "link_folder.ipynb": secret.parent, "link_dangling.ipynb":
             secret.parent / "missing", "link_zero.ipynb": Path("/dev/zero"), "link_good.ipynb": None,
             "link_proc.ipynb": Path("/proc/self/environ"), "link_loop.ipynb": "link_loop.ipynb"}
    for name, target in links.items():
        out[name] = ("symlink", target)
    for i in range(5):
        out[f"folder_{i}.ipynb" if i % 2 else f"folder_{i}"] = ("folder", None)
    out["fifo.ipynb"] = ("fifo", None)
    return out


@pytest.mark.notebook
def test_a_fuzzed_folder_grades_every_entry_once_and_leaves_the_honest_rows_as_they_are(tmp_path):
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    tool = _tool()
    build = tool.build("seli", tmp_path / "build", exercises_only=True, verify=False, log=lambda *_: None)
    _, questions = tool.load_assignment(build)
    full = {q.label: int(q.auto_points) for q in questions if q.auto}
    secret_path = tool.write_secret(tmp_path / "instructor" / "secret.txt")
    subs, out = tmp_path / "submissions", tmp_path / "results"
    subs.mkdir()
    functions = [p.function for q in questions for p in q.auto]

    def lean(nb, student):  # a student who kept only the cells her functions need (a quick notebook to run)
        code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
        keep = {code[i] for i in tool.needed_cells([nb.cells[i].source for i in code], functions)}
        nb = cheats.copy_nb(nb)
        nb.cells = [c for i, c in enumerate(nb.cells) if c.cell_type != "code" or i in keep or
                    cheats.meta(c).get("role") == "identity"]
        next(c for c in nb.cells if cheats.meta(c).get("role") == "identity").source = f'STUDENT = "{student}"'
        return nb

    solutions = lean(nbformat.read(build / "solutions" / "seli.ipynb", as_version=4), "Honest Student")
    untouched = lean(nbformat.read(build / "student" / "seli.ipynb", as_version=4), "Blank Student")
    nbformat.write(solutions, subs / "honest.ipynb")
    nbformat.write(untouched, subs / "untouched.ipynb")
    good = (subs / "honest.ipynb").read_bytes()
    mutations = _mutations(good, json.loads(good), secret_path)
    for name, data in mutations.items():
        path = subs / name
        if isinstance(data, tuple) and data[0] == "symlink":
            os.symlink(data[1] if data[1] is not None else subs / "honest.ipynb", path)
        elif isinstance(data, tuple) and data[0] == "folder":
            path.mkdir()
            (path / "inside.ipynb").write_bytes(good)
        elif isinstance(data, tuple) and data[0] == "fifo":
            os.mkfifo(path)
        else:
            path.write_bytes(data)
    listed = tool.entries(subs)
    assert len(mutations) >= 200 and len(listed) == len(mutations) + 2
    watched = (ROOT, build, subs, tmp_path / "instructor")
    before = {str(p): (p.lstat().st_mtime_ns, p.lstat().st_size) for w in watched for p in Path(w).rglob("*")
              if "__pycache__" not in p.parts and ".git" not in p.parts}
    start = time.monotonic()
    log: list[str] = []
    rows = tool.grade("seli", subs, out, secret=tool.read_secret(secret_path), build_dir=build, jobs=2,
                      limits=tool.Limits(notebook_timeout=120, cell_timeout=60, harvest_timeout=60),
                      calibrate=False, log=log.append)
    seconds = time.monotonic() - start
    sandboxed = sum(1 for r in rows if float(r["seconds"]) > 0)
    print(f"\nfuzz: {len(listed)} entries, {sandboxed} ran in sandboxes, {seconds:.0f} s")
    # every entry exactly one row, every row one entry; every CSV reads back
    assert len(rows) == len(listed) and len({r["id"] for r in rows}) == len(rows)
    assert sorted(r["submission"] for r in rows) == sorted(e.name for e in listed)
    with (out / "scores.csv").open(newline="") as f:
        back = list(csv.DictReader(f))
    assert len(back) == len(rows) and {r["id"] for r in back} == {r["id"] for r in rows}
    for path in (out / "answers").glob("*.csv"):
        with path.open(newline="") as f:
            assert len(list(csv.DictReader(f))) == len(rows)
    table = {r["submission"]: r for r in back}  # as written: a name that starts like a formula is neutralised
    assert {q: int(table["honest.ipynb"][q]) for q in full} == full and table["honest.ipynb"]["error"] == ""
    assert {q: int(table["untouched.ipynb"][q]) for q in full} == {q: 0 for q in full}
    assert table["untouched.ipynb"]["error"] == ""
    shown = {e.path.name: e.name for e in listed}
    for name, data in mutations.items():
        row = table[tool.csv_safe(shown[name])]
        if isinstance(data, tuple) and data[0] == "symlink":
            assert "symbolic link" in row["error"] and int(row["autograded"]) == 0, name
        if row["error"]:
            assert row["error"].startswith("'" if row["submission"][:1] in "=+-@" else row["submission"][:20]), name
    secret_text = secret_path.read_text().strip()
    assert not [p for p in out.rglob("*") if p.is_file() and secret_text in p.read_text(errors="ignore")]
    after = {str(p): (p.lstat().st_mtime_ns, p.lstat().st_size) for w in watched for p in Path(w).rglob("*")
             if "__pycache__" not in p.parts and ".git" not in p.parts}
    assert {k: v for k, v in after.items() if before.get(k) != v} == {}, "files changed outside the results folder"
