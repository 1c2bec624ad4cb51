"""What a student's code keeps alive: the student side of every "memory" point.

Two views, as 5.1 and 5.2 first used them, and now 3.3, 3.5 and 4.1 too:

    held_bytes(obj, ...)   the bytes of the arrays an object's attributes hold, each
                           owner of memory counted once (a view keeps its base alive):
                           ``self.master = weight`` shows here, whoever made the array
    NewArrays              the bytes of NumPy array memory allocated inside a block and
                           still alive after it, wherever they are kept (an attribute,
                           a global, a closure: tracemalloc sees the whole process), and
                           how many of a list of weak references still point at something

The judge compares them with what the idea needs (a shard, one partial product, the
slice of a gradient), give or take half of what a mistake would keep.
"""
import time

import numpy as np


def owner(array):
    """The array that owns this one's memory (a view keeps its base alive)."""
    while getattr(array, "base", None) is not None and hasattr(array.base, "nbytes"):
        array = array.base
    return array


def arrays_in(value):
    """The arrays in an attribute's value: itself, or one level of a list, tuple or dict
    (a Tensor or Parameter counts as the array it holds)."""
    values = (value.values() if isinstance(value, dict) else
              value if isinstance(value, (list, tuple)) else [value])
    values = [getattr(v, "data", v) if hasattr(v, "requires_grad") else v for v in values]
    return [v for v in values if hasattr(v, "nbytes") and hasattr(v, "shape")]


def held_bytes(*objects):
    """Bytes of array memory the attributes of ``objects`` hold (one level into lists,
    tuples, dicts and Tensors), each owner counted once."""
    owners = {}
    for obj in objects:
        for value in vars(obj).values():
            for a in arrays_in(value):
                base = owner(a)
                owners[id(base)] = int(base.nbytes)
    return sum(owners.values())


def alive(refs):
    """How many of the weak references still point at something."""
    return sum(ref() is not None for ref in refs)


# The hang watchdog (runtime/faults.py) looks at the main thread's frame every tick; while
# it looks, a frame that has just returned keeps its locals (a handle, an array) alive. A
# check that finds something alive collects garbage and looks again after these pauses:
# what a student's code keeps stays alive through all of them, what the watchdog held not.
PAUSES = (0.0, 0.05, 0.25)


def alive_after_pauses(refs):
    """``alive(refs)``, after the garbage collector and the pauses above when any is."""
    import gc
    for pause in PAUSES:
        if not alive(refs):
            return 0
        time.sleep(pause)
        gc.collect()
    return alive(refs)


class NewArrays:
    """``with NewArrays() as new: ...`` then ``new.settle(budget, refs)``: the bytes of NumPy
    array memory allocated inside the block and still alive, wherever it is kept, and how
    many of ``refs`` (weak references) still point at an object. Only when these exceed
    ``budget`` bytes or 0 objects is the garbage collector run, and both measured again (a
    reference cycle freed late is not memory kept)."""

    def __enter__(self):
        import tracemalloc
        self.tracemalloc = tracemalloc
        self.started = not tracemalloc.is_tracing()
        if self.started:
            tracemalloc.start()
        tracemalloc.clear_traces()
        return self

    def __exit__(self, *exc):
        self.traces = self.tracemalloc.take_snapshot().filter_traces(
            [self.tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)]).traces
        return False

    def settle(self, budget, refs):
        """{"new": bytes, "old_alive": count} (see the class)."""
        import gc
        nbytes, left = sum(t.size for t in self.traces), alive(refs)
        for pause in PAUSES:                # the hang watchdog may hold a frame a moment
            if nbytes <= budget and not left:
                break
            time.sleep(pause)
            gc.collect()
            snapshot = self.tracemalloc.take_snapshot().filter_traces(
                [self.tracemalloc.DomainFilter(True, np.lib.tracemalloc_domain)])
            nbytes, left = sum(t.size for t in snapshot.traces), alive(refs)
        if self.started:
            self.tracemalloc.stop()
        return {"new": nbytes, "old_alive": left}


def within(got, want, full):
    """Does ``got`` bytes stay within ``want``, give or take half of ``full`` (the bytes one
    mistake would keep: a full weight, a partial product)?"""
    return got is not None and got <= want + full // 2
