"""Megatron's tp-dp-pp rank order: pure layouts (8 and 16 ranks) and real groups on 8 ranks."""
import pytest

from mpi_harness import run_mpi, run_script

from minimegatron.parallel.grid import (check_grid, cp_coordinate, grid_coordinates, grid_layout,
                                        grid_rank, group_indices)

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


def test_layout_16_ranks_with_cp_in_megatron_order():
    """tp-cp-dp-pp: cp {0,2}, dp {0,4}, pp {0,8}, gradients over dp x cp {0,2,4,6}."""
    layout = grid_layout(16, dp=2, pp=2, tp=2, cp=2)
    assert layout["tp"] == [[2 * i, 2 * i + 1] for i in range(8)]
    assert layout["cp"] == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9, 11], [12, 14], [13, 15]]
    assert layout["dp"] == [[0, 4], [1, 5], [2, 6], [3, 7], [8, 12], [9, 13], [10, 14], [11, 15]]
    assert layout["pp"] == [[r, r + 8] for r in range(8)]
    assert layout["dp_cp"] == [[0, 2, 4, 6], [1, 3, 5, 7], [8, 10, 12, 14], [9, 11, 13, 15]]


@pytest.mark.parametrize("dp,pp,tp,cp", [(2, 2, 2, 2), (1, 2, 1, 4), (2, 1, 2, 2), (3, 1, 2, 2),
                                         (1, 1, 1, 8), (2, 2, 2, 1)])
def test_cp_layout_is_a_partition_and_coordinates_invert(dp, pp, tp, cp):
    world = dp * pp * tp * cp
    layout = grid_layout(world, dp, pp, tp, cp)
    sizes = {"tp": tp, "dp": dp, "pp": pp, "cp": cp, "dp_cp": dp * cp}
    assert set(layout) == ({"tp", "dp", "pp"} | ({"cp", "dp_cp"} if cp > 1 else set()))
    for kind in layout:
        assert sorted(r for g in layout[kind] for r in g) == list(range(world))
        assert all(len(g) == sizes[kind] for g in layout[kind])
    for rank in range(world):
        d, p, t = grid_coordinates(rank, dp, tp, cp)
        c = cp_coordinate(rank, tp, cp)
        assert grid_rank(d, p, t, dp, tp, c, cp) == rank
        index = group_indices(rank, dp, pp, tp, cp)
        assert all(rank in layout[kind][index[kind]] for kind in layout)
        if cp > 1:
            assert sorted(layout["dp_cp"][index["dp_cp"]]) == sorted(
                q for q in range(world) if grid_coordinates(q, dp, tp, cp)[1:] == (p, t))


def test_cp_one_is_the_old_grid():
    assert grid_layout(8, 2, 2, 2, cp=1) == LAYOUT_8
    assert all(group_indices(r, 2, 2, 2) == group_indices(r, 2, 2, 2, 1) for r in range(8))


@pytest.mark.parametrize("sizes", [(16, 2, 2, 2, 3), (8, 1, 1, 1, 0), (8, 2, 2, 2, 2.0)])
def test_bad_cp_grid_names_the_numbers(sizes):
    with pytest.raises(ValueError, match="cp="):
        check_grid(*sizes)


def test_cp_grid_on_8_real_ranks():
    results = run_mpi(8, "workers/grid_checks.py:check_cp_grids", timeout=90)
    for rank, res in enumerate(results):
        for name, (dp, pp, tp, cp) in (("tp2cp2dp2", (2, 1, 2, 2)), ("cp2dp2pp2", (2, 2, 1, 2)),
                                       ("cp8", (1, 1, 1, 8))):
            layout, got = grid_layout(8, dp, pp, tp, cp), res[name]
            for kind in ("tp", "cp", "dp", "pp", "dp_cp"):
                members = got["groups"][kind]["ranks"]
                expected = [g for g in layout.get(kind, []) if rank in g]
                if kind in layout:
                    assert [members] == expected, (name, kind)
                assert got["sums"][kind] == sum(members)
                assert got["groups"][kind]["rank"] == members.index(rank)
            assert got["cp_rank"] == cp_coordinate(rank, tp, cp)
            assert got["coords"] == list(grid_coordinates(rank, dp, tp, cp))
            assert got["describe"] == results[0][name]["describe"]
        assert res["tp2cp2dp2"]["groups"]["dp_cp"]["ranks"] == ([0, 2, 4, 6] if rank % 2 == 0
                                                                else [1, 3, 5, 7])
        assert res["cp8"]["groups"]["cp"]["ranks"] == list(range(8))
        for sizes in ("(2, 2, 1, None, 3)", "(1, 1, 1, None, 0)", "(2, 1, 2, None, 4)"):
            assert res[f"bad_{sizes}"] == results[0][f"bad_{sizes}"] != "no error"
        assert "x cp=3 = 12 ranks, but the job has 8" in res["bad_(2, 2, 1, None, 3)"]
    table = results[0]["tp2cp2dp2"]["describe"]
    assert table.splitlines()[0].startswith("ProcessGrid dp=2 x pp=1 x tp=2 x cp=2 = 8 ranks")
    assert "dp_cp0[0,2,4,6]" in table
