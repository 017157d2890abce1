"""Turning the text of a file into data, fast: `json` for JSON files, libyaml's C loader for YAML where installed.

PyYAML's pure-Python loader reads about 1 MB/s, which made loading a 6,400-job
workload most of a simulation's time. libyaml's loader (`yaml.CSafeLoader`, in
PyYAML's wheels) builds the same Python data from the same YAML, and `json`
reads a JSON file (what programs write) a hundred times faster again. Errors
are one line with the line and column of the problem; the caller names the file.
"""

from __future__ import annotations

import json
from pathlib import PurePath

import yaml

from caldera.core.errors import FieldError, ValidationError

# libyaml's loader when PyYAML was built with it (its wheels are), else the pure-Python one: same results.
SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> object:
    """One YAML document, as `yaml.safe_load` reads it (yaml.YAMLError if it is not YAML)."""
    return yaml.load(text, Loader=SafeLoader)


def yaml_problem(e: yaml.YAMLError) -> str:
    """`line L, column C: not valid YAML (problem)` for a YAML error."""
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    problem = getattr(e, "problem", None) or getattr(e, "context", None) or "syntax error"
    return f"{where}not valid YAML ({problem})"


def is_json(path: str) -> bool:
    return PurePath(path).suffix.lower() == ".json"


def load_data(text: str, path: str) -> object:
    """The document in `text`, read from the file `path`: JSON if its name ends in .json, else YAML.

    ValidationError (naming `path`, the line and column) if it does not parse."""
    if is_json(path):
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            rule = f"line {e.lineno}, column {e.colno}: not valid JSON ({e.msg})"
            raise ValidationError([FieldError("", rule)], path) from None
    try:
        return load_yaml(text)
    except yaml.YAMLError as e:
        raise ValidationError([FieldError("", yaml_problem(e))], path) from None
