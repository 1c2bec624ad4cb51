"""Agreement (comm/agreement.py): what message sizes cannot show is agreed at construction.

One launch on 2 ranks (tests/workers/agreement_checks.py) builds, with rank 1 choosing
differently: the cp split (zigzag vs contiguous), the cp attention variant, the pipeline
schedule, an MoE's capacity factor, its ``every``, both at once, the ep layout and the
model's seed. Before, each of these trained (a wrong loss, exit 0); now every rank raises
the same CollectiveMismatch naming the differing fields and each side's values. A job
that does not catch it ends non-zero under ``minimegatron run`` with the message.
"""
import os

import pytest
from mpi_harness import TESTS_DIR, minimegatron_run, run_mpi

# case -> (the fields named, rank 0's value, rank 1's value)
EXPECTED = {
    "cp_split": ("context parallelism differs in: split", "split='zigzag'",
                 "split='contiguous'"),
    "cp_attention": ("the training plan differs in: attention", "attention='ring'",
                     "attention='allgather'"),
    "schedule": ("the training plan differs in: schedule", "schedule='1f1b'",
                 "schedule='gpipe'"),
    "moe_capacity": ("the training plan differs in: moe.capacity_factor",
                     "moe.capacity_factor=1.0", "moe.capacity_factor=2.0"),
    "moe_every": ("the training plan differs in: moe.every", "moe.every=1", "moe.every=2"),
    "moe_two_fields": ("the training plan differs in: moe.capacity_factor, moe.every",
                       "moe.capacity_factor=1.0, moe.every=1",
                       "moe.capacity_factor=2.0, moe.every=2"),
    "ep_layout": ("the process grid differs in: ep", "ep=2", "ep=1"),
    "seed": ("the training plan differs in: config.seed", "config.seed=0", "config.seed=1"),
}


@pytest.fixture(scope="module")
def results():
    return run_mpi(2, "workers/agreement_checks.py:check_all", timeout=120)


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_a_disagreement_raises_on_every_rank_naming_the_fields_and_both_sides(results, case):
    reason, rank0, rank1 = EXPECTED[case]
    message = results[0][case]
    assert all(r[case] == message for r in results), [r[case] for r in results]
    assert message.startswith(f"collective mismatch in group 'world' ({reason}; "), message
    assert f"\n  rank 0 (world 0): {rank0} at " in message, message
    assert f"\n  rank 1 (world 1): {rank1} at " in message, message
    assert "agreement_checks.py:" in message                        # the caller's line


def test_ranks_that_agree_train_as_one_process(results):
    assert all(r["agreed_loss_diff"] < 1e-12 for r in results), results
    assert all(r["after_all"] == 2.0 for r in results)


def test_an_uncaught_disagreement_ends_the_job_non_zero_with_the_message():
    code, out, err, _ = minimegatron_run("-n", "2", os.path.join(TESTS_DIR, "workers",
                                                                 "agreement_checks.py"),
                                         timeout=90)
    assert code not in (0, 124), (code, out, err)
    assert "built a model, the split was not checked" not in out
    assert "context parallelism differs in: split" in err, err
    assert "rank 0 (world 0): split='zigzag'" in err and "rank 1 (world 1): split='contiguous'" \
        in err, err
