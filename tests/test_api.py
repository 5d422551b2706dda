"""The curated API: every name in a module's ``__all__`` exists and every public callable is documented."""

import importlib

import pytest

MODULES = ["geometry", "metrics", "losses", "reweighting", "margins", "contrastive", "dgp", "data", "models", "ufm",
           "train", "plotting", "exercises", "book", "profiles"]


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
