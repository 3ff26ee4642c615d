"""A DP rank's share of a plan: its micro-batches, and the offsets of a packed varlen micro-batch."""

from __future__ import annotations

import operator
from typing import Iterable, List, Optional, SupportsIndex

import torch

from .._core import InputError


def microbatches(plan, dp_rank: int) -> List[List[int]]:
    """The plan's rows for DP slot ``dp_rank``: R lists of sample indices (indices into the planned
    window, in the order the plan packs them: cell (0, d), (1, d), ...). Every DP slot gets
    ``plan.row_count`` non-empty micro-batches. InputError (a ValueError) for a DP rank outside 0..D-1."""
    d = operator.index(dp_rank)
    if not 0 <= d < plan.dp_slots:
        raise InputError(f"dp_rank {d} is not a DP slot of the plan (0..{plan.dp_slots - 1})")
    return [list(row[d]) for row in plan.rows]


def cu_seqlens(lengths: Iterable[SupportsIndex], samples: Optional[Iterable[SupportsIndex]] = None, *,
               device=None) -> torch.Tensor:
    """Cumulative sequence offsets of a packed micro-batch, as varlen attention kernels take them
    (flash-attn's ``cu_seqlens``, Megatron-LM's ``PackedSeqParams.cu_seqlens_q``): int32 [n + 1],
    ``[0, t_0, t_0 + t_1, ...]`` in tokens.

    lengths: token counts t_i (``plan.lengths``, or any [N] integers); samples: the micro-batch's
    sample indices into ``lengths`` (one entry of :func:`microbatches`); None packs ``lengths`` in
    order. InputError (a ValueError) for a negative length or a total beyond int32."""
    t = torch.as_tensor(list(lengths), dtype=torch.int64)
    if samples is not None:
        t = t[torch.as_tensor(list(samples), dtype=torch.int64)]
    if t.numel() and int(t.min()) < 0:
        raise InputError(f"lengths hold a negative token count ({int(t.min())})")
    out = torch.zeros(t.numel() + 1, dtype=torch.int64)
    torch.cumsum(t, 0, out=out[1:])
    if int(out[-1]) > torch.iinfo(torch.int32).max:
        raise InputError(f"the micro-batch holds {int(out[-1])} tokens, more than int32 offsets hold")
    return out.to(torch.int32) if device is None else out.to(device=device, dtype=torch.int32)
