"""Pipeline parallelism: the layers split into stages, micro-batches flow through them.

actions.py      Action, and the forward and backward steps with their sends and receives
schedules.py    schedules as data: naive, GPipe, 1F1B, interleaved 1F1B; their registry
zero_bubble.py  ZB-H1, ZB-H2, ZBV: the backward split into B and W, W fills the bubble
dualpipe.py     DualPipe (both ends, every stage held twice) and DualPipeV (its V half);
                not re-exported here: the name ``dualpipe`` stays the module
simulator.py    simulate: a schedule timed against a clock without MPI, the bubble
stage.py        which layers a stage holds (PipelineStage, ChunkedStage: interleaving, the V)
engine.py       PipelineEngine: runs a schedule's actions (send/recv, forward, backward, weight)
recompute.py    activation recomputation: keep a stage's input, redo its forward in backward
device_time.py  emulated device time, so the bubble shows on a laptop as on a GPU

    from minimegatron.parallel.pipeline_parallel import PipelineEngine, PipelineStage, one_f_one_b
"""
from minimegatron.parallel.pipeline_parallel.actions import Action
from minimegatron.parallel.pipeline_parallel.schedules import (SCHEDULES, bubble_formula,
                                                               get_schedule, gpipe, interleaved,
                                                               naive, one_f_one_b)
from minimegatron.parallel.pipeline_parallel.simulator import bubble_fraction, simulate
from minimegatron.parallel.pipeline_parallel.zero_bubble import v_placement, zb_h1, zb_h2, zbv
from minimegatron.parallel.pipeline_parallel.stage import ChunkedStage, PipelineStage, stage_layers
from minimegatron.parallel.pipeline_parallel.engine import PipelineEngine
from minimegatron.parallel.pipeline_parallel.recompute import recompute
from minimegatron.parallel.pipeline_parallel.device_time import DeviceTime

__all__ = ["SCHEDULES", "Action", "bubble_formula", "bubble_fraction", "get_schedule", "gpipe",
           "interleaved", "naive", "one_f_one_b", "simulate", "zb_h1", "zb_h2", "zbv",
           "v_placement",
           "ChunkedStage", "PipelineStage", "stage_layers", "PipelineEngine", "recompute",
           "DeviceTime"]
