"""Read (and so execute) the reproduction page last.

myst-nb executes each notebook while Sphinx reads it, and Sphinx reads documents in name
order. The reproduction page collects the claims every chapter records when it runs, so it
must be read after all of them: this extension moves it to the end of the list of documents
to read. Registered in ``_config.yml`` under ``sphinx: local_extensions``.
"""

from __future__ import annotations

LAST = ("book/reproduction",)


def read_last(app, env, docnames: list[str]) -> None:
    """Move the documents in ``LAST`` to the end of ``docnames`` (in place), keeping their order."""
    last = [name for name in LAST if name in docnames]
    for name in last:
        docnames.remove(name)
    docnames.extend(last)


def reread_when_others_change(app, env, added, changed, removed) -> list[str]:
    """In an incremental build, re-read the pages in ``LAST`` whenever another page is re-read."""
    if not (added | changed | removed):
        return []
    return [name for name in LAST if name in env.found_docs and name not in added | changed]


def setup(app):
    app.connect("env-get-outdated", reread_when_others_change)
    app.connect("env-before-read-docs", read_last)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "version": "1"}
