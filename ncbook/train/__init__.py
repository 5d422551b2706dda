"""The training loop shared by every chapter: loss protocol, schedules, evaluation, checkpoints."""

__all__: list[str] = []
