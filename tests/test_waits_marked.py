"""Every place in the comm layer where a rank can block is marked for the hang report.

The hang report (runtime/hang_report.py) names the wait by the innermost function
marked ``@waits`` (comm/waits.py), not by file names, so files may move
freely. This test reads the source of every module of minimegatron/comm (it
moves nothing), finds every blocking MPI call (``Allreduce``, ``Recv``,
``Waitall``, the pickle ``bcast``...) and asserts the function that makes it is
marked. Then, on one process, the report itself names a marked wait.
"""
import ast
import importlib
import os
import pkgutil
import sys

import numpy as np

from minimegatron import comm
from minimegatron.comm import polling
from minimegatron.comm import waits as marks
from minimegatron.runtime import hang_report

BLOCKING = {"Allreduce", "Allgather", "Allgatherv", "Alltoall", "Alltoallv", "Bcast", "Reduce",
            "Reduce_scatter", "Reduce_scatter_block", "Scatter", "Scatterv", "Gather",
            "Gatherv", "Send", "Recv", "Sendrecv", "Barrier", "Wait", "Waitall", "Waitany",
            "bcast", "gather", "allgather", "alltoall", "scatter", "send", "recv", "barrier",
            "allreduce", "wait_all"}


def blocking_call_sites(tree):
    """[(line, MPI call, innermost enclosing function node)] of one module's source."""
    sites = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, (ast.FunctionDef, ast.Lambda)) else function
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and \
                    child.func.attr in BLOCKING:
                sites.append((child.lineno, child.func.attr, function))
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Name) and \
                    child.func.id == "wait_all":
                sites.append((child.lineno, "wait_all", function))
            visit(child, inner)
    visit(tree, None)
    return sites


def marked_lines(module):
    """First lines of the module's functions that are marked, as the decorator recorded them."""
    path = os.path.abspath(module.__file__)
    return {code.co_firstlineno for code in marks.WAITS if code.co_filename == path}


def test_every_blocking_call_in_the_comm_layer_is_in_a_marked_function():
    found, unmarked = 0, []
    for info in pkgutil.iter_modules(comm.__path__):
        module = importlib.import_module(f"{comm.__name__}.{info.name}")
        with open(module.__file__) as f:
            tree = ast.parse(f.read())
        marked = marked_lines(module)
        for line, call, function in blocking_call_sites(tree):
            found += 1
            first = None if function is None else (
                function.decorator_list[0].lineno if getattr(function, "decorator_list", None)
                else function.lineno)
            if function is None or function.lineno not in marked and first not in marked:
                unmarked.append(f"{info.name}.py:{line} {call} in "
                                f"{getattr(function, 'name', 'a lambda')}")
    assert found >= 30, found                      # the scan sees the collectives
    assert unmarked == [], unmarked


def test_the_scan_finds_an_unmarked_call():
    tree = ast.parse("def f(group):\n    group.comm.Allreduce(1, 2)\n"
                     "g = lambda group: group.comm.Barrier()\n")
    assert [(line, call) for line, call, _ in blocking_call_sites(tree)] == [
        (2, "Allreduce"), (3, "Barrier")]


def test_the_report_names_the_marked_collective_its_group_and_peer():
    g = comm.world()
    seen = {}

    @marks.waits()
    def spy(requests):                   # stands in for polling.wait_all inside the wait
        frame = sys._getframe()
        seen.update(hang_report.where_waits(frame), in_wait=hang_report.in_wait(frame))
        saved(requests)
    handle = comm.irecv(np.empty(2), 0, g, tag=3)
    comm.isend(np.ones(2), 0, g, tag=3).wait()
    saved = polling.wait_all
    try:
        handle.wait.__globals__["wait_all"] = spy
        handle.wait()
    finally:
        handle.wait.__globals__["wait_all"] = saved
    assert seen["in_wait"] and seen["op"] == "recv" and seen["group"] == "world", seen
    assert seen["peer"] == 0 and seen["ranks"] == [0], seen
    assert seen["user"].f_code.co_filename == os.path.abspath(__file__), seen["user"]
