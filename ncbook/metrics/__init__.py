"""Neural-collapse metrics (NC1-NC4), accuracies and geometry-fit metrics.

Letters: ``n`` samples, ``C`` classes, ``d`` feature dimension. Features are
``(n, d)``, classifier weights ``(C, d)``. Metrics take tensors or arrays, so
they work on any model's features; they never import models, losses or training code.
"""

__all__: list[str] = []
