"""The pipeline executor: run a stage's schedule (schedules.py) on real ranks.

The idea. A GPT is cut into K stages (stage.py), one per rank of the
pp group. A mini-batch of B sequences is cut into M micro-batches of B/M.
Each rank runs its action list from ``schedules.py`` ("RA3", "F3", "SA3",
"RG3", "B3", "SG3") in order; the schedule decides how much the stages
overlap (the bubble) and how many micro-batches each holds (the memory):

    naive   M = 1, whole batch         bubble (K-1)/K         holds 1 (all of it)
    gpipe   all F, then all B          bubble (K-1)/(M+K-1)   holds M
    1f1b    warm-up, F/B pairs, drain  bubble (K-1)/(M+K-1)   holds min(M, K-k)

The math. The last stage computes loss_i, the mean cross entropy of
micro-batch i, and backpropagates loss_i / M; so the step's loss is
(1/M) sum_i loss_i, which equals the serial full-batch mean (equal-size
micro-batches), and the gradients, summed into ``.grad`` over the M
backwards, equal one serial backward on the whole batch. One optimizer step
then matches one serial step. Gradients are only accumulated: zero them
before ``train_step`` (as before ``loss.backward()``), and synchronise them
over data-parallel replicas yourself (DDP / ZeRO) after it.

Communication per step, between neighbouring stages of the pp group:
M activation sends k -> k+1 and M gradient sends k+1 -> k, each
(B/M) * T * D values, 8 bytes each in float64 (``isend`` / ``irecv``, buffer
API, tag = micro-batch; the shape is known from the batch and the config,
so each receive buffer is allocated up front, with no size message).
Sends are nonblocking and waited at the end of the step: with blocking
sends 1F1B deadlocks (two neighbours both sending). A receive waits at its
action; that wait is traced as a "recv" span. Then one ``broadcast`` of the
loss (8 bytes) from the last stage over the pp group.

Trace: every forward and backward is a ``trace.span("forward"|"backward",
label="mb<i>")``; ``gather_timeline`` collects them for
``tools.timeline`` (Gantt PNG, measured bubble). With ``device_time=(t_f,
t_b)`` each forward lasts at least t_f and each backward t_b, the rest
slept without a core (device_time.py: emulated GPU time, so 4 stages on 2
cores measure the formula's bubble); the spans include the sleep. ``activation_bytes``
measures what each stage holds. Tutorial:

    mpirun -n 4 python tutorials/07_pipeline.py
"""
import time

from minimegatron import comm, trace
from minimegatron.backend import xp
from minimegatron.parallel.pipeline_parallel.device_time import as_device_time
from minimegatron.parallel.pipeline_parallel.schedules import get_schedule
from minimegatron.parallel.split import rows_of
from minimegatron.tensor import Tensor, unwrap


def _root_array(a):
    """The array that owns a view's memory (a view costs nothing of its own)."""
    while getattr(a, "base", None) is not None and hasattr(a.base, "nbytes"):
        a = a.base
    return a


def _arrays_of(ctx):
    """Every array a Node's context keeps: saved arrays and array attributes (one level)."""
    for value in list(ctx.saved) + list(vars(ctx).values()):
        items = value if isinstance(value, (tuple, list)) else (value,)
        for item in items:
            if hasattr(item, "nbytes") and hasattr(item, "shape"):
                yield item


def activation_bytes(tensors, exclude=()):
    """Bytes of the arrays the autograd graphs behind ``tensors`` keep alive.

    Walks every Node reachable from the tensors and counts each distinct
    array (views counted once, by the memory they view) saved for backward,
    plus the tensors' own data; arrays in ``exclude`` (the parameters) are
    not activations. This is what a micro-batch in flight costs a stage.
    """
    skip = {id(_root_array(unwrap(p))) for p in exclude}
    seen, total, stack, visited = set(), 0, [], set()

    def count(a):
        nonlocal total
        root = _root_array(a)
        if id(root) not in seen and id(root) not in skip:
            seen.add(id(root))
            total += root.nbytes
    for t in tensors:
        count(t.data)
        if t._node is not None:
            stack.append(t._node)
    while stack:
        node = stack.pop()
        if id(node) in visited or node.ctx is None:
            continue
        visited.add(id(node))
        for array in _arrays_of(node.ctx):
            count(array)
        stack.extend(t._node for t in node.inputs if t is not None and t._node is not None)
    return total


class PipelineEngine:
    """Trains one stage of a pipeline: ``loss = engine.train_step(inputs, targets)``.

    ``stage_module``: a PipelineStage (or any Module with ``forward``,
    ``loss``, ``is_first``, ``is_last``, ``config``), e.g. with tensor
    parallel blocks. ``pp_group``: the Group of the K stages, in stage order
    (a sub-group of the world in 3D parallelism); this rank is stage
    ``pp_group.rank``. ``schedule``: "naive" (the whole batch as micro-batch
    0; ``num_micro_batches`` is then ignored), "gpipe" or "1f1b" (schedules.py).
    ``checkpoint_activations`` recomputes each block in
    backward (recompute.py). With ``measure_memory`` each forward also
    walks its graph (``activation_bytes``; outside the traced compute spans,
    but it costs time) and ``stats`` then holds the step's peak activations.
    ``device_time``: None, (t_forward, t_backward) seconds or a DeviceTime
    (device_time.py); changeable between steps (``engine.device_time = ...``).
    """

    def __init__(self, stage_module, pp_group, schedule="1f1b", num_micro_batches=1,
                 checkpoint_activations=False, measure_memory=False, device_time=None):
        self.schedule_fn = get_schedule(schedule)           # ValueError on unknown names
        if not isinstance(num_micro_batches, int) or num_micro_batches < 1:
            raise ValueError(f"num_micro_batches must be an int >= 1, got {num_micro_batches!r}")
        if stage_module.num_stages != pp_group.size or stage_module.stage != pp_group.rank:
            raise ValueError(f"stage {stage_module.stage} of {stage_module.num_stages} does not "
                             f"match pp group rank {pp_group.rank} of {pp_group.size}")
        self.stage, self.group, self.schedule = stage_module, pp_group, schedule
        self.num_micro_batches = 1 if schedule == "naive" else num_micro_batches
        stage_module.checkpoint_activations = checkpoint_activations
        self.k, self.K = pp_group.rank, pp_group.size
        self.measure_memory, self.stats = measure_memory, {}
        self.device_time = as_device_time(device_time)      # ValueError on a bad value

    def split_micro_batches(self, array):
        """M views (B/M, T) of a batch (B, T): micro-batch i is rows i*B/M .. (i+1)*B/M."""
        return [None if array is None else rows_of(array, i, self.num_micro_batches)
                for i in range(self.num_micro_batches)]

    def _check_batch(self, inputs, targets):
        given = [a for a in (inputs, targets) if a is not None]
        if not given:
            raise ValueError("train_step needs the inputs or the targets on every stage "
                             "(they give the batch size)")
        batch, steps = given[0].shape[:2]
        if batch % self.num_micro_batches:
            raise ValueError(f"a batch of {batch} sequences does not split into "
                             f"{self.num_micro_batches} equal micro-batches")
        if self.stage.is_first and inputs is None or self.stage.is_last and targets is None:
            raise ValueError("the first stage needs the inputs and the last the targets")
        return batch // self.num_micro_batches, steps

    def train_step(self, inputs, targets):
        """Forward and backward of every micro-batch; returns the mini-batch loss on every rank.

        ``inputs`` and ``targets``: the whole mini-batch (B, T), best given on
        every rank (the first stage needs the inputs, the last the targets,
        every stage one of them for the shapes), so a bad batch size fails on
        every rank. Gradients are added to ``.grad`` (zero them before).
        """
        size, steps = self._check_batch(inputs, targets)       # before any message
        M, k, K, group = self.num_micro_batches, self.k, self.K, self.group
        device = as_device_time(self.device_time)                # sleeps inside the spans
        config = self.stage.config
        act_shape = (size, steps, config.d_model)                # (B/M, T, D)
        dtype = xp.dtype(config.dtype)
        ids, labels = self.split_micro_batches(inputs), self.split_micro_batches(targets)
        not_activations = self.stage.parameters() + [a for a in (inputs, targets)
                                                     if a is not None]
        held, outputs, sends, loss_sum = {}, {}, [], 0.0

        def progress():                                   # messages move while a stage "computes"
            for handle in sends:
                handle.test()
        nbytes, peak = {}, {"micro_batches": 0, "bytes": 0}
        for action in self.schedule_fn(K, M, k):
            i, op = action.micro_batch, action.op
            if op == "recv_act":
                with trace.label(f"mb{i}"):
                    buf = comm.irecv(xp.empty(act_shape, dtype), k - 1, group, tag=i).wait()
                held[i] = Tensor(buf, requires_grad=True)
            elif op == "forward":
                with trace.span("forward", label=f"mb{i}"), device.lasts("forward", progress):
                    x = ids[i] if k == 0 else held[i]
                    out = self.stage(x)
                    if self.stage.is_last:
                        out = self.stage.loss(out, labels[i]) * (1.0 / M)   # loss_i / M
                        loss_sum += out.item()
                outputs[i] = out
                if self.measure_memory:
                    nbytes[i] = activation_bytes([out] + ([held[i]] if i in held else []),
                                                 exclude=not_activations)
                peak["micro_batches"] = max(peak["micro_batches"], len(outputs))
                peak["bytes"] = max(peak["bytes"], sum(nbytes.get(j, 0) for j in outputs))
            elif op == "send_act":
                with trace.label(f"mb{i}"):
                    sends.append(comm.isend(outputs[i].data, k + 1, group, tag=i))
            elif op == "recv_grad":
                with trace.label(f"mb{i}"):
                    grad = comm.irecv(xp.empty(act_shape, dtype), k + 1, group, tag=i).wait()
            elif op == "backward":
                with trace.span("backward", label=f"mb{i}"), device.lasts("backward", progress):
                    out = outputs.pop(i)
                    out.backward(None if self.stage.is_last else grad)
            elif op == "send_grad":
                with trace.label(f"mb{i}"):
                    sends.append(comm.isend(held.pop(i).grad, k - 1, group, tag=i))
        for handle in sends:
            handle.wait()
        self.stats = {"peak_in_flight": peak["micro_batches"], "micro_batch_size": size}
        if self.measure_memory:
            self.stats["peak_activation_bytes"] = peak["bytes"]
        loss = xp.asarray([loss_sum], dtype="float64")
        return float(comm.broadcast(loss, group, root=K - 1)[0])


def gather_timeline(group, root=0, ops=("forward", "backward", "recv"), same_host=True):
    """This rank's traced spans of ``ops`` on ``root`` as dicts with "rank", else None.

    Ranks are group ranks (stages); each span keeps op, start, end and label,
    the format of ``tools.timeline.rows_from_trace`` and its ``--trace`` file.
    Each rank's trace clock starts at its own ``trace.reset``; with
    ``same_host`` the spans are moved onto ``time.perf_counter``, the
    system-wide monotonic clock on Linux, so ranks on one machine line up
    exactly. Otherwise call ``comm.barrier(group)`` and ``trace.reset()`` before the step.
    """
    origin = time.perf_counter() - trace.now() if same_host else 0.0   # this rank's t0
    mine = [{"op": s["op"], "start": s["start"] + origin, "end": s["end"] + origin,
             "label": s["label"]} for s in trace.spans() if s["op"] in ops]
    every = comm.gather_object(mine, group, root=root)
    if every is None:
        return None
    return [dict(span, rank=rank) for rank, spans in enumerate(every) for span in spans]
