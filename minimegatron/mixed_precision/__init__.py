"""Mixed-precision training: half-precision model, float32 master weights, dynamic loss scale.

One idea per file (docs/mixed_precision.md walks through them):

    cast.py            UpcastHalf: the logits go to float32 before the loss
    loss_scaler.py     DynamicLossScaler: found-inf all-reduce (MAX), skip and halve, grow
    master_weights.py  MixedPrecisionOptimizer: float32 masters stepped by SGD / AdamW

Importing this package imports none of its modules (nn imports cast.py alone).
"""
