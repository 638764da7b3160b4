import pytest
import torch

from mha_lib.chapters.tables import format_table


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
