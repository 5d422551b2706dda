"""The grading sandboxes: bubblewrap, limits the kernel enforces, and a line protocol with bounded reads.

A sandbox sees ``/usr`` and the system's library folders, a few files of ``/etc``, the Python installation
and environment (read-only), one ``ncbook`` package bound over every place that Python could import
``ncbook`` from (:func:`ncbook_locations`: the real package for the *run* sandbox, the student edition for
the *judge* sandbox), its runner script, and nothing else: not the course repository, the built
assignment, the secret, the submissions or the results (each hidden again where a bound folder holds it).
HOME, ``/tmp`` and ``/dev/shm`` are private in-memory folders of a limited size; no network; its own PID
namespace (everything it started ends with it); no capabilities; a fresh environment.

Limits are enforced by the kernel where it can (:class:`Confinement`): a memory cgroup caps every process
of the sandbox *together*, shared memory and its in-memory folders included, a pids cgroup caps the
number of tasks, and a CPU cgroup caps the CPU time its processes get together, about one CPU by default
(cgroup v2 ``memory.max``/``pids.max``/``cpu.max``, or v1 ``memory.limit_in_bytes``/``pids.max``/
``cpu.cfs_quota_us``, or a systemd scope's ``MemoryMax``/``TasksMax``/``CPUQuota``). A sandbox that starts
many busy processes (each in a session of its own) then slows itself, not a classmate graded beside it
against the same wall-clock limits. Where no CPU controller can be used, the memory and task caps still
hold and ``grade`` says that CPU is shared; where no cgroup can be made at all the runner falls back to
per-process rlimits (weaker: shared memory, the sum over processes and CPU are not capped); ``grade`` prints
which applies. The grader reads a
sandbox's output with a byte cap and per-step deadlines (:class:`Channel`), so no output can fill its
memory and no silence can hold a job slot past its limit.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

SANDBOX_HOME = "/home/student"
OPT = "/opt/ncbook"
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "fonts", "localtime", "alternatives", "mime.types")


@dataclass
class Limits:
    """What one submission's sandboxes may use (each sandbox separately).

    ``notebook_timeout``: seconds for all of a notebook's cells (the run sandbox), and for the cells the
    graded functions need (the judge sandbox); ``cell_timeout``: one cell; ``harvest_timeout``: one
    question's functions on its public cases (and again on its hidden cases); ``memory``: bytes for every
    process of a sandbox together, shared memory and in-memory folders included; ``processes``: tasks
    (processes and threads); ``folder``: bytes of each writable in-memory folder; ``notebook_bytes``: size
    of the executed notebook kept (outputs cut to fit); ``cpus``: CPU time a second for all of a sandbox's
    processes together, in CPUs (1.0: one CPU), where a CPU controller is available.
    """

    notebook_timeout: int = 600
    cell_timeout: int = 300
    harvest_timeout: int = 60
    memory: int = 4096 << 20
    processes: int = 512
    folder: int = 512 << 20
    notebook_bytes: int = 8 << 20
    cpus: float = 1.0

    def run_wall(self) -> int:
        """The most seconds a run sandbox lives (its cells, plus starting and stopping a kernel)."""
        return self.notebook_timeout + 90

    def judge_wall(self, questions: int) -> int:
        """The most seconds a judge sandbox lives: its cells, two harvests a question, start and stop."""
        return self.notebook_timeout + 2 * self.harvest_timeout * max(questions, 1) + 60

    def wall(self, questions: int) -> int:
        """The most seconds one submission takes (its run sandbox, then its judge sandboxes)."""
        return self.run_wall() + self.judge_wall(questions)


# --------------------------------------------------------------------------- where Python finds ncbook
def python_dirs() -> list[str]:
    """The interpreter's installation and environment (prefixes), without nesting."""
    dirs = {os.path.realpath(d) for d in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                          os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))}
    dirs = sorted(d for d in dirs if d not in ("/", "/usr"))
    return [d for d in dirs if not any(d != o and d.startswith(o.rstrip("/") + "/") for o in dirs)]


def _site_dirs() -> list[str]:
    import site
    import sysconfig

    found = set(site.getsitepackages()) | {sysconfig.get_paths()[k] for k in ("purelib", "platlib")}
    user = site.getusersitepackages() if isinstance(site.getusersitepackages(), str) else None
    if user:
        found.add(user)
    return sorted(p for p in found if os.path.isdir(p))


def ncbook_locations() -> list[str]:
    """Every folder named ``ncbook`` this environment's Python could import the package from.

    The package this process imports; ``ncbook/`` in each site-packages folder; the targets of editable
    installs (setuptools' ``__editable__*_finder.py`` ``MAPPING``, read with :mod:`ast`); and ``ncbook/`` under
    each folder a ``.pth`` file adds to the path. A sandbox binds one package over all of them.
    """
    import ast

    found: set[str] = set()
    try:
        import ncbook

        found.add(os.path.dirname(os.path.realpath(ncbook.__file__)))
    except ImportError:
        pass
    for site_dir in _site_dirs():
        if os.path.isdir(os.path.join(site_dir, "ncbook")):
            found.add(os.path.realpath(os.path.join(site_dir, "ncbook")))
        for name in os.listdir(site_dir):
            path = os.path.join(site_dir, name)
            if name.startswith("__editable__") and name.endswith("_finder.py"):
                try:
                    tree = ast.parse(Path(path).read_text())
                except (OSError, SyntaxError, ValueError):
                    continue
                for node in ast.walk(tree):
                    if isinstance(node, (ast.Assign, ast.AnnAssign)):
                        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                        if any(isinstance(t, ast.Name) and t.id == "MAPPING" for t in targets) and node.value:
                            try:
                                mapping = ast.literal_eval(node.value)
                            except ValueError:
                                continue
                            if isinstance(mapping, dict) and isinstance(mapping.get("ncbook"), str):
                                found.add(os.path.realpath(mapping["ncbook"]))
            elif name.endswith(".pth"):
                try:
                    lines = Path(path).read_text(errors="replace").splitlines()
                except OSError:
                    continue
                for line in lines:
                    line = line.strip()
                    if line and not line.startswith(("#", "import ", "import\t")):
                        candidate = os.path.join(line if os.path.isabs(line) else os.path.join(site_dir, line),
                                                 "ncbook")
                        if os.path.isdir(candidate):
                            found.add(os.path.realpath(candidate))
    return sorted(found)


def sandbox_env(profile: str | None, home: str = SANDBOX_HOME) -> dict[str, str]:
    """The whole environment of a sandboxed run: nothing of the grader's but the profile.

    Results, claim records, cost estimates and checkpoints a chapter writes go under ``home`` (the run's
    only writable folder), never to the course's folders.
    """
    python_bin = os.path.dirname(os.path.realpath(sys.executable))
    return {"HOME": home, "NCBOOK_RESULTS": f"{home}/results", "NCBOOK_CHECKPOINTS": f"{home}/checkpoints",
            "USER": "student", "LOGNAME": "student", "LANG": "C.UTF-8",
            "PATH": f"{python_bin}:/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": OPT,
            "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg", "TMPDIR": "/tmp",
            "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "NCBOOK_WORKERS": "1",
            "JUPYTER_PLATFORM_DIRS": "1", "NCBOOK_PROGRESS": "0",
            "NCBOOK_PROFILE": profile or os.environ.get("NCBOOK_PROFILE", "quick")}


def bwrap_features() -> set[str]:
    try:
        text = subprocess.run(["bwrap", "--help"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return set()
    return {f for f in ("--disable-userns", "--size", "--as-pid-1") if f in text}


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def sandbox_command(limits: Limits, *, package: Path, runner: Path, profile: str | None = None,
                    hide: tuple[str, ...] = (), extra_ro: tuple[str, ...] = ()) -> list[str]:
    """The bubblewrap command line that runs ``runner`` with ``package`` as the only ``ncbook``.

    ``package`` (a folder named ``ncbook``) is bound read-only at ``/opt/ncbook/ncbook`` (first on the path)
    and over every folder of :func:`ncbook_locations`; ``runner`` at ``/opt/ncbook/<its name>``. Each path of
    ``hide`` that lies inside a bound folder (the repository, the build, the secret, the submissions, the
    results) is covered by an empty folder (or an empty file). See the module docstring for the rest.
    """
    features = bwrap_features()
    if "--as-pid-1" not in features:
        raise SystemExit("this bubblewrap lacks --as-pid-1; install bubblewrap 0.5 or newer")
    cmd = ["bwrap", "--unshare-all", "--unshare-user", "--uid", "1000", "--gid", "1000", "--die-with-parent",
           "--new-session", "--clearenv", "--as-pid-1"]
    if "--disable-userns" in features:
        cmd.append("--disable-userns")
    if os.geteuid() == 0:
        cmd += ["--cap-drop", "ALL"]
    bound: list[str] = []
    for top in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            cmd += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            cmd += ["--ro-bind", top, top]
            bound.append(top)
    for name in _ETC:
        if os.path.exists(f"/etc/{name}"):
            cmd += ["--ro-bind", f"/etc/{name}", f"/etc/{name}"]
    for path in (*python_dirs(), *extra_ro):
        cmd += ["--ro-bind", path, path]
        bound.append(path)
    package = str(Path(package).resolve())
    cmd += ["--ro-bind", package, f"{OPT}/ncbook"]
    for location in ncbook_locations():
        cmd += ["--ro-bind", package, location]
    cmd += ["--ro-bind", str(Path(runner).resolve()), f"{OPT}/{Path(runner).name}"]
    for path in sorted({os.path.realpath(h) for h in hide}):
        if any(_under(path, b) for b in bound) and os.path.exists(path):
            cmd += ["--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", "/dev/null", path]
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    for folder in ("/tmp", SANDBOX_HOME, "/dev/shm"):
        cmd += (["--size", str(limits.folder)] if "--size" in features else []) + ["--tmpfs", folder]
    cmd += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", SANDBOX_HOME]  # the rest stays unwritable
    for key, value in sandbox_env(profile).items():
        cmd += ["--setenv", key, value]
    return cmd + [os.path.realpath(sys.executable), f"{OPT}/{Path(runner).name}"]


# --------------------------------------------------------------------------- limits the kernel enforces
def _own_cgroups() -> dict[str, str]:
    """controller (or "" for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    out = {}
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for c in controllers.split(",") if controllers else [""]:
                out[c] = path
    except (OSError, ValueError):
        pass
    return out


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, filesystem type, options) of every cgroup mount."""
    out = []
    try:
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fields, rfields = left.split(), right.split()
            if rfields and rfields[0] in ("cgroup", "cgroup2"):
                out.append((fields[4], rfields[0], set(rfields[2].split(",")) if len(rfields) > 2 else set()))
    except (OSError, IndexError):
        pass
    return out


def _write(path: Path, value) -> None:
    with open(path, "w") as f:
        f.write(str(value))


CPU_PERIOD_US = 100_000  # the scheduler period of a CPU quota: 100 ms, the kernel's default


def _cpu_quota_us(cpus: float) -> int:
    """The quota (microseconds a period) of ``cpus`` CPUs, at least 1 ms."""
    return max(1000, int(round(cpus * CPU_PERIOD_US)))


@dataclass
class Confinement:
    """How a sandbox's memory, tasks and CPU are capped: ``kind`` is "cgroup v2", "cgroup v1", "systemd scope" or
    "rlimits" (the weaker fallback); ``roots`` the parent cgroup folders (v2: one; v1: memory, pids and, where
    the machine has a writable one, cpu); ``cpu``: whether the CPU time of a sandbox is capped too."""

    kind: str
    roots: dict[str, Path] = field(default_factory=dict)
    cpu: bool = False

    @property
    def note(self) -> str:
        if self.kind == "rlimits":
            return ("limits: no writable cgroup and no systemd scope here, so each process gets rlimits (data "
                    "size, processes of its user, file size): weaker, a sandbox's processes together, its "
                    "shared memory and its CPU time are not capped (a notebook that starts many busy processes "
                    "slows the notebooks graded beside it)")
        cpu = ("; CPU time (a CPU quota for all of a sandbox's processes together)" if self.cpu else
               "; CPU time is NOT capped (no usable CPU controller here): a notebook that starts many busy "
               "processes slows the notebooks graded beside it, against the same wall-clock limits")
        return (f"limits: {self.kind} (memory of all of a sandbox's processes together, its shared memory and "
                f"in-memory folders included; number of tasks{cpu})")

    def wrap(self, cmd: list[str], limits: Limits) -> tuple[list[str], "Cage"]:
        """``cmd`` made to run inside a new cgroup (or scope) with ``limits``; the :class:`Cage` to clean up."""
        cage = Cage(self, limits)
        return cage.prefix() + cmd, cage


class Cage:
    """One sandbox's cgroup(s): created before it starts, emptied and removed after."""

    def __init__(self, confinement: Confinement, limits: Limits):
        self.confinement, self.limits = confinement, limits
        self.dirs: dict[str, Path] = {}
        self.ended = False
        name = f"sandbox-{uuid.uuid4().hex[:12]}"
        kind = confinement.kind
        try:
            if kind == "cgroup v2":
                d = confinement.roots["unified"] / name
                d.mkdir()
                self.dirs["unified"] = d
                _write(d / "memory.max", limits.memory)
                if (d / "memory.swap.max").exists():
                    _write(d / "memory.swap.max", 0)
                _write(d / "pids.max", limits.processes)
                if confinement.cpu:
                    _write(d / "cpu.max", f"{_cpu_quota_us(limits.cpus)} {CPU_PERIOD_US}")
            elif kind == "cgroup v1":
                for controller in ("memory", "pids", "cpu"):
                    if controller in confinement.roots and (controller != "cpu" or confinement.cpu):
                        d = confinement.roots[controller] / name
                        d.mkdir()
                        self.dirs[controller] = d
                _write(self.dirs["memory"] / "memory.limit_in_bytes", limits.memory)
                if (self.dirs["memory"] / "memory.memsw.limit_in_bytes").exists():
                    try:
                        _write(self.dirs["memory"] / "memory.memsw.limit_in_bytes", limits.memory)
                    except OSError:
                        pass
                _write(self.dirs["pids"] / "pids.max", limits.processes)
                if "cpu" in self.dirs:
                    _write(self.dirs["cpu"] / "cpu.cfs_period_us", CPU_PERIOD_US)
                    _write(self.dirs["cpu"] / "cpu.cfs_quota_us", _cpu_quota_us(limits.cpus))
        except OSError:
            self.close()
            raise

    def prefix(self) -> list[str]:
        if self.confinement.kind == "systemd scope":
            cpu = ["-p", f"CPUQuota={int(round(100 * self.limits.cpus))}%"] if self.confinement.cpu else []
            return ["systemd-run", "--user", "--scope", "--quiet", "-p", f"MemoryMax={self.limits.memory}",
                    "-p", "MemorySwapMax=0", "-p", f"TasksMax={self.limits.processes}", *cpu]
        if not self.dirs:
            return []
        procs = [str(d / "cgroup.procs") for d in self.dirs.values()]
        script = " && ".join(f'echo $$ > "${i}"' for i in range(1, len(procs) + 1)) + f" && shift {len(procs)}" + \
            ' && exec "$@"'
        return ["/bin/sh", "-c", script, "sh", *procs]

    def cpu_stat(self) -> dict[str, int]:
        """The CPU controller's counters of this sandbox (``nr_periods``, ``nr_throttled``, ...), {} without one."""
        d = self.dirs.get("cpu") or (self.dirs.get("unified") if self.confinement.cpu else None)
        try:
            return {k: int(v) for k, v in (line.split() for line in (d / "cpu.stat").read_text().splitlines())} \
                if d is not None else {}
        except (OSError, ValueError):
            return {}

    def events(self) -> list[str]:
        """What limit the sandbox reached, read before the cgroup goes."""
        found = []
        mem = self.dirs.get("memory") or self.dirs.get("unified")
        pids = self.dirs.get("pids") or self.dirs.get("unified")
        memory = f"reached the memory limit ({self.limits.memory >> 20} MiB for the whole sandbox)"
        try:
            if mem is not None and (mem / "memory.oom_control").exists():  # v1
                ev = dict(line.split() for line in (mem / "memory.oom_control").read_text().splitlines())
                usage = int((mem / "memory.max_usage_in_bytes").read_text())
                if int(ev.get("oom_kill", 0)) or int((mem / "memory.failcnt").read_text()) or \
                        usage >= self.limits.memory:
                    found.append(memory)
            elif mem is not None and (mem / "memory.events").exists():  # v2
                ev = dict(line.split() for line in (mem / "memory.events").read_text().splitlines())
                if int(ev.get("max", 0)) or int(ev.get("oom_kill", 0)):
                    found.append(memory)
            if pids is not None and (pids / "pids.events").exists():
                ev = dict(line.split() for line in (pids / "pids.events").read_text().splitlines())
                if int(ev.get("max", 0)):
                    found.append(f"reached the limit of {self.limits.processes} processes and threads")
        except (OSError, ValueError):
            pass
        return found

    def close(self) -> bool:
        """Kill whatever is left in the cgroup(s) and remove them; True when every one is gone (no process of the
        sandbox is left anywhere). Without a cgroup (a systemd scope, rlimits) True: its PID namespace ended
        with its first process."""
        gone = True
        for d in self.dirs.values():
            for _ in range(100):
                try:
                    pids = [int(p) for p in (d / "cgroup.procs").read_text().split()]
                except (OSError, ValueError):
                    break
                if not pids:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.05)
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.05)
            gone = gone and not d.exists()
        self.ended = gone
        return gone


def _probe(make) -> bool:
    try:
        cage = make()
    except OSError:
        return False
    try:
        return True
    finally:
        cage.close()


def confinement() -> Confinement:
    """The strongest way to cap a sandbox this machine allows (a cgroup this process may create, else a systemd
    user scope, else rlimits), with its CPU time capped where a CPU controller can be used."""
    own = _own_cgroups()
    mounts = _mounts()
    probe_limits = Limits(memory=256 << 20, processes=64)
    for mount, fstype, options in mounts:  # v2, delegated: memory and pids (and cpu) enabled for children
        if fstype == "cgroup2" and "" in own:
            root = Path(mount) / own[""].lstrip("/") / "ncbook-grade"
            try:
                root.mkdir(exist_ok=True)
                controllers = set((root.parent / "cgroup.subtree_control").read_text().split())
                if {"memory", "pids"} <= controllers and "cpu" not in \
                        set((root / "cgroup.subtree_control").read_text().split()):
                    wanted = [c for c in ("memory", "pids", "cpu") if c in controllers]
                    _write(root / "cgroup.subtree_control", " ".join(f"+{c}" for c in wanted))
            except OSError:
                pass
            try:
                enabled = set((root / "cgroup.subtree_control").read_text().split())
            except OSError:
                continue
            if {"memory", "pids"} <= enabled:
                for cpu in (("cpu" in enabled), False):
                    c = Confinement("cgroup v2", {"unified": root}, cpu=cpu)
                    if _probe(lambda: Cage(c, probe_limits)):
                        return c
    roots = {}
    for controller in ("memory", "pids", "cpu"):
        mount = next((m for m, t, o in mounts if t == "cgroup" and controller in o), None)
        if mount is None or controller not in own:
            continue
        roots[controller] = Path(mount) / own[controller].lstrip("/") / "ncbook-grade"
    if {"memory", "pids"} <= set(roots):
        for cpu in (("cpu" in roots), False):
            try:
                kept = {k: r for k, r in roots.items() if k != "cpu" or cpu}
                for r in kept.values():
                    r.mkdir(exist_ok=True)
                c = Confinement("cgroup v1", kept, cpu=cpu)
                if _probe(lambda: Cage(c, probe_limits)):
                    return c
            except OSError:
                continue
    if shutil.which("systemd-run"):
        for cpu in (True, False):
            extra = ["-p", "CPUQuota=100%"] if cpu else []
            try:
                ok = subprocess.run(["systemd-run", "--user", "--scope", "--quiet", "-p", "TasksMax=64", *extra,
                                     "true"], capture_output=True, timeout=20).returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                ok = False
            if ok:
                return Confinement("systemd scope", cpu=cpu)
    return Confinement("rlimits")


# --------------------------------------------------------------------------- talking to a sandbox
class Channel:
    """A sandboxed process and its line protocol: JSON lines in, JSON lines out, with a byte cap and deadlines.

    ``send`` writes one JSON object as a line; ``next(timeout)`` returns the next JSON object the process
    wrote, ``None`` after ``timeout`` seconds of silence, or ``{"event": "eof"}`` /
    ``{"event": "overflow"}`` / ``{"event": "unreadable"}`` when it ended, wrote more than ``max_bytes``
    in all or more than ``max_line`` in one line, or wrote something that is not a JSON object.
    """

    def __init__(self, cmd: list[str], *, env: dict, cwd: str | None = None, max_bytes: int = 64 << 20,
                 max_line: int = 32 << 20, cage: Cage | None = None):
        self.cage = cage
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=env, cwd=cwd, start_new_session=True)
        self.events: queue.Queue = queue.Queue()
        self.stderr_tail = b""
        self.started = time.monotonic()
        self._threads = [threading.Thread(target=self._read, args=(max_bytes, max_line), daemon=True),
                         threading.Thread(target=self._drain, daemon=True)]
        for t in self._threads:
            t.start()

    def _read(self, max_bytes: int, max_line: int) -> None:
        total = 0
        try:
            while True:
                line = self.proc.stdout.readline(max_line + 1)
                if not line:
                    break
                total += len(line)
                if total > max_bytes or (len(line) > max_line and not line.endswith(b"\n")):
                    self.events.put({"event": "overflow"})
                    self.kill()
                    return
                try:
                    event = json.loads(line)
                except (ValueError, RecursionError):
                    event = None
                if not isinstance(event, dict):
                    self.events.put({"event": "unreadable"})
                    self.kill()
                    return
                self.events.put(event)
        except (OSError, ValueError):
            pass
        self.events.put({"event": "eof"})

    def _drain(self) -> None:
        try:
            while chunk := self.proc.stderr.read(65536):
                self.stderr_tail = (self.stderr_tail + chunk)[-4096:]
        except (OSError, ValueError):
            pass

    def send(self, obj: dict) -> bool:
        try:
            self.proc.stdin.write(json.dumps(obj).encode() + b"\n")
            self.proc.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def close_input(self) -> None:
        try:
            self.proc.stdin.close()
        except OSError:
            pass

    def next(self, timeout: float) -> dict | None:
        try:
            return self.events.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self) -> list[str]:
        """Kill what is left (its process group and its cgroup); return the limits it reached."""
        self.kill()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pass
        reached = self.cage.events() if self.cage is not None else []
        if self.cage is not None:
            self.cage.close()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass
        return reached

    def last_error_line(self) -> str:
        lines = self.stderr_tail.decode("utf-8", "replace").strip().splitlines()
        return re.sub(r"[\x00-\x1f\x7f]+", " ", lines[-1])[:200] if lines else ""
