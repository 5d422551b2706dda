"""The curated API: every name in a module's ``__all__`` exists and every public callable is documented."""

import importlib
import pkgutil
import re
from pathlib import Path

import pytest

import ncbook

MODULES = ["geometry", "metrics", "losses", "reweighting", "margins", "contrastive", "dgp", "data", "models", "ufm",
           "train", "plotting", "exercises", "book", "profiles", "experiments"]


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist_and_are_documented(name):
    mod = importlib.import_module(f"ncbook.{name}")
    assert mod.__doc__ and mod.__doc__.strip(), f"ncbook.{name} has no module docstring"
    exported = getattr(mod, "__all__", None)
    assert exported, f"ncbook.{name} has no __all__"
    assert len(exported) == len(set(exported)), f"ncbook.{name}.__all__ repeats a name"
    for item in exported:
        assert hasattr(mod, item), f"ncbook.{name}.__all__ lists {item!r}, which does not exist"
        obj = getattr(mod, item)
        if callable(obj):
            assert (obj.__doc__ or "").strip(), f"ncbook.{name}.{item} has no docstring"


def test_the_api_page_has_a_section_for_every_public_module():
    """book/api.md documents every public module of the package (an automodule section each), and no other."""
    public = {f"ncbook.{m.name}" for m in pkgutil.iter_modules(ncbook.__path__) if not m.name.startswith("_")}
    assert set(MODULES) == {name.split(".", 1)[1] for name in public}, "MODULES above lists every public module"
    page = (Path(__file__).resolve().parents[1] / "book" / "api.md").read_text()
    documented = set(re.findall(r"^\.\. automodule:: (\S+)$", page, re.M))
    assert public <= documented, f"book/api.md has no section for {sorted(public - documented)}"
    assert documented - public == {"ncbook"}, f"book/api.md documents what the package lacks: {documented - public}"
