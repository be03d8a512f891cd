"""The fleet file's key table is the one declaration of a key: each key fills one attribute of its spec, each attribute
comes from one key, and every key is used on the way to the template or the plan."""

from __future__ import annotations

import ast
import dataclasses
import tomllib
from pathlib import Path

import pytest

from ecs_gpu_sharing.core import fleet
from ecs_gpu_sharing.core.fleet import keys, service_checks

from conftest import REPO

# (key table, the spec it fills, the attributes the parser derives rather than reads from one key)
TABLES = [
    (keys.TOP, fleet.FleetSpec, {"source"}),
    (keys.CAPACITY, fleet.CapacitySpec, {"name", "facts"}),
    (keys.SERVICE, fleet.ServiceSpec, {"name"}),
    (keys.LOAD_BALANCER, fleet.LoadBalancerSpec, {"name"}),
    (keys.SIDECAR, fleet.SidecarSpec, set()),
    (keys.METRIC, fleet.MetricTarget, set()),
    (keys.STATEMENT, fleet.Statement, set()),
]


@pytest.mark.parametrize(("table", "spec", "derived"), TABLES, ids=lambda v: getattr(v, "__name__", ""))
def test_each_key_fills_one_attribute_and_each_attribute_comes_from_a_key(
    table: tuple[fleet.Key, ...], spec: type, derived: set[str]
) -> None:
    attributes = [k.attribute for k in table]
    assert len(attributes) == len(set(attributes))
    assert set(attributes) | derived == {f.name for f in dataclasses.fields(spec)}


def test_a_key_added_to_the_table_alone_is_not_silently_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    added = fleet.Key("warmup_seconds", int, False, "seconds the model warms up", low=0)
    monkeypatch.setattr(service_checks, "SERVICE", (*keys.SERVICE, added))
    doc = tomllib.loads((REPO / "fleet.toml").read_text())
    doc["service"]["embedder"]["warmup_seconds"] = 30
    with pytest.raises(TypeError, match=r"fleet key table and ServiceSpec disagree: .*'warmup_seconds'"):
        fleet.parse(doc, source="fleet.toml")


def _used_attributes() -> set[str]:
    """Attributes read anywhere a spec is carried on: the app's stacks, the plan's builder, the fleet model's own
    derivations, and the CLI."""
    files = [
        *(REPO / "stacks").glob("*.py"),
        REPO / "constructs/ecs_gpu_sharing/core/plan_inputs.py",
        REPO / "constructs/ecs_gpu_sharing/core/fleet/model.py",
        REPO / "constructs/ecs_gpu_sharing/cli.py",
        REPO / "constructs/ecs_gpu_sharing/core/right_size.py",
    ]
    return {
        node.attr
        for path in files
        for node in ast.walk(ast.parse(Path(path).read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute)
    }


@pytest.mark.parametrize(("table", "spec", "derived"), TABLES, ids=lambda v: getattr(v, "__name__", ""))
def test_every_key_is_used_on_the_way_to_the_template_or_the_plan(
    table: tuple[fleet.Key, ...], spec: type, derived: set[str]
) -> None:
    used = _used_attributes()
    unused = [k.name for k in table if k.attribute not in used]
    assert unused == [], f"keys of {spec.__name__} that nothing reads: {unused}"
