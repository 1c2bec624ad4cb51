"""Korean pages draw their diagrams and figures in Korean.

- A Mermaid diagram of a .ko.md is its English twin's graph with Korean labels:
  test_docs_i18n.drift compares the graphs (tests/mermaid_labels.py masks the labels) and
  names each English prose label left untranslated. Here: a planted change of each kind fails.
- A figure whose text matters (docs/make_figures.py: KOREAN_FIGURES) has a Korean version
  docs/img/NAME.ko.png, drawn by ``make_figures.py --lang ko``; each Korean page shows it where
  the English page shows NAME.png. Cheap: no figure is drawn here (test_docs.py redraws them).
"""
import os

import pytest

from test_docs_i18n import DOCS, FENCE, HANGUL, IMAGE, drift, load_hook, pairs, read

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


# Figures ---------------------------------------------------------------------------------

def make_figures():
    """docs/make_figures.py as a module (its lists; nothing is drawn)."""
    return load_hook("make_figures")


def figure_problems(page_text, korean_pngs):
    """What a Korean page's images get wrong: NAME.png shown where NAME.ko.png exists, or a
    .ko.png that does not exist."""
    problems = []
    for a, b in IMAGE.findall(page_text):
        src = a or b
        name = os.path.basename(src)
        if name.endswith(".ko.png") and name not in korean_pngs:
            problems.append(f"{src}: no such Korean figure")
        elif name.endswith(".png") and name[:-4] + ".ko.png" in korean_pngs:
            problems.append(f"{src}: show {name[:-4]}.ko.png, its Korean version")
    return problems


def figure_list_problems(pngs, module):
    """What the files ``pngs`` of docs/img/ get wrong against make_figures' lists."""
    english = {n[:-4] for n in pngs if n.endswith(".png") and not n.endswith(".ko.png")}
    korean = {n[:-7] for n in pngs if n.endswith(".ko.png")}
    problems = []
    if set(module.KOREAN) | set(module.TERMS_ONLY) != english:
        problems.append("each figure of docs/img/ is in make_figures.KOREAN (words) or "
                        "TERMS_ONLY (terms)")
    if set(module.KOREAN) & set(module.TERMS_ONLY):
        problems.append("a figure in both lists")
    if korean != set(module.KOREAN):
        problems.append(f"Korean figures missing or extra: {korean ^ set(module.KOREAN)} "
                        "(run python docs/make_figures.py --lang ko)")
    return problems


def test_every_figure_with_words_has_a_korean_version_and_the_others_only_terms():
    module = make_figures()
    pngs = set(os.listdir(IMG))
    assert figure_list_problems(pngs, module) == []
    # every pipeline timeline and trace has its Korean version now: none is terms only
    assert len(module.KOREAN) >= 19 and module.TERMS_ONLY == ()
    for planted in ("timeline_zbv.ko.png", "pipeline_trace_gpipe_M4.ko.png"):
        assert figure_list_problems(pngs - {planted}, module), planted   # the check can fail


def test_each_korean_page_shows_the_korean_figure():
    korean_pngs = {n for n in os.listdir(IMG) if n.endswith(".ko.png")}
    shown = set()
    for english, korean in pairs():
        text = read(korean)
        assert figure_problems(text, korean_pngs) == [], korean
        shown |= {os.path.basename(a or b) for a, b in IMAGE.findall(text)}
        assert ".ko.png" not in read(english), f"{english} shows a Korean figure"
    assert korean_pngs <= shown, f"Korean figures no Korean page shows: {korean_pngs - shown}"
    planted = "![bubble](img/timeline_1f1b.png)\n![x](img/timeline_1f1b_M2.ko.png)"
    assert len(figure_problems(planted, korean_pngs)) == 2               # the check can fail


# figure texts made of the notes' terms alone, which Korean writes in English too
TERMS_ONLY_TEXTS = {"figure.loss_scale.x", "figure.moe.step", "figure.precision.e5m2",
                    "figure.precision.e4m3", "figure.sp.tp_sp", "figure.timeline.forward",
                    "figure.timeline.backward", "figure.timeline.comm", "figure.timeline.plain"}


def test_the_figure_texts_exist_in_both_languages_and_the_korean_is_korean():
    from minimegatron.i18n import en_figures, ko_figures
    from test_i18n import fields
    assert sorted(en_figures.MESSAGES) == sorted(ko_figures.MESSAGES)
    for key, english in en_figures.MESSAGES.items():
        korean = ko_figures.MESSAGES[key]
        assert fields(english) == fields(korean), key
        assert HANGUL.search(korean) or key in TERMS_ONLY_TEXTS, key


def test_without_a_korean_font_make_figures_names_the_font_it_needs(monkeypatch, capsys,
                                                                   tmp_path):
    from minimegatron.tools import fonts
    monkeypatch.setattr(fonts, "korean_font", lambda: None)
    with pytest.raises(fonts.NoKoreanFont, match="NanumGothic.*fonts-nanum"):
        fonts.korean_rc()
    assert make_figures().main(["--lang", "ko", "--out", str(tmp_path)]) == 1
    error = capsys.readouterr().err
    assert "Korean font" in error and "NanumGothic" in error and "apt-get install" in error
    assert os.listdir(tmp_path) == []                               # nothing drawn


def test_a_hangul_label_without_its_glyphs_is_an_error_not_boxes():
    pytest.importorskip("matplotlib")
    import io

    import matplotlib
    from matplotlib.figure import Figure

    from minimegatron.tools import fonts

    def draw(rc):
        with matplotlib.rc_context(rc), fonts.no_tofu():     # a text takes the font it is made in
            fig = Figure(figsize=(1, 1), dpi=20)
            fig.text(0.5, 0.5, "바")
            fig.savefig(io.BytesIO(), format="png")
    with pytest.raises(UserWarning, match="missing from"):
        draw({"font.family": ["DejaVu Sans"]})
    if fonts.korean_font():
        draw(fonts.korean_rc())


# The timeline command draws in its reader's language ---------------------------------------

@pytest.fixture
def drawn(monkeypatch):
    """``minimegatron timeline``'s drawing call, caught (nothing drawn: cheap)."""
    from minimegatron.commands import timeline
    calls = []
    monkeypatch.setattr(timeline, "draw_timeline", lambda *args: calls.append(args))
    return lambda *argv: (timeline.main(["--schedule", "gpipe", *argv]), calls.pop())[1]


def test_the_timeline_draws_in_the_readers_language(drawn, monkeypatch, capsys, tmp_path):
    pytest.importorskip("matplotlib")
    from minimegatron.tools import fonts
    out = str(tmp_path / "t.png")
    rows, path, title, row_name, xlabel, lang = drawn("--out", out)
    assert (title, xlabel, lang) == ("gpipe: K=4 stages, M=8 micro-batches | bubble 27.3% "
                                     "(formula 3/11) | peak activations per stage 8, 8, 8, 8",
                                     "time (units of t_forward)", "en")
    monkeypatch.setenv("MINIMEGATRON_LANG", "ko")
    if fonts.korean_font():
        _, _, title, row_name, xlabel, lang = drawn("--out", out)
        assert lang == "ko" and HANGUL.search(title) and HANGUL.search(xlabel)
        assert "bubble 27.3%" in title and row_name == "stage"       # the notes' terms stay
    capsys.readouterr()
    monkeypatch.setattr(fonts, "korean_font", lambda: None)         # no Korean font: English
    _, _, title, _, xlabel, lang = drawn("--out", out)
    assert lang == "en" and not HANGUL.search(title + xlabel)
    warned = [line for line in capsys.readouterr().err.splitlines() if "fonts-nanum" in line]
    assert len(warned) == 1 and "NanumGothic" in warned[0] and HANGUL.search(warned[0])
