"""A fleet key is declared once, on the spec field it fills (#34): the key tables are read off the specs' fields, and
every key is used on the way to the template or the plan."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from ecs_gpu_sharing.core import fleet
from ecs_gpu_sharing.core.allocation import AllocationNote, Evidence
from ecs_gpu_sharing.core.file_key import inline_keys, key, keys_of
from ecs_gpu_sharing.core.fleet import keys

from conftest import REPO

# (key table, the spec whose fields declare it)
TABLES = [
    (keys.TOP, fleet.FleetSpec),
    (keys.CAPACITY, fleet.CapacitySpec),
    (keys.SERVICE, fleet.ServiceSpec),
    (keys.LOAD_BALANCER, fleet.LoadBalancerSpec),
    (keys.SIDECAR, fleet.SidecarSpec),
    (keys.METRIC, fleet.MetricTarget),
    (keys.STATEMENT, fleet.Statement),
    (keys.ALLOCATION, AllocationNote),
    (keys.EVIDENCE, Evidence),
]


def test_a_key_is_declared_once_on_the_field_it_fills() -> None:
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Metric:
        name: str  # no key: the table's own name
        target: int = key(int, True, "the value per task", low=1)

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Spec:
        source: str
        images: tuple[str, ...] = key(list, True, "the images", name="image", items=str)
        metric: Metric | None = key(dict, False, "a metric", table=Metric)
        evidence: Evidence | None = inline_keys(Evidence, field_default=None)

    table = keys_of(Spec)
    assert [k.name for k in table[:2]] == ["image", "metric"]
    assert [k.attribute for k in table[:2]] == ["images", "metric"]  # spelled unlike its field: the field fills it
    assert table[1].table is not None and [k.name for k in table[1].table] == ["target"]
    assert [k.name for k in table[2:]] == [k.name for k in keys.EVIDENCE]  # inline: in the parent's table
    # What the parser builds is the spec itself: a spec without key fields has no keys, and no table to drift from.
    assert keys_of(Metric)[0].low == 1 and keys_of(fleet.EcrImage) == ()


def _used_attributes() -> set[str]:
    """Attributes read anywhere a spec is carried on: the app's stacks, the plan's builder, the fleet model's own
    derivations, and the CLI."""
    files = [
        *(REPO / "stacks").glob("*.py"),
        REPO / "constructs/ecs_gpu_sharing/core/plan_inputs.py",
        REPO / "constructs/ecs_gpu_sharing/core/fleet/model.py",
        REPO / "constructs/ecs_gpu_sharing/core/fleet/service_spec.py",
        REPO / "constructs/ecs_gpu_sharing/cli.py",
        REPO / "constructs/ecs_gpu_sharing/core/right_size.py",
        # an allocation note's and its evidence's figures: read by the planner, the rules and the plan's report
        *(REPO / "constructs/ecs_gpu_sharing/core/planner").glob("*.py"),
        REPO / "constructs/ecs_gpu_sharing/core/rules/plan_rules.py",
        REPO / "constructs/ecs_gpu_sharing/core/plan_report.py",
    ]
    return {
        node.attr
        for path in files
        for node in ast.walk(ast.parse(Path(path).read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute)
    }


@pytest.mark.parametrize(("table", "spec"), TABLES, ids=lambda v: getattr(v, "__name__", ""))
def test_every_key_is_used_on_the_way_to_the_template_or_the_plan(table: tuple[fleet.Key, ...], spec: type) -> None:
    used = _used_attributes()
    unused = [k.name for k in table if k.attribute not in used]
    assert unused == [], f"keys of {spec.__name__} that nothing reads: {unused}"


def test_a_spec_is_built_from_its_table_as_each_key_read_in_turn_would_build_it() -> None:
    """``tables._build`` reads each table's layout once: the file's values (a list as a tuple), the given ones over
    them, and each key left out at its default, a table's being a new one each spec: the spec its keys read one by one
    make. A table where two keys fill one attribute is refused (read in the file's order, one would hide the other)."""
    from ecs_gpu_sharing.core.fleet.tables import _build

    def read_in_turn(cls: type, table: tuple[fleet.Key, ...], values: dict[str, object], **given: object) -> object:
        out = dict(given)
        for k in table:
            if k.attribute not in out:
                value = values.get(k.name, k.empty)
                out[k.attribute] = tuple(value) if isinstance(value, list) else value
        return cls(**out)

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Spec:
        name: str
        tags: dict[str, str] = key(dict, False, "tags")
        ports: tuple[int, ...] = key(list, False, "ports", default=[80])
        size: int = key(int, False, "size", default=4)

    table = keys_of(Spec)
    for values in ({}, {"ports": [1, 2]}, {"size": 9, "tags": {"a": "b"}, "unknown": 1}):
        assert _build(Spec, table, values, name="x") == read_in_turn(Spec, table, values, name="x")
    first, second = _build(Spec, table, {}, name="a"), _build(Spec, table, {}, name="b")
    assert first.tags == {} and first.tags is not second.tags and first.ports == (80,)
    assert _build(Spec, table, {"size": 9}, name="x", size=3).size == 3
    twice = (*table, dataclasses.replace(table[0], name="labels", field=table[0].attribute))
    with pytest.raises(TypeError, match="two keys fill one attribute"):
        _build(Spec, twice, {"labels": {"c": "d"}}, name="x")
