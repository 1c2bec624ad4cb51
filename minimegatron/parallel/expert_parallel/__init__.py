"""Expert parallelism: the E experts of each MoE layer split over ep ranks. docs/moe.md.

groups.py (ep folded over dp x cp; the ep and edp groups), mappings.py (the
all-to-all pair as autograd Functions, the count exchange), dispatch.py
(dispatch and combine, padded and dropless, and their byte formulas),
layer.py (ExpertParallelMoE), gpt.py (the GPT of a grid with its experts on
ep), grads.py (dense over dp x cp, experts over edp; the gradient norm),
trainer.py (MoETrainer: with tp, pp, dp and cp).
The serial layer: minimegatron/nn/moe/.
"""
from minimegatron.parallel.expert_parallel.dispatch import (combine_dropless, combine_padded,
                                                            dispatch_dropless, dispatch_padded,
                                                            dropless_bytes, padded_bytes,
                                                            source_to_expert)
from minimegatron.parallel.expert_parallel.gpt import (check_moe_grid, expert_parallel_gpt,
                                                       is_expert, use_experts)
from minimegatron.parallel.expert_parallel.grads import (clip_grad_norm, grad_norm,
                                                         reduce_gradients)
from minimegatron.parallel.expert_parallel.groups import (check_expert_parallel,
                                                          expert_groups, expert_layout)
from minimegatron.parallel.expert_parallel.layer import ExpertParallelMoE
from minimegatron.parallel.expert_parallel.mappings import (AllToAll, AllToAllV,
                                                            all_to_all_rows, all_to_allv_rows,
                                                            exchange_counts)
from minimegatron.parallel.expert_parallel.trainer import MoETrainer

__all__ = ["MoETrainer", "check_moe_grid", "expert_parallel_gpt", "is_expert", "use_experts",
           "clip_grad_norm", "grad_norm", "reduce_gradients", "combine_dropless", "combine_padded",
           "dispatch_dropless", "dispatch_padded",
           "dropless_bytes", "padded_bytes", "source_to_expert", "check_expert_parallel",
           "expert_groups", "expert_layout", "ExpertParallelMoE", "AllToAll", "AllToAllV",
           "all_to_all_rows", "all_to_allv_rows", "exchange_counts"]
