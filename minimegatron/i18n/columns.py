"""A table cell padded to a width as a terminal shows it: a Hangul syllable takes two columns.

    fit("weights", 8)  == " weights"      (the same as f"{'weights':>8}")
    fit("가중치", 8)    == "  가중치"       (3 syllables = 6 columns, 2 spaces)

So a table whose headers and row names come from the catalogs keeps its columns under
MINIMEGATRON_LANG=ko, and prints the English byte for byte.
"""
import unicodedata


def width(text):
    """Columns ``text`` takes in a terminal (East Asian wide and full-width characters: 2)."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def fit(text, size, align=">"):
    """``text`` padded with spaces to ``size`` columns, right (">") or left ("<") aligned."""
    pad = " " * max(size - width(text), 0)
    return pad + text if align == ">" else text + pad
