"""``cupyx`` of the stand-in: pinned host buffers are plain NumPy arrays."""
import numpy


def empty_pinned(shape, dtype=float):
    return numpy.empty(shape, dtype)
