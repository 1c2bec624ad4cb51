"""A planted mistake for tests/test_ko_mistakes.py: the error comes on rank 0 alone.

Rank 0 refuses the rank count; the others go on (here they just end: a real script would
wait for rank 0 in its next collective, forever). The test must name the ranks that went on.
"""
from minimegatron.commands.entry import run
from minimegatron.runtime.rank_setup import rank_from_env


def main():
    if rank_from_env() == 0:
        raise ValueError("rank 0 only: the planted check")


if __name__ == "__main__":
    run(main, "ko_mistake_rank0_only.py")
