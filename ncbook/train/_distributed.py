"""Data-parallel training under ``torchrun``: one process per device, PyTorch's own engine.

Launch a script that calls :func:`init_distributed` and then :func:`ncbook.train.fit` with
``torchrun --nproc_per_node=N script.py``. Inside ``fit`` every rank draws the same permutation of
the training set each epoch and forwards its shard (``batch_size / world_size`` samples) of every
global batch; the logits and features of the global batch are gathered on every rank and the loss is
computed on all of them, identically everywhere, with a gradient that ``DistributedDataParallel``'s
average turns into the global batch's. So an update equals the update of one process on the whole
batch for every loss (weighted normalisers, class statistics, EMAs and switches included), for models
without BatchNorm or with SyncBatchNorm. Rank 0 writes checkpoints and shows progress; scripts guard
their own writes (``save_result``, claims) with :func:`is_main_process`.
"""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

__all__ = ["init_distributed", "is_main_process", "world_size", "rank"]


def world_size() -> int:
    """Number of processes of the running ``torch.distributed`` group (1 without one)."""
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def rank() -> int:
    """This process's rank (0 without a process group)."""
    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def is_main_process() -> bool:
    """True on rank 0 (and in a plain single-process run): the process that writes files."""
    return rank() == 0


def init_distributed(backend: str | None = None) -> torch.device:
    """Join the process group ``torchrun`` describes in the environment and return this rank's device.

    Without ``torchrun`` (no ``WORLD_SIZE`` in the environment) nothing is started and the default
    device is returned, so the same script runs alone or under ``torchrun``.

    Parameters
    ----------
    backend : {"nccl", "gloo"}, optional
        Defaults to ``"nccl"`` with CUDA, ``"gloo"`` on CPUs.

    Returns
    -------
    torch.device
        ``cuda:LOCAL_RANK`` with CUDA, else ``cpu``.
    """
    cuda = torch.cuda.is_available()
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        dist.init_process_group(backend or ("nccl" if cuda else "gloo"))
    if cuda:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
        return device
    return torch.device("cpu")
