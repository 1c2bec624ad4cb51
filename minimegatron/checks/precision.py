"""How a check trains when its config is float16 or bf16: master weights, a loss scale, SGD.

Every check (data.py, tensor.py, pipeline.py, threed.py) builds its optimizer
with ``check_optimizer(params, config, group)`` and starts backward with
``backward(loss, opt)``. In float64 / float32 that is demo.make_optimizer
(AdamW) and ``loss.backward()``, unchanged. In float16 it is mixed precision
(mixed_precision/): a MixedPrecisionOptimizer over the SGD rule, float32
masters, a DynamicLossScaler starting at INIT_SCALE, whose found-inf MAX
all-reduce spans ``group`` (every rank that holds a gradient of the model),
and backward starts from S x loss. ``unscaled(grad, opt)`` = grad / S, in
float32, is what a check compares with the one-process gradient.

Why SGD and not AdamW. A parallel run differs from one process by the
rounding of reordered float16 sums: a relative error ~2^-11 on each gradient
element, i.e. an absolute error of ~2^-11 x max|g| even on an element that is
nearly 0, whose sign can then flip. AdamW's first update is
lr x m_hat / sqrt(v_hat) = lr x g/|g| = +-lr whatever |g|, so a flipped sign
moves that weight by 2 lr (2e-2 here), the same size a real bug moves it:
AdamW cannot tell float16 rounding from a missing all-reduce, and the drift
tolerance (verify.tolerance) grows to ~1. SGD's update lr x g is Lipschitz in
g (|dw| = lr |dg|), so the weight difference stays lr x the gradient's
rounding, and the drift-derived tolerance keeps its power. The rows compare
the mixed run with one process running the same SGD (tight) and with the
float64 run of that SGD (``float64_twin``; looser, verify.py says how much).
"""
import numpy

from minimegatron.data.demo import LR, make_optimizer
from minimegatron.autodiff.cast import is_bf16, is_half
from minimegatron.mixed_precision.loss_scaler import DynamicLossScaler, NoLossScale
from minimegatron.mixed_precision.master_weights import MixedPrecisionOptimizer
from minimegatron.optim import SGD

INIT_SCALE = 2.0 ** 8     # the tiny models overflow at Megatron's 2^16 in their first steps
SGD_MIXED = "sgd"         # GPTConfig has no optimizer field: the float64 twin is tagged by it


def check_optimizer(params, config, group, rule=None):
    """make_optimizer (AdamW), or in float16 MixedPrecisionOptimizer(SGD) over ``group``."""
    if not is_half(config.dtype):
        return SGD(params, lr=LR) if rule == SGD_MIXED else make_optimizer(params)
    scaler = NoLossScale() if is_bf16(config.dtype) else DynamicLossScaler(INIT_SCALE)
    return MixedPrecisionOptimizer(SGD(params, lr=LR), group, scaler)


def loss_scale(opt):
    """S of a MixedPrecisionOptimizer (1.0 for any other optimizer)."""
    return getattr(opt, "loss_scale", 1.0)


def backward(loss, opt):
    """loss.backward(), started from S x loss under mixed precision."""
    scale = loss_scale(opt)
    (loss if scale == 1.0 else loss * scale).backward()


def unscaled(grad, opt):
    """grad / S in float32 (grad itself when S = 1): the gradient of the loss."""
    scale = loss_scale(opt)
    return grad if scale == 1.0 else grad.astype(numpy.float32) / numpy.float32(scale)
