"""Megatron's tp-dp-pp rank order: pure layouts (8 and 16 ranks) and real groups on 8 ranks."""
import pytest

from mpi_harness import run_mpi, run_script

from minimegatron.parallel.grid import check_grid, grid_coordinates, grid_layout, grid_rank

LAYOUT_8 = {"tp": [[0, 1], [2, 3], [4, 5], [6, 7]],
            "dp": [[0, 2], [1, 3], [4, 6], [5, 7]],
            "pp": [[0, 4], [1, 5], [2, 6], [3, 7]]}


def test_layout_8_ranks_2x2x2():
    assert grid_layout(8, dp=2, pp=2, tp=2) == LAYOUT_8


def test_layout_16_ranks_tp2_pp4():
    layout = grid_layout(16, dp=2, pp=4, tp=2)
    assert layout["tp"] == [[2 * i, 2 * i + 1] for i in range(8)]
    assert layout["dp"] == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11], [12, 14], [13, 15]]
    assert layout["pp"] == [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]]


@pytest.mark.parametrize("dp,pp,tp", [(2, 2, 2), (1, 2, 4), (8, 1, 1), (2, 4, 2), (3, 1, 2)])
def test_layout_is_a_partition_and_coordinates_invert(dp, pp, tp):
    world = dp * pp * tp
    layout = grid_layout(world, dp, pp, tp)
    for kind, size in (("tp", tp), ("dp", dp), ("pp", pp)):
        assert sorted(r for g in layout[kind] for r in g) == list(range(world))
        assert all(len(g) == size for g in layout[kind])
    for rank in range(world):
        d, p, t = grid_coordinates(rank, dp, tp)
        assert grid_rank(d, p, t, dp, tp) == rank


@pytest.mark.parametrize("sizes", [(8, 2, 2, 3), (8, 0, 8, 1), (8, 2.0, 2, 2), (8, True, 8, 1)])
def test_bad_grid_names_the_numbers(sizes):
    with pytest.raises(ValueError, match="dp="):
        check_grid(*sizes)


def test_grid_on_8_real_ranks():
    results = run_mpi(8, "workers/grid_checks.py:check_grids", timeout=90)
    for rank, res in enumerate(results):
        groups = res["groups_222"]
        for kind in ("tp", "dp", "pp"):
            members = groups[kind]["ranks"]
            assert members in LAYOUT_8[kind] and rank in members
            assert groups[kind]["name"] == f"{kind}{LAYOUT_8[kind].index(members)}"
            assert groups[kind]["rank"] == members.index(rank) and groups[kind]["size"] == 2
            assert res[f"sum_{kind}"] == sum(members)
        d, p, t = res["coords_222"]
        assert rank == p * 4 + d * 2 + t
        assert res["stages_222"] == [p == 0, p == 1]
        assert res["tp4_sum"] == (6 if rank < 4 else 22)
        assert res["groups_tp4"]["tp"]["ranks"] == ([0, 1, 2, 3] if rank < 4 else [4, 5, 6, 7])
        assert res["groups_tp4"]["dp"]["ranks"] == [rank]
        for sizes in ("(2, 2, 3)", "(0, 8, 1)", "(2.0, 2, 2)", "(8, 1, 2)"):
            assert res[f"bad_{sizes}"] == results[0][f"bad_{sizes}"] != "no error"
        assert "12 ranks, but the job has 8" in res["bad_(2, 2, 3)"]
    table = results[0]["describe"]
    assert table.splitlines()[0].startswith("ProcessGrid dp=2 x pp=2 x tp=2 = 8 ranks")
    assert "tp3[6,7]" in table and "dp2[4,6]" in table and "pp1[1,5]" in table
    assert all(r["describe"] == table for r in results)


def test_tutorial_01_runs_on_8_ranks():
    code, out, err = run_script(8, "tutorials/01_collectives.py", timeout=90)
    assert code == 0, err
    assert "[rank 7] [70. 71.]  ->  [60. 61.]" in out          # the ring
    assert "ProcessGrid dp=2 x pp=2 x tp=2 = 8 ranks" in out
    assert out.index("[rank 0]") < out.index("[rank 7]")
