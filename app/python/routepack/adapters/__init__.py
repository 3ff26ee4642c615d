"""Drop-in replacements for the packing functions of RL training stacks (pure Python; none of
them imports its stack). Each module reproduces one upstream calling convention and return shape
at a cited commit and fills it from a RoutePack plan: every DP rank runs the same number of
micro-batches (R rows), every sample appears exactly once, and the stack's batch rules (token cap,
oversize samples alone, samples per DP rank or per micro-batch, the micro-batch count's multiple)
are kept by the planner itself (docs/batch-rules.md); each adapter passes its last plan on as the
next step's previous placement. When planning fails or runs past the adapter's time limit, it logs
one warning and answers with the stack's own function (the original its ``install`` kept, else the
adapter's own plain answer); strict, it raises. Contracts and upstream test results:
docs/adapters.md.

- :mod:`routepack.adapters.slime`: ``build_dp_schedule`` (THUDM/slime 624b824a) and a
  ``--custom-megatron-before-train-step-hook-path`` hook.
- :mod:`routepack.adapters.nemo_rl`: a ``SequencePacker`` (NVIDIA-NeMo/RL 7ea279ab).
- :mod:`routepack.adapters.megatron`: a packing scheduler with ``get_groups_and_subsamples``
  (NVIDIA/Megatron-LM d48bd6be).
- :mod:`routepack.adapters.verl`: ``_balance_batch`` / ``rearrange_micro_batches`` (a drop-in for
  any local batch; verl-project/verl 1dda039b).
- :mod:`routepack.adapters.areal`: ``split_padded_tensor_dict_into_mb_list``, the actor update's
  mini-batch and micro-batch split (areal-project/AReaL d3fbc53c), routes from the R3 side channel.
"""
