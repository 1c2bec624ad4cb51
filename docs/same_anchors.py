"""MkDocs hook: a Korean page's headings keep the anchors of its English twin.

Other pages link into a page by heading anchor (`memory.md#3-activations`). The anchor is
made from the heading's words, so a translated heading would get another one, and every
link into it from a page shown in English (a page with no Korean twin falls back to the
English text under /ko/) would break. So, for page.ko.md, this hook gives the n-th heading
the id of the n-th heading of page.md (tests/test_docs_i18n.py holds that both pages have
the same headings, in number and levels). A heading that sets its own id (`{ #name }`)
keeps it. The language switch then lands on the same section in both languages.
"""
import os
import re

FENCE = re.compile(r"^( *)(```+|~~~+)[^\n]*\n.*?^\1\2[ \t]*$", re.M | re.S)
HEADING = re.compile(r"^(#{1,6}) +(.+?)[ \t]*$", re.M)
OWN_ID = re.compile(r"\{ *#([\w-]+)[^}]*\}$")


def heading_ids(markdown, extensions=("toc", "attr_list", "tables", "pymdownx.superfences"),
                configs=None):
    """The anchor of every heading of a page, in order, as Python-Markdown's toc makes them
    (rendered with the site's own Markdown extensions when the hook runs)."""
    import markdown as python_markdown
    md = python_markdown.Markdown(extensions=list(extensions), extension_configs=configs or {})
    md.convert(markdown)

    def walk(tokens):
        for token in tokens:
            yield token["id"]
            yield from walk(token["children"])
    return list(walk(md.toc_tokens))


def with_ids(korean, english, **markdown_config):
    """The Korean page with each heading given the English heading's anchor."""
    ids = iter(heading_ids(english, **markdown_config))
    fences = [(m.start(), m.end()) for m in FENCE.finditer(korean)]

    def tag(match):
        if any(a <= match.start() < b for a, b in fences):
            return match.group(0)
        anchor = next(ids, None)
        if anchor is None or OWN_ID.search(match.group(2)):
            return match.group(0)
        return f"{match.group(1)} {match.group(2)} {{ #{anchor} }}"

    return HEADING.sub(tag, korean)


def on_page_markdown(markdown, page, config, files):
    path = page.file.abs_src_path or ""
    if path.endswith(".ko.md"):
        twin = path[:-len(".ko.md")] + ".md"
        if os.path.isfile(twin):
            with open(twin, encoding="utf-8") as file:
                return with_ids(markdown, file.read(),
                                extensions=config.markdown_extensions,
                                configs=config.mdx_configs)
    return markdown
