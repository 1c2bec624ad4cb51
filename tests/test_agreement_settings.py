"""What decides the numbers but moves no message of another size is agreed: the optimizer's
and loss scaler's settings at construction and at every step, the batch's rows in every
step, and a user's own collective inside an agreed step is checked (one launch of 8 ranks
as dp 2 x pp 2 x tp 2, one of 4 ranks as 2 x 2; tests/workers/settings_checks.py).

Before, each of these trained with exit 0 (the replicas apart, a loss off by 1e-2), or
hung (a scaler without the grid's group on one rank; a user's shorter all-reduce), or
ended in MPI's "Message truncated" (a longer one).
"""
import pytest

from minimegatron.i18n import book_errors
from mpi_harness import run_mpi

AGREED = "agreed before the first step, since messages of the same size cannot show it"
STEP = ("agreed once per step and group; the step's collectives follow from it and are not "
        "checked one by one")
# case -> (what differs in: fields, the odd rank, its value, the others' value)
CONSTRUCTION = {
    "lr_dp": ("the optimizer differs in: lr", 2, "lr=0.02", "lr=0.01"),
    "weight_decay_zero2": ("the optimizer differs in: weight_decay", 3, "weight_decay=0.1",
                           "weight_decay=0.01"),
    "betas_zero1": ("the optimizer differs in: betas", 6, "betas=(0.9, 0.95)",
                    "betas=(0.9, 0.999)"),
    "momentum": ("the optimizer differs in: momentum", 1, "momentum=0.5", "momentum=0.9"),
    "scaler_init": ("the optimizer differs in: scaler.scale", 5, "scaler.scale=1024.0",
                    "scaler.scale=256.0"),
    "scaler_growth": ("the optimizer differs in: scaler.growth_interval", 6,
                      "scaler.growth_interval=500", "scaler.growth_interval=1000"),
    "scaler_group": ("the optimizer differs in: scaler.group", 7, "scaler.group=None",
                     "scaler.group='world of 8 ranks'"),
    "zero_alone": ("the ZeRO optimizer differs in: lr", 4, "lr=0.03", "lr=0.01"),
}


@pytest.fixture(scope="module")
def built():
    return run_mpi(8, "workers/settings_checks.py:construction", timeout=180)


@pytest.fixture(scope="module")
def stepped():
    return run_mpi(4, "workers/settings_checks.py:steps", timeout=240)


@pytest.mark.parametrize("case", sorted(CONSTRUCTION))
def test_a_setting_one_rank_holds_apart_is_named_on_every_rank_before_any_weight_moves(
        built, case):
    reason, odd, value, usual = CONSTRUCTION[case]
    message = built[0][case]
    assert all(r[case] == message for r in built), [r[case] for r in built]
    assert message.startswith(f"collective mismatch in group 'world' ({reason}; {AGREED}); "
                              "no data was moved:\n"), message
    others = [r for r in range(8) if r != odd]
    assert f"\n  ranks {others} (world {others}): {usual} at " in message, message
    assert f"\n  rank {odd} (world {odd}): {value} at " in message, message
    assert "settings_checks.py:" in message                          # the caller's line


def test_a_settings_mismatch_reads_in_korean(built):
    korean = book_errors.translate(built[0]["lr_dp"], "ko")
    assert korean.startswith("group 'world'에서 collective 불일치 (optimizer가 다음 "
                             "항목에서 다릅니다: lr. "), korean
    assert "rank 2 (world 2): " in korean and "lr=0.02" in korean


def test_ranks_that_agree_train(built, stepped):
    assert len({r["agreed_loss"] for r in built}) == 1 and 0 < built[0]["agreed_loss"] < 4
    assert len({r["agreed_loss"] for r in stepped}) == 1 and 0 < stepped[0]["agreed_loss"] < 4


@pytest.mark.parametrize("mode", ["agreed", "all"])
def test_a_learning_rate_schedule_that_differs_on_a_rank_is_named_at_its_step(stepped, mode):
    for rank, r in enumerate(stepped):
        message = r[mode]["schedule"]
        group = f"tp{rank // 2}"                    # ranks 1 and 2 moved on: each tp group
        assert message.startswith(f"collective mismatch in group '{group}' (the step's inputs "
                                  f"differs in: lr; {STEP}); "), message
        assert "lr=0.005" in message and "lr=0.01" in message, message
    for rank, r in enumerate(stepped):                                   # MoE's ep groups
        assert "(the step's inputs differs in: lr; " in r["moe_schedule"], r["moe_schedule"]
    assert all("the optimizer differs in: lr; " in r["moe_lr"] for r in stepped)


@pytest.mark.parametrize("mode", ["agreed", "all"])
@pytest.mark.parametrize("case, group", [("rows_tp", "tp"), ("rows_last_stage", "pp")])
def test_batch_rows_that_differ_with_equal_shapes_are_named(stepped, mode, case, group):
    """tp: ranks 1 and 3 change one id per row of the inputs; the last stage (ranks 2, 3)
    one target per row: the shapes agree, the rows' crc32 does not."""
    for rank, r in enumerate(stepped):
        message = r[mode][case]
        index = rank // 2 if group == "tp" else rank % 2
        assert message.startswith(f"collective mismatch in group '{group}{index}' (the "
                                  f"step's inputs differs in: rows_crc32; {STEP}); "), message
        crcs = {line.split("rows_crc32=")[1].split()[0] for line in message.splitlines()[1:]}
        assert len(crcs) == 2, message


@pytest.mark.parametrize("mode", ["agreed", "all"])
@pytest.mark.parametrize("case, length", [("user_shorter", 3), ("user_longer", 5)])
def test_a_users_own_collective_inside_an_agreed_step_is_checked(stepped, mode, case, length):
    for rank, r in enumerate(stepped):
        message = r[mode][case]
        assert message.startswith(f"collective mismatch in group 'dp{rank % 2}' (shape "
                                  "differs); no data was moved:\n"), message
        assert "all_reduce(shape=(4,), dtype=float64, op='sum') at " in message, message
        assert f"all_reduce(shape=({length},), dtype=float64" in message, message
        assert message.count("settings_checks.py:") == 2, message     # the user's line
