"""Sphinx directive ``ncbook-autosummary``: an autosummary table of a module's ``__all__``.

``autosummary`` needs its names listed by hand, which goes stale as the package grows; this
directive reads the module's ``__all__`` at build time and runs autosummary on those names
(directly, so it works from MyST pages as well as reST)::

    ```{ncbook-autosummary} ncbook.geometry
    ```

The table links to the entries that ``automodule`` (with ``:members:``) writes on the page.
"""

from __future__ import annotations

import importlib

from docutils.statemachine import StringList
from sphinx.ext.autosummary import Autosummary
from sphinx.util.docutils import SphinxDirective


class NcbookAutosummary(SphinxDirective):
    required_arguments = 1
    has_content = False

    def run(self):
        module_name = self.arguments[0]
        module = importlib.import_module(module_name)
        names = list(getattr(module, "__all__", []))
        if not names:
            raise self.error(f"{module_name} has no __all__: list its public names there")
        self.env.ref_context["py:module"] = module_name  # as `currentmodule`: names resolve inside it
        content = StringList(names, source=f"<{module_name}.__all__>")
        table = Autosummary("autosummary", [], {"nosignatures": True}, content, self.lineno, self.content_offset,
                            self.block_text, self.state, self.state_machine)
        return table.run()


def setup(app):
    app.setup_extension("sphinx.ext.autosummary")
    app.add_directive("ncbook-autosummary", NcbookAutosummary)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
