"""Mixed-precision training: half-precision model, float32 master weights, dynamic loss scale.

One idea per file (docs/mixed_precision.md walks through them):

    loss_scaler.py     DynamicLossScaler: found-inf all-reduce (MAX), skip and halve, grow
    master_weights.py  MixedPrecisionOptimizer: float32 masters stepped by SGD / AdamW

Importing this package imports none of its modules. The upcast of the logits to float32
(UpcastHalf) is an autograd Function the serial GPT uses: it lives in autodiff/cast.py.
"""
