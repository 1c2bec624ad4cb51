"""Pipeline parallelism: the layers split into stages, micro-batches flow through them.

schedules.py    schedules as data: naive, GPipe, 1F1B, interleaved 1F1B; simulate, the bubble
zero_bubble.py  ZB-H1 and ZB-H2: the backward split into B and W, W fills the bubble
stage.py        which layers a stage holds (PipelineStage, ChunkedStage for interleaving)
engine.py       PipelineEngine: runs a schedule's actions (send/recv, forward, backward)
recompute.py    activation recomputation: keep a stage's input, redo its forward in backward
device_time.py  emulated device time, so the bubble shows on a laptop as on a GPU

    from minimegatron.parallel.pipeline_parallel import PipelineEngine, PipelineStage, one_f_one_b
"""
# schedules first: it registers zero_bubble's schedules, which build on its helpers
from minimegatron.parallel.pipeline_parallel.schedules import (
    SCHEDULES, Action, bubble_formula, bubble_fraction, get_schedule, gpipe, interleaved, naive,
    one_f_one_b, simulate)
from minimegatron.parallel.pipeline_parallel.zero_bubble import zb_h1, zb_h2
from minimegatron.parallel.pipeline_parallel.stage import ChunkedStage, PipelineStage, stage_layers
from minimegatron.parallel.pipeline_parallel.engine import PipelineEngine
from minimegatron.parallel.pipeline_parallel.recompute import recompute
from minimegatron.parallel.pipeline_parallel.device_time import DeviceTime

__all__ = ["SCHEDULES", "Action", "bubble_formula", "bubble_fraction", "get_schedule", "gpipe",
           "interleaved", "naive", "one_f_one_b", "simulate", "zb_h1", "zb_h2",
           "ChunkedStage", "PipelineStage", "stage_layers", "PipelineEngine", "recompute",
           "DeviceTime"]
