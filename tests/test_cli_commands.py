"""Every ``minimegatron COMMAND`` lives in commands/ and answers ``--help``.

argparse and printing belong to commands/ only (DESIGN.md): the dispatcher's
table must point there, and each command must start and print its usage
(``python -m minimegatron COMMAND --help``, exit 0) in a fresh process.
"""
import os
import subprocess
import sys

from minimegatron.commands.cli import COMMANDS, main, usage

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXPECTED = {"run", "verify", "memory", "calibrate", "timeline", "exercises", "grade", "sample"}


def test_every_command_is_a_module_of_commands():
    assert set(COMMANDS) == EXPECTED
    assert {name: module for name, (module, _) in COMMANDS.items()} == {
        name: f"minimegatron.commands.{name}"
        for name in EXPECTED}


def test_every_command_answers_help():
    env = {**os.environ, "PYTHONPATH": REPO}
    procs = {name: subprocess.Popen([sys.executable, "-m", "minimegatron", name, "--help"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env=env, cwd=REPO)
             for name in sorted(COMMANDS)}
    for name, proc in procs.items():
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, (name, err)
        assert f"usage: minimegatron {name}" in out, (name, out)
        assert "Traceback" not in out + err, (name, err)


def test_the_dispatcher_lists_every_command_and_rejects_an_unknown_one(capsys):
    assert main(["--help"]) == 0
    lines = capsys.readouterr().out.splitlines()
    listed = [line.split()[0] for line in lines[3:3 + len(COMMANDS)]]
    assert listed == list(COMMANDS) and usage().startswith("usage: minimegatron COMMAND")
    assert lines[-1].startswith("start a parallel run: minimegatron run -n N"), lines
    assert main(["nonsense"]) == 2
    assert "unknown command 'nonsense'" in capsys.readouterr().err
