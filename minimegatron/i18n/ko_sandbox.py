"""Korean (한국어) texts of the grader's sandbox (classroom/sandbox.py), its plain-file reads
and the busy-machine TIMEOUT (classroom/grader.py, gradebook.py). Same keys and {fields}
in en_sandbox.py (tests/test_i18n.py)."""

MESSAGES = {
    "sandbox.on": "샌드박스 안에서 채점합니다: 각 사본의 검사는 bubblewrap({bwrap}) 안에서 "
                  "실행됩니다. 자기만의 프로세스, 네트워크 없음, 전용 /tmp ({tmp}), "
                  "프로세스마다 메모리 {mem_gib} GiB, 채점할 사본은 읽기 전용",
    "sandbox.tmp_cap": "{mib} MiB",
    "sandbox.tmp_no_cap": "크기 제한 없음: 이 bubblewrap에는 --size가 없습니다 (0.7 이상에 "
                          "있음)",
    "sandbox.off": "샌드박스 없음(NOT SANDBOXED): bubblewrap이 {why}. 각 사본의 검사는 "
                   "채점기 자체의 격리에 전용 TMPDIR, rlimit, subreaper만 더해 돌고, 모든 "
                   "칸에 unsandboxed 표시가 붙습니다. 이것이 막지 못하는 것은 "
                   "docs/teaching_ko.md에 있습니다",
    "sandbox.why_missing": "설치되어 있지 않습니다 (데비안 패키지 bubblewrap)",
    "sandbox.why_off": "꺼져 있습니다 ({env}=off)",
    "sandbox.required": "{env}=bwrap은 bubblewrap을 요구하지만, bubblewrap이 {why}",
    "sandbox.odd": "채점하지 않음: 이 사본에 일반 파일이나 폴더가 아닌 것이 있습니다: {paths}. "
                   "채점기는 링크, FIFO, 장치를 따라가지 않고, 크기 제한을 넘는 파일도 "
                   "읽지 않습니다",
    "sandbox.odd_run": "채점하지 않음: 검사가 끝났을 때 실행 폴더에 일반 파일이나 폴더가 아닌 "
                       "것이 있었습니다: {paths}. 그런 것은 학생 코드만 만들 수 있고, "
                       "채점기는 링크, FIFO, 장치를 통해 읽거나 쓰지 않습니다",
    "sandbox.too_many_processes": "검사가 한꺼번에 프로세스를 {count}개 넘게 띄워서 "
                                  "(fork bomb?) 종료했습니다",
    "sandbox.crashed": "채점기의 실행기가 끝나기 전에 검사가 {how}으로 끝나, 보고한 것은 "
                       "하나도 인정되지 않습니다. 출력의 끝:\n{tail}",
    "sandbox.exit_code": "종료 코드 {code}",
    "sandbox.signal": "시그널 {signal}",
    "sandbox.busy": "시간 초과(TIMEOUT): 기계가 바쁜 동안 (코어 {cores}개에 부하 {load:.1f}) "
                    "{seconds:.0f} 초 안에 결과가 없었습니다. 판정하지 않았으니 덜 바쁜 기계에서 "
                    "이 사본을 다시 채점하세요",
    "sandbox.no_seal": "이 사본의 채점기가 봉인된 보고 없이 끝났습니다 ({how})",
}
