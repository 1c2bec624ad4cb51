"""Equivalence checks: each scheme trained next to one process, the differences returned.

Each module holds ``check_*`` functions, run inside an MPI job on every rank,
that return ``{"loss": max|dloss|, "grad": max|dgrad|, "weight": max|dw|}`` for
this rank. The tests and ``minimegatron verify`` call the same functions.
"""
