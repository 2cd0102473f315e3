"""Escaping for every text a report writes: HTML, Markdown, and spreadsheet cells.

Strings reach a report from the configuration (SLO names, model and tenant lists)
and from the logs (model and tenant names). None of them may become markup, a
link, an image or a formula where they land:

- HTML: :func:`html_escape` (markupsafe), which the jinja2 HTML environment applies
  to every ``{{ }}`` by autoescaping;
- Markdown: :func:`md_escape`, which the Markdown environment applies to every
  ``{{ }}`` (jinja2 ``finalize``) unless the value is :class:`MarkdownSafe`
  (tables and links the renderer built itself);
- CSV and XLSX: :func:`spreadsheet_text` prefixes ``'`` to a string that a
  spreadsheet would read as a formula (OWASP "CSV injection"); numbers are left as numbers.
"""

from __future__ import annotations

import re
from typing import Any

from markupsafe import Markup, escape

#: First characters that make a spreadsheet cell a formula (``=``, ``+``, ``-``, ``@``; tab and CR too).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")

# Markdown punctuation that opens a link, an image, emphasis, code or a table cell anywhere in a line,
# and what opens a heading, a list or a quote at its start; CommonMark lets any ASCII punctuation be
# backslash-escaped.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]|!~])")
_MD_LINE_START = re.compile(r"^([#+\-=])")


class MarkdownSafe(str):
    """Markdown the renderer built itself (a table, an image link): not escaped again."""


def html_escape(value: Any) -> Markup:
    """``value`` as HTML text: ``<``, ``>``, ``&`` and quotes become entities."""
    return escape(value)


def md_escape(value: Any) -> str:
    """``value`` as literal Markdown text, safe in a table cell, a heading or an image's alt text.

    Markdown punctuation is backslash-escaped (no link, image, emphasis or code span
    survives), ``&``, ``<`` and ``>`` become entities (no raw HTML) and line breaks become
    spaces (a table row stays one line).
    """
    if isinstance(value, MarkdownSafe):
        return value
    text = " ".join(str(value).splitlines()) if value is not None else ""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_LINE_START.sub(r"\\\1", _MD_SPECIAL.sub(r"\\\1", text))


def spreadsheet_text(value: Any) -> Any:
    """A cell value that a spreadsheet shows as written: a formula-like string gets a leading ``'``.

    Numbers, dates and strings that do not start with one of :data:`FORMULA_PREFIXES` are returned unchanged.
    """
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value
