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


def test_tenth_names_the_tenth_a_value_lies_in():
    from mha_lib.chapters.tables import tenth

    assert [tenth(v) for v in (0.0, 0.244, 0.246, 0.3, 0.999, 1.0)] == [
        "0.0-0.1", "0.2-0.3", "0.2-0.3", "0.3-0.4", "0.9-1.0", "0.9-1.0"]
    for bad in (-0.01, 1.01, float("nan"), "0.5", True):
        with pytest.raises(ValueError, match="value must be a number in"):
            tenth(bad)
