"""Facts the pages and messages state about the code, held against the code.

- A flag named after a tutorial (``tutorials/08_3d_parallel.py --dp 2 ...``), in any message
  of the i18n catalogue, any docs page, README or exercise page, is one the tutorial's
  ``--help`` lists (sample's help once named a ``--save`` tutorial 08 never had).
- The Korean twins of the pages on the comm checks (notes_comm, running) keep every code
  span of the English page (notes_comm.ko.md once lacked the all_to_allv counts check and
  the agreement example, running.ko.md their two rows).
"""
import functools
import glob
import os
import re

from minimegatron import i18n

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMED = re.compile(r"tutorials/(\d\d_\w+)\.py((?:\s+--[\w-]+(?:[ =][^\s`\-][^\s`]*)?)+)")
FENCE = re.compile(r"```.*?```", re.S)
SPAN = re.compile(r"`([^`]+)`")


def named_flags(text):
    """[(tutorial, flag)] for each flag written after a tutorial's path in ``text``."""
    return [(m.group(1), flag) for m in NAMED.finditer(text)
            for flag in re.findall(r"--([\w-]+)", m.group(2))]


@functools.lru_cache(maxsize=None)
def flags_of(tutorial):
    """The long options the tutorial's parser adds, read from its source (``--help`` would
    start a process per tutorial): each ``"--name"`` literal, and the names of a loop of
    ``add_argument(f"--{flag}")`` over ``(("dp", 2), ...)`` pairs, as tutorial 08 writes."""
    with open(os.path.join(ROOT, "tutorials", tutorial + ".py"), encoding="utf-8") as f:
        source = f.read()
    flags = set(re.findall(r'"--([\w-]+)"', source))
    if 'add_argument(f"--{flag}"' in source:
        flags |= set(re.findall(r'\("([\w-]+)", \d+\)', source))
    return flags


def test_every_flag_named_after_a_tutorial_is_one_it_has():
    texts = {f"{lang}:{key}": value for lang, catalog in i18n.CATALOGS.items()
             for key, value in catalog.items() if isinstance(value, str)}
    for path in (glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)
                 + glob.glob(os.path.join(ROOT, "exercises", "**", "*.md"), recursive=True)
                 + [os.path.join(ROOT, "README.md")]):
        with open(path, encoding="utf-8") as f:
            texts[os.path.relpath(path, ROOT)] = f.read()
    named = [(where, tutorial, flag) for where, text in texts.items()
             for tutorial, flag in named_flags(text)]
    assert len(named) >= 10, named                          # the pages do name some
    assert [n for n in named if n[2] not in flags_of(n[1])] == []
    planted = named_flags("a file written by save_checkpoint (tutorials/08_3d_parallel.py "
                          "--save writes one)")
    assert planted == [("08_3d_parallel", "save")] and "save" not in flags_of("08_3d_parallel")


def spans(text):
    return {" ".join(s.split()) for s in SPAN.findall(FENCE.sub("", text))}


def test_the_korean_pages_on_the_comm_checks_keep_every_code_span():
    for page in ("notes_comm", "running"):
        with open(os.path.join(ROOT, "docs", page + ".md"), encoding="utf-8") as f:
            english = spans(f.read())
        with open(os.path.join(ROOT, "docs", page + ".ko.md"), encoding="utf-8") as f:
            korean = spans(f.read())
        assert english - korean == set(), page
