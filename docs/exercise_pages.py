"""MkDocs hook: the exercise pages of exercises/, on the site in both languages.

The exercise texts live beside the code they grade (exercises/N.M.md, and the Korean
exercises/ko/N.M.md), because `minimegatron exercises make` copies that folder into every
student's copy. The site shows the same files, not copies, through symbolic links that
follow mkdocs-static-i18n's suffix rule:

    docs/exercises/N.M.md     -> ../../exercises/N.M.md      (English, /exercises/N.M/)
    docs/exercises/N.M.ko.md  -> ../../exercises/ko/N.M.md   (Korean, /ko/exercises/N.M/)

tests/test_docs_i18n.py checks that every exercise has both links. This hook drops the
line at the top of each page that links to the other language (`한국어: [ko/N.M.md](...)`,
`English: [../N.M.md](...)`): on the site the language switch does that job, and the
link's target (a path in the repository) is no page of the site.
"""
import re

OTHER_LANGUAGE = re.compile(r"^(한국어: \[ko/[\d.]+md\]\(ko/[\d.]+md\)|"
                            r"English: \[\.\./[\d.]+md\]\(\.\./[\d.]+md\))\n\n?", re.M)


def site_text(markdown):
    """An exercise page's Markdown as the site shows it: without the other language's link."""
    return OTHER_LANGUAGE.sub("", markdown, count=1)


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri.startswith("exercises/"):
        return site_text(markdown)
    return markdown
