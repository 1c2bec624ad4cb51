"""Pipeline parallelism against one process: same loss, gradients and weights.

``check_pipeline(group, schedule, num_micro_batches, checkpoint)`` runs on
every rank of ``group`` (one pipeline stage per rank). It trains a
PipelineStage with PipelineEngine for a few AdamW steps next to
``serial_reference`` (recomputed on every rank, cached) and returns this
rank's max abs differences {"loss", "grad", "weight"} over the parameters
this stage owns, compared name by name. float64: expect ~1e-15 and assert
below 1e-10 (summing M micro-batch losses reorders the additions).

``check_memory(group, schedule, micro_batch_size, num_micro_batches, checkpoint)``
measures one step's peak activations at a fixed micro-batch size, so GPipe's
grow with M and 1F1B's stop at K - k.
"""
from minimegatron import comm
from minimegatron.checks.common import max_abs_diff, serial_reference
from minimegatron.checks.precision import check_optimizer, loss_scale, unscaled
from minimegatron.data.demo import VERIFY_CONFIG, batch
from minimegatron.nn import GPT
from minimegatron.parallel.pipeline_parallel.engine import PipelineEngine
from minimegatron.parallel.pipeline_parallel.stage import ChunkedStage, PipelineStage
from minimegatron.tools.activation_memory import ActivationMeter

TOLERANCE = 1e-10


def build(group, config, schedule, num_micro_batches, checkpoint, memory_meter=None,
          chunks=2):
    """The stage of this rank (from the full model, then dropped) and its engine.

    ``chunks``: the model chunks per rank of the "interleaved" schedule (else unused;
    "zbv" always holds two, placed in a V).
    """
    if schedule == "interleaved":
        stage = ChunkedStage(GPT(config), group.rank, group.size, chunks)
    elif schedule in ("zbv", "dualpipev"):            # two chunks, down the ranks and back up
        stage = ChunkedStage(GPT(config), group.rank, group.size, 2, placement="v")
    elif schedule == "dualpipe":                      # stages k and K-1-k: each held twice
        stage = ChunkedStage(GPT(config), group.rank, group.size, 2, placement="mirror")
    else:
        stage = PipelineStage(GPT(config), group.rank, group.size)
    engine = PipelineEngine(stage, group, schedule=schedule,
                            num_micro_batches=num_micro_batches,
                            checkpoint_activations=checkpoint, memory_meter=memory_meter)
    return stage, engine


def check_pipeline(group, schedule="1f1b", num_micro_batches=4, checkpoint=False,
                   config=VERIFY_CONFIG, steps=3, batch_size=8, chunks=2):
    """{"loss", "grad", "weight"}: this stage's max abs difference from the serial GPT."""
    ref = serial_reference(config, steps, batch_size)
    stage, engine = build(group, config, schedule, num_micro_batches, checkpoint,
                          chunks=chunks)
    opt = check_optimizer(stage.parameters(), config, group)   # float16: found-inf over pp
    diff = {"loss": 0.0, "grad": 0.0, "weight": 0.0}
    for step in range(steps):
        inputs, targets = batch(config, batch_size, step)
        opt.zero_grad()
        engine.loss_scale = loss_scale(opt)              # the last stage seeds backward with S
        loss = engine.train_step(inputs, targets)
        diff["loss"] = max(diff["loss"], abs(loss - ref["loss"][step]))
        for name, p in stage.named_parameters():
            got = max_abs_diff(unscaled(p.grad, opt), ref["grads"][step][name])
            diff["grad"] = max(diff["grad"], got)
        opt.step()
        for name, p in stage.named_parameters():
            diff["weight"] = max(diff["weight"],
                                 max_abs_diff(p.data, ref["weights"][step][name]))
    return diff


def check_memory(group, schedule, num_micro_batches, checkpoint=False, micro_batch_size=2,
                 config=VERIFY_CONFIG, chunks=2):
    """One step at a fixed micro-batch size: engine.stats and the peak activation bytes."""
    meter = ActivationMeter()
    stage, engine = build(group, config, schedule, num_micro_batches, checkpoint, meter,
                          chunks)
    inputs, targets = batch(config, micro_batch_size * engine.num_micro_batches, 0)
    engine.train_step(inputs, targets)
    return dict(engine.stats, peak_activation_bytes=meter.peak)


def check_all(group, schedules=("naive", "gpipe", "1f1b"), micro_batches=(1, 2, 4, 8),
              checkpoints=(False, True)):
    """{"schedule/M=m/ckpt=c": diffs} for every case (naive once, it ignores M)."""
    out = {}
    for schedule in schedules:
        for m in ((1,) if schedule == "naive" else micro_batches):
            for c in checkpoints:
                out[f"{schedule}/M={m}/ckpt={int(c)}"] = check_pipeline(group, schedule, m, c)
    comm.barrier(group)
    return out


def check_errors(group, config=VERIFY_CONFIG):
    """The ValueError text of each bad configuration on this rank ("no error" if none)."""
    from dataclasses import replace
    cases = {
        "too_many_stages": lambda: PipelineStage(GPT(replace(config, n_layer=group.size - 1)),
                                                 group.rank, group.size),
        "unknown_schedule": lambda: build(group, config, "zigzag", 2, False),
        "batch_not_divisible": lambda: build(group, config, "1f1b", 3, False)[1].train_step(
            *batch(config, 8, 0)),
        "interleaved_m_not_multiple": lambda: build(group, config, "interleaved",
                                                    group.size + 1, False),
    }
    out = {}
    for name, make in cases.items():
        try:
            make()
            out[name] = "no error"
        except ValueError as error:
            out[name] = str(error)
    comm.barrier(group)             # every rank got here: nobody hangs in a collective
    return out


def timeline_run(group, schedule, num_micro_batches, batch_size=16, config=VERIFY_CONFIG,
                 png=None, title=None):
    """One warm-up step, then one traced step: its bubble, measured and by formula.

    Returns {"loss", "step_time", "measured_bubble", "formula_bubble", "spans"}
    on the group's rank 0 (spans: the trace for tools.timeline) and None
    elsewhere; with ``png`` rank 0 also draws the Gantt chart there.
    """
    from minimegatron.comm import trace
    from minimegatron.parallel.pipeline_parallel.schedules import bubble_formula
    from minimegatron.tools.timeline import bubble_from_rows, draw_timeline, rows_from_trace
    from minimegatron.tools.trace_gather import gather_timeline
    stage, engine = build(group, config, schedule, num_micro_batches, False)
    inputs, targets = batch(config, batch_size, 0)
    engine.train_step(inputs, targets)                    # warm-up (caches, first messages)
    stage.zero_grad()
    comm.barrier(group)
    trace.reset()
    loss = engine.train_step(inputs, targets)
    step_time = trace.now()
    spans = gather_timeline(group)
    if spans is None:
        return None
    rows = rows_from_trace(spans)
    measured = bubble_from_rows(rows)
    formula = bubble_formula(group.size, engine.num_micro_batches)
    if png:
        draw_timeline(rows, png, title or f"{schedule}: K={group.size}, "
                      f"M={engine.num_micro_batches} | measured bubble {measured:.1%}, "
                      f"formula (K-1)/(M+K-1) = {formula}", row_name="stage",
                      xlabel="time (s)")
    return {"loss": loss, "step_time": step_time, "measured_bubble": measured,
            "formula_bubble": float(formula), "spans": spans}
