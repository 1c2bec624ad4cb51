"""A step-time model: compute at a calibrated rate plus ring collectives, no overlap.

    t_step = (M + K - 1) * t_mb            compute, pipeline bubble included
           + sum over collectives of  steps * alpha + volume / bandwidth

A ring over n ranks takes 2(n-1) steps for an all-reduce (volume 2(n-1)/n * bytes per
rank). Its bandwidth is the per-GPU link (NVSwitch) while the group fits in one node;
across nodes the ring's node-crossing hop is the bottleneck and gets the node's
InfiniBand bandwidth in proportion to the group's share of the node's GPUs (NCCL's
multi-node "bus bandwidth" is about the node's NIC bandwidth for a full-node ring).
Weak-scaling efficiency = achieved FLOP/s per GPU / single-GPU FLOP/s = compute / total.

Ranks are laid out tp-dp-pp (TP fastest), so a tp group has stride 1, a dp group
stride tp and a pp group stride tp*dp.

    minimegatron memory scaling [--hardware calib.json]
"""
import json
from dataclasses import dataclass, replace

from minimegatron.i18n import text as say
from minimegatron.i18n.columns import fit
from minimegatron.tools.memory import (GPTShape, megatron_param_count, rank_param_count,
                                       training_flops)


@dataclass(frozen=True)
class Hardware:
    """A cluster, defaults: DGX-2H as in Megatron-LM (2019), 16 V100 SXM3 per node.

    peak_flops: 130e12, fp16 tensor cores of the V100 SXM3 in a DGX-2H (the SXM2 V100
        is 125e12); efficiency 0.30 gives the paper's 39 TFLOP/s on one GPU.
    intra_bw: 150e9 B/s per GPU per direction (NVSwitch, 300 GB/s both directions).
    inter_bw: 100e9 B/s per NODE per direction (8 x 100 Gb/s InfiniBand shared by the
        node's 16 GPUs: 6.25 GB/s each when all of them talk across nodes at once).
    latencies: seconds per ring step, a few microseconds (NVSwitch vs InfiniBand).
    """
    name: str = "DGX-2H (16 x V100)"
    gpus_per_node: int = 16
    peak_flops: float = 130e12
    efficiency: float = 0.30
    intra_bw: float = 150e9
    inter_bw: float = 100e9
    intra_latency: float = 2e-6
    inter_latency: float = 5e-6

    @property
    def flops(self):
        """Achieved FLOP/s of one device: peak * efficiency."""
        return self.peak_flops * self.efficiency

    @classmethod
    def from_json(cls, path):
        """Measured figures (written by `minimegatron calibrate`): one node, ranks on it.

        Keys: gemm_flops (achieved FLOP/s per rank), bandwidth_bytes_per_s (per rank),
        latency_s (per message); optional ranks_per_node (default 8), name.
        """
        with open(path) as f:
            m = json.load(f)
        bw, lat = float(m["bandwidth_bytes_per_s"]), float(m["latency_s"])
        return cls(name=m.get("name", path), gpus_per_node=int(m.get("ranks_per_node", 8)),
                   peak_flops=float(m["gemm_flops"]), efficiency=1.0, intra_bw=bw,
                   inter_bw=bw, intra_latency=lat, inter_latency=lat)


def link(hw, size, stride):
    """(bandwidth, latency) of a ring over `size` ranks spaced `stride` apart."""
    if size * stride <= hw.gpus_per_node:
        return hw.intra_bw, hw.intra_latency
    per_node = max(1, min(size, hw.gpus_per_node // stride))
    return min(hw.intra_bw, hw.inter_bw * per_node / hw.gpus_per_node), hw.inter_latency


def all_reduce_time(hw, nbytes, size, stride):
    """Ring all-reduce: 2(n-1) steps of alpha + 2(n-1)/n * nbytes / bandwidth."""
    if size == 1:
        return 0.0
    bw, alpha = link(hw, size, stride)
    return 2 * (size - 1) * (alpha + nbytes / size / bw)


def step_time(cfg, hw, dp=1, tp=1, pp=1, micro_batch=8, micro_batches=1,
              recompute=True, bytes_per_value=2):
    """Seconds per step and its parts for a dp x pp x tp grid, plus the efficiency.

    compute: (M + K - 1) micro-batch slots of F_mb / (t K) / flops (F_mb = training FLOPs
    of one micro-batch; logits counted evenly over stages). tp: 4 all-reduces per layer
    per micro-batch (6 with recomputation) of sbh values. dp: one all-reduce of the
    rank's gradients. pp: activation send + gradient receive per micro-batch, stage 0.
    """
    g = GPTShape.of(cfg)
    flops_mb = training_flops(g, micro_batch, recompute)
    compute = (micro_batches + pp - 1) * flops_mb / (tp * pp) / hw.flops
    sbh = g.seq_len * micro_batch * g.d_model * bytes_per_value
    per_layer = 6 if recompute else 4
    tp_time = micro_batches * (g.n_layer // pp) * per_layer * all_reduce_time(hw, sbh, tp, 1)
    grads = rank_param_count(g, pp, tp) * bytes_per_value
    dp_time = all_reduce_time(hw, grads, dp, tp)
    pp_time = 0.0
    if pp > 1:
        bw, alpha = link(hw, 2, tp * dp)
        pp_time = 2 * micro_batches * (alpha + sbh / bw)
    total = compute + tp_time + dp_time + pp_time
    useful = micro_batches * flops_mb * dp
    return {"compute": compute, "tp": tp_time, "dp": dp_time, "pp": pp_time,
            "total": total, "comm_share": (tp_time + dp_time + pp_time) / total,
            "flops_per_s": useful / total,
            "efficiency": useful / (dp * tp * pp * hw.flops * total)}


# Megatron-LM (Shoeybi et al. 2019) Table 1 and its weak-scaling runs: batch 8 per model
# replica; model+data parallel = 64 replicas, global batch 512.
TABLE1 = [(1536, 16, 40, 1), (1920, 20, 54, 2), (2304, 24, 64, 4), (3072, 32, 72, 8)]
# Reported: 8-way model parallel 77% (Sec. 5.1); 512 GPUs 74% (Sec. 5.1, Figure 5) and
# 15.1 PFLOP/s = 76% of 512 x 39 TFLOP/s (abstract). Other Figure 5 points: see the plot.
PAPER_EFFICIENCY = {(8, 1): 0.77, (8, 64): 0.74}
PAPER_SINGLE_GPU_FLOPS, PAPER_512_FLOPS = 39e12, 15.1e15


def table1_scaling(hw=Hardware(), micro_batch=8, data_parallel=64):
    """Rows (params, gpus, tp, dp, step_time dict, paper efficiency or None), Table 1."""
    rows = []
    for dp in (1, data_parallel):
        for h, heads, L, tp in TABLE1:
            g = GPTShape(51200, 1024, L, h, heads)
            t = step_time(g, hw, dp=dp, tp=tp, micro_batch=micro_batch)
            rows.append((g, tp * dp, tp, dp, t, PAPER_EFFICIENCY.get((tp, dp))))
    return rows


def tp_across_nodes(hw=Hardware(), micro_batch=8):
    """The 8.3B model with tp = 8, 16, 32 on nodes of 8 and of 16 GPUs.

    A node of 8 GPUs gets half the InfiniBand of a 16-GPU node (same per GPU, like a
    DGX-1's 4 x 100 Gb/s). Rows: (gpus_per_node, tp, crosses_node, step_time dict).
    """
    g = GPTShape(51200, 1024, 72, 3072, 32)
    rows = []
    for per_node in (16, 8):
        node = replace(hw, gpus_per_node=per_node,
                       inter_bw=hw.inter_bw * per_node / hw.gpus_per_node)
        for tp in (8, 16, 32):
            rows.append((per_node, tp, tp > per_node,
                         step_time(g, node, tp=tp, micro_batch=micro_batch)))
    return rows


def report(hw=Hardware()):
    """The two tables as text: Table 1 configurations, then tp across a node."""
    def col(key, width, **fields):
        return fit(say(f"report.col.{key}", **fields), width)
    out = [say("report.scaling.units"),
           say("report.scaling.hardware", name=hw.name, tflops=hw.flops / 1e12,
               per_node=hw.gpus_per_node, intra=hw.intra_bw / 1e9, inter=hw.inter_bw / 1e9),
           say("report.scaling.table1"),
           " ".join([col("size", 7), col("gpus", 5), fit("tp", 3), fit("dp", 3),
                     col("step_s", 7), col("comm", 8, axis="tp"), col("comm", 8, axis="dp"),
                     col("comm_share", 7), fit("PFLOP/s", 8), col("eff", 6),
                     col("paper", 8)])]
    for g, gpus, tp, dp, t, paper in table1_scaling(hw):
        params = megatron_param_count(g.n_layer, g.d_model)
        paper = "" if paper is None else f"{100 * paper:.0f}"
        out.append(f"{params / 1e9:6.2f}B {gpus:5d} {tp:3d} {dp:3d} {t['total']:7.3f} "
                   f"{t['tp']:8.3f} {t['dp']:8.3f} {100 * t['comm_share']:7.1f} "
                   f"{t['flops_per_s'] / 1e15:8.3f} {100 * t['efficiency']:6.1f} {paper:>8}")
    out.append(say("report.scaling.paper", single=PAPER_SINGLE_GPU_FLOPS / 1e12,
                   pflops=PAPER_512_FLOPS / 1e15,
                   share=PAPER_512_FLOPS / (512 * PAPER_SINGLE_GPU_FLOPS)))
    out += ["", say("report.scaling.across"),
            " ".join([col("gpus_node", 9), fit("tp", 3), col("crosses", 8), col("step_s", 7),
                      col("comm", 8, axis="tp"), col("comm_share", 7), col("eff", 6)])]
    for per_node, tp, crosses, t in tp_across_nodes(hw):
        crossing = fit(say("report.yes" if crosses else "report.no"), 8)
        out.append(f"{per_node:9d} {tp:3d} {crossing} "
                   f"{t['total']:7.3f} {t['tp']:8.3f} {100 * t['comm_share']:7.1f} "
                   f"{100 * t['efficiency']:6.1f}")
    return "\n".join(out)
