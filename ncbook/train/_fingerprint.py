"""What makes two training runs the same run: the fingerprint a checkpoint carries.

:func:`ncbook.train.fit` resumes from ``checkpoint_dir/last.pt`` only when the checkpoint's
fingerprint equals the one of the call that finds it. The fingerprint is a frozen record of
everything that determines the run's numbers, each field a plain value (strings, numbers, lists,
dictionaries) so that ``torch.load(weights_only=True)`` reads it back and a mismatch can be shown
field by field:

==========================  ==================================================================
field                       what it holds
==========================  ==================================================================
``model``                   the module's ``repr`` (architecture: layers, widths, flags)
``parameter_shapes``        name -> shape and dtype of every parameter and buffer
``initial_weights``         a digest of the state at the start (the initialisation, so its seed)
``loss``                    the loss: class or function, its settings, digests of its buffers
``train_x``, ``train_y``    shape, dtype and a content digest (so the subset and its order)
``test``                    the same for the evaluation set (or None)
``augment``                 the augmentation callable (name; code and closure for a lambda)
fit's own settings          ``epochs``, ``batch_size``, ``lr``, ``momentum``, ``weight_decay``,
                            ``optimizer``, ``schedule``, ``warmup_epochs``, ``milestones``,
                            ``gamma``, ``schedule_alpha``, ``nc_every``, ``eval_every``, ``seed``
``precision``               ``"bf16"`` where ``amp=True`` runs bf16 products, else ``"float32"``
``batchnorm_world_size``    the world size when BatchNorm statistics are per rank (a model with
                            BatchNorm under ``torchrun`` without ``sync_batchnorm``), else None:
                            every other run resumes under any world size that divides the batch
==========================  ==================================================================

Callables are described by their qualified name; a lambda or a function defined in a notebook also
by a digest of its code and the values it closes over, so editing it changes the run. The device is
not part of the fingerprint (a run checkpointed on a GPU resumes on another one).
"""

from __future__ import annotations

import functools
import hashlib
import json
import types
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import torch
from torch import nn

__all__ = ["RunFingerprint", "describe_callable", "tensor_digest"]

_SIMPLE = (bool, int, float, str, type(None))
_CHUNK = 1 << 24  # elements copied to the host at a time while hashing


def tensor_digest(t: torch.Tensor | np.ndarray) -> str:
    """A content digest (blake2b, 16 bytes) of a tensor's values, shape and dtype, on any device."""
    if isinstance(t, np.ndarray):
        t = torch.from_numpy(np.ascontiguousarray(t))
    t = t.detach()
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{tuple(t.shape)}|{t.dtype}".encode())
    flat = t.reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.to(torch.uint8)
    for chunk in flat.split(_CHUNK):
        h.update(chunk.contiguous().view(torch.uint8).cpu().numpy().tobytes())
    return h.hexdigest()


def _code_digest(code: types.CodeType) -> str:
    h = hashlib.blake2b(digest_size=8)
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for const in code.co_consts:
        h.update((_code_digest(const) if isinstance(const, types.CodeType) else repr(const)).encode())
    return h.hexdigest()


def describe_value(value: Any, depth: int = 0) -> Any:
    """A plain, stable description of a setting: numbers and strings as they are, tensors by digest."""
    if isinstance(value, _SIMPLE):
        return value
    if isinstance(value, (np.integer, np.floating, np.bool_)):
        return value.item()
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return {"shape": list(value.shape), "dtype": str(value.dtype), "digest": tensor_digest(value)}
    if isinstance(value, torch.dtype):
        return str(value)
    if depth > 4:
        return type(value).__qualname__
    if isinstance(value, (list, tuple)):
        return [describe_value(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {str(k): describe_value(v, depth + 1) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if callable(value):
        return describe_callable(value, depth + 1)
    return type(value).__module__ + "." + type(value).__qualname__


def _settings(obj: Any, depth: int) -> dict:
    """Public, non-module attributes of an object that describe it (numbers, strings, tensors, callables)."""
    out = {}
    for key, value in sorted(vars(obj).items()):
        if key.startswith("_") or key == "training":
            continue
        if isinstance(value, (*_SIMPLE, np.integer, np.floating, torch.Tensor, torch.dtype, list, tuple)) or callable(value):
            out[key] = describe_value(value, depth + 1)
    return out


def describe_callable(fn: Callable | None, depth: int = 0) -> Any:
    """A stable description of a loss, an augmentation or any callable setting of a run.

    Modules: class, settings and a digest of each buffer and parameter. Partials: the function and
    its arguments. Functions: the qualified name, plus a digest of the code and of the values it
    closes over for a lambda, a local function or one defined in ``__main__`` (a notebook).
    """
    if fn is None:
        return None
    if isinstance(fn, nn.Module):
        return {"class": type(fn).__module__ + "." + type(fn).__qualname__, "settings": _settings(fn, depth),
                "state": {k: describe_value(v) for k, v in fn.state_dict().items()}}
    if isinstance(fn, functools.partial):
        return {"partial": describe_callable(fn.func, depth + 1), "args": describe_value(list(fn.args), depth + 1),
                "keywords": describe_value(dict(fn.keywords), depth + 1)}
    if isinstance(fn, types.MethodType):
        return {"method": fn.__func__.__qualname__, "of": describe_value(fn.__self__, depth + 1)}
    if isinstance(fn, types.FunctionType):
        name = f"{fn.__module__}.{fn.__qualname__}"
        if "<" not in fn.__qualname__ and fn.__module__ != "__main__":
            return name
        closure = [describe_value(c.cell_contents, depth + 1) for c in fn.__closure__ or () if _filled(c)]
        return {"function": name, "code": _code_digest(fn.__code__), "closure": closure,
                "defaults": describe_value(list(fn.__defaults__ or ()), depth + 1)}
    if isinstance(fn, (types.BuiltinFunctionType, type)):
        return f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', repr(fn))}"
    return {"class": type(fn).__module__ + "." + type(fn).__qualname__,
            "settings": _settings(fn, depth) if hasattr(fn, "__dict__") else {}}


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # an empty cell (a name assigned later)
        return False
    return True


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _short(value: Any, limit: int = 120) -> str:
    text = _canonical(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class RunFingerprint:
    """The fields that determine a run (see the module docstring) and their digest.

    Attributes
    ----------
    fields : tuple of (name, value)
        Plain values, in a fixed order.
    """

    fields: tuple

    @property
    def digest(self) -> str:
        """A blake2b digest of the canonical JSON of every field: equal digests, the same run."""
        return hashlib.blake2b(_canonical(dict(self.fields)).encode(), digest_size=16).hexdigest()

    def as_dict(self) -> dict:
        """The fields as a plain dictionary (what a checkpoint stores)."""
        return dict(self.fields)

    def differences(self, saved: dict) -> list[str]:
        """One line per field whose value in ``saved`` (a checkpoint's fingerprint) differs from this one."""
        lines = []
        for name, value in self.fields:
            old = saved.get(name, "<absent>")
            if _canonical(old) != _canonical(value):
                lines.append(f"{name}: {_short(old)} in the checkpoint, {_short(value)} now")
        lines.extend(f"{name}: {_short(saved[name])} in the checkpoint, absent now" for name in saved
                     if name not in dict(self.fields))
        return lines
