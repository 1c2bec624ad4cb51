"""The pipeline executor: run a stage's schedule (schedules.py) on real ranks.

The idea. A GPT is cut into K stages (stage.py), one per rank of the
pp group. A mini-batch of B sequences is cut into M micro-batches of B/M.
Each rank runs its action list from ``schedules.py`` ("RA3", "F3", "SA3",
"RG3", "B3", "SG3") in order, one small method per action (``EXECUTE``: recv_act,
forward, send_act, recv_grad, backward, weight, send_grad); the schedule decides how much the stages
overlap (the bubble) and how many micro-batches each holds (the memory):

    naive   M = 1, whole batch         bubble (K-1)/K         holds 1 (all of it)
    gpipe   all F, then all B          bubble (K-1)/(M+K-1)   holds M
    1f1b    warm-up, F/B pairs, drain  bubble (K-1)/(M+K-1)   holds min(M, K-k)
    interleaved  v chunks per rank     bubble (K-1)/(vM+K-1)  holds (up to) K + (K-1)/v
                 (stage.ChunkedStage; the same 1F1B over K*v virtual stages)
    zb-h1, zb-h2, zbv  backward split into B and W (zero_bubble.py): "B3" runs
                 ``out.backward(grad, defer_weight_grads=True)`` (every input gradient,
                 so dL/dX is sent at once) and keeps the returned W half; "W3" calls
                 it (``param.grad += dL/dA``, autodiff/split_backward.py). A micro-batch
                 is held until its W. zbv: ChunkedStage(..., 2, placement="v"), the
                 model down the ranks and back up; on the last rank chunk 0 hands
                 chunk 1 its activation (and chunk 1 hands back the gradient) in
                 memory, with no message.
    dualpipe, dualpipev  (dualpipe.py) the same B and W; dualpipev in zbv's V;
                 dualpipe: ChunkedStage(..., 2, placement="mirror"), stages k and K-1-k,
                 micro-batches 0..M/2-1 down and M/2..M-1 up, then ONE all-reduce of
                 every gradient over the mirror pair {k, K-1-k} (the two copies summed),
                 and the loss all-reduced (both ends hold losses) in place of the broadcast.

The math. The last stage computes loss_i, the mean cross entropy of
micro-batch i, and backpropagates loss_i / M; so the step's loss is
(1/M) sum_i loss_i, which equals the serial full-batch mean (equal-size
micro-batches), and the gradients, summed into ``.grad`` over the M
backwards, equal one serial backward on the whole batch. One optimizer step
then matches one serial step. Gradients are only accumulated: zero them
before ``train_step`` (as before ``loss.backward()``), and synchronise them
over data-parallel replicas yourself (DDP / ZeRO) after it. Mixed precision:
set ``engine.loss_scale = S`` and the last stage starts backward from S (the
gradient of S x loss_i / M), so every stage's half gradients are S times larger.

Communication per step, between neighbouring stages of the pp group:
M activation sends s -> s+1 and M gradient sends s+1 -> s (stage s), each
(B/M) * T * D values, 8 bytes each in float64 (``isend`` / ``irecv``, buffer
API, tag = micro-batch (+ M for a gradient, + 2M per chunk: ``tag``); the
shape is known from the batch and the config,
so each receive buffer is allocated up front, with no size message).
Sends are nonblocking and waited at the end of the step: with blocking
sends 1F1B deadlocks (two neighbours both sending). A receive waits at its
action; that wait is traced as a "recv" span. Then one ``broadcast`` of the
loss (8 bytes) from the last stage over the pp group. Interleaved: every
(micro-batch, virtual-stage boundary) is one activation and one gradient
send, 2M(Kv - 1) in all; rank K-1 chunk c sends to rank 0 chunk c+1 (wraps).
At construction: one 8-byte-per-rank exchange (``comm_check.agree``) that checks
every stage has the same schedule, stages, chunks and micro-batches, and names
the rank that differs (else the stages' sends and receives would not pair: a hang).

Trace: every forward, backward and weight step is a ``trace.span("forward"|
"backward"|"weight", label="mb<i>", micro_batch=i)`` ("mb<i>c<c>" on chunk c);
``tools.trace_gather.gather_timeline`` collects them for ``tools.timeline``
(Gantt PNG, measured bubble). With ``device_time=(t_f, t_b[, t_w])`` each
forward lasts at least t_f, each B t_b and each W t_w (a whole backward
t_b + t_w; with v chunks each chunk's step 1/v of that, as ``simulate``), the
rest slept without a core (device_time.py: emulated GPU time, so 4
stages on 2 cores measure the formula's bubble); the spans include the sleep.
A ``memory_meter`` (tools/activation_memory.py) sees each micro-batch's graph
after its forward, to measure what each stage holds. Tutorial:

    minimegatron run -n 4 tutorials/07_pipeline.py
"""
from dataclasses import dataclass, field

from minimegatron import comm
from minimegatron.comm import comm_check, trace
from minimegatron.backend import xp
from minimegatron.parallel.pipeline_parallel.device_time import as_device_time
from minimegatron.parallel.pipeline_parallel.dualpipe import sum_mirrored_grads
from minimegatron.parallel.pipeline_parallel.schedules import (SPLIT, check_chunks,
                                                               check_interleaved,
                                                               chunk_share, get_schedule,
                                                               placement)
from minimegatron.parallel.split import rows_of
from minimegatron.autodiff.tensor import Tensor


class PipelineEngine:
    """Trains one stage of a pipeline: ``loss = engine.train_step(inputs, targets)``.

    ``stage_module``: a PipelineStage (or any Module with ``forward``,
    ``loss``, ``is_first``, ``is_last``, ``config``), e.g. with tensor
    parallel blocks, or a ChunkedStage (its ``chunks``, for "interleaved").
    ``pp_group``: the Group of the stages, in stage order
    (a sub-group of the world in 3D parallelism); this rank is stage
    ``pp_group.rank``. ``schedule``: "naive" (the whole batch as micro-batch
    0; ``num_micro_batches`` is then ignored), "gpipe", "1f1b",
    "interleaved" (M a multiple of K, else ValueError here) (schedules.py),
    "zb-h1" (M >= K), "zb-h2" (M >= 2K-1) or "zbv" (M >= 2K-1; a ChunkedStage
    with placement="v") (zero_bubble.py), "dualpipe" (K even, M even, M >= 2K;
    placement="mirror") or "dualpipev" (M >= 2K; placement="v") (dualpipe.py).
    ``checkpoint_activations`` recomputes each block in
    backward (recompute.py). ``memory_meter``: None or an object whose
    ``forward_done(i, tensors, in_flight, exclude)`` runs after each forward,
    outside the traced compute spans (tools/activation_memory.ActivationMeter).
    ``device_time``: None, (t_forward, t_backward[, t_weight]) seconds or a DeviceTime
    (device_time.py); changeable between steps (``engine.device_time = ...``).
    """

    def __init__(self, stage_module, pp_group, schedule="1f1b", num_micro_batches=1,
                 checkpoint_activations=False, memory_meter=None, device_time=None):
        self.chunks = getattr(stage_module, "chunks", [stage_module])   # ChunkedStage: v
        check_chunks(schedule, stage_module)                # zbv: two chunks placed in a V
        self.schedule_fn = get_schedule(schedule, len(self.chunks))   # ValueError: bad name
        if not isinstance(num_micro_batches, int) or num_micro_batches < 1:
            raise ValueError(f"num_micro_batches must be an int >= 1, got {num_micro_batches!r}")
        self.split = schedule in SPLIT                      # B and W apart: zero_bubble.py
        if self.split:                                      # ValueError if M is too few
            self.schedule_fn(pp_group.size, num_micro_batches, 0)
        comm_check.agree(pp_group, "PipelineEngine configuration",     # before any message
                         f"schedule={schedule!r}, stages={stage_module.num_stages}, "
                         f"chunks={len(self.chunks)}, micro-batches={num_micro_batches}")
        if schedule == "interleaved":                       # M a multiple of K, on every rank
            check_interleaved(pp_group.size, num_micro_batches, len(self.chunks))
        K, self.place = pp_group.size, placement(schedule)  # (K, stage, chunk) -> virtual
        self.where = {self.place(K, s, c): (s, c) for s in range(K)         # and back
                      for c in range(len(self.chunks))}
        if stage_module.num_stages != pp_group.size or stage_module.stage != pp_group.rank:
            raise ValueError(f"stage {stage_module.stage} of {stage_module.num_stages} does not "
                             f"match pp group rank {pp_group.rank} of {pp_group.size}")
        self.stage_module, self.group, self.schedule = stage_module, pp_group, schedule
        self.num_micro_batches = 1 if schedule == "naive" else num_micro_batches
        stage_module.checkpoint_activations = checkpoint_activations
        self.memory_meter, self.stats = memory_meter, {}
        self.device_time = as_device_time(device_time)      # ValueError on a bad value
        self.loss_scale = 1.0        # mixed precision: the last stage seeds backward with S
        self.mirror = None           # dualpipe: ranks k and K-1-k hold the same two stages
        if schedule == "dualpipe":
            self.mirror = pp_group.split(min(stage_module.stage, K - 1 - stage_module.stage),
                                         name=f"{pp_group.name}.mirror")

    def tag(self, micro_batch, to_chunk, is_grad):
        """The message tag: unique per (receiving chunk, activation or gradient, micro-batch).

        1 chunk: i for an activation, M + i for a gradient. With K = 2 one rank
        sends the other both (rank 1 -> 0: gradients, and activations that wrap).
        """
        return (2 * to_chunk + is_grad) * self.num_micro_batches + micro_batch

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
        first, last = (any(getattr(c, name) for c in self.chunks) for name in ("is_first",
                                                                              "is_last"))
        if first and inputs is None or last and targets is None:
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
        with comm_check.agreed_step("the pipeline step's batch", {   # comm_check: each
                "micro_batch": (size, steps), "micro_batches": self.num_micro_batches},
                groups=(self.group,)):                          # group checked once a step
            return self._train_step(inputs, targets, size, steps)

    def _train_step(self, inputs, targets, size, steps):
        M, group, module = self.num_micro_batches, self.group, self.stage_module
        stage, num_stages = group.rank, group.size
        first = self.chunks[0]                            # a PipelineStage, also when chunked
        step = Step(
            ids=self.split_micro_batches(inputs), labels=self.split_micro_batches(targets),
            act_shape=(first.boundary_shape(size, steps) if hasattr(first, "boundary_shape")
                       else (size, steps, module.config.d_model)),  # (B/M, T, D); T/tp: sp
            dtype=xp.dtype(module.config.dtype),
            device=as_device_time(self.device_time),       # sleeps inside the spans
            share=float(chunk_share(self.schedule, len(self.chunks))),  # 1/v of the layers
            not_activations=module.parameters() + [a for a in (inputs, targets)
                                                   if a is not None],
            grads_before=None if self.mirror is None else
            [None if p.grad is None else p.grad.copy() for p in module.parameters()])
        for action in self.schedule_fn(num_stages, M, stage):
            self.EXECUTE[action.op](self, step, action)   # one small method per action
        for handle in step.sends:
            handle.wait()
        if step.weights or step.local:
            raise RuntimeError(f"schedule {self.schedule!r} left work behind on stage {stage}: "
                               f"W of {sorted(step.weights)}, hand-overs {sorted(step.local)}")
        self.stats = {"peak_in_flight": step.peak_in_flight, "micro_batch_size": size}
        loss = xp.asarray([step.loss_sum], dtype="float64")
        if self.mirror is not None:           # dualpipe: the two copies' grads summed
            sum_mirrored_grads(module.parameters(), self.mirror, step.grads_before)
            return float(comm.all_reduce(loss, group)[0])   # both ends hold losses
        root = self.where[len(self.where) - 1][0]           # holds the last virtual stage
        return float(comm.broadcast(loss, group, root=root)[0])

    # --- the actions: one method each, ``EXECUTE`` maps an action's op to it --------------
    def _at(self, action):
        """(micro-batch i, its chunk, key (c, i), span label "mb3" / "mb3c1", virtual stage)."""
        i, c = action.micro_batch, action.chunk or 0
        label = f"mb{i}" + (f"c{c}" if len(self.chunks) > 1 else "")
        return i, self.chunks[c], (c, i), label, self.place(self.group.size, self.group.rank, c)

    def _progress(self, step):
        """What a stage does while it "computes" (device time): let queued sends move."""
        def progress():
            for handle in step.sends:
                handle.test()
        return progress

    def recv_act(self, step, action):
        """RA: the input activation from virtual stage here - 1 (the V's turn: in memory)."""
        i, _, key, label, here = self._at(action)
        source = self.where[here - 1][0]
        if source == self.group.rank:
            buf = step.local.pop(("act", key[0], i))
        else:
            with trace.label(label):
                buf = comm.irecv(xp.empty(step.act_shape, step.dtype), source, self.group,
                                 tag=self.tag(i, key[0], False)).wait()
        step.held[key] = Tensor(buf, requires_grad=True)

    def forward(self, step, action):
        """F: the chunk's forward; the last stage adds loss_i / M."""
        i, chunk, key, label, _ = self._at(action)
        with trace.span("forward", label=label, micro_batch=i), \
                step.device.lasts("forward", self._progress(step), step.share):
            out = chunk(step.ids[i] if chunk.is_first else step.held[key])
            if chunk.is_last:
                out = chunk.loss(out, step.labels[i]) * (1.0 / self.num_micro_batches)
                step.loss_sum += out.item()
        step.outputs[key] = out
        in_flight = list(step.outputs) + [k for k in step.weights if k not in step.outputs]
        step.peak_in_flight = max(step.peak_in_flight, len(in_flight))   # until B (split: W)
        if self.memory_meter is not None:
            self.memory_meter.forward_done(                # keyed (chunk, i)
                key, [out] + ([step.held[key]] if key in step.held else []), in_flight,
                step.not_activations)

    def send_act(self, step, action):
        """SA: the output activation to virtual stage here + 1 (nonblocking, waited at the end)."""
        i, _, key, label, here = self._at(action)
        dest, to_chunk = self.where[here + 1]
        if dest == self.group.rank:                       # the V's turn: no message
            step.local[("act", to_chunk, i)] = step.outputs[key].data
        else:
            with trace.label(label):
                step.sends.append(comm.isend(step.outputs[key].data, dest, self.group,
                                             tag=self.tag(i, to_chunk, False)))

    def recv_grad(self, step, action):
        """RG: the output's gradient from virtual stage here + 1, for the next B."""
        i, _, key, label, here = self._at(action)
        source = self.where[here + 1][0]
        if source == self.group.rank:
            step.grad = step.local.pop(("grad", key[0], i))
        else:
            with trace.label(label):
                step.grad = comm.irecv(xp.empty(step.act_shape, step.dtype), source,
                                       self.group, tag=self.tag(i, key[0], True)).wait()

    def backward(self, step, action):
        """B: backward from the output (split: the input gradients only, W kept for later)."""
        i, chunk, key, label, _ = self._at(action)
        time = "backward" if self.split else "backward+weight"
        with trace.span("backward", label=label, micro_batch=i), \
                step.device.lasts(time, self._progress(step), step.share):
            out = step.outputs.pop(key)
            seed = (xp.full(out.shape, self.loss_scale, out.dtype)
                    if chunk.is_last else step.grad)             # d(S loss_i/M) = S
            half = out.backward(seed, defer_weight_grads=self.split)
        if self.split:
            step.weights[key] = half                      # the W half, for "W<i>"

    def weight(self, step, action):
        """W: param.grad += dL/dA, the half B left (zero-bubble schedules)."""
        i, _, key, label, _ = self._at(action)
        with trace.span("weight", label=label, micro_batch=i), \
                step.device.lasts("weight", self._progress(step), step.share):
            if key not in step.weights:
                raise RuntimeError(f"schedule {self.schedule!r} runs {action} on "
                                   f"stage {self.group.rank} before its B")
            step.weights.pop(key)()

    def send_grad(self, step, action):
        """SG: the input's gradient to virtual stage here - 1 (nonblocking)."""
        i, _, key, label, here = self._at(action)
        dest, to_chunk = self.where[here - 1]
        if dest == self.group.rank:
            step.local[("grad", to_chunk, i)] = step.held.pop(key).grad
        else:
            with trace.label(label):
                step.sends.append(comm.isend(step.held.pop(key).grad, dest, self.group,
                                             tag=self.tag(i, to_chunk, True)))

    EXECUTE = {"recv_act": recv_act, "forward": forward, "send_act": send_act,
               "recv_grad": recv_grad, "backward": backward, "weight": weight,
               "send_grad": send_grad}


@dataclass
class Step:
    """What one ``train_step``'s actions share, keyed (chunk, micro-batch) where per item."""
    ids: list                     # M micro-batches of inputs (None off the first stage)
    labels: list                  # ... of targets
    act_shape: tuple              # one boundary activation (B/M, T, D)
    dtype: object
    device: object                # emulated device time (device_time.py)
    share: float
    not_activations: list         # what the memory meter does not count
    grads_before: list = None     # dualpipe: .grad at the step's start (only its part sums)
    held: dict = field(default_factory=dict)      # received activations (need .grad)
    outputs: dict = field(default_factory=dict)   # forward outputs, until their B
    weights: dict = field(default_factory=dict)   # W halves waiting (split schedules)
    local: dict = field(default_factory=dict)     # the V's turn: handed over in memory
    sends: list = field(default_factory=list)     # nonblocking sends, waited at the end
    grad: object = None                           # the last received output gradient
    loss_sum: float = 0.0
    peak_in_flight: int = 0
