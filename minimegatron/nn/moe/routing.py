"""The router's decisions: top-k, capacity and the row plan, computed on plain arrays.

Notation: b sequences of T tokens, E experts, k choices per token, C slots per
expert and sequence (MoEConfig.capacity). probs (b, T, E) = softmax(x W_router).

top-k. choice[b, t] = the k experts of largest prob, largest first; equal probs
go to the LOWER expert id (a stable sort of -prob), so every rank and every run
picks the same experts from the same numbers.

Capacity (GShard, Switch). Inside one sequence the k*T assignments queue for
their experts slot-major: every token's first choice, in token order, then
every second choice, ... An assignment whose expert already has C rows of this
sequence is DROPPED: it adds nothing, the token keeps only its residual (and
its other choices). Its position in the queue:

    queue[b, j*T + t] = choice[b, t, j]
    slot  = (number of earlier entries of queue[b] with the same expert)   # cumsum - 1
    kept  = slot < C

The row plan (RoutePlan): which token each expert row holds, expert-major.

    padded (capacity):  rows (E, b, C) flattened, n = E*b*C; row (e, s, c) holds
                        token s*T + t of slot c of expert e, or -1 (empty, zero)
    dropless:           every assignment, sorted by expert (stable), n = b*T*k;
                        counts[e] rows of expert e, one after another

``token`` and ``expert`` (n,) say, for each row, whose token and which expert;
``counts`` (E,) how many rows each expert has. Expert parallelism sends the
rows of experts e*E/ep.. to rank e (parallel/expert_parallel/dispatch.py).
"""
from dataclasses import dataclass

from minimegatron.backend import xp


def choose_experts(probs, k, capacity):
    """probs (b, T, E) -> choice, slot, kept, each (b, T, k): the router's decisions.

    choice  the k experts of largest prob, largest first; ties go to the lower id
    slot    each assignment's place in its expert's queue of its sequence, slot-major:
            every token's first choice in token order, then every second choice, ...
    kept    slot < capacity (all True when capacity is None: dropless)
    """
    # EXERCISE 10.1 begin
    b, steps, num_experts = probs.shape
    choice = xp.argsort(-probs, axis=-1, kind="stable")[..., :k]   # (b, T, k) ties: lower id
    queue = choice.transpose(0, 2, 1).reshape(b, k * steps)        # (b, k*T) slot-major
    onehot = queue[..., None] == xp.arange(num_experts)             # (b, k*T, E)
    before = xp.cumsum(onehot, axis=1) - 1                          # (b, k*T, E) earlier ones
    slot = xp.take_along_axis(before, queue[..., None], axis=2)[..., 0]   # (b, k*T)
    slot = slot.reshape(b, k, steps).transpose(0, 2, 1)            # (b, T, k)
    kept = xp.ones(choice.shape, dtype=bool) if capacity is None else slot < capacity
    return choice, slot, kept
    # EXERCISE 10.1 end


def top_k(probs, k):
    """(..., E) -> (..., k) expert ids, largest prob first; ties go to the lower id."""
    width = probs.shape[-1]
    return choose_experts(probs.reshape(1, -1, width), k, None)[0].reshape(
        probs.shape[:-1] + (k,))


@dataclass
class RoutePlan:
    token: object        # (n,) flat token id b*T + t of each expert row, -1 for empty
    expert: object       # (n,) expert id of each row (rows are expert-major)
    counts: object       # (E,) rows per expert
    choice: object       # (b, T, k) the router's choices
    kept: object         # (b, T, k) True where the choice got a slot
    capacity: object     # C, or None (dropless)

    @property
    def dropped(self):
        """Assignments that found their expert full."""
        return int((~self.kept).sum())

    def load(self, num_experts):
        """(E,) assignments each expert was chosen for (before capacity)."""
        return xp.bincount(self.choice.reshape(-1), minlength=num_experts)

    def kept_load(self, num_experts):
        """(E,) rows each expert computes for real tokens (after capacity)."""
        return xp.bincount(self.expert[self.token >= 0], minlength=num_experts)


def route(probs, k, capacity):
    """The RoutePlan of probs (b, T, E): padded rows if ``capacity`` is an int, else
    dropless."""
    b, steps, num_experts = probs.shape
    choice, slot, kept = choose_experts(probs, k, capacity)        # (b, T, k) each
    tokens = xp.arange(b * steps).reshape(b, steps, 1)              # flat token ids
    tokens = xp.broadcast_to(tokens, choice.shape)                  # (b, T, k)
    if capacity is None:
        order = xp.argsort(choice.reshape(-1), kind="stable")       # expert-major
        return RoutePlan(tokens.reshape(-1)[order], choice.reshape(-1)[order],
                         xp.bincount(choice.reshape(-1), minlength=num_experts),
                         choice, kept, None)
    seq = xp.broadcast_to(xp.arange(b).reshape(b, 1, 1), choice.shape)
    table = xp.full((num_experts, b, capacity), -1, dtype=xp.int64)     # (E, b, C)
    table[choice[kept], seq[kept], slot[kept]] = tokens[kept]
    rows = num_experts * b * capacity
    expert = xp.repeat(xp.arange(num_experts), b * capacity)       # (E*b*C,)
    counts = xp.full((num_experts,), b * capacity, dtype=xp.int64)
    return RoutePlan(table.reshape(rows), expert, counts, choice, kept, capacity)


def assignment_counts(choice, num_experts):
    """(b, T, k) -> (b, E): how many of a sequence's k*T assignments chose each expert."""
    b = choice.shape[0]
    onehot = choice.reshape(b, -1)[..., None] == xp.arange(num_experts)   # (b, T*k, E)
    return onehot.sum(axis=1)                                              # (b, E)
