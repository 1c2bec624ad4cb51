"""A blank block's message, in the reader's language.

A student copy's blank raises ``NotImplementedError("Exercise X: <English hint>")``
(the English hint of ``exercise_checks.EXERCISES``, which ``exercises.is_blank``
compares). The grader and every command show it in the current language
(``MINIMEGATRON_LANG``): the hint becomes the exercise's hint in ``i18n``.
This lookup joins the exercises (classroom/) and the texts (i18n/), so it
lives here, above both: i18n imports nothing of the package.
"""
import re

from minimegatron import i18n
from minimegatron.classroom.exercise_checks import EXERCISES    # plain data: imports nothing


def blank_message(message):
    """(exercise id or None, text): a blank block's "Exercise X: <English hint>" with the hint
    in the current language (any other message comes back as it is)."""
    match = re.match(r"Exercise (\d+\.\d+): (.*)", message, re.DOTALL)
    if not match:
        return None, message
    ex_id, hint = match.groups()
    exercise = next((ex for ex in EXERCISES if ex.id == ex_id), None)
    if exercise is not None and hint == exercise.hint:
        message = i18n.text("grader.exercise_hint", id=ex_id,
                            hint=i18n.exercise_text(exercise, "hint"))
    return ex_id, message
