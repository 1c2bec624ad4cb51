"""Exercises 3.1-3.5 and 6.2 (tensor parallelism, sequence parallelism's g-bar): the reference
PASSes every point, and every wrong answer misses its point.

Each mutant is the reference package with one block replaced by an answer a student
could plausibly write (``grader.grade_variants``), graded on 4 ranks (tp groups [0, 1]
and [2, 3]). Many reach the right numbers by the wrong mechanism: another collective,
the world instead of the group, a reduction in place, a constant that only fits tp = 2
or the grader's one shape. Each must FAIL, and among the points it misses must be the
one named here, in English and in Korean. All six exercises run in ONE mpiexec launch.
"""
import pytest

from lesson_mutants import assert_mutants, block_of, grade_lessons

WORLD = "from minimegatron.comm import world"
ALL_REDUCE = "from minimegatron.comm import all_reduce"
BUFFER = ["import numpy as np", "buffers = globals().setdefault('_BUFFERS', {})"]

MUTANTS = {
    "3.1": {
        "3.1 all-reduce over the world (wrong group)": ([
            f"            {WORLD}",
            "            return all_reduce(grad_out, world()), None"], "sum"),
        "3.1 no all-reduce (f's backward left the identity)": ([
            "            return grad_out, None"], "sum"),
        "3.1 twice the gradient (right only when the ranks agree)": ([
            "            return grad_out * ctx.group.size, None"], "sum"),
        "3.1 all-gather then sum (another collective, same numbers)": ([
            "            return all_gather(grad_out[None], ctx.group).sum(axis=0), None"],
            "one_all_reduce"),
        "3.1 reduce to rank 0 then broadcast (two collectives)": ([
            "            from minimegatron import comm",
            "            total = comm.reduce(grad_out, ctx.group)",
            "            total = grad_out.copy() if total is None else total",
            "            return comm.broadcast(total, ctx.group), None"], "one_all_reduce"),
        "3.1 reduced in float64 (twice the bytes in float32)": ([
            "            return all_reduce(grad_out.astype('float64'), ctx.group), None"],
            "one_all_reduce"),
        "3.1 all-reduce in place into grad_out (the wrong buffer)": ([
            "            return all_reduce(grad_out, ctx.group, inplace=True), None"],
            "grad_out_kept"),
        "3.1 a result buffer kept from call to call (the next f overwrites it)": ([
            " " * 12 + line for line in BUFFER + [
                "buf = buffers.setdefault((grad_out.shape, str(grad_out.dtype)), "
                "np.empty_like(grad_out))",
                "return all_reduce(grad_out, ctx.group, out=buf), None"]], "grad_out_kept"),
        "3.1 an extra blocking allgather_object (the pickle API, untraced)": ([
            "            from minimegatron.comm import allgather_object",
            "            allgather_object(grad_out.shape, ctx.group)",
            "            return all_reduce(grad_out, ctx.group), None"], "one_all_reduce"),
    },
    "3.2": {
        "3.2 all-reduce over the world (wrong group)": ([
            f"        {WORLD}",
            "        return x if group.size == 1 else all_reduce(x, world())"], "sum"),
        "3.2 no all-reduce (g left the identity)": (["        return x"], "sum"),
        "3.2 x times the group size (a constant, not a sum)": ([
            "        return x * group.size"], "sum"),
        "3.2 all-gather then sum (another collective, same numbers)": ([
            "        return x if group.size == 1 else all_gather(x[None], group).sum(axis=0)"],
            "one_all_reduce"),
        "3.2 reduced in float64 (twice the bytes in float32)": ([
            "        return x if group.size == 1 else all_reduce(x.astype('float64'), group)"],
            "one_all_reduce"),
        "3.2 all-reduce even on a group of one rank": ([
            "        return all_reduce(x, group)"], "one_all_reduce"),
        "3.2 all-reduce in place into x (the wrong buffer)": ([
            "        return x if group.size == 1 else all_reduce(x, group, inplace=True)"],
            "input_kept"),
        "3.2 a result buffer kept from call to call (the next g overwrites it)": ([
            " " * 8 + line for line in ["if group.size == 1:", "    return x"] + BUFFER + [
                "buf = buffers.setdefault((x.shape, str(x.dtype)), np.empty_like(x))",
                "return all_reduce(x, group, out=buf)"]], "input_kept"),
        "3.2 Allreduce called on group.comm itself (an MPI call the trace misses)": ([
            "        import numpy as np",
            "        if group.size == 1:",
            "            return x",
            "        out = np.empty_like(x)",
            "        group.comm.Allreduce(np.ascontiguousarray(x), out)",
            "        return out"], "one_all_reduce"),
        "3.2 a barrier on MPI.COMM_WORLD first, to be safe (an untraced collective)": ([
            "        from mpi4py import MPI",
            "        MPI.COMM_WORLD.Barrier()",
            "        return x if group.size == 1 else all_reduce(x, group)"], "one_all_reduce"),
    },
    "3.3": {
        "3.3 strided columns": ([
            "        width = out_features // tp_group.size",
            "        cols = slice(tp_group.rank, None, tp_group.size)"], "columns"),
        "3.3 world rank instead of the group's": ([
            f"        {WORLD}",
            "        width = out_features // tp_group.size",
            "        cols = slice(world().rank * width, (world().rank + 1) * width)"],
            "columns"),
        "3.3 width from in_features (the wrong axis)": ([
            "        width = in_features // tp_group.size",
            "        cols = slice(tp_group.rank * width, (tp_group.rank + 1) * width)"],
            "columns"),
        "3.3 width hard-coded for tp = 2": ([
            "        width = out_features // 2",
            "        cols = slice(tp_group.rank * width, (tp_group.rank + 1) * width)"],
            "columns"),
        "3.3 columns from the other end": ([
            "        width = out_features // tp_group.size",
            "        r = tp_group.size - 1 - tp_group.rank",
            "        cols = slice(r * width, (r + 1) * width)"], "columns"),
        "3.3 world rank % tp (right only on blocks of consecutive ranks)": ([
            f"        {WORLD}",
            "        width = out_features // tp_group.size",
            "        r = world().rank % tp_group.size",
            "        cols = slice(r * width, (r + 1) * width)"], "columns"),
        "3.3 the full master weight kept on every rank (passed the old grader)": ([
            "        width = out_features // tp_group.size",
            "        cols = slice(tp_group.rank * width, (tp_group.rank + 1) * width)",
            "        self.master_weight = weight"], "memory"),
        "3.3 a copy of the full weight kept in a global (passed the old grader)": ([
            "        width = out_features // tp_group.size",
            "        cols = slice(tp_group.rank * width, (tp_group.rank + 1) * width)",
            "        globals().setdefault('_MASTERS', []).append(weight.copy())"], "memory"),
    },
    "3.4": {
        "3.4 strided rows": ([
            "        height = in_features // tp_group.size",
            "        rows = slice(tp_group.rank, None, tp_group.size)"], "rows"),
        "3.4 rows from the other end": ([
            "        height = in_features // tp_group.size",
            "        r = tp_group.size - 1 - tp_group.rank",
            "        rows = slice(r * height, (r + 1) * height)"], "rows"),
        "3.4 height hard-coded for tp = 2": ([
            "        height = in_features // 2",
            "        rows = slice(tp_group.rank * height, (tp_group.rank + 1) * height)"],
            "rows"),
        "3.4 rows counted from the world rank mod 2": ([
            f"        {WORLD}",
            "        height = in_features // tp_group.size",
            "        r = world().rank % 2",
            "        rows = slice(r * height, (r + 1) * height)"], "rows"),
        "3.4 world rank % tp (right only on blocks of consecutive ranks)": ([
            "        from mpi4py import MPI",
            "        height = in_features // tp_group.size",
            "        r = MPI.COMM_WORLD.Get_rank() % tp_group.size",
            "        rows = slice(r * height, (r + 1) * height)"], "rows"),
    },
    "3.5": {
        "3.5 no g (each rank keeps its partial)": ([
            "        partial = x @ self.weight",
            "        self.last_partial = partial.data",
            "        y = partial"], "sum"),
        "3.5 bias added to every partial (summed tp times)": ([
            "        partial = x @ self.weight",
            "        if self.bias is not None:",
            "            partial = partial + self.bias",
            "        self.last_partial = partial.data",
            "        y = reduce_from_tp(partial, self.tp_group)"], "sum"),
        "3.5 all-reduce of the raw array (autograd never sees it)": ([
            f"        {ALL_REDUCE}",
            "        from minimegatron.autodiff.tensor import Tensor",
            "        partial = x @ self.weight",
            "        self.last_partial = partial.data",
            "        y = Tensor(all_reduce(partial.data, self.tp_group), requires_grad=True)"],
            "sum"),
        "3.5 f instead of g (the conjugate operator)": ([
            "        from minimegatron.parallel.tensor_parallel.mappings import copy_to_tp",
            "        partial = x @ self.weight",
            "        self.last_partial = partial.data",
            "        y = copy_to_tp(partial, self.tp_group)"], "sum"),
        "3.5 g over the world (wrong group)": ([
            f"        {WORLD}",
            "        partial = x @ self.weight",
            "        self.last_partial = partial.data",
            "        y = reduce_from_tp(partial, world())"], "one_all_reduce"),
        "3.5 all-gather then sum (another collective, same numbers)": ([
            "        from minimegatron.parallel.tensor_parallel.mappings import gather_from_tp",
            "        partial = x @ self.weight",
            "        self.last_partial = partial.data",
            "        stacked = gather_from_tp(partial.reshape(partial.shape + (1,)), "
            "self.tp_group)",
            "        y = stacked.sum(axis=-1)"], "one_all_reduce"),
        "3.5 last_partial keeps the sum, not the partial": ([
            "        partial = x @ self.weight",
            "        y = reduce_from_tp(partial, self.tp_group)",
            "        self.last_partial = y.data"], "partial"),
        "3.5 X_i A_i computed twice (once for last_partial, once for g)": ([
            "        partial = x @ self.weight",
            "        self.last_partial = partial.data",
            "        y = reduce_from_tp(x @ self.weight, self.tp_group)"], "partial"),
        "3.5 an extra blocking allgather_object (the pickle API, untraced)": ([
            "        from minimegatron.comm import allgather_object",
            "        partial = x @ self.weight",
            "        self.last_partial = partial.data",
            "        allgather_object(self.last_partial.shape, self.tp_group)",
            "        y = reduce_from_tp(partial, self.tp_group)"], "one_all_reduce"),
        "3.5 every partial product kept in a list (passed the old grader)": ([
            "        partial = x @ self.weight",
            "        self.last_partial = partial.data",
            "        self.partials = getattr(self, 'partials', []) + [partial.data]",
            "        y = reduce_from_tp(partial, self.tp_group)"], "memory"),
        "3.5 a copy of every partial kept in a global (passed the old grader)": ([
            "        partial = x @ self.weight",
            "        self.last_partial = partial.data",
            "        globals().setdefault('_PARTIALS', []).append(partial.data.copy())",
            "        y = reduce_from_tp(partial, self.tp_group)"], "memory"),
        "3.5 last_partial set on the first forward only (passed the old grader)": ([
            "        partial = x @ self.weight",
            "        if self.last_partial is None:",
            "            self.last_partial = partial.data",
            "        y = reduce_from_tp(partial, self.tp_group)"], "every_forward"),
        "3.5 the summed output cached from the first forward (passed the old grader)": ([
            "        partial = x @ self.weight",
            "        self.last_partial = partial.data",
            "        if getattr(self, '_y', None) is None or self._y.shape != partial.shape:",
            "            self._y = reduce_from_tp(partial, self.tp_group)",
            "        y = self._y"], "every_forward"),
    },
    "6.2": {
        "6.2 all-reduce then keep my tokens (twice the bytes)": ([
            f"        {ALL_REDUCE}",
            "        return x if group.size == 1 else seq_chunk(all_reduce(x, group), group)"],
            "one_reduce_scatter"),
        "6.2 reduce-scatter even on a group of one rank": ([
            "        return reduce_scatter(x, group, axis=SEQ)"], "one_reduce_scatter"),
        "6.2 all-reduce, no split": ([
            f"        {ALL_REDUCE}",
            "        return x if group.size == 1 else all_reduce(x, group)"], "tokens"),
        "6.2 reduce-scatter over the world (wrong group)": ([
            f"        {WORLD}",
            "        return x if group.size == 1 else reduce_scatter(x, world(), axis=SEQ)"],
            "tokens"),
        "6.2 reduce-scatter along the hidden axis": ([
            "        return x if group.size == 1 else reduce_scatter(x, group, axis=-1)"],
            "tokens"),
        "6.2 reduce-scatter along the batch axis": ([
            "        return x if group.size == 1 else reduce_scatter(x, group, axis=0)"],
            "tokens"),
        "6.2 two tokens each (right only for T = 4)": ([
            f"        {ALL_REDUCE}",
            "        r = group.rank",
            "        return x if group.size == 1 else all_reduce(x, group)[:, 2 * r:2 * r + 2]"],
            "tokens"),
        "6.2 a result buffer kept from call to call (the next g-bar overwrites it)": ([
            " " * 8 + line for line in ["if group.size == 1:", "    return x"] + BUFFER + [
                "shape = (x.shape[0], x.shape[1] // group.size) + x.shape[2:]",
                "buf = buffers.setdefault((shape, str(x.dtype)), np.empty(shape, x.dtype))",
                "return reduce_scatter(x, group, axis=SEQ, out=buf)"]], "tokens"),
        "6.2 an extra blocking allgather_object (the pickle API, untraced)": ([
            "        from minimegatron.comm import allgather_object",
            "        if group.size == 1:",
            "            return x",
            "        allgather_object(x.shape, group)",
            "        return reduce_scatter(x, group, axis=SEQ)"], "one_reduce_scatter"),
    },
}

# Right answers written another way: each must PASS (a false FAIL is the second worst thing).
ALTERNATIVES = {
    "3.1": {"a fresh copy reduced in place (a new array each call)": [
        "            return all_reduce(grad_out.copy(), ctx.group, inplace=True), None"]},
    "3.2": {"a fresh copy reduced in place (a new array each call)": [
        "        return x if group.size == 1 else all_reduce(x.copy(), group, inplace=True)"]},
    "3.3": {"the columns as an index array": [
        "        import numpy as np",
        "        width = out_features // tp_group.size",
        "        cols = np.arange(out_features).reshape(tp_group.size, width)[tp_group.rank]"],
            "the group rank found from the world rank in tp_group.ranks": [
        f"        {WORLD}",
        "        r = list(tp_group.ranks).index(world().rank)",
        "        width = out_features // tp_group.size",
        "        cols = slice(r * width, (r + 1) * width)"]},
    "3.4": {"the rows from np.array_split": [
        "        import numpy as np",
        "        height = in_features // tp_group.size",
        "        rows = np.array_split(np.arange(in_features), tp_group.size)[tp_group.rank]"]},
    "3.5": {"last_partial set after g": [
        "        partial = x @ self.weight",
        "        y = reduce_from_tp(partial, self.tp_group)",
        "        self.last_partial = partial.data"]},
    "6.2": {"axis 1 written out": [
        "        return x if group.size == 1 else reduce_scatter(x, group, axis=1)"],
            "the sequence moved to the front and back": [
        "        if group.size == 1:",
        "            return x",
        "        return reduce_scatter(x.swapaxes(0, 1), group, axis=0).swapaxes(0, 1)"]},
}


@pytest.fixture(scope="module")
def verdicts():
    return grade_lessons({ex_id: block_of(ex_id) for ex_id in MUTANTS}, MUTANTS, ALTERNATIVES)


@pytest.mark.parametrize("ex_id, name", [(ex_id, name) for ex_id, alts in ALTERNATIVES.items()
                                         for name in alts])
def test_a_right_answer_written_another_way_passes(verdicts, ex_id, name):
    verdict = verdicts[ex_id][name]
    assert verdict.passed, f"{name}: {verdict.result}\n" + "\n".join(verdict.lines)


@pytest.mark.parametrize("ex_id", list(MUTANTS))
def test_the_reference_passes_every_point(verdicts, ex_id):
    verdict = verdicts[ex_id]["reference"]
    assert verdict.passed, "\n".join(verdict.lines)


@pytest.mark.parametrize("ex_id, name", [(ex_id, name) for ex_id, mutants in MUTANTS.items()
                                         for name in mutants])
def test_a_wrong_answer_misses_its_point(verdicts, ex_id, name):
    assert_mutants(verdicts[ex_id], ex_id, {name: MUTANTS[ex_id][name]})


@pytest.mark.parametrize("ex_id", list(MUTANTS))
def test_at_least_four_mutants_of_different_points_or_kinds(ex_id):
    assert len(MUTANTS[ex_id]) >= 4
