"""An optimizer's settings as fields: what every rank that shares a model must hold alike.

Two ranks whose optimizers differ in a number that no message carries (the learning
rate, AdamW's betas, eps or weight decay, SGD's momentum, a loss scaler's initial
scale or growth interval) send messages of the same size every step and train
apart: dp replicas drift, a ZeRO shard takes another rule than its neighbours. So
the trainers agree on these fields (comm/agreement.py) before the first step, and
fold them into every step's key (comm/agreed_steps.py), which also catches a
learning-rate schedule that differs on one rank:

    optimizer_fields(AdamW(params, lr=1e-2))
    {'optimizer': 'AdamW', 'lr': 0.01, 'betas': (0.9, 0.999), 'eps': 1e-08,
     'weight_decay': 0.01}

A mixed-precision optimizer (mixed_precision/master_weights.py) adds its loss
scaler's fields (``scaler.scale``, the scale now: the initial scale before the first
step, ``scaler.growth_interval``, the factors, the floor) and ``scaler.group``: the
group its found-inf all-reduce spans ("world of 8 ranks", or None: one rank that
would skip alone, or wait alone). Read by attribute, so a ZeRO optimizer (``.optimizer``)
or a mixed-precision one (``.inner``) is read through to its rule.
"""

RULE_FIELDS = ("lr", "betas", "eps", "weight_decay", "momentum")
SCALER_FIELDS = ("scale", "growth_interval", "backoff_factor", "growth_factor", "min_scale",
                 "at_min_scale")


def _number(value):
    """A number or tuple as Python's own (numpy's scalars print their type in NumPy 2)."""
    if isinstance(value, (tuple, list)):
        return tuple(_number(v) for v in value)
    return value.item() if hasattr(value, "dtype") and hasattr(value, "item") else value


def group_text(group):
    """'world of 8 ranks' for a group, None for none."""
    return None if group is None else f"{group.name} of {group.size} ranks"


def optimizer_fields(optimizer):
    """{name: value} of the settings that decide ``optimizer``'s updates (module docstring)."""
    while not hasattr(optimizer, "update") and hasattr(optimizer, "optimizer"):
        optimizer = optimizer.optimizer                      # ZeRO: the rule it lends
    rule = getattr(optimizer, "inner", optimizer)            # mixed precision: the rule
    fields = {"optimizer": type(rule).__name__}
    fields.update({name: _number(getattr(rule, name)) for name in RULE_FIELDS
                   if hasattr(rule, name)})
    scaler = getattr(optimizer, "scaler", None)
    if scaler is not None:
        fields["optimizer"] = f"{type(optimizer).__name__}({fields['optimizer']})"
        fields.update({f"scaler.{name}": _number(getattr(scaler, name))
                       for name in SCALER_FIELDS if hasattr(scaler, name)})
        fields["scaler.group"] = group_text(getattr(optimizer, "group", None))
    return fields
