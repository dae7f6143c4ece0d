"""Agent text in Markdown reports: shown as written, never rendered as HTML or breaking a table or code span."""

from eval_pipeline.reports.markdown import cell, code, plain


def test_html_in_agent_text_is_escaped():
    assert plain('<img src=x onerror=alert(1)> & "q"') == '&lt;img src=x onerror=alert(1)&gt; &amp; "q"'
    assert cell("a|b\n<script>") == "a\\|b &lt;script&gt;"
    assert cell(None) == "–"


def test_code_spans_outlast_the_backticks_inside():
    assert code("ep-1") == "`ep-1`"
    assert code("a`b") == "``a`b``"
    assert code("`x`\n<b>") == "`` `x` <b> ``"  # inside code, HTML is text already
