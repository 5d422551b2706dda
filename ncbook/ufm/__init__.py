"""Unconstrained features models (UFM): free classifiers and features, and their optimisers.

Letters: ``C`` classes, ``d`` feature dimension, ``n`` samples. ``W`` is ``(C, d)``,
``H`` is ``(n, d)`` (papers write ``H`` as ``d x n``).
"""

__all__: list[str] = []
