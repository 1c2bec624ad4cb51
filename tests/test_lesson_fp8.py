"""Exercise 7.2 (an fp8 matmul with per-tensor scales): the reference PASSes, and every wrong
answer misses its point, in English and in Korean; right answers written other ways PASS.

Each mutant is the reference package with the 7.2 block (Fp8Matmul's forward) replaced by
an answer a student could plausibly write (``grader.grade_variants``), graded in one process.
"""
import pytest

from lesson_mutants import assert_mutants, block_of, grade_with_reference

EX = "7.2"
REFERENCE = block_of(EX)
SCALES = ["        sx, sw = scale_for(rows, E4M3, agree), scale_for(w, E4M3, agree)"]
CASTS = ["        qx = (rows.astype(np.float32) * sx).astype(E4M3)",
         "        qw = (w.astype(np.float32) * sw).astype(E4M3)"]
PRODUCT = ["        y = matmul(qx, qw, np.float32) / (sx * sw)"]

MUTANTS = {
    "W scaled by X's scale (the scale from the wrong tensor)": ([
        "        sx = scale_for(rows, E4M3, agree)",
        "        sw = sx"] + CASTS + PRODUCT, "own_scale"),
    "cast without the scale (X past 448 is NaN)": (SCALES + [
        "        qx = rows.astype(E4M3)",
        "        qw = w.astype(E4M3)",
        "        y = matmul(qx, qw, np.float32)"], "own_scale"),
    "kept in bf16 (the cast widened to 2 bytes)": (SCALES + [
        "        qx = (rows.astype(np.float32) * sx).astype(rows.dtype)",
        "        qw = (w.astype(np.float32) * sw).astype(w.dtype)"] + PRODUCT, "one_byte"),
    "e5m2 in forward (the gradients' format)": ([
        "        sx, sw = scale_for(rows, E5M2, agree), scale_for(w, E5M2, agree)",
        "        qx = (rows.astype(np.float32) * sx).astype(E5M2)",
        "        qw = (w.astype(np.float32) * sw).astype(E5M2)"] + PRODUCT, "one_byte"),
    "no unscale": (SCALES + CASTS + ["        y = matmul(qx, qw, np.float32)"], "float32"),
    "unscaled by s_X only": (SCALES + CASTS + ["        y = matmul(qx, qw, np.float32) / sx"],
                             "float32"),
    "products summed in fp8 (matmul without float32)": (SCALES + CASTS + [
        "        y = matmul(qx, qw).astype(np.float32) / (sx * sw)"], "float32"),
    "agree not passed (this rank's own amax)": ([
        "        sx, sw = scale_for(rows, E4M3), scale_for(w, E4M3)"] + CASTS + PRODUCT,
        "agree"),
}

# Right answers written another way: each must PASS.
ALTERNATIVES = {
    "quantize and scaled_matmul, the module's own helpers": [
        "        qx, sx = quantize(rows, E4M3, agree)",
        "        qw, sw = quantize(w, E4M3, agree)",
        "        y = scaled_matmul(qx, sx, qw, sw, np.float32)"],
    "divided by each scale in turn, NumPy's own product": SCALES + [
        "        qx = (rows * sx).astype(E4M3)",
        "        qw = (w * sw).astype(E4M3)",
        "        y = np.matmul(qx.astype(np.float32), qw.astype(np.float32)) / sx / sw"],
}


@pytest.fixture(scope="module")
def verdicts():
    return grade_with_reference(EX, REFERENCE, {**MUTANTS, **{name: (body, None) for name, body
                                                              in ALTERNATIVES.items()}})


def test_the_reference_is_the_block_these_mutants_change():
    assert [line.split("#")[0].rstrip() for line in REFERENCE] == SCALES + CASTS + PRODUCT


@pytest.mark.parametrize("name", list(ALTERNATIVES))
def test_a_right_answer_written_another_way_passes(verdicts, name):
    verdict = verdicts[name]
    assert verdict.passed, f"{name}: {verdict.result}\n" + "\n".join(verdict.lines)


def test_the_reference_passes_every_point(verdicts):
    assert verdicts["reference"].passed, "\n".join(verdicts["reference"].lines)


@pytest.mark.parametrize("name", list(MUTANTS))
def test_a_wrong_answer_misses_its_point(verdicts, name):
    assert_mutants(verdicts, EX, {name: MUTANTS[name]})


def test_at_least_four_kinds_of_mistake():
    assert len({point for _, point in MUTANTS.values()}) == 4 and len(MUTANTS) >= 7
