"""Figures used by the chapters (matplotlib is imported here only)."""

__all__: list[str] = []
