"""Data-parallel pretraining with torch.distributed, started by ``torchrun``.

    torchrun --nproc_per_node 2 -m spacy_elmo pretrain OUT --config CFG

``torchrun`` sets RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR / MASTER_PORT; without them (a
plain ``python -m spacy_elmo pretrain``) there is one rank and nothing here does any work.
The backend is gloo on CPU and nccl on CUDA (each rank on ``cuda:LOCAL_RANK``).

How a step is shared (see :mod:`.train`): a global step takes ``world * accumulate_batches``
consecutive batches of the epoch's batch list; rank r takes the r-th share of
``accumulate_batches`` of them. ``DistributedDataParallel`` averages the gradients, so a step
equals one process with ``accumulate_batches = world * accumulate_batches`` on the same batches
(up to float summation order). Only rank 0 writes files and evaluates.
"""
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

from ..errors import ElmoConfigError


@dataclass
class Ranks:
    rank: int = 0
    world: int = 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def setup(device: str) -> Ranks:
    """Join the process group that torchrun describes in the environment (one rank without it).
    On CUDA, selects ``cuda:LOCAL_RANK`` first. Raises ElmoConfigError (a ValueError) for a world size that is not a
    positive integer."""
    world = os.environ.get("WORLD_SIZE", "1")
    if not world.isdigit() or int(world) < 1:
        raise ElmoConfigError(f"WORLD_SIZE = {world!r}: expected a positive integer (set by torchrun)")
    if int(world) == 1:
        return Ranks()
    if not dist.is_initialized():
        cuda = device.startswith("cuda")
        if cuda:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl" if cuda else "gloo")
    return Ranks(dist.get_rank(), dist.get_world_size())


def wrap(lm: torch.nn.Module, ranks: Ranks) -> torch.nn.Module:
    """The module to run forward passes through: DistributedDataParallel around ``lm`` (which
    averages gradients in backward) when there are several ranks, else ``lm`` itself.

    The only parameters a step can leave unused are those of a softmax tail cluster in which no
    target of a rank's batches falls. With several ranks the LanguageModel puts every cluster
    into each loss's graph (weight 0: exact zero gradients, which DDP's average treats as it
    treats a rank that did not use them), so ``find_unused_parameters`` is off (no graph search
    each step); :func:`drop_unused_clusters` then restores None gradients for clusters no rank
    used, as one process has them (Adam skips those parameters)."""
    if ranks.world == 1:
        return lm
    lm.all_clusters_in_graph = True
    device_ids = [lm.device.index] if lm.device.type == "cuda" else None
    return torch.nn.parallel.DistributedDataParallel(lm, device_ids=device_ids, find_unused_parameters=False)


def drop_unused_clusters(lm: torch.nn.Module, ranks: Ranks) -> None:
    """After a step's backward passes with several ranks: set the gradients of the softmax tail
    clusters that no rank's targets used since the last call to None (one all-reduce of
    n_clusters values), and reset the record. A no-op with one rank."""
    used, lm.clusters_used = getattr(lm, "clusters_used", None), None
    if ranks.world == 1 or used is None:
        return
    counts = sum_across(used.to(torch.float64).cpu(), ranks)
    for i, tail in enumerate(lm.softmax.tail):
        if counts[i] == 0:
            for p in tail.parameters():
                p.grad = None


def sum_across(values: torch.Tensor, ranks: Ranks) -> torch.Tensor:
    """Element-wise sum over ranks of a small float64 CPU tensor (identity with one rank)."""
    if ranks.world == 1:
        return values
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else values.device
    out = values.to(device)
    dist.all_reduce(out)
    return out.cpu()


def barrier(ranks: Ranks) -> None:
    if ranks.world > 1:
        dist.barrier()


def teardown(ranks: Ranks) -> None:
    if ranks.world > 1 and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
