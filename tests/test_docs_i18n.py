"""The site in two languages: every Korean page keeps the structure of its English twin.

The site is built by mkdocs-static-i18n with the suffix structure: docs/page.ko.md is the
Korean twin of docs/page.md (and docs/exercises/N.M.ko.md, a link to exercises/ko/N.M.md, of
the English exercise page). A translation changes the words, never what the reader runs,
reads off a formula or clicks. So for every pair this test asserts:

- the same headings: their number and levels, in order;
- the same fenced code blocks, in order, with identical contents; a Mermaid diagram the same
  graph (node ids, edges, arrows, subgraphs) with its labels in Korean (tests/mermaid_labels.py);
- the same figures (image sources), in order: NAME.ko.png stands for NAME.png, the figure drawn
  with Korean text (tests/test_docs_ko_figures.py);
- the same display maths ($$...$$), in order, and the same set of inline formulas ($...$);
- the same link targets (as a multiset: a sentence may put its links in another order).

It also checks the pieces around the pairs: every exercise page is on the site in both
languages, each Korean page is written in Korean (not a copy of the English), the pages the
Korean class reads first are all there, the teaching pages' gradebook is built from the
real exercise list, exercises' rank counts are those of the package, no page names a .py
file that does not exist, and a synthetic drift of each kind fails the comparison.
"""
import collections
import os
import re

import pytest

from mermaid_labels import graph_and_labels, untranslated

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
EXERCISES = os.path.join(ROOT, "exercises")
HANGUL = re.compile("[\uac00-\ud7a3]")

# The pages a Korean class reads (the notes' own topics first, then the tools around them):
# each must have a Korean twin. A page not listed would fall back to English under /ko/;
# today every page of the nav is listed, the performance page included.
KOREAN_FIRST = ["index", "data_parallel", "zero", "pipeline", "tensor_parallel", "megatron",
                "grid3d", "memory", "collectives", "autodiff", "running", "exercises",
                "teaching", "glossary", "interleaved", "zero_bubble", "sequence_parallel",
                "context_parallel", "moe", "threed_run", "verification", "checkpoints",
                "mixed_precision", "where", "architecture", "notes_comm", "performance",
                "reliability", "explorer"]


def read(path):
    with open(path, encoding="utf-8") as file:
        return file.read()


def pairs():
    """[(english path, korean path)] for every Korean page of the site."""
    found = []
    for folder in (DOCS, os.path.join(DOCS, "exercises")):
        for name in sorted(os.listdir(folder)):
            if name.endswith(".ko.md"):
                found.append((os.path.join(folder, name[:-6] + ".md"),
                              os.path.join(folder, name)))
    return found


FENCE = re.compile(r"^( *)(```+|~~~+)([^\n]*)\n(.*?)^\1\2[ \t]*$", re.M | re.S)
HEADING = re.compile(r"^(#{1,6}) +\S", re.M)
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)[^)]*\)|<img[^>]+src=\"([^\"]+)\"")
LINK = re.compile(r"(?<!!)\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)[^)]*\)")
DISPLAY_MATH = re.compile(r"\$\$(.*?)\$\$", re.S)
INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\s)([^$]+?)(?<!\s)\$")
CODE_SPAN = re.compile(r"`+[^`\n]*`+")


# A Korean page shows what the program prints under MINIMEGATRON_LANG=ko: a ```text block right
# after this line is that output, where the English twin shows the English output. Only a block
# a test regenerates may carry it (test_docs_ko_outputs.py's SOURCES says what prints each).
OUTPUT_MARK = "<!-- 출력: MINIMEGATRON_LANG=ko -->"
KOREAN_OUTPUT = "(what the program prints under MINIMEGATRON_LANG=ko)"


def korean_outputs(text):
    """The bodies of the ```text blocks that follow OUTPUT_MARK in ``text``."""
    return [m.group(4) for m in FENCE.finditer(text)
            if m.group(3).strip() == "text" and text[:m.start()].endswith(OUTPUT_MARK + "\n")]


def structure(text):
    """What a translation must keep: headings, code, figures, maths and link targets (a
    Korean output sample, marked, stands for the English twin's block at its place)."""
    outputs = korean_outputs(text)
    code, labels = [], []
    for _, _, lang, body in FENCE.findall(text):
        if lang.strip() == "mermaid":                 # the graph; its labels are compared apart
            body, words = graph_and_labels(body)
            labels.append(words)
        code.append((lang.strip(), KOREAN_OUTPUT if body in outputs and lang.strip() == "text"
                     else body))
    text = FENCE.sub("", text)
    display = [" ".join(m.split()) for m in DISPLAY_MATH.findall(text)]
    text = DISPLAY_MATH.sub("", text)
    bare = CODE_SPAN.sub("", text)                      # `$x` in code is no maths
    bare = re.sub(r"(?<!\n)\n(?!\n)", " ", bare)         # a formula may cross a line break
    return {
        "headings": [len(h) for h in HEADING.findall(text)],
        "code blocks": code,
        "figures": [re.sub(r"\.ko\.png$", ".png", a or b) for a, b in IMAGE.findall(text)],
        "display maths": display,
        "inline maths": sorted({" ".join(m.split()) for m in INLINE_MATH.findall(bare)}),
        "link targets": sorted(collections.Counter(LINK.findall(IMAGE.sub("", text))).items()),
        "diagram labels": labels,
    }


def drift(english, korean):
    """{kind: (english, korean)} for every kind of structure the two texts differ in; a
    diagram's labels differ by design, but its English prose must be Korean."""
    a, b = structure(english), structure(korean)
    labels = list(zip(a.pop("diagram labels"), b.pop("diagram labels")))
    for i, block in enumerate(b["code blocks"]):      # the English output at the same place
        if block == ("text", KOREAN_OUTPUT) and i < len(a["code blocks"]) \
                and a["code blocks"][i][0] in ("text", ""):
            a["code blocks"][i] = block
    found = {kind: (a[kind], b[kind]) for kind in a if a[kind] != b[kind]}
    english_left = [pair for en, ko in labels for pair in untranslated(en, ko)]
    if english_left and "code blocks" not in found:
        found["diagram labels"] = tuple(zip(*english_left))
    return found


def test_only_a_regenerated_block_is_a_korean_output_sample():
    from test_docs_ko_outputs import SOURCES
    marked = {os.path.basename(k): len(korean_outputs(read(k))) for _, k in pairs()}
    assert {page: n for page, n in marked.items() if n} == \
        {page: len(sources) for page, sources in SOURCES.items()}
    english = "Run it:\n\n```text\nFAIL  1.3\n```\n\n```python\nx = 1\n```\n"
    korean = english.replace("```text\nFAIL", OUTPUT_MARK + "\n```text\n실패")
    assert drift(english, korean) == {}                           # the output may differ
    unmarked = english.replace("FAIL", "실패")
    assert set(drift(english, unmarked)) == {"code blocks"}       # unmarked: it may not
    python = korean.replace("x = 1", "x = 2")
    assert set(drift(english, python)) == {"code blocks"}         # nor may any other block


def exercise_hook():
    """docs/exercise_pages.py, the MkDocs hook that shows the exercise pages on the site."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("exercise_pages",
                                                  os.path.join(DOCS, "exercise_pages.py"))
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook


def shown(path):
    """A page's Markdown as the site shows it (an exercise page without its language link)."""
    text = read(path)
    if os.path.dirname(path) == os.path.join(DOCS, "exercises"):
        text = exercise_hook().site_text(text)
    return text


@pytest.mark.parametrize("english, korean", pairs(),
                         ids=[os.path.relpath(k, DOCS) for _, k in pairs()])
def test_the_korean_page_keeps_the_structure_of_its_english_twin(english, korean):
    assert os.path.isfile(english), f"{korean} has no English twin {english}"
    differences = drift(shown(english), shown(korean))
    report = "\n".join(f"  {kind}:\n    en: {en}\n    ko: {ko}"
                       for kind, (en, ko) in differences.items())
    assert not differences, f"{os.path.relpath(korean, ROOT)} drifted from its twin:\n{report}"


def english_only_lines(text):
    """Prose lines with four or more English words and no Hangul (code and maths left out)."""
    text = DISPLAY_MATH.sub("", FENCE.sub("", text))
    lines = [line for line in text.split("\n")
             if line.strip() and not line.startswith(("    ", "|---", "!["))]
    words = re.compile(r"\b[a-z]{3,}\b")
    return lines, [line for line in lines if not HANGUL.search(line) and
                   len(words.findall(re.sub(r"`[^`]*`|\$[^$]*\$", "", line))) >= 4]


def test_every_korean_page_is_written_in_korean():
    for _, korean in pairs():
        lines, english = english_only_lines(read(korean))
        assert len(english) <= 0.1 * len(lines), \
            f"{korean}: {len(english)} of {len(lines)} lines are English only: {english[:5]}"
    lines, english = english_only_lines(ENGLISH)                 # the check can fail
    assert len(english) > 0.1 * len(lines)


def test_the_pages_a_korean_class_reads_first_are_in_korean():
    korean = {os.path.basename(k)[:-6] for _, k in pairs() if os.path.dirname(k) == DOCS}
    missing = [name for name in KOREAN_FIRST if name not in korean]
    assert not missing, f"no Korean page (docs/NAME.ko.md) for: {missing}"
    assert not [n for n in os.listdir(DOCS) if n.endswith("_ko.md")], \
        "a Korean page is page.ko.md beside page.md (the i18n plugin's suffix rule)"


def exercise_ids():
    names = [n[:-3] for n in os.listdir(EXERCISES) if re.match(r"\d+\.\d+\.md$", n)]
    return sorted(names, key=lambda n: tuple(int(p) for p in n.split(".")))


def test_every_exercise_page_is_on_the_site_in_both_languages():
    ids = exercise_ids()
    assert len(ids) >= 25
    nav = read(os.path.join(ROOT, "mkdocs.yml"))
    for ex in ids:
        for link, target in ((f"{ex}.md", f"{ex}.md"), (f"{ex}.ko.md", f"ko/{ex}.md")):
            path = os.path.join(DOCS, "exercises", link)
            assert os.path.islink(path), f"docs/exercises/{link} is not a link to the exercise"
            assert os.path.realpath(path) == os.path.realpath(os.path.join(EXERCISES, target))
        assert f"- exercises/{ex}.md" in nav, f"exercise {ex} is not in mkdocs.yml's nav"


def test_the_hook_drops_only_the_other_languages_link():
    hook = exercise_hook()
    for ex in exercise_ids():
        for path, mark in ((os.path.join(EXERCISES, ex + ".md"), "한국어: [ko/"),
                           (os.path.join(EXERCISES, "ko", ex + ".md"), "English: [../")):
            text = read(path)
            shown = hook.site_text(text)
            assert mark in text and mark not in shown, path
            assert len(text) - len(shown) < 60, f"{path}: the hook dropped more than the link"


# The facts the class checks first -------------------------------------------------------

def example_book():
    """The teaching pages' example class, over the real exercise list: ana passes all, ben
    misses one point and has five blocks to do, chae hangs in 3.1 after groups 1 and 2."""
    from minimegatron.classroom.exercise_checks import EXERCISES as LIST
    ids = [ex.id for ex in LIST]
    ben = {"3.3": "FAIL", "5.2": "TODO", "8.1": "TODO", "8.2": "TODO", "9.2": "TODO",
           "10.2": "TODO"}
    chae = {ex: "PASS" if ex.startswith(("1.", "2.")) else "TODO" for ex in ids}
    chae["3.1"] = "HANG"
    results = {"ana": {ex: "PASS" for ex in ids},
               "ben": {ex: ben.get(ex, "PASS") for ex in ids}, "chae": chae}
    return {name: {ex: {"result": result} for ex, result in cells.items()}
            for name, cells in results.items()}


def test_the_gradebook_example_is_the_real_table_of_every_exercise():
    """teaching.md and teaching.ko.md show what `grade --class` prints for 25 exercises."""
    from minimegatron.classroom.gradebook import table
    book = example_book()
    want = table(book)
    ben = sum(c["result"] == "PASS" for c in book["ben"].values())
    total = len(book["ben"])
    assert total == len(exercise_ids()), "the exercise pages and the package disagree"
    for page, progress in (("teaching.md", f"ben: {ben} of {total} pass"),
                           ("teaching.ko.md", f"ben: {total}개 중 {ben}개 통과")):
        text = read(os.path.join(DOCS, page))
        assert "```text\n" + want + "\n```" in text, \
            f"{page}: the example gradebook is not `grade --class`'s table of every " \
            f"exercise; it should read:\n{want}"
        assert progress in text, f"{page}: the progress line should say `{progress}`"


def grading_ranks():
    """{exercise id: ranks it is graded on}, read from the package."""
    from minimegatron.classroom.exercise_checks import EXERCISES as LIST
    return {ex.id: ex.nprocs for ex in LIST}


RANKS_EN = re.compile(r"(?:on|of) (\d+) ranks|(\d+) ranks? \(|on one rank|one process")
RANKS_KO = re.compile(r"(\d+)개의?\s+rank|rank\s+(\d+)개|(\d+) rank|한 프로세스")


def said_ranks(text, pattern):
    """The rank counts a page's "where" paragraph names."""
    where = re.search(r"^\*\*(?:Where|위치):\*\*.*?(?:\n\n|\Z)", text, re.M | re.S)
    assert where, "no **Where:** / **위치:** paragraph"
    counts = set()
    for match in pattern.finditer(where.group(0)):
        number = next((g for g in match.groups() if g), "1")
        counts.add(int(number))
    return counts


def test_each_exercise_page_names_the_ranks_the_grader_uses():
    ranks = grading_ranks()
    for ex in exercise_ids():
        en = said_ranks(read(os.path.join(EXERCISES, ex + ".md")), RANKS_EN)
        ko = said_ranks(read(os.path.join(EXERCISES, "ko", ex + ".md")), RANKS_KO)
        assert en <= {ranks[ex]} and ko <= {ranks[ex]}, \
            f"exercise {ex} is graded on {ranks[ex]} ranks; the pages say en {en}, ko {ko}"
        if ranks[ex] > 1:
            assert en and ko, f"exercise {ex}: a page does not say it runs on {ranks[ex]} ranks"


def test_the_exercises_page_gives_one_rank_count_per_exercise():
    ranks = grading_ranks()
    for page in ("exercises.md", "exercises.ko.md"):
        path = os.path.join(DOCS, page)
        if not os.path.isfile(path):
            continue
        rows = re.findall(r"^\| *\[?(\d+\.\d+)\]?(?:\([^)]*\))? *\|(.*)$", read(path), re.M)
        assert len(rows) == len(ranks), f"{page}: {len(rows)} rows, {len(ranks)} exercises"
        for ex, rest in rows:
            cells = [c.strip() for c in rest.strip().strip("|").split("|")]
            assert str(ranks[ex]) in cells, f"{page} {ex}: graded on {ranks[ex]} ranks: {cells}"


# names that stand for the reader's own file, not one of the repository's
PLACEHOLDER = r"tutorials/NN_|(script|train|sitecustomize|conftest)\.py$"
PY_FILE = re.compile(r"(?<![\w/.-])([\w/.-]*\w\.py)\b")


def repository_py_files():
    names, paths = set(), set()
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("site", "artifacts")]
        for name in files:
            if name.endswith(".py"):
                names.add(name)
                paths.add(os.path.relpath(os.path.join(folder, name), ROOT))
    return names, paths


def test_no_page_names_a_python_file_that_does_not_exist():
    names, paths = repository_py_files()
    pages = [os.path.join(DOCS, n) for n in os.listdir(DOCS) if n.endswith(".md")]
    pages.append(os.path.join(ROOT, "README.md"))
    missing = {}
    for page in pages:
        for named in PY_FILE.findall(read(page)):
            known = (named in names if "/" not in named else
                     named in paths or os.path.join("minimegatron", named) in paths)
            if not known and not re.match(PLACEHOLDER, named):
                missing.setdefault(os.path.basename(page), set()).add(named)
    assert not missing, f"pages name .py files that do not exist (renamed?): {missing}"


# The comparison can fail: one synthetic drift of each kind -------------------------------

ENGLISH = """# Title

Text with $a + b$ and a [link](glossary.md).

## Section

```bash
minimegatron run -n 4 tutorials/05_pipeline_parallel.py
```

$$
T = (p - 1)(t_f + t_b)
$$

![timeline](img/timeline_1f1b.png)
"""

KOREAN = """# 제목

$a + b$가 있는 글과 [링크](glossary.md).

## 절

```bash
minimegatron run -n 4 tutorials/05_pipeline_parallel.py
```

$$
T = (p - 1)(t_f + t_b)
$$

![timeline](img/timeline_1f1b.png)
"""


@pytest.mark.parametrize("kind, old, new", [
    ("headings", "## 절", "### 절"),
    ("headings", "## 절\n", "절\n"),
    ("code blocks", "-n 4 tutorials", "-n 2 tutorials"),
    ("figures", "img/timeline_1f1b.png", "img/timeline_gpipe.png"),
    ("display maths", "(p - 1)", "(p + 1)"),
    ("inline maths", "$a + b$", "$a - b$"),
    ("link targets", "(glossary.md)", "(glossary.md#zero)"),
])
def test_a_synthetic_drift_fails(kind, old, new):
    assert drift(ENGLISH, KOREAN) == {}, "the faithful twin must pass"
    assert old in KOREAN
    assert kind in drift(ENGLISH, KOREAN.replace(old, new, 1))


# Anchors: a Korean page's sections keep the English anchors ----------------------------

def load_hook(name):
    import importlib.util
    spec = importlib.util.spec_from_file_location(name, os.path.join(DOCS, name + ".py"))
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return hook


def markdown_ids(text):
    """The heading ids Python-Markdown itself gives a page (the site's extensions)."""
    import markdown
    md = markdown.Markdown(extensions=["toc", "attr_list", "md_in_html", "tables",
                                       "pymdownx.superfences", "pymdownx.arithmatex"],
                           extension_configs={"pymdownx.arithmatex": {"generic": True}})
    md.convert(text)

    def walk(tokens):
        for token in tokens:
            yield token["id"]
            yield from walk(token["children"])
    return list(walk(md.toc_tokens))


@pytest.mark.parametrize("english, korean", pairs(),
                         ids=[os.path.relpath(k, DOCS) for _, k in pairs()])
def test_the_korean_headings_get_the_english_anchors(english, korean):
    hook = load_hook("same_anchors")
    want = markdown_ids(shown(english))
    assert markdown_ids(hook.with_ids(shown(korean), shown(english))) == want


def test_without_the_hook_a_translated_heading_changes_its_anchor():
    hook = load_hook("same_anchors")
    assert markdown_ids(KOREAN) != markdown_ids(ENGLISH)
    assert markdown_ids(hook.with_ids(KOREAN, ENGLISH)) == markdown_ids(ENGLISH) == \
        ["title", "section"]
