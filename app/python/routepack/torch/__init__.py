"""Plans applied to a live PyTorch model (the only part of ``routepack`` that imports torch).

- :func:`apply_placement`: moves the experts of every MoE layer, their gradients and optimizer state
  to the plan's physical slots (one process, or across EP ranks with ``torch.distributed``) and makes
  routed tokens reach them;
- :func:`microbatches` and :func:`cu_seqlens`: a DP rank's micro-batches of the plan and the offsets
  of a packed (varlen) micro-batch;
- :mod:`routepack.torch.measure` (``python3 -m routepack.torch.measure``): a planned step executed
  with real kernels and timed piece by piece, beside the cost model (docs/measure.md).

Layouts and how routing follows the moves per layout: :mod:`routepack.torch.layouts`. Tested with
Debian's ``python3-torch`` 1.13 on CPU (gloo between processes); the NCCL path is the same code and is
untested here (no device with PyTorch).
"""

from .apply import ApplyResult, apply_placement, current_placement
from .batches import cu_seqlens, microbatches
from .layouts import LAYOUTS, find_moe_layers

__all__ = ["ApplyResult", "LAYOUTS", "apply_placement", "cu_seqlens", "current_placement", "find_moe_layers",
           "microbatches"]
