"""Timelines: the exact text grid, rows from simulations and traces, the PNG and the CLI."""
import json
import struct
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from minimegatron.parallel.pipeline_parallel import simulate
from minimegatron.tools.timeline import (
    COLORS, bubble_from_rows, draw_timeline, main, rows_from_simulation, rows_from_trace,
    text_grid, traffic_kind)

# K=4, M=8 GPipe by hand: stage k starts forward i at k+i; the last stage starts
# backward 0 at K-1+M = 11 and stage k backward i at 11 + (3-k) + i.
GPIPE_4_8 = """\
stage 0 |F0 F1 F2 F3 F4 F5 F6 F7 .. .. .. .. .. .. B0 B1 B2 B3 B4 B5 B6 B7
stage 1 |.. F0 F1 F2 F3 F4 F5 F6 F7 .. .. .. .. B0 B1 B2 B3 B4 B5 B6 B7 ..
stage 2 |.. .. F0 F1 F2 F3 F4 F5 F6 F7 .. .. B0 B1 B2 B3 B4 B5 B6 B7 .. ..
stage 3 |.. .. .. F0 F1 F2 F3 F4 F5 F6 F7 B0 B1 B2 B3 B4 B5 B6 B7 .. .. .."""


def png_size(path):
    """(width, height) from a PNG's signature and IHDR chunk."""
    with open(path, "rb") as file:
        head = file.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR"
    return struct.unpack(">II", head[16:24])


def test_gpipe_text_grid_is_the_staircase():
    assert text_grid(simulate("gpipe", 4, 8)) == GPIPE_4_8


def test_text_grid_with_slower_backward_and_wide_labels():
    assert text_grid(simulate("1f1b", 2, 2, 1.0, 2.0)) == (
        "stage 0 |F0 F1 .. .. B0 B0 .. B1 B1\n"
        "stage 1 |.. F0 B0 B0 F1 B1 B1 .. ..")
    grid = text_grid(simulate("gpipe", 2, 11)).splitlines()
    assert grid[1].startswith("stage 1 |... F0  F1 ") and grid[0].endswith("B9  B10")
    with pytest.raises(ValueError, match="multiple"):
        text_grid(simulate("gpipe", 2, 2, 1.0, 1.5))


def test_rows_from_simulation():
    rows = rows_from_simulation(simulate("naive", 2, 1))
    assert rows == [[(0.0, 1.0, "forward", "F0"), (3.0, 4.0, "backward", "B0")],
                    [(1.0, 2.0, "forward", "F0"), (2.0, 3.0, "backward", "B0")]]
    assert bubble_from_rows(rows) == pytest.approx(0.5)


def test_rows_from_trace_accepts_dicts_and_objects():
    spans = [
        {"rank": 1, "op": "recv", "start": 10.0, "end": 11.0, "label": "mb0"},
        {"rank": 0, "op": "forward", "start": 10.0, "end": 11.0, "label": "mb0"},
        SimpleNamespace(rank=1, kind="forward", start=11.0, end=12.0, label="mb0"),
        {"rank": 1, "op": "backward", "start": 12.0, "end": 13.0, "micro_batch": 0},
        {"rank": 0, "op": "wait", "start": 11.0, "end": 13.0},
        {"rank": 0, "op": "backward", "start": 13.0, "end": 14.0, "label": "mb0"},
    ]
    rows = rows_from_trace(spans)
    assert rows == [
        [(0.0, 1.0, "forward", "F0"), (1.0, 3.0, "comm", "wait"), (3.0, 4.0, "backward", "B0")],
        [(0.0, 1.0, "comm", "recv"), (1.0, 2.0, "forward", "F0"),
         (2.0, 3.0, "backward", "B0")]]
    assert bubble_from_rows(rows) == pytest.approx(0.5)
    with pytest.raises(ValueError, match="no spans"):
        rows_from_trace([])


def test_draw_timeline_writes_a_png(tmp_path):
    path = tmp_path / "gpipe.png"
    rows = rows_from_simulation(simulate("gpipe", 4, 8))
    assert draw_timeline(rows, path, "gpipe K=4 M=8") == path
    assert png_size(path) == (1200, 160 + 50 * 4)


def test_cli_prints_grid_and_bubble(tmp_path, capsys):
    out = tmp_path / "t.png"
    assert main(["--schedule", "gpipe", "--stages", "4", "--micro-batches", "8",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert GPIPE_4_8 in text and "3/11" in text and "[8, 8, 8, 8]" in text
    assert png_size(out) == (1200, 360)
    assert main(["--schedule", "1f1b", "--stages", "4", "--micro-batches", "8",
                 "--t-backward", "2", "--out", ""]) == 0
    text = capsys.readouterr().out
    assert "[4, 3, 2, 1]" in text and "wrote" not in text
    with pytest.raises(SystemExit):
        main(["--stages", "0", "--out", ""])


def test_cli_draws_a_trace(tmp_path, capsys):
    spans = [{"rank": r, "op": op, "start": r + b, "end": r + b + 1, "label": "mb0"}
             for r in range(2) for b, op in [(0, "forward"), (1, "wait"), (2, "backward")]]
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps(spans))
    out = tmp_path / "trace.png"
    assert main(["--trace", str(trace), "--out", str(out)]) == 0
    assert "rank 1: compute 2.0000 s" in capsys.readouterr().out
    assert png_size(out) == (1200, 160 + 50 * 2)


def test_missing_matplotlib_says_how_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    with pytest.raises(ImportError, match=r"pip install 'minimegatron\[plot\]'"):
        draw_timeline([[(0, 1, "forward", "F0")]], tmp_path / "x.png", "x")
    assert main(["--out", str(tmp_path / "x.png")]) == 1
    assert "minimegatron[plot]" in capsys.readouterr().err


def test_traffic_is_coloured_by_group_kind(tmp_path):
    """tp, pp and dp spans (grid.py's group names) get three colours; tp inside a box: a strip."""
    spans = [
        {"rank": 0, "op": "forward", "start": 0.0, "end": 4.0, "label": "mb0", "group": None},
        {"rank": 0, "op": "all_reduce", "start": 1.0, "end": 2.0, "label": "mb0/blocks.0",
         "group": "tp0"},
        {"rank": 0, "op": "recv", "start": 4.0, "end": 6.0, "label": "mb0", "group": "pp1"},
        {"rank": 0, "op": "all_reduce", "start": 6.0, "end": 10.0, "group": "dp3"},
        {"rank": 1, "op": "recv", "start": 0.0, "end": 10.0, "group": "world"},
    ]
    rows = rows_from_trace(spans)
    assert rows[0][1] == (1.0, 2.0, "comm", "all_reduce tp0")
    assert [traffic_kind(kind, label) for _, _, kind, label in rows[0]] == [
        "forward", "tp", "pp", "dp"]
    assert traffic_kind(*rows[1][0][2:]) == "comm"            # not a grid group: grey
    assert bubble_from_rows(rows) == pytest.approx(1 - 4 / 20)
    path = tmp_path / "3d.png"
    draw_timeline(rows, path, "3d")
    image = pytest.importorskip("matplotlib.image").imread(str(path))[..., :3]

    def share(kind, y0, y1):
        """Fraction of the pixels between rows y0 and y1 in kind's colour."""
        rgb = np.array([int(COLORS[kind][i:i + 2], 16) / 255 for i in (1, 3, 5)])
        return np.mean(np.all(np.abs(image[y0:y1] - rgb) < 0.02, axis=-1))
    # the axes span pixel rows 90-200 (of 260): stage 0 above 145, stage 1 below
    assert share("pp", 92, 143) > 0.1 and share("dp", 92, 143) > 0.2     # full height
    strip = share("tp", 120, 143)                           # the strip: F0's lower part
    assert strip > 0.05 and share("tp", 92, 118) < 0.005
    assert share("comm", 147, 198) > 0.6                    # stage 1 waits in "world": grey
    assert share("comm", 92, 143) < 0.005                   # stage 0: no grey


ZB_H1_4_8 = """\
stage 0 |F0 F1 F2 F3 .. .. .. B0 W0 F4 B1 W1 F5 B2 W2 F6 B3 W3 F7 B4 W4 B5 W5 B6 W6 B7 W7
stage 1 |.. F0 F1 F2 .. .. B0 F3 B1 W0 F4 B2 W1 F5 B3 W2 F6 B4 W3 F7 B5 W4 B6 W5 B7 W6 W7
stage 2 |.. .. F0 F1 .. B0 F2 B1 F3 B2 W0 F4 B3 W1 F5 B4 W2 F6 B5 W3 F7 B6 W4 B7 W5 W6 W7
stage 3 |.. .. .. F0 B0 F1 B1 F2 B2 F3 B3 W0 F4 B4 W1 F5 B5 W2 F6 B6 W3 F7 B7 W4 W5 W6 W7"""


def test_cli_zero_bubble_prints_its_bubble_beside_1f1b(tmp_path, capsys):
    """T_F = T_B = T_W = 1 (the default for zb-h1): the table's 3(p-1) vs (p-1)."""
    out = tmp_path / "zb.png"
    assert main(["--schedule", "zb-h1", "--stages", "4", "--micro-batches", "8",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert ZB_H1_4_8 in text
    assert "bubble zb-h1 3 (table (p-1)(T_F+T_B-T_W) = 3) vs 1f1b 9 (table" in text
    assert "makespan 27 vs 1f1b 33" in text
    assert "per stage: [4, 4, 4, 4] (1f1b: [4, 3, 2, 1])" in text
    assert png_size(out) == (1200, 360)
    image = pytest.importorskip("matplotlib.image").imread(str(out))[..., :3]
    teal = np.array([int(COLORS["weight"][i:i + 2], 16) / 255 for i in (1, 3, 5)])
    assert np.mean(np.all(np.abs(image - teal) < 0.02, axis=-1)) > 0.03   # W boxes drawn
    assert main(["--schedule", "zb-h2", "--stages", "4", "--micro-batches", "8",
                 "--t-weight", "0.5", "--out", ""]) == 0
    text = capsys.readouterr().out
    assert "bubble zb-h2 3 (table (p-1)(T_F+T_B-2T_W) = 3) vs 1f1b 7.5" in text
    assert main(["--schedule", "zb-h1", "--stages", "4", "--micro-batches", "8",
                 "--t-weight", "2", "--out", ""]) == 0
    assert "which assumes T_W <= T_F" in capsys.readouterr().out
    for bad in [["--micro-batches", "3"], ["--t-weight", "0"], ["--t-weight", "-1"]]:
        with pytest.raises(SystemExit):
            main(["--schedule", "zb-h1", "--stages", "4", "--out", ""] + bad)


def test_cli_t_weight_adds_to_a_whole_backward(capsys):
    assert main(["--schedule", "1f1b", "--stages", "2", "--micro-batches", "2",
                 "--t-weight", "1", "--out", ""]) == 0
    assert capsys.readouterr().out.splitlines()[1:3] == [
        "stage 0 |F0 F1 .. .. B0 B0 .. B1 B1", "stage 1 |.. F0 B0 B0 F1 B1 B1 .. .."]


def test_rows_from_trace_knows_weight_spans():
    spans = [{"rank": 0, "op": op, "start": t, "end": t + 1, "micro_batch": 2}
             for t, op in enumerate(["forward", "backward", "weight"])]
    rows = rows_from_trace(spans)
    assert [label for _, _, _, label in rows[0]] == ["F2", "B2", "W2"]
    assert [kind for _, _, kind, _ in rows[0]] == ["forward", "backward", "weight"]
    assert bubble_from_rows(rows) == 0
