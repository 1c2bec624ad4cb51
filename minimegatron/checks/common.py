"""The serial reference every parallel scheme is compared with.

``serial_reference(config, steps, batch_size)`` trains one GPT on the whole
mini-batch with AdamW, on this rank alone, and records the loss, every
gradient and every weight after each step. A parallel run starts from the
same seed, and its check compares this rank's values (or shards of them) with
the reference. Building the reference on every rank costs little for these
tiny models and needs no communication.
"""
import dataclasses
import functools

from minimegatron.backend import to_numpy, xp
from minimegatron.checks.precision import backward, check_optimizer, unscaled
from minimegatron.data.demo import batch
from minimegatron.nn import GPT


@functools.lru_cache(maxsize=None)
def serial_reference(config, steps=3, batch_size=8, nudge=False, rule=None):
    """{"loss": [..], "grads": [{name: array}], "weights": [{name: array}]}, one per step.

    Computed once per process for each (config, steps, batch_size): many checks in
    one MPI launch share it. Read it, never modify it. ``nudge`` first moves every
    initial weight by one unit in the last place (see ``serial_sensitivity``).
    float16: mixed precision with SGD (checks/precision.py; ``rule="sgd"`` trains a
    float32/float64 model with that SGD too); the gradients are recorded unscaled.
    """
    model = GPT(config)
    if nudge:
        for p in model.parameters():
            p.data[...] = xp.nextafter(p.data, xp.inf)
    opt = check_optimizer(model.parameters(), config, None, rule)
    record = {"loss": [], "grads": [], "weights": []}
    for step in range(steps):
        x, y = batch(config, batch_size, step)
        loss = model.loss(x, y)
        opt.zero_grad()
        backward(loss, opt)                                 # from S x loss in float16
        record["loss"].append(loss.item())
        record["grads"].append({n: unscaled(p.grad, opt).copy()
                                for n, p in model.named_parameters()})
        opt.step()
        record["weights"].append(model.state_dict())
    return record


def serial_sensitivity(config, steps=3, batch_size=8):
    """{"loss", "grad", "weight"}: how far one process drifts from ITSELF after ``steps``.

    Two serial runs whose initial weights differ by one unit in the last place
    (the size of the rounding a parallel scheme's reordered sums make) are
    compared, max |difference| over every step. Training amplifies rounding
    more with each step (AdamW divides by sqrt(v), attention's softmax is
    sharp), so this grows with ``steps`` and is how ``verify`` scales its
    tolerance: a correct scheme stays within a small multiple of it.
    """
    return drift_between(serial_reference(config, steps, batch_size),
                         serial_reference(config, steps, batch_size, nudge=True))


def drift_between(a, b):
    """{"loss", "grad", "weight"}: max |difference| of two references' records, every step."""
    out = {"loss": max(abs(x - y) for x, y in zip(a["loss"], b["loss"]))}
    for key, name in (("grads", "grad"), ("weights", "weight")):
        out[name] = max(max_abs_diff(step_a[n], step_b[n])
                        for step_a, step_b in zip(a[key], b[key]) for n in step_a)
    return out


def max_abs_diff(a, b):
    """max |a - b| over two arrays (0.0 for empty arrays)."""
    diff = abs(to_numpy(a) - to_numpy(b))
    return float(diff.max()) if diff.size else 0.0



def float64_gap(config, steps=3, batch_size=8, reference="float64"):
    """One process in float16 / bf16 / fp8 (mixed precision, SGD) against ``reference``
    (float64; float32 for bf16 and fp8) with the same SGD.

    Returns {"gap": {key: max |mixed - reference|}, "scale": {key: max |reference value|}}
    over every step, key in loss / grad / weight. verify bounds a parallel mixed run's
    distance from the reference by |parallel - mixed serial| + gap (triangle inequality).
    """
    mixed = serial_reference(config, steps, batch_size)
    full = serial_reference(dataclasses.replace(config, dtype=reference, fp8=False), steps,
                            batch_size, rule="sgd")
    gap = {"loss": max(abs(x - y) for x, y in zip(mixed["loss"], full["loss"]))}
    scale = {"loss": max(abs(y) for y in full["loss"])}
    for key, name in (("grads", "grad"), ("weights", "weight")):
        gap[name] = max(max_abs_diff(a[n], b[n]) for a, b in zip(mixed[key], full[key])
                        for n in a)
        scale[name] = max(float(abs(to_numpy(b[n])).max()) for b in full[key] for n in b)
    return {"gap": gap, "scale": scale}
