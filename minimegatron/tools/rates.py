"""The step model's rates on THIS machine (tools/step_model.py; calibrate.py stores them).

    R, Rb    the engine's MatMul, forward + backward (6mkn FLOPs a product), on the
             teaching GPT's products (matmul_rate): a block's four Linears, and
             attention's two batched products on strided head views, as
             nn/gpt.causal_attention makes them
    c        a chain of tiny engine ops, forward + backward, / ops (op_overhead)
    W        c = a * b on 8 MB float64 arrays: 3 arrays moved / time
    Rv       values/s of x.sum(axis=-1) on 1M values in rows of 64 (reduce_rate)
    Qt, Qe   values/s of tanh and exp on 1M standard-normal values (ufunc_rate)

Each is the median of its repeats (median_seconds). ``measure()`` takes them in this
process; ``busy(group)`` on every rank of a group at once, as the ranks of a run share
the cores' caches and the memory bandwidth.
"""
import statistics
import time

MICRO, SEQ, WIDTH, HEADS = 8, 32, 64, 4      # the teaching GPT's micro-batch (step_model)
REPEATS = 10


def median_seconds(run, repeats):
    """Median wall time of ``run()`` over ``repeats`` calls, after one warm-up call (BLAS
    threads, pages touched, GPU kernels). The median, as bench_scaling times a step: on a
    machine shared with other jobs, the best of many calls would be the rate of a moment
    when the CPU was free, which a whole step never sees."""
    from minimegatron.backend import sync
    run()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def normal(*shape):
    """Standard-normal float64 values of ``shape`` (seed 0) on the backend."""
    from minimegatron.backend import xp
    rng = xp.random.default_rng(0) if hasattr(xp.random, "default_rng") else xp.random
    return rng.standard_normal(shape)


def _forward_backward(pairs, grads):
    """ops.MatMul forward then backward on each (x, a) pair; grads[i] (or the output)
    is the gradient of product i, as the engine would hand it over."""
    from minimegatron.autodiff import ops
    from minimegatron.autodiff.function import Context
    for (x, a), grad in zip(pairs, grads):
        ctx = Context()
        ctx.needs_input_grad = (True, True)
        out = ops.MatMul.forward(ctx, x, a)
        ops.MatMul.backward(ctx, out if grad is None else grad)


def matmul_rate(batched, repeats=REPEATS):
    """FLOP/s of ops.MatMul forward + backward (3 x 2mkn FLOPs a product) on the teaching
    GPT's products, the median time of ``repeats``. Not batched: a block's four Linears,
    (8, 32, k) @ (k, n). Batched: attention's Q K^T and P V on strided head views of one
    (B, T, 3D) array, P V's gradient the transposed view the engine hands back."""
    d, hd = WIDTH, WIDTH // HEADS
    if batched:
        qkv = normal(MICRO, SEQ, 3 * d)
        q, k, v = (qkv[..., i * d:(i + 1) * d].reshape(MICRO, SEQ, HEADS, hd)
                   .transpose(0, 2, 1, 3) for i in range(3))   # (B, T, 3D) -> (B, H, T, hd)
        att = normal(MICRO, HEADS, SEQ, SEQ)
        grad_y = normal(MICRO, SEQ, HEADS, hd).transpose(0, 2, 1, 3)     # (B, H, T, hd)
        pairs, grads = [(q, k.transpose(0, 1, 3, 2)), (att, v)], [None, grad_y]
    else:
        pairs = [(normal(MICRO, SEQ, k), normal(k, n))
                 for k, n in ((d, 3 * d), (d, d), (d, 4 * d), (4 * d, d))]
        grads = [None] * len(pairs)
    flops = sum(3 * 2.0 * x.size * a.shape[-1] for x, a in pairs)   # x (..., m, k) @ (k, n)
    return flops / median_seconds(lambda: _forward_backward(pairs, grads), repeats)


def op_overhead(n_ops=400, repeats=5):
    """Seconds per engine op (forward + backward): a chain of ops on 4 values / its ops.

    The arrays are so small that the time is the engine's (Python, graph, gradient
    bookkeeping), not arithmetic; step_model.counting() counts the ops it ran.
    """
    from minimegatron.backend import sync, xp
    from minimegatron.autodiff.tensor import Tensor
    from minimegatron.tools.step_model import counting
    w = Tensor(xp.ones(4), requires_grad=True)

    def chain():
        y = w
        for _ in range(n_ops // 2):
            y = y * 0.5 + w                           # 2 ops (a Mul and an Add)
        y.sum().backward()
        sync()
        w.grad = None
    with counting() as counts:
        chain()
    return median_seconds(chain, repeats) / counts["ops"]


def elementwise_bandwidth(n=1 << 20, repeats=REPEATS):
    """Bytes/s of c = a * b on n float64 values: 3 * 8n bytes over the median time. 8 MB
    arrays, from memory: a step's arrays (every layer's, kept for backward) outgrow the
    caches, so its ops find their inputs in memory too."""
    from minimegatron.backend import xp
    a, b, c = xp.ones(n), xp.ones(n), xp.empty(n)
    return 3 * 8 * n / median_seconds(lambda: xp.multiply(a, b, out=c), repeats)


def ufunc_rate(name, n=1 << 20, repeats=REPEATS):
    """Values/s of xp.<name> ("tanh": GeLU's costly part, "exp": softmax's) on n
    standard-normal float64 values."""
    from minimegatron.backend import xp
    x, y, ufunc = normal(n), xp.empty(n), getattr(xp, name)
    return n / median_seconds(lambda: ufunc(x, out=y), repeats)


def reduce_rate(n=1 << 20, row=WIDTH, repeats=REPEATS):
    """Values/s of a row sum, x.sum(axis=-1) on n float64 values in rows of ``row``
    (LayerNorm's and softmax's statistics; a bias gradient's sum runs at about the same)."""
    from minimegatron.backend import xp
    x = xp.ones((n // row, row))
    return n / median_seconds(lambda: x.sum(axis=-1, keepdims=True), repeats)


def measure():
    """The step model's rates (tools/step_model.py), measured in this process."""
    return {"gemm_flops_linear": matmul_rate(batched=False, repeats=30),
            "gemm_flops_batched": matmul_rate(batched=True, repeats=30),
            "op_overhead_s": op_overhead(), "elementwise_bytes_per_s": elementwise_bandwidth(),
            "reduced_per_s": reduce_rate(), "tanh_per_s": ufunc_rate("tanh"),
            "exp_per_s": ufunc_rate("exp")}


def busy(group):
    """measure() on every rank of ``group`` at once, as the ranks of a run share the
    cores' caches and the memory bandwidth: the slowest rank's figure of each, on the
    group's rank 0 (None on the others)."""
    from minimegatron import comm
    comm.barrier(group)
    every = comm.gather_object(measure(), group)           # small metadata: pickle
    if group.rank != 0:
        return None
    # seconds (op_overhead_s): the longest; rates: the lowest
    return {k: (max if k.endswith("_s") else min)(r[k] for r in every) for k in every[0]}


def line(r):
    """The step model's rates in one line."""
    return (f"engine MatMul (forward + backward) {r['gemm_flops_linear'] / 1e9:.1f} GFLOP/s "
            f"Linear, {r['gemm_flops_batched'] / 1e9:.1f} attention; "
            f"{r['op_overhead_s'] * 1e6:.0f} us per op; elementwise "
            f"{r['elementwise_bytes_per_s'] / 1e9:.1f} GB/s; row sums "
            f"{r['reduced_per_s'] / 1e6:.0f}, tanh {r['tanh_per_s'] / 1e6:.0f}, exp "
            f"{r['exp_per_s'] / 1e6:.0f} M values/s")
