"""Tests for reports/escaping.py: nothing from config or logs becomes markup, a link or a formula."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from capplan.reports.escaping import MarkdownSafe, html_escape, md_escape, spreadsheet_text

ATTACKS = ["[link](javascript:alert(2))", "![img](http://evil.example/x.png)", "<script>alert(1)</script>",
           "**bold** _em_ `code`", "a|b", "# heading", "line\nbreak"]


@pytest.mark.parametrize(("text", "expected"), [
    ("[link](javascript:alert(2))", "\\[link\\](javascript:alert(2))"),
    ("![img](http://evil)", "\\!\\[img\\](http://evil)"),
    ("<script>", "&lt;script&gt;"),
    ("a|b", "a\\|b"),
    ("# not a heading", "\\# not a heading"),
    ("x\ny", "x y"),
    ("R&D", "R&amp;D"),
    ("llama-3.1-70b", "llama-3.1-70b"),
])
def test_md_escape_worked_examples(text, expected):
    assert md_escape(text) == expected


@given(st.text())
def test_md_escape_leaves_no_unescaped_markdown_opener(text):
    out = md_escape(text)
    assert "\n" not in out and "<" not in out and ">" not in out
    # every [ ] ! | ` * _ is preceded by an odd run of backslashes
    for i, ch in enumerate(out):
        if ch in "[]!|`*_":
            run = len(out[:i]) - len(out[:i].rstrip("\\"))
            assert run % 2 == 1, (text, out)


def test_markdown_safe_is_not_escaped_again():
    assert md_escape(MarkdownSafe("| a |")) == "| a |"


def test_html_escape_makes_tags_text():
    assert str(html_escape('<img src=x onerror="a">')) == "&lt;img src=x onerror=&#34;a&#34;&gt;"


@pytest.mark.parametrize("text", ['=HYPERLINK("http://evil.example","m")', "+1", "-2+3", "@SUM(A1)", "\t=1"])
def test_spreadsheet_text_neutralises_formulas(text):
    assert spreadsheet_text(text) == "'" + text


@pytest.mark.parametrize("value", [-1.5, 3, 0.0, "2026-12", "H100-SXM-80GB", None])
def test_spreadsheet_text_keeps_numbers_and_plain_strings(value):
    assert spreadsheet_text(value) == value
