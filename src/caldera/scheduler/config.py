"""Scheduler configuration in Volcano's format (`actions`, `tiers` of plugins with arguments).

```yaml
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false       # switch one extension point off for this plugin
  - name: conformance
- plugins:
  - name: drf
  - name: binpack
    arguments: {binpack.weight: 10}
configurations:                    # per-action arguments
- name: enqueue
  arguments: {inqueue-timeout: 600}
```
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from caldera.core.errors import FieldError, ValidationError
from caldera.core.loading import load_yaml

ACTIONS = ("enqueue", "allocate", "preempt", "reclaim", "backfill")
PLUGINS = (
    "priority",
    "gang",
    "conformance",
    "drf",
    "proportion",
    "capacity",
    "overcommit",
    "predicates",
    "nodeorder",
    "binpack",
    "task-topology",
    "sla",
    "fifo",
    "las",
    "srtf",
    "consolidate",
    "reservation",
)

# The built-in configuration, used when no --policy or --scheduler-config is given (embedded cluster,
# Kubernetes controller, simulator): the shipped caldera-default policy, read from its file so the two
# never differ. It has the lowest average JCT of every non-oracle policy in every part of the trace study
# with costs on (docs/policies.md, "Why caldera-default is the built-in default"). Volcano's own
# configuration is one flag away (`--policy volcano-default`), and a Volcano manifest runs unchanged
# under either.
DEFAULT_POLICY = "caldera-default"
DEFAULT_CONFIG = (
    resources.files("caldera.scheduler").joinpath("policies", f"{DEFAULT_POLICY}.yaml").read_text(encoding="utf-8")
)

# The built-in configuration until caldera-default replaced it: Volcano's shape (enqueue, drf, proportion
# without borrowing) with preempt and reclaim. Tests and benchmarks that pin its behaviour name it, and
# `--scheduler-config` takes the same text from a file.
VOLCANO_SHAPE_CONFIG = """
actions: "enqueue, allocate, preempt, reclaim, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
  - name: conformance
- plugins:
  - name: drf
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
"""


@dataclass(frozen=True, slots=True)
class PluginOption:
    name: str
    arguments: Mapping[str, object] = field(default_factory=dict)
    switches: Mapping[str, bool] = field(default_factory=dict)  # enableXxx flags as written

    def enabled(self, flag: str) -> bool:
        return not flag or self.switches.get(flag, True)


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    actions: tuple[str, ...]
    tiers: tuple[tuple[PluginOption, ...], ...]
    action_arguments: Mapping[str, Mapping[str, object]] = field(default_factory=dict)

    def plugin_names(self) -> list[str]:
        return [p.name for tier in self.tiers for p in tier]

    def action_arg(self, action: str, key: str, default: float) -> float:
        v = self.action_arguments.get(action, {}).get(key, default)
        return float(v) if isinstance(v, int | float | str) and not isinstance(v, bool) else default


def default_config() -> SchedulerConfig:
    """The built-in configuration: the caldera-default policy."""
    return parse_config(DEFAULT_CONFIG, f"policy {DEFAULT_POLICY}")


def volcano_shape_config() -> SchedulerConfig:
    """The built-in configuration before caldera-default (VOLCANO_SHAPE_CONFIG)."""
    return parse_config(VOLCANO_SHAPE_CONFIG, "<volcano shape>")


def parse_config(text: str, source: str) -> SchedulerConfig:
    try:
        doc = load_yaml(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise ValidationError([FieldError("", f"{where}not valid YAML")], source) from None
    if not isinstance(doc, dict):
        raise ValidationError([FieldError("", "must be a mapping with actions and tiers")], source)
    return config_from_dict(doc, source)


def config_from_dict(doc: Mapping[str, Any], source: str = "") -> SchedulerConfig:
    errors: list[FieldError] = []
    for key in doc:
        if key not in ("actions", "tiers", "configurations"):
            errors.append(FieldError(str(key), "unknown field (expected actions, tiers, configurations)"))
    raw_actions = doc.get("actions", "")
    if isinstance(raw_actions, list):
        actions = [str(a).strip() for a in raw_actions]
    elif isinstance(raw_actions, str):
        actions = [a.strip() for a in raw_actions.split(",") if a.strip()]
    else:
        errors.append(FieldError("actions", "must be a comma-separated string"))
        actions = []
    if not actions and not errors:
        errors.append(FieldError("actions", "at least one action is required"))
    for a in actions:
        if a not in ACTIONS:
            errors.append(FieldError("actions", f"unknown action {a!r} (known: {', '.join(ACTIONS)})"))
    tiers: list[tuple[PluginOption, ...]] = []
    raw_tiers = doc.get("tiers", [])
    if not isinstance(raw_tiers, list):
        errors.append(FieldError("tiers", "must be a list of {plugins: [...]}"))
        raw_tiers = []
    seen: set[str] = set()
    for i, tier in enumerate(raw_tiers):
        plugins = tier.get("plugins") if isinstance(tier, dict) else None
        if not isinstance(plugins, list):
            errors.append(FieldError(f"tiers[{i}].plugins", "must be a list of plugins"))
            continue
        options: list[PluginOption] = []
        for j, p in enumerate(plugins):
            path = f"tiers[{i}].plugins[{j}]"
            option = _plugin_option(p, path, errors)
            if option is None:
                continue
            if option.name in seen:
                errors.append(FieldError(f"{path}.name", f"plugin {option.name!r} appears twice"))
            seen.add(option.name)
            options.append(option)
        tiers.append(tuple(options))
    if "proportion" in seen and "capacity" in seen:
        errors.append(FieldError("tiers", "proportion and capacity both set queue shares; use one"))
    action_args: dict[str, Mapping[str, object]] = {}
    raw_configurations = doc.get("configurations") or []
    if not isinstance(raw_configurations, list):
        errors.append(FieldError("configurations", "must be a list of {name, arguments}"))
        raw_configurations = []
    for i, c in enumerate(raw_configurations):
        if not isinstance(c, dict) or "name" not in c:
            errors.append(FieldError(f"configurations[{i}]", "must be {name, arguments}"))
            continue
        args = c.get("arguments") or {}
        if not isinstance(args, dict):
            errors.append(FieldError(f"configurations[{i}].arguments", "must be a mapping"))
            continue
        action_args[str(c["name"])] = dict(args)
    if errors:
        raise ValidationError(errors, source)
    return SchedulerConfig(tuple(actions), tuple(tiers), action_args)


def _plugin_option(p: object, path: str, errors: list[FieldError]) -> PluginOption | None:
    if not isinstance(p, dict) or not isinstance(p.get("name"), str):
        errors.append(FieldError(f"{path}.name", "a plugin needs a name"))
        return None
    name = p["name"]
    if name not in PLUGINS:
        errors.append(FieldError(f"{path}.name", f"unknown plugin {name!r} (known: {', '.join(PLUGINS)})"))
        return None
    switches: dict[str, bool] = {}
    arguments: dict[str, object] = {}
    for key, value in p.items():
        if key == "name":
            continue
        if key == "arguments":
            if not isinstance(value, dict):
                errors.append(FieldError(f"{path}.arguments", "must be a mapping"))
            else:
                arguments = {str(k): v for k, v in value.items()}
        elif key.startswith(("enable", "enabled")):
            if not isinstance(value, bool):
                errors.append(FieldError(f"{path}.{key}", "must be true or false"))
            else:
                switches[key] = value
        else:
            errors.append(FieldError(f"{path}.{key}", "unknown field (expected name, arguments, enable...)"))
    return PluginOption(name, arguments, switches)
