"""English texts of ``minimegatron run``'s own lines and of each rank's reports
(runtime/launcher.py, faults.py, hang_report.py, job_files.py, mpiexec.py): the job's
summary, HANG and where each rank waits, the kill, the abort lines. Same keys and {fields}
in ko_launcher.py (tests/test_launcher_ko.py). Ranks, ops, groups and exit codes are
fields, as they are."""

MESSAGES = {
    # the launcher (launcher.py)
    "launcher.failed": "the job failed (exit code {code}): {causes}{more}",
    "launcher.more": " (and {count} more)",
    "launcher.no_cause": "no rank said why",
    "launcher.signal": "got {name}: stopped the job (mpiexec and all {nprocs} ranks)",
    "launcher.hang": "HANG: timed out after {timeout:g} s; where each rank waits:",
    "launcher.killed": "killed all {nprocs} ranks (a deadlock? a rank waiting for a message "
                       "nobody sends?)",
    "launcher.child_usage": "usage: python -m minimegatron.runtime.launcher --child TARGET "
                            "[ARGS] (what `minimegatron run` starts on each rank)",
    "launcher.cause": "rank {rank}: {text}",
    # where a rank waits (hang_report.py)
    "hang.describe": "{op}{peer} on group {group} (ranks {ranks})",
    "hang.to": " to rank {peer}",
    "hang.from": " from rank {peer}",
    "hang.waits": "{prefix} waits in {what}{waited}",
    "hang.waited": " for {seconds:.1f} s",
    "hang.not_waiting": "{prefix} is not waiting in a minimegatron collective",
    "hang.called_at": "{prefix}   called at {file}:{line}: {code}",
    "hang.stack": "{prefix}   main thread stack (innermost last):",
    "hang.frame": "{prefix}     {file}:{line} in {name}: {code}",
    "hang.no_answer": "[rank {rank}] gave no answer in {seconds:g} s (busy in C code holding "
                      "the GIL, or already gone)",
    "hang.none": "(no rank answered: none had started minimegatron yet)",
    # a rank's own reports (faults.py)
    "faults.uncaught": "[rank {rank}] uncaught exception, aborting all ranks:",
    "faults.raised": "raised {kind}: {message}",
    "faults.finished": "finished",
    "faults.finished_code": "finished (exit code {code})",
    "faults.still_ran": "{ended} while ranks {running} still ran",
    "faults.still_run": "[rank {rank}] {ended} while ranks {running} still run after "
                        "{grace:g} s{why}; aborting all ranks",
    "faults.grace_env": " ({env})",
    "faults.stuck": "waits in {what} but rank {rank} {ended} {seconds:.1f} s ago",
    "faults.aborting": "[rank {rank}] {text}; aborting all ranks",
    "faults.world_of_one": "minimegatron: error: started as one of {expected} ranks, but MPI "
                           "sees a world of 1: the mpiexec belongs to another MPI than the one "
                           "mpi4py loaded ({library}). Launch with `python -m minimegatron run "
                           "-n {expected} ...`, which finds the matching mpiexec.",
    "faults.bad_grace": "minimegatron: {env}={text!r} is not a number of seconds >= 0; using "
                        "{default:g}",
    # how a rank ended, told by its waiter (reaper.py)
    "reaper.exit_code": "exit code {code}",
    "reaper.killed_by": "killed by {name}",
    "reaper.killed_by_signal": "killed by signal {number}",
    # which mpiexec (mpiexec.py)
    "mpiexec.other": "no mpiexec of mpi4py's MPI ({library}) found; {found} belong to another "
                     "MPI. pip install mpich, or put the matching mpiexec first on PATH",
    "mpiexec.none": "no mpiexec found: pip install mpich (or install any MPI that mpi4py "
                    "supports and put its mpiexec on PATH)",
}
