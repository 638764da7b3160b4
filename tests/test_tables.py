import pytest
import torch

from mha_chapters.tables import format_table


def test_format_table_aligns_columns_under_a_rule():
    table = format_table([("input", (2, 10, 100)), ("transpose_qkv", tuple(torch.Size([10, 10, 20])))],
                         headers=("step", "shape"))
    assert table.splitlines() == [
        "step           shape",
        "-------------  ------------",
        "input          (2, 10, 100)",
        "transpose_qkv  (10, 10, 20)",
    ]


def test_format_table_writes_one_element_shapes_with_a_comma():
    assert format_table([((4,),)], headers=("shape",)).splitlines()[-1] == "(4,)"


def test_format_table_rejects_rows_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"row 2 has 1 cells but there are 2 headers"):
        format_table([("a", 1), ("b",)], headers=("name", "value"))


def test_tenth_names_the_tenth_a_value_lies_in():
    from mha_chapters.tables import tenth

    assert [tenth(v) for v in (0.0, 0.244, 0.246, 0.3, 0.999, 1.0)] == [
        "0.0-0.1", "0.2-0.3", "0.2-0.3", "0.3-0.4", "0.9-1.0", "0.9-1.0"]
    for bad in (-0.01, 1.01, float("nan"), "0.5", True):
        with pytest.raises(ValueError, match="value must be a number in"):
            tenth(bad)


def test_a_table_is_its_text_and_shows_in_a_notebook_as_an_html_table():
    """Issue 41, item 2: a browser lays out the columns, whatever width a Chinese character has in its code font."""
    from IPython.core.formatters import DisplayFormatter

    from mha_chapters.i18n import set_language

    set_language("zh_CN")
    try:
        table = format_table([("MHA <all>", 524_288, (2, 3)), ("GQA", "1.000 GiB", "x")], ["kind", "shape", "value"])
    finally:
        set_language("en")
    shown, _ = DisplayFormatter().format(table)
    assert shown["text/plain"] == str(table) == table  # print and nbval read the aligned text
    assert table.headers[0] != "kind" and table.headers[2] == "值"  # the headers in the reader's language
    html = shown["text/html"]
    assert html.count("<tr>") == 3 and html.count("<th ") == 3 and html.count("<td ") == 6
    assert "MHA &lt;all&gt;" in html and "<all>" not in html  # cells are text, never markup
    # numbers (with a unit) right-aligned, words and shapes left-aligned
    assert '<td style="text-align: right">524288</td>' in html
    assert '<td style="text-align: right">1.000 GiB</td>' in html
    assert '<td style="text-align: left">(2, 3)</td>' in html
