"""MkDocs hook: no <link rel="alternate" hreflang> in a page's head; the header's switch stays.

mkdocs-static-i18n sets Material's `extra.alternate` per page (the same page in the other
language), and Material writes each one into the page's head as well as into the language
switch. For every head link Material's script fetches `sitemap.xml` beside the link's
target, i.e. /pipeline/sitemap.xml and /ko/pipeline/sitemap.xml: files no site has, so
every page logged two failed loads (tests/test_docs_browser.py counts them). The switch's
own links (`.md-select a[hreflang]`) already go to the same page in the other language, so
the head links are dropped; nothing else reads them on an offline site.
"""
import re

HEAD_ALTERNATE = re.compile(r'\s*<link rel="alternate" href="[^"]*" hreflang="[\w-]+">')


def without_head_alternates(html):
    head, sep, body = html.partition("</head>")
    return HEAD_ALTERNATE.sub("", head) + sep + body


def on_post_page(output, page, config):
    return without_head_alternates(output)
