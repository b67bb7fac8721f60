"""Combining per-rank metric values under `accelerate launch` / torch.distributed without padding duplicates."""

from __future__ import annotations

import torch
import torch.distributed as dist


def is_distributed() -> bool:
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def gather_variable_length(values: torch.Tensor) -> torch.Tensor:
    """Concatenate each rank's 1-D tensor in rank order; ranks may hold different lengths (padding is trimmed,
    so no sample is counted twice). Returns `values` unchanged when not distributed."""
    if not is_distributed():
        return values
    device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
    local = values.detach().to(device)
    lengths = [torch.zeros(1, dtype=torch.long, device=device) for _ in range(dist.get_world_size())]
    dist.all_gather(lengths, torch.tensor([local.numel()], device=device))
    longest = int(max(length.item() for length in lengths))
    padded = torch.zeros(longest, dtype=local.dtype, device=device)
    padded[: local.numel()] = local
    gathered = [torch.empty_like(padded) for _ in lengths]
    dist.all_gather(gathered, padded)
    return torch.cat([g[: int(n.item())] for g, n in zip(gathered, lengths, strict=True)]).to(values.device)
