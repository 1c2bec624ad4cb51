"""What every lesson's mutation test uses: grade the reference and its mutants in one go,
then check each mutant FAILs on its point, in English and in Korean.

A mutant is ``name: (body lines, point)``: the exercise's block replaced by the
lines (no newlines needed), and the name of the lesson point it must miss. The
judge reads the same evidence in both languages (``grader.grade_variants(...,
langs=("en", "ko"))``), so Korean costs no second run.
"""
from minimegatron.classroom.exercise_checks import by_id
from minimegatron.classroom.exercises import find_blocks
from minimegatron.classroom.grader import grade_variants
from minimegatron.i18n import speaking


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
    from minimegatron.classroom.exercise_checks.lesson import Point
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


def grade_lessons(references, mutants, alternatives=None, timeout=60):
    """{ex_id: {name: Verdict}} for several exercises in one go (one launch per rank count):
    ``references`` is {ex_id: reference body lines}, ``mutants`` {ex_id: {name: (body,
    point)}}, ``alternatives`` {ex_id: {name: body}} (right answers written another way);
    each exercise's reference is graded under the name "reference"."""
    variants = {}
    for ex_id, reference in references.items():
        bodies = {name: body for name, (body, _) in mutants.get(ex_id, {}).items()}
        bodies.update((alternatives or {}).get(ex_id, {}))
        variants[(ex_id, "reference")] = (ex_id, [line + "\n" for line in reference])
        variants.update({(ex_id, name): (ex_id, [line + "\n" for line in body])
                         for name, body in bodies.items()})
    keyed = {f"{ex_id}: {name}": variant for (ex_id, name), variant in variants.items()}
    verdicts = grade_variants(keyed, timeout=timeout, langs=("en", "ko"))
    return {ex_id: {name: verdicts[f"{ex_id}: {name}"] for (e, name) in variants if e == ex_id}
            for ex_id in references}
