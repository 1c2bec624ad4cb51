"""Checking mode's agreed steps (comm/comm_check.py, "Agreed steps"), on 8 real ranks.

A 3D step (dp 2 x pp 2 x tp 2) checks each of its groups' first collective only, the
step number and the batch's shapes folded into the key: 3 checks per step on a rank
instead of one per collective, the same losses and weights in every mode, and every
mismatch still named: a differing first call, differing fields, and (with
MINIMEGATRON_CHECK=all) a differing later call.
"""
import pytest

from mpi_harness import run_mpi


@pytest.fixture(scope="module")
def results():
    return run_mpi(8, "workers/agreed_step_checks.py:check_all", timeout=240)


def test_the_mode_changes_no_number(results):
    for rank, r in enumerate(results):
        assert r["agreed"]["losses"] == r["off"]["losses"] == r["all"]["losses"], rank
        assert r["agreed"]["weights"] == r["off"]["weights"] == r["all"]["weights"], rank
        assert r["off"]["losses"][0] > r["off"]["losses"][-1]               # it trains


def test_an_agreed_step_compares_its_fields_once_per_group(results):
    for rank, r in enumerate(results):
        groups = {name.split()[1] for step in r["all"]["checks"] for name in step}
        assert {g.rstrip("0123456789") for g in groups} == {"tp", "pp", "dp"}, rank
        for agreed, every in zip(r["agreed"]["checks"], r["all"]["checks"]):
            calls = [name for name in every if name.startswith("call ")]
            assert sorted(agreed) == sorted({f"step {name.split()[1]}" for name in calls}), rank
            assert len(calls) >= 2 * len(agreed), rank             # per call: many more
            if rank < 4:                                           # stage 0 sends forward
                assert any(name.startswith("sign pp") for name in every), rank
        assert r["off"]["checks"] == [[]] * 3


def test_each_groups_first_call_only_and_nested_steps_are_covered(results):
    for r in results:
        tp, dp, pp = (next(n.split()[1] for n in r["checked_in_one_step"]
                           if n.split()[1].startswith(k)) for k in ("tp", "dp", "pp"))
        assert r["checked_in_one_step"] == [
            f"call {tp}", f"call {dp}", f"call {pp}",          # no groups named: first calls
            f"step {tp}", f"step {pp}", f"call {dp}"]          # posted; dp not named: its call


def test_a_users_own_calls_inside_a_step_are_each_checked(results):
    for r in results:
        tp, dp, pp = (next(n.split()[1] for n in r["user_calls_in_one_step"]
                           if n.split()[1].startswith(k)) for k in ("tp", "dp", "pp"))
        assert r["user_calls_in_one_step"] == [
            f"call {tp}", f"call {tp}", f"call {dp}", f"call {tp}", f"call {pp}", f"call {dp}",
            f"step {tp}", f"step {pp}", f"call {tp}", f"call {tp}", f"call {dp}"]


def test_mismatches_are_still_named_on_every_rank_of_the_group(results):
    for r in results:
        assert "shape differs" in r["first_call_shape"]
        assert "shape=(4,)" in r["first_call_shape"] and "shape=(8,)" in r["first_call_shape"]
        assert "the step's inputs differs in: step;" in r["fields"]
        assert "step=1" in r["fields"] and "step=2" in r["fields"]
        assert "inputs" not in r["fields"].split(";")[0].split("differs in:")[1]
        assert "agreed once per step and group" in r["fields"]
        for case in ("posted_fields", "posted_unused"):
            assert "the step's inputs differs in: step;" in r[case], case
            assert "step=1" in r[case] and "step=2" in r[case], case
            assert "collective mismatch in group 'tp" in r[case], case
        assert r["fields_value"] == [1.0, 1.0]                 # tp ranks 0 + 1, data moved
        assert "shape differs" in r["later_call_all_mode"]
        assert "shape=(8,)" in r["later_call_all_mode"]


@pytest.mark.parametrize("odd_rank, group", [(1, "tp0"), (5, "pp1")])
def test_a_rank_with_another_batch_ends_the_job_naming_the_fields(odd_rank, group):
    with pytest.raises(pytest.fail.Exception) as info:
        run_mpi(8, "workers/agreed_step_checks.py:uneven_batch", args=(odd_rank,),
                timeout=120)
    text = str(info.value)
    assert "timed out" not in text
    assert f"collective mismatch in group '{group}' (the step's inputs differs in: inputs, " \
           "targets, rows_crc32;" in text
    assert "inputs=((8, 8), 'int64')" in text and "inputs=((8, 16), 'int64')" in text
