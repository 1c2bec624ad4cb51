"""Every tools subcommand rejects a bad argument with one error line and exit 2, no traceback.

In-process (each module's ``main(argv)``), so it is cheap: parsing fails before any work.
"""
import argparse

import pytest

from minimegatron.commands.entry import PACKAGE_DIR

from minimegatron.commands import argtypes
from minimegatron.commands import calibrate, memory, timeline

MAINS = {"memory": memory.main, "timeline": timeline.main, "calibrate": calibrate.main}
SIZES = ["0", "-1", "abc", "1.5", ""]

BAD = [("memory", [f"--{flag}", v]) for flag in
       ("layers", "hidden", "heads", "vocab", "seq", "dp", "pp", "tp", "micro-batch",
        "micro-batches") for v in SIZES]
BAD += [("memory", ["--zero", "4"]), ("memory", ["--zero", "-1"]),
        ("memory", ["--hardware", "/no/such/hardware.json"]),
        ("memory", ["--layers", "3", "--pp", "2"]),          # does not split: checked early
        ("memory", ["--heads", "3", "--tp", "2"]),
        ("memory", ["--schedule", "zigzag"]), ("memory", ["bogus-view"])]
BAD += [("memory", ["moe", "--capacity-factor", v]) for v in ("-1", "nan", "inf", "x")]
BAD += [("memory", ["--schedule", "zb-h2", "--pp", "4", "--micro-batches", "2"])]
BAD += [("timeline", [f"--{flag}", v]) for flag in ("stages", "micro-batches") for v in SIZES]
BAD += [("timeline", [f"--{flag}", v]) for flag in ("t-forward", "t-backward")
        for v in ("inf", "-inf", "nan", "0", "-1", "x")]
BAD += [("timeline", ["--out", "/no/such/dir/t.png"]), ("timeline", ["--out", "."]),
        ("timeline", ["--trace", "/no/such/trace.json"]), ("timeline", ["--schedule", "x"])]
BAD += [("calibrate", ["--ranks", v]) for v in SIZES]
BAD += [("calibrate", ["--out", "/no/such/dir/h.json"]), ("calibrate", ["--out", "."])]


def _fails_in_one_line(command, argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        MAINS[command](argv)
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2, (command, argv, out, err)
    assert "Traceback" not in out + err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith(f"minimegatron {command}: error:"), err
    # no work was done: at most the banner naming the package (minimegatron/commands/entry.py)
    assert out in ("", f"minimegatron {command}: package {PACKAGE_DIR}\n"), out
    return errors[0]


@pytest.mark.parametrize("command,argv", BAD, ids=[f"{c} {' '.join(a)}" for c, a in BAD])
def test_bad_argument_is_one_line_and_exit_2(command, argv, capsys):
    line = _fails_in_one_line(command, argv, capsys)
    if argv[0].startswith("--") and argv[0] not in ("--pp", "--tp"):
        assert argv[0] in line                        # names the argument


@pytest.mark.parametrize("text", ["", "{", "null", "[1]", '[{"start": 0}]',
                                  '[{"start": 0, "end": 1, "rank": -1, "op": "forward"}]'])
def test_timeline_malformed_trace_file(tmp_path, capsys, text):
    path = tmp_path / "trace.json"
    path.write_text(text)
    line = _fails_in_one_line("timeline", ["--trace", str(path), "--out", ""], capsys)
    assert "error:" in line


@pytest.mark.parametrize("text", ["", "{}", '{"gemm_flops": "x"}', "[]"])
def test_memory_malformed_hardware_file(tmp_path, capsys, text):
    path = tmp_path / "hw.json"
    path.write_text(text)
    line = _fails_in_one_line("memory", ["--hardware", str(path)], capsys)
    assert "--hardware" in line


def test_good_arguments_still_run(capsys):
    assert memory.main(["--layers", "4", "--hidden", "64", "--heads", "4", "--pp", "2",
                        "--tp", "2"]) == 0
    assert "grid dp=1 pp=2 tp=2" in capsys.readouterr().out
    assert timeline.main(["--stages", "2", "--micro-batches", "2", "--out", ""]) == 0
    assert "makespan 6" in capsys.readouterr().out


# ---- the argparse types themselves ---------------------------------------------------------
@pytest.mark.parametrize("parse,good,bad", [
    (argtypes.positive_int, {"1": 1, "72": 72, " 3": 3}, ["0", "-1", "1.5", "x", "", "inf"]),
    (argtypes.nonnegative_int, {"0": 0, "5": 5}, ["-1", "0.5", "nan", "x"]),
    (argtypes.finite_positive_float, {"0.5": 0.5, "1e-9": 1e-9, "3": 3.0},
     ["0", "-1", "inf", "-inf", "nan", "NaN", "x", ""]),
    (argtypes.finite_nonnegative_float, {"0": 0.0, "2.5": 2.5}, ["-0.1", "inf", "nan", "x"]),
    (argtypes.int_at_least(2), {"2": 2, "9": 9}, ["1", "0", "-3", "2.0", "x"]),
])
def test_types_accept_and_reject(parse, good, bad):
    for text, value in good.items():
        parsed = parse(text)
        assert parsed == value and type(parsed) is type(value)
    for text in bad:
        with pytest.raises(argparse.ArgumentTypeError, match=r"^must be .*, got "):
            parse(text)


def test_type_messages_are_one_line_and_name_the_value():
    with pytest.raises(argparse.ArgumentTypeError) as info:
        argtypes.finite_positive_float("nan")
    assert str(info.value) == "must be a finite positive number, got 'nan'"
    assert argtypes.int_at_least(2).__name__ == "int_at_least(2)"


def test_path_types(tmp_path):
    existing = tmp_path / "a.json"
    existing.write_text("{}")
    assert argtypes.existing_file(str(existing)) == str(existing)
    assert argtypes.output_path("") == ""
    assert argtypes.output_path(str(tmp_path / "new.png")) == str(tmp_path / "new.png")
    for call, arg in ((argtypes.existing_file, str(tmp_path)),
                      (argtypes.existing_file, str(tmp_path / "missing")),
                      (argtypes.output_path, str(tmp_path)),
                      (argtypes.output_path, str(tmp_path / "no" / "x.png"))):
        with pytest.raises(argparse.ArgumentTypeError):
            call(arg)
