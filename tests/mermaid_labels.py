"""A Mermaid diagram split into its graph and its labels (tests/test_docs_i18n.py).

A Korean page draws the same diagram as its English twin with Korean words: the graph (node
ids, edges and their arrows, subgraphs, directions, classes) is identical, only the labels
differ. So ``graph_and_labels`` masks every label of a ``flowchart`` with LABEL and returns
the masked text (the graph, compared as it is) and the labels in order:

- a quoted string: ``x["x (2,2)"]``, ``f(["g: all-reduce"])``, ``-- "text" -->``,
  ``|"dy/dy = 1"|``, ``subgraph S0["pipeline stage 0"]``;
- an unquoted node label: ``a1[root: broadcast W]``, ``cmp{max abs diff}``;
- an unquoted edge label: ``-->|all-gather W_k|``.

``untranslated`` pairs the two label lists and names each English prose label (two or more
lower-case English words: "every rank holds", not "x (2,2)" or "rank 2") whose Korean
counterpart has no Hangul.
"""
import re

LABEL = "\u00a7"                                     # the mask: a character no diagram uses
HANGUL = re.compile("[\uac00-\ud7a3]")
# one pass, left to right: a quoted label, an unquoted edge label |text|, or an unquoted node
# label right after its id: a1[text], cmp{text}, a1(text)
TOKEN = re.compile(r'"(?P<quoted>[^"\n]*)"|\|(?P<edge>[^|"\n]+)\|'
                   r'|(?<=\w)\[(?P<box>[^\]"\n]+)\]|(?<=\w)\{(?P<rhombus>[^}"\n]+)\}'
                   r'|(?<=\w)\((?P<round>[^()\["\n]+)\)')
WORD = re.compile(r"\b[a-z]{3,}\b")


def graph_and_labels(body):
    """(the diagram with each label replaced by LABEL, [its labels, in reading order])."""
    labels = []

    def mask(match):
        kind, text, at = match.lastgroup, match.group(0), match.start()
        labels.append(match.group(kind))
        return text[:match.start(kind) - at] + LABEL + text[match.end(kind) - at:]

    graph = TOKEN.sub(mask, body)
    graph = "\n".join(line.rstrip() for line in graph.strip().split("\n"))
    return graph, labels


def is_prose(label):
    """Two or more lower-case English words of 3+ letters, once the notes' hyphenated terms
    (all-reduce, reduce-scatter), folder names (comm/) and code (requires_grad, W_k) are
    left out: "every rank holds" is prose, "g: all-reduce", "x (2,2)" and "rank 2" are not."""
    words = re.sub(r"\w+(?:-\w+)+|\w+/|\w*[_.]\w*", " ", label.replace("<br/>", " "))
    return len(WORD.findall(words)) >= 2


def untranslated(english_labels, korean_labels):
    """[(English label, Korean label)] where the English is prose and the Korean has no
    Hangul; a diagram whose labels have no Hangul at all is untranslated as a whole."""
    pairs = list(zip(english_labels, korean_labels))
    missing = [(en, ko) for en, ko in pairs if is_prose(en) and not HANGUL.search(ko)]
    if not any(HANGUL.search(ko) for ko in korean_labels):
        missing = missing or [("(the whole diagram)", "no Hangul in any label")]
    return missing
