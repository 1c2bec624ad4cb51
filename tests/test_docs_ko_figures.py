"""Korean pages draw their diagrams and figures in Korean.

- A Mermaid diagram of a .ko.md is its English twin's graph with Korean labels:
  test_docs_i18n.drift compares the graphs (tests/mermaid_labels.py masks the labels) and
  names each English prose label left untranslated. Here: a planted change of each kind fails.
- A figure whose text matters (docs/make_figures.py: KOREAN_FIGURES) has a Korean version
  docs/img/NAME.ko.png, drawn by ``make_figures.py --lang ko``; each Korean page shows it where
  the English page shows NAME.png. Cheap: no figure is drawn here (test_docs.py redraws them).
"""
import importlib.util
import os
import re

import pytest

from test_docs_i18n import DOCS, FENCE, HANGUL, IMAGE, drift, pairs, read

IMG = os.path.join(DOCS, "img")

ENGLISH = """# Page

```mermaid
flowchart LR
    x["each rank holds<br/>x_r"] -->|"reduce-scatter"| y["rank 0 holds Σa"]
    y -.-> z[every rank: optimizer step]
```
"""

KOREAN = """# 쪽

```mermaid
flowchart LR
    x["rank마다<br/>x_r를 가짐"] -->|"reduce-scatter"| y["rank 0은 Σa를 가짐"]
    y -.-> z[모든 rank: optimizer step]
```
"""


def test_the_korean_diagram_is_the_same_graph_with_korean_labels():
    assert drift(ENGLISH, KOREAN) == {}


@pytest.mark.parametrize("old, new", [
    ("-.-> z", "--> z"),                        # another arrow
    ('|"reduce-scatter"| y', '|"reduce-scatter"| z'),   # an edge to another node
    ("    y -.-> z[", "    x -.-> z["),         # an edge from another node
    ('y["rank 0은', 'w["rank 0은'),              # a node renamed
    ("flowchart LR", "flowchart TB"),           # another direction
])
def test_a_changed_graph_fails(old, new):
    assert old in KOREAN
    assert "code blocks" in drift(ENGLISH, KOREAN.replace(old, new, 1))


@pytest.mark.parametrize("old, new", [
    ('"rank마다<br/>x_r를 가짐"', '"each rank holds<br/>x_r"'),   # one prose label left
    ("[모든 rank: optimizer step]", "[every rank: optimizer step]"),   # unquoted too
])
def test_an_english_prose_label_fails(old, new):
    differences = drift(ENGLISH, KOREAN.replace(old, new, 1))
    assert set(differences) == {"diagram labels"}
    english, korean = differences["diagram labels"]
    assert new.strip('"[]') in korean


def test_an_untranslated_diagram_fails():
    untranslated = KOREAN.replace(KOREAN[KOREAN.index("```"):], ENGLISH[ENGLISH.index("```"):])
    assert set(drift(ENGLISH, untranslated)) == {"diagram labels"}
    # no prose in it, and no Hangul either: still untranslated as a whole
    terms = ENGLISH.replace("each rank holds", "x").replace("rank 0 holds", "y") \
        .replace("every rank: optimizer step", "z")
    assert set(drift(terms, terms)) == {"diagram labels"}


def test_every_korean_diagram_has_korean_labels():
    diagrams = 0
    for english, korean in pairs():
        mermaid = [m.group(4) for m in FENCE.finditer(read(korean)) if m.group(3).strip() ==
                   "mermaid"]
        diagrams += len(mermaid)
        for body in mermaid:
            assert HANGUL.search(body), f"{korean}: a diagram with no Korean label"
    assert diagrams >= 10
