"""English texts of the grader's sandbox (classroom/sandbox.py), its plain-file reads and
the busy-machine TIMEOUT (classroom/grader.py, gradebook.py). Same keys and {fields} in
ko_sandbox.py (tests/test_i18n.py)."""

MESSAGES = {
    "sandbox.on": "sandboxed: each copy's checks run in bubblewrap ({bwrap}): their own "
                  "processes, no network, a private /tmp {tmp}, {mem_gib} GiB of memory per "
                  "process, the staged copy read-only",
    "sandbox.tmp_cap": "of {mib} MiB",
    "sandbox.tmp_no_cap": "WITHOUT a size cap (this bubblewrap has no --size: 0.7 or later "
                          "has it)",
    "sandbox.off": "NOT SANDBOXED: bubblewrap {why}. Each copy's checks run with the "
                   "grader's own isolation plus a private TMPDIR, rlimits and a subreaper, "
                   "and every cell is marked unsandboxed; docs/teaching.md says what this "
                   "does not stop",
    "sandbox.why_missing": "is not installed (Debian package bubblewrap)",
    "sandbox.why_off": "is switched off ({env}=off)",
    "sandbox.required": "{env}=bwrap asks for bubblewrap, but it {why}",
    "sandbox.odd": "not graded: this copy holds what is not a plain file or folder: {paths}. "
                   "The grader reads a copy without following links, FIFOs or devices, and no "
                   "file over its size cap",
    "sandbox.odd_run": "not graded: the check's run folder held what is not a plain file or "
                       "folder when it ended: {paths}. Only student code makes one there; the "
                       "grader never reads or writes through a link, FIFO or device",
    "sandbox.too_many_processes": "the check started more than {count} processes at once "
                                  "(a fork bomb?), so it was killed",
    "sandbox.crashed": "the check ended with {how} before the grader's runner finished, so "
                       "nothing it reported counts; its output ends with:\n{tail}",
    "sandbox.exit_code": "exit code {code}",
    "sandbox.signal": "signal {signal}",
    "sandbox.busy": "TIMEOUT: no result in {seconds:.0f} s while the machine was busy (load "
                    "{load:.1f} on {cores} cores): not judged, grade this copy again on a "
                    "quieter machine",
    "sandbox.no_seal": "the grader of this copy ended without its sealed report ({how})",
}
