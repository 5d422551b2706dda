"""Sphinx directive ``ncbook-autosummary``: an autosummary table of a module's ``__all__``.

``autosummary`` needs its names listed by hand, which goes stale as the package grows; this
directive reads the module's ``__all__`` at build time and runs autosummary on those names
(directly, so it works from MyST pages as well as reST)::

    ```{eval-rst}
    .. ncbook-autosummary:: ncbook.geometry
    ```

Use it inside ``eval-rst``: autosummary writes its table rows as reST (``:py:obj:`` roles), which
a MyST page would show as literal text. The table links to the entries that ``automodule`` (with
``:members:``) writes on the page.

The extension also sets ``napoleon_use_rtype = False``: our numpydoc "Returns" sections often give
the type and its meaning on one line (``Tensor of shape (C,), float64.``), which napoleon would
file under "Return type", leaving "Returns" empty; one combined "Returns" field reads right.
"""

from __future__ import annotations

import importlib
import inspect

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
        # constants (a dict, a float) would show their type's docstring (dict's mentions **kwargs,
        # which reST reads as broken markup): the table lists functions, classes and modules only
        names = [n for n in names if callable(getattr(module, n, None)) or inspect.ismodule(getattr(module, n, None))]
        self.env.ref_context["py:module"] = module_name  # as `currentmodule`: names resolve inside it
        content = StringList(names, source=f"<{module_name}.__all__>")
        table = Autosummary("autosummary", [], {"nosignatures": True}, content, self.lineno, self.content_offset,
                            self.block_text, self.state, self.state_machine)
        return table.run()


def _one_returns_field(app, config):
    config.napoleon_use_rtype = False


def setup(app):
    app.setup_extension("sphinx.ext.autosummary")
    app.connect("config-inited", _one_returns_field)
    app.add_directive("ncbook-autosummary", NcbookAutosummary)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
