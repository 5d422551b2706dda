"""The import rules of the house style: lower layers never import higher ones."""

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "ncbook"
ALWAYS = {"_validation", "_status", "profiles"}
ALLOWED = {
    "_validation": set(),
    "_status": set(),
    "profiles": set(),
    "geometry": set(),
    "reweighting": set(),
    "metrics": {"geometry"},
    "losses": {"reweighting", "margins"},
    "margins": set(),
    "contrastive": {"geometry"},
    "dgp": {"geometry"},
    "data": set(),
    "models": set(),
    "ufm": {"geometry", "losses", "contrastive"},
    "train": {"geometry", "reweighting", "metrics", "losses", "margins", "contrastive", "dgp", "data", "models", "ufm"},
    "plotting": {"geometry", "metrics"},
    "book": set(),
    "experiments": {"geometry", "reweighting", "metrics", "losses", "margins", "contrastive", "dgp", "data",
                    "models", "ufm", "train", "plotting", "book"},
    "exercises": {"geometry", "reweighting", "metrics", "losses", "margins", "contrastive", "dgp", "data", "models",
                  "ufm", "train"},
}


def _top_module(path: Path) -> str:
    rel = path.relative_to(PKG).with_suffix("")
    return rel.parts[0]


def _ncbook_imports(path: Path, root: Path = PKG) -> set[str]:
    tree = ast.parse(path.read_text())
    depth = len(path.relative_to(root).parts) - 1  # 0 for ncbook/x.py, 1 for ncbook/pkg/x.py
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module and node.module.startswith("ncbook."):
                found.add(node.module.split(".")[1])
            elif node.level > depth:  # reaches the ncbook package root
                if node.module:
                    found.add(node.module.split(".")[0])
                else:
                    found.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("ncbook."))
    return found


def test_every_module_has_a_layer():
    for path in PKG.rglob("*.py"):
        if path.name == "__init__.py" and path.parent == PKG:
            continue
        assert _top_module(path) in ALLOWED, f"{path.relative_to(PKG)} is not in the layer table of STYLE.md"


def test_imports_follow_the_layers():
    bad = []
    for path in PKG.rglob("*.py"):
        if path.name == "__init__.py" and path.parent == PKG:
            continue
        me = _top_module(path)
        for other in _ncbook_imports(path) - {me} - ALWAYS:
            if other not in ALLOWED[me]:
                bad.append(f"{path.relative_to(PKG)} imports ncbook.{other}")
    assert not bad, "layering violations:\n" + "\n".join(bad)


def test_matplotlib_only_in_plotting():
    for path in PKG.rglob("*.py"):
        if _top_module(path) == "plotting":
            continue
        assert "matplotlib" not in path.read_text(), f"{path.relative_to(PKG)} imports matplotlib"


def test_the_checker_sees_relative_imports(tmp_path):
    """A planted violation must be caught (so this test can fail); planted in a copy, never in the package."""
    root = tmp_path / "ncbook"
    (root / "geometry").mkdir(parents=True)
    fake = root / "geometry" / "_zz_planted.py"
    fake.write_text("from ..metrics import nc1\nfrom .._validation import check_int\n")
    assert _ncbook_imports(fake, root) == {"metrics", "_validation"}
    assert not list(PKG.rglob("_zz_planted.py"))
