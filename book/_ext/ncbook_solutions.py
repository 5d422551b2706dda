"""Build the book for a term without the exercises' solutions: ``NCBOOK_HIDE_SOLUTIONS=1 jupyter-book build .``

Readers keep the solutions in their dropdowns; a course that grades the exercises builds its term's copy of the
book with this switch on. Every solution is then dropped from the pages: the ``solution`` nodes of
``sphinx_exercise`` (after its gated ``solution-start``/``solution-end`` pairs are merged into one, so the code
cells and text between them go too), every code cell tagged ``solution`` outside them, and the page sources
Sphinx would copy next to the HTML (``html_copy_source``). The cells still run (the notebooks are executed
before the pages are assembled), so numbers the rest of a page glues from them still resolve. Launch buttons
(Colab, Binder) point at the repository's reader notebooks, which hold the solutions: the switch removes them
from the pages too. Registered in ``_config.yml`` under ``sphinx: local_extensions``.
"""

from __future__ import annotations

import os

from docutils import nodes
from sphinx.transforms import SphinxTransform

SWITCH = "NCBOOK_HIDE_SOLUTIONS"


def hiding(app) -> bool:
    """True when this build drops the solutions (the environment variable, or ``ncbook_hide_solutions: true``)."""
    return os.environ.get(SWITCH, "").strip().lower() in ("1", "true", "yes") or bool(app.config.ncbook_hide_solutions)


def _tags(node) -> list:
    meta = node.get("cell_metadata") or {}
    tags = meta.get("tags", []) if isinstance(meta, dict) else []
    return tags if isinstance(tags, list) else []


class DropSolutions(SphinxTransform):
    """Remove solution nodes and solution-tagged code cells (after sphinx_exercise merged its gated solutions)."""

    default_priority = 15  # sphinx_exercise's MergeGatedSolutions runs at 10

    def apply(self, **kwargs) -> None:
        if not hiding(self.app):
            return
        try:
            from sphinx_exercise.nodes import solution_end_node, solution_node, solution_start_node
            kinds = (solution_node, solution_start_node, solution_end_node)
        except ImportError:  # without sphinx_exercise there are no solution nodes, only tagged cells
            kinds = ()
        for node in list(self.document.findall(lambda n: isinstance(n, kinds) if kinds else False)):
            node.parent.remove(node)
        for node in list(self.document.findall(nodes.container)):
            if node.get("nb_element") == "cell_code" and "solution" in _tags(node) and node.parent is not None:
                node.parent.remove(node)


def _configure(app, config) -> None:
    if not hiding(app):
        return
    config.html_copy_source = False
    options = dict(config.html_theme_options or {})
    if "launch_buttons" in options:
        options["launch_buttons"] = {}
    config.html_theme_options = options


def setup(app):
    app.add_config_value("ncbook_hide_solutions", False, "env")
    app.connect("config-inited", _configure)
    app.add_transform(DropSolutions)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
