"""A font matplotlib can draw Korean with, or a clear word of which one to install.

matplotlib's default font (DejaVu Sans) has no Hangul: a Korean label drawn with it comes out
as empty boxes ("tofu") and a warning. ``korean_font`` looks among the fonts matplotlib knows
(``font_manager``) for one of KOREAN_FONTS; ``korean_rc`` gives the rcParams that draw with
it, DejaVu Sans behind it for the glyphs it lacks, or raises NoKoreanFont, whose one line
says what to install. Inside ``no_tofu`` a glyph no font has is an error, not a box.

    with matplotlib.rc_context(korean_rc()), no_tofu():
        fig.savefig("figure.ko.png")

A command that draws in the reader's language asks ``drawing_language`` first: Korean when a
font has Hangul, else English and one line on stderr naming the font to install.
"""
import contextlib
import sys
import warnings

KOREAN_FONTS = ("NanumGothic", "NanumBarunGothic", "Noto Sans CJK KR", "Noto Sans KR",
                "Source Han Sans K", "Malgun Gothic", "Apple SD Gothic Neo", "AppleGothic",
                "UnDotum", "Noto Sans CJK JP")


class NoKoreanFont(RuntimeError):
    """No font with Hangul is known to matplotlib."""


def korean_font():
    """The first of KOREAN_FONTS that matplotlib knows, or None."""
    from matplotlib import font_manager
    known = {font.name for font in font_manager.fontManager.ttflist}
    return next((name for name in KOREAN_FONTS if name in known), None)


def korean_rc():
    """rcParams drawing Hangul with a Korean font; NoKoreanFont when there is none."""
    font = korean_font()
    if font is None:
        raise NoKoreanFont(
            "drawing Korean text needs a Korean font, one of " + ", ".join(KOREAN_FONTS[:4])
            + " (Debian/Ubuntu: sudo apt-get install fonts-nanum; then rm -rf "
            "~/.cache/matplotlib so matplotlib sees it); none is known to matplotlib")
    return {"font.family": [font, "DejaVu Sans"]}


def drawing_language(lang):
    """The language a figure asked for in ``lang`` is drawn in: ``lang``, or "en" when it is
    "ko" and no Korean font is known (then one line on stderr says so and what to install).
    Without matplotlib: ``lang`` (the drawing itself says what to install)."""
    if lang != "ko":
        return lang
    try:
        if korean_font():
            return lang
    except ImportError:
        return lang
    from minimegatron.i18n import text_in
    print(text_in(lang, "figure.no_korean_font", fonts=", ".join(KOREAN_FONTS[:4])),
          file=sys.stderr)
    return "en"


@contextlib.contextmanager
def drawn_in(lang):
    """Inside: matplotlib draws ``lang``'s texts; Korean with its font and no tofu, English
    as matplotlib's defaults (so an English figure's bytes do not change)."""
    if lang != "ko":
        yield
        return
    import matplotlib
    with matplotlib.rc_context(korean_rc()), no_tofu():
        yield


@contextlib.contextmanager
def no_tofu():
    """matplotlib's "Glyph ... missing from font(s)" warning raised as an error inside."""
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Glyph .* missing from")
        yield
