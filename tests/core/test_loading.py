"""Reading files into data: `json` for .json files, libyaml's loader for YAML; errors name line and column."""

from __future__ import annotations

import pytest
import yaml

from caldera.core.errors import ValidationError
from caldera.core.loading import SafeLoader, load_data, load_yaml


def test_yaml_is_read_with_libyaml_where_pyyaml_has_it() -> None:
    if not yaml.__with_libyaml__:
        pytest.skip("this PyYAML was built without libyaml: the pure-Python loader is used")
    assert SafeLoader is yaml.CSafeLoader


def test_libyaml_reads_what_the_python_loader_reads() -> None:
    text = "a: [1, 2.5, '3', yes, null, 2024-01-02]\nb: {c: 1e3, d: 0x10, e: ~}\n"
    assert load_yaml(text) == yaml.load(text, Loader=yaml.SafeLoader)


@pytest.mark.parametrize(
    ("name", "text", "fragment"),
    [
        pytest.param("w.json", '{"jobs": [1,]}', "line 1, column 13: not valid JSON", id="json"),
        pytest.param("w.yaml", "jobs: [\n", "line 2, column 1: not valid YAML", id="yaml"),
        pytest.param("w.yml", "a: b: c\n", "line 1, column 5: not valid YAML", id="yml"),
    ],
)
def test_a_syntax_error_names_the_file_line_and_column(name: str, text: str, fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        load_data(text, f"/tmp/{name}")
    assert str(info.value).startswith(f"/tmp/{name}: {fragment}")


def test_a_json_file_is_json_and_anything_else_yaml() -> None:
    assert load_data('{"a": [1, 2]}', "W.JSON") == {"a": [1, 2]}
    assert load_data("a: [1, 2]\n", "w.yaml") == {"a": [1, 2]}
    assert load_data('{"a": 1}', "w.txt") == {"a": 1}  # JSON is YAML too
