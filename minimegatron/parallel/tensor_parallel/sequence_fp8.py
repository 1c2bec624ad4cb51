"""Sequence parallelism in fp8: the fused all-gather moves the e4m3 bytes, not the bf16 ones.

The idea. A column-parallel layer under sequence parallelism gathers its input
X = [X_0; ...; X_{t-1}] along the sequence and multiplies it by its shard A_i
(sequence.py's ``GatherMatmul``). In fp8 the product wants q_X = e4m3(s_X X) anyway, and
casting commutes with gathering when every rank uses the SAME scale, so each rank casts
its own tokens and gathers the 1-byte q_X_r (Megatron with Transformer Engine does the
same): a quarter of float32's bytes on the wire (half of bf16's), and e4m3 bits travel
exact (comm/wire.py moves them as uint8).

    s_X = scale_for(max_r amax(X_r))       one MAX all-reduce of a float32 over tp
    q_X = all_gather_r e4m3(s_X X_r)        == e4m3(s_X X): one process's rounding, exactly
    Y_i = (q_X @ q_W_i) / (s_X s_W)         s_W from the amax of the whole A (agreed too)

Backward gathers q_X_r again (not kept whole: SP's sbh/t activations), takes the e5m2
dY_i with its agreed scale, and reduce-scatters dX in float32 (the wire's rule):

    dA_i = (q_X^T @ q_G_i) / (s_X s_G)      dX_r = chunk_r(sum_i (q_G_i @ q_W_i^T) / (s_G s_W))

Per block and direction the gathers move B T D bytes per rank's share where bf16 moves
2 B T D: tests/test_sequence_parallel_fp8.py reads it from the trace.
"""
from minimegatron.autodiff.fp8 import E4M3, E5M2, quantize, scaled_matmul
from minimegatron.autodiff.function import Function
from minimegatron.comm import all_gather, reduce_scatter, trace
from minimegatron.parallel.tensor_parallel.sequence import SEQ, labelled


class Fp8GatherMatmul(Function):
    """Y = g(X) A_i in fp8: e4m3 X_r gathered (1 byte each), e4m3 A_i, e5m2 dY_i.

    X_r (B, T/t, in), A_i (in, out/t); Y (B, T, out/t) in X's dtype. ``agree``: the MAX
    all-reduce of an amax over tp (ParallelGPT's), so every scale is one process's.
    """
    @staticmethod
    def forward(ctx, x, weight, group, agree):
        ctx.group, ctx.label, ctx.agree = group, trace.current_label(), agree
        qx, sx = quantize(x, E4M3, agree)                                  # (B, T/t, in)
        qw, sw = quantize(weight, E4M3, agree)                             # (in, out/t)
        ctx.save_for_backward(qx, qw)                                      # 1 byte each
        ctx.scales, ctx.dtypes = (sx, sw), (x.dtype, weight.dtype)
        full = all_gather(qx, group, axis=SEQ)                             # (B, T, in) e4m3
        rows = full.reshape(-1, full.shape[-1])                            # (B*T, in)
        y = scaled_matmul(rows, sx, qw, sw, x.dtype)                       # (B*T, out/t)
        return y.reshape(full.shape[:-1] + weight.shape[-1:])              # (B, T, out/t)

    @staticmethod
    def backward(ctx, grad_out):
        qx, qw = ctx.saved
        (sx, sw), (x_dtype, w_dtype) = ctx.scales, ctx.dtypes
        with labelled(ctx, ".backward.regather"):
            qx = all_gather(qx, ctx.group, axis=SEQ)                       # (B, T, in) e4m3
        rows = qx.reshape(-1, qx.shape[-1])                                # (B*T, in)
        qg, sg = quantize(grad_out.reshape(-1, grad_out.shape[-1]), E5M2, ctx.agree)
        grad_w = scaled_matmul(rows.T, sx, qg, sg, w_dtype)         # (in, B*T)(B*T, out/t)
        grad_x = scaled_matmul(qg, sg, qw.T, sw, x_dtype).reshape(qx.shape)   # (B, T, in)
        with labelled(ctx):
            grad_x = reduce_scatter(grad_x, ctx.group, axis=SEQ)           # (B, T/t, in)
        return grad_x, grad_w, None, None


def fp8_gather_matmul(x, weight, group, agree):
    """g(X) @ A_i in fp8, gathering the e4m3 bytes of X_r (see Fp8GatherMatmul)."""
    return Fp8GatherMatmul.apply(x, weight, group, agree)
