"""Losses: functional forms and thin ``nn.Module`` wrappers.

Letters: ``n`` samples (or anchors), ``C`` classes, ``d`` feature dimension,
``k`` negatives per anchor. Logits are ``(n, C)``, features ``(n, d)``.
Every loss takes ``reduction`` in ``"none" | "mean" | "sum"``.
"""

__all__: list[str] = []
