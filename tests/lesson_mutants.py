"""What every lesson's mutation test uses: grade the reference and its mutants in one go,
then check each mutant FAILs on its point, in English and in Korean.

A mutant is ``name: (body lines, point)``: the exercise's block replaced by the
lines (no newlines needed), and the name of the lesson point it must miss. The
judge reads the same evidence in both languages (``grader.grade_variants(...,
langs=("en", "ko"))``), so Korean costs no second run.
"""
from minimegatron.exercise_checks import by_id
from minimegatron.exercises import find_blocks
from minimegatron.grader import grade_variants
from minimegatron.i18n import speaking, text


def block_of(ex_id):
    """The reference body of an exercise block, as lines without their newlines."""
    return [line.rstrip("\n") for line in find_blocks()[ex_id].body]


def grade_with_reference(ex_id, reference, mutants, timeout=60):
    """{name: Verdict} (English) for the reference ("reference") and every mutant; each
    Verdict also carries ``.ko`` (the same evidence judged in Korean)."""
    variants = {"reference": (ex_id, [line + "\n" for line in reference])}
    variants.update({name: (ex_id, [line + "\n" for line in body])
                     for name, (body, _) in mutants.items()})
    return grade_variants(variants, timeout=timeout, langs=("en", "ko"))


def assert_mutants(verdicts, ex_id, mutants):
    """Each mutant FAILs and misses its point; the FAIL names the point in both languages."""
    from minimegatron.exercise_checks.lesson import Point
    for name, (_, point) in mutants.items():
        verdict = verdicts[name]
        shown = "\n".join(verdict.lines)
        assert verdict.result == "FAIL", f"{name}: {verdict.result}\n{shown}"
        assert point in verdict.missed, f"{name}: missed {verdict.missed}, not {point}\n{shown}"
        for lang, lines in (("en", verdict.lines), ("ko", verdict.ko.lines)):
            with speaking(lang):
                teaches = Point(point, None).teaches(ex_id)
            assert any(teaches in line for line in lines), f"{name} ({lang}):\n{lines}"
        print(f"--- {by_id(ex_id).id} {name}: missed {verdict.missed}\n{shown}")


def grade_lessons(lessons, timeout=60):
    """{ex_id: {name: Verdict}}: grade_with_reference for several exercises in ONE grading
    call (one launch per rank count). ``lessons`` is {ex_id: (reference, mutants)}; each
    exercise's dict holds "reference" and its mutants' names, as assert_mutants reads."""
    variants, keys = {}, {}
    for ex_id, (reference, mutants) in lessons.items():
        for name, body in [("reference", reference)] + [(n, b) for n, (b, _) in mutants.items()]:
            key = f"{ex_id}: {name}"
            variants[key] = (ex_id, [line + "\n" for line in body])
            keys[key] = (ex_id, name)
    verdicts = grade_variants(variants, timeout=timeout, langs=("en", "ko"))
    out = {ex_id: {} for ex_id in lessons}
    for key, (ex_id, name) in keys.items():
        out[ex_id][name] = verdicts[key]
    return out
