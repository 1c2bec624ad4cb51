"""Korean (한국어) texts of ``minimegatron run``'s own lines and of each rank's reports
(runtime/launcher.py, faults.py, hang_report.py, job_files.py, mpiexec.py). Same keys and
{fields} in en_launcher.py; rank, op, group, exit code 같은 값과 기술 용어는 영어 그대로
둡니다 (docs/glossary.ko.md)."""

MESSAGES = {
    # the launcher (launcher.py)
    "launcher.failed": "job이 실패했습니다 (종료 코드 {code}): {causes}{more}",
    "launcher.more": " (그 밖에 {count}개 더)",
    "launcher.no_cause": "어느 rank도 이유를 남기지 않았습니다",
    "launcher.signal": "{name}을 받아 job을 멈췄습니다 (mpiexec와 rank {nprocs}개 모두)",
    "launcher.hang": "HANG: {timeout:g}초가 지나 시간 초과, 각 rank가 기다리는 곳:",
    "launcher.killed": "rank {nprocs}개를 모두 끝냈습니다 (deadlock? 아무도 보내지 않는 "
                       "메시지를 기다리는 rank?)",
    "launcher.child_usage": "사용법: python -m minimegatron.runtime.launcher --child TARGET "
                            "[ARGS] (`minimegatron run`이 각 rank에서 시작하는 것)",
    "launcher.cause": "rank {rank}: {text}",
    # where a rank waits (hang_report.py)
    "hang.describe": "group {group} (ranks {ranks})의 {op}{peer}",
    "hang.to": " (rank {peer}에게)",
    "hang.from": " (rank {peer}에게서)",
    "hang.waits": "{prefix} {what}에서 기다립니다{waited}",
    "hang.waited": " ({seconds:.1f}초째)",
    "hang.not_waiting": "{prefix} minimegatron collective에서 기다리고 있지 않습니다",
    "hang.called_at": "{prefix}   호출한 곳 {file}:{line}: {code}",
    "hang.stack": "{prefix}   main thread의 stack (가장 안쪽이 마지막):",
    "hang.frame": "{prefix}     {file}:{line}, 함수 {name}: {code}",
    "hang.no_answer": "[rank {rank}] {seconds:g}초 안에 답하지 않았습니다 (GIL을 쥔 C 코드 "
                      "안에서 바쁘거나, 이미 끝남)",
    "hang.none": "(답한 rank가 없습니다: 아직 minimegatron을 시작한 rank가 없었습니다)",
    # a rank's own reports (faults.py)
    "faults.uncaught": "[rank {rank}] 처리되지 않은 예외, 모든 rank를 중단합니다:",
    "faults.raised": "{kind} 예외 발생: {message}",
    "faults.finished": "끝났습니다",
    "faults.finished_code": "끝났습니다 (종료 코드 {code})",
    "faults.still_ran": "rank {running}이 아직 도는 동안 {ended}",
    "faults.still_run": "[rank {rank}] rank {running}이 {grace:g}초 뒤에도 아직 도는 "
                        "동안 {ended}{why}. 모든 rank를 중단합니다",
    "faults.grace_env": " ({env})",
    "faults.stuck": "{what}에서 기다리지만 rank {rank}은 {seconds:.1f}초 전에 {ended}",
    "faults.aborting": "[rank {rank}] {text}. 모든 rank를 중단합니다",
    "faults.world_of_one": "minimegatron: 오류: rank {expected}개 중 하나로 시작했는데 MPI가 "
                           "보는 world는 1입니다: 이 mpiexec는 mpi4py가 불러온 MPI "
                           "({library})가 아닌 다른 MPI의 것입니다. 맞는 mpiexec를 찾아 주는 "
                           "`python -m minimegatron run -n {expected} ...`로 실행하세요.",
    "faults.bad_grace": "minimegatron: {env}={text!r}은 0 이상의 초 수가 아닙니다. "
                        "{default:g}을 씁니다",
    # how a rank ended, told by its waiter (reaper.py)
    "reaper.exit_code": "종료 코드 {code}",
    "reaper.killed_by": "{name}으로 끝남",
    "reaper.killed_by_signal": "시그널 {number}으로 끝남",
    # which mpiexec (mpiexec.py)
    "mpiexec.other": "mpi4py의 MPI ({library})의 mpiexec가 없습니다. {found}은 다른 MPI의 "
                     "것입니다. pip install mpich를 하거나, 맞는 mpiexec를 PATH의 맨 앞에 "
                     "두세요",
    "mpiexec.none": "mpiexec가 없습니다: pip install mpich (또는 mpi4py가 지원하는 MPI를 "
                    "설치하고 그 mpiexec를 PATH에 두세요)",
}
