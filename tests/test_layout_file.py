"""Shards by counted resources, and a layout that edits do not disturb: every other service keeps its stack, its
logical ids, its ECS name and its ALB rule priority when services are inserted, removed or reordered."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest

from ecs_gpu_sharing import FleetSpecError
from ecs_gpu_sharing.core import fleet
from ecs_gpu_sharing.core.quotas import RESOURCES_PER_STACK
from stacks.fleet_app import build_app
from stacks.layout import Layout, plan_layout, read_layout, service_resources, write_layout

from conftest import REPO, new_app

SERVICE = """
[service.{name}]
capacity = "l4"
image = "public.ecr.aws/docker/library/python:3.12-slim"
desired_count = 1
max_tasks = 2
scale_on_requests_per_target = 50
cpu_units = 256
memory_mib = 512
gpu_budget_mib = 512
port = 8080
load_balancer = "{balancer}"
path = ["/{name}/*"]
"""


def wide_fleet_text(count: int, *, first: str | None = None, balancers: int = 1) -> str:
    """A fleet whose every service has an ALB path, request-count scaling and Service Connect."""
    text = 'name = "wide"\nservice_connect_namespace = "wide.internal"\ntelemetry = false\n'
    text += '[capacity.l4]\ninstance_types = ["g6.12xlarge"]\n'
    for b in range(balancers):
        text += f'[load_balancer.lb{b}]\ntype = "application"\n'
    names = ([first] if first else []) + [f"m{i:03d}" for i in range(count)]
    for i, name in enumerate(names):
        text += SERVICE.format(name=name, balancer=f"lb{i % balancers}")
    return text


def _spec(text: str) -> fleet.FleetSpec:
    return fleet.parse(tomllib.loads(text), source="wide.toml")


# --- pure layout ----------------------------------------------------------------------------------------------------


def test_new_services_keep_every_known_service_in_place() -> None:
    spec = _spec(wide_fleet_text(40))
    services = list(spec.services.values())
    first = plan_layout(services, None, application_balancers=frozenset({"lb0"}), service_connect=True, budget=100)
    assert len(first.shard_members()) > 3  # large enough to shard
    edited = _spec(wide_fleet_text(40, first="aaa"))
    moved = list(edited.services.values())
    moved.reverse()  # reordered as well as inserted
    second = plan_layout(moved, first, application_balancers=frozenset({"lb0"}), service_connect=True, budget=100)
    for name in spec.services:
        assert second.shards[name] == first.shards[name]
        assert second.priorities[name] == first.priorities[name]
    assert second.priorities["aaa"] == max(first.priorities.values()) + 10


def test_a_removed_service_frees_its_place_without_moving_others() -> None:
    services = list(_spec(wide_fleet_text(10)).services.values())
    first = plan_layout(services, None, application_balancers=frozenset({"lb0"}), budget=60)
    second = plan_layout(services[1:], first, application_balancers=frozenset({"lb0"}), budget=60)
    assert "m000" not in second.shards
    assert {n: first.shards[n] for n in second.shards} == dict(second.shards)
    assert {n: first.priorities[n] for n in second.priorities} == dict(second.priorities)


def _moved(text: str, service: str, balancer: str) -> str:
    """``text`` with ``service`` routed by ``balancer`` instead."""
    head, tail = text.split(f"[service.{service}]", 1)
    table, rest = tail.split("\n[", 1) if "\n[" in tail else (tail, "")
    table = "\n".join(
        f'load_balancer = "{balancer}"' if line.startswith("load_balancer =") else line for line in table.split("\n")
    )
    return f"{head}[service.{service}]{table}" + (f"\n[{rest}" if rest else "")


def test_a_service_moved_to_another_balancer_gets_a_new_target_group_and_a_free_priority() -> None:
    albs = frozenset({"lb0", "lb1"})
    text = wide_fleet_text(6, balancers=2)  # m000, m002, m004 on lb0; m001, m003, m005 on lb1
    first = plan_layout(list(_spec(text).services.values()), None, application_balancers=albs)
    assert first.balancers["m000"] == "lb0" and first.priorities["m000"] == first.priorities["m001"] == 10
    assert first.targets == {}

    moved = list(_spec(_moved(text, "m000", "lb1")).services.values())
    second = plan_layout(moved, first, application_balancers=albs)
    # A target group serves one load balancer: the moved service's is a new one, its rule a free priority on lb1.
    assert second.balancers["m000"] == "lb1" and second.targets == {"m000": 1}
    assert second.priorities["m000"] == 40  # after lb1's 10, 20, 30
    for name in ("m001", "m002", "m003", "m004", "m005"):
        assert (second.priorities[name], second.balancers[name], second.shards[name]) == (
            first.priorities[name],
            first.balancers[name],
            first.shards[name],
        )
    assert plan_layout(moved, second, application_balancers=albs) == second  # stable once moved
    back = plan_layout(list(_spec(text).services.values()), second, application_balancers=albs)
    assert back.targets == {"m000": 2} and back.priorities["m000"] == 40  # lb0's next, after m002's 20 and m004's 30

    # A layout file written before balancers were recorded: no move is seen, and the balancer is recorded now.
    unknown = Layout(first.shards, first.priorities)
    assert plan_layout(moved, unknown, application_balancers=albs).targets == {}


def test_shards_are_filled_by_counted_resources() -> None:
    spec = _spec(wide_fleet_text(30))
    services = list(spec.services.values())
    each = service_resources(services[0], service_connect=True)
    layout = plan_layout(services, None, application_balancers=frozenset({"lb0"}), service_connect=True, budget=100)
    assert all(len(members) * each <= 100 for members in layout.shard_members().values())
    assert all(len(members) == 100 // each for members in list(layout.shard_members().values())[:-1])


def test_the_layout_file_round_trips_and_is_written_only_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "fleet.layout.json"
    layout = Layout({"a": 1, "b": 2}, {"a": 10}, {"a": "lb0"}, {"a": 2})
    assert write_layout(path, layout) is True
    path.chmod(0o664)
    assert read_layout(path) == layout
    assert write_layout(path, layout) is False
    assert write_layout(path, Layout({"a": 1, "b": 1}, {"a": 10}, {"a": "lb0"}, {"a": 2})) is True
    assert path.stat().st_mode & 0o777 == 0o664  # the mode the team gave it is kept
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not a layout file the fleet app can read"),
        ('{"version": 1, "services": {"a": {"shard": 0}}}', "services.a.shard must be an integer >= 1"),
        ('{"version": 1, "services": {"a": {"shard": 1, "priority": 0}}}', "services.a.priority must be an integer"),
        ('{"version": 9, "services": {}}', "expected version 1"),
        ('{"version": 1, "services": {"a": {"shard": 1, "load_balancer": 3}}}', "services.a.load_balancer must be a"),
        ('{"version": 1, "services": {"a": {"shard": 1, "target_group": -1}}}', "services.a.target_group must be an"),
        (
            '{"version": 1, "services": {}, "load_balancers": {"b": {"internet_facing": 1}}}',
            "load_balancers.b.internet",
        ),
        ('{"version": 1, "services": {}, "load_balancers": []}', "load_balancers must be a table"),
    ],
)
def test_a_malformed_layout_file_is_refused_naming_it(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "fleet.layout.json"
    path.write_text(content)
    with pytest.raises(FleetSpecError, match=message):
        read_layout(path)


def test_the_example_fleets_layout_file_is_committed_and_current() -> None:
    path = REPO / "fleet.layout.json"
    layout = read_layout(path)
    assert layout is not None and set(layout.shards) == set(fleet.load(REPO / "fleet.toml").services)


# --- synthesized ------------------------------------------------------------------------------------------------------


def _synth(text: str, layout_file: Path, budget: int) -> dict[str, Any]:
    app = new_app()
    stacks = build_app(app, _spec(text), layout_file=layout_file, resource_budget=budget)
    counts = resource_counts(stacks)
    assembly = app.synth()
    return {
        "templates": {s.stack_name: assembly.get_stack_artifact(s.artifact_id).template for s in stacks.all()},
        "counts": counts,
    }


def resource_counts(stacks: Any) -> dict[str, int]:
    """CloudFormation resources under each service's scope, as built."""
    return {
        name: sum(isinstance(c, cdk.CfnResource) for c in s.node.find_child(name).node.find_all())
        for s in stacks.services
        for name in s.services
    }


def _service_view(templates: dict[str, Any]) -> dict[str, Any]:
    """Per service: its stack, its resources' logical ids, its ECS service name and its rule priority."""
    out: dict[str, Any] = {}
    for stack, template in templates.items():
        if "-services-" not in stack:
            continue
        for logical_id, resource in template["Resources"].items():
            for name in ("aaa", *(f"m{i:03d}" for i in range(200))):
                if logical_id.startswith(name):
                    entry = out.setdefault(name, {"stack": stack, "ids": set(), "priority": None, "ecs_name": None})
                    entry["ids"].add(logical_id)
                    if resource["Type"] == "AWS::ElasticLoadBalancingV2::ListenerRule":
                        entry["priority"] = resource["Properties"]["Priority"]
                    if resource["Type"] == "AWS::ECS::Service":
                        entry["ecs_name"] = resource["Properties"].get("ServiceName")
    return out


@pytest.fixture(scope="module")
def edit(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("layout") / "wide.layout.json"
    before = _synth(wide_fleet_text(12), path, budget=60)
    after = _synth(wide_fleet_text(12, first="aaa"), path, budget=60)
    return {"before": before, "after": after, "path": path}


def test_inserting_a_service_at_the_top_changes_nothing_about_the_others(edit: dict[str, Any]) -> None:
    before, after = _service_view(edit["before"]["templates"]), _service_view(edit["after"]["templates"])
    assert len({v["stack"] for v in before.values()}) >= 3  # the fleet is sharded
    for name, view in before.items():
        assert after[name] == view, name
    assert "aaa" in after


def test_the_estimate_bounds_each_services_synthesized_resources(edit: dict[str, Any]) -> None:
    spec = _spec(wide_fleet_text(12, first="aaa"))
    for name, count in edit["after"]["counts"].items():
        estimate = service_resources(spec.services[name], service_connect=True)
        assert count <= estimate <= count + 2, (name, count, estimate)


def test_every_stack_stays_under_cloudformations_limit(edit: dict[str, Any]) -> None:
    for template in edit["after"]["templates"].values():
        assert len(template["Resources"]) <= 60 + 1 < RESOURCES_PER_STACK.number
    assert json.loads(edit["path"].read_text())["services"]["aaa"]["shard"] >= 1


def test_a_service_moved_to_another_balancer_is_routed_through_a_new_target_group(tmp_path: Path) -> None:
    path = tmp_path / "wide.layout.json"
    text = wide_fleet_text(4, balancers=2)
    before = _service_view(_synth(text, path, budget=400)["templates"])
    after_templates = _synth(_moved(text, "m000", "lb1"), path, budget=400)["templates"]
    after = _service_view(after_templates)
    for name in ("m001", "m002", "m003"):
        assert after[name] == before[name], name
    # The moved service: a new target group (a new logical id, so CloudFormation makes it before the old goes), and a
    # new rule on lb1's listener at a priority no other rule there holds.
    gone, new = before["m000"]["ids"] - after["m000"]["ids"], after["m000"]["ids"] - before["m000"]["ids"]
    assert [i for i in gone if "Target" in i] and [i for i in new if "Target" in i]
    rules = [
        r["Properties"]
        for t in after_templates.values()
        for r in t["Resources"].values()
        if r["Type"] == "AWS::ElasticLoadBalancingV2::ListenerRule"
    ]
    on_lb1 = [json.dumps(r["ListenerArn"]) for r in rules if r["Priority"] == after["m000"]["priority"]]
    assert len(on_lb1) == 1 and "lb1" in on_lb1[0]


def test_a_balancer_whose_scheme_changes_under_its_name_is_refused_and_a_new_name_passes(tmp_path: Path) -> None:
    path = tmp_path / "wide.layout.json"
    text = wide_fleet_text(2, balancers=2)
    _synth(text, path, budget=400)
    assert json.loads(path.read_text())["load_balancers"] == {
        "lb0": {"internet_facing": False},
        "lb1": {"internet_facing": False},
    }
    public = '[load_balancer.lb1]\ntype = "application"\ninternet_facing = true\nplaintext_reason = "a public demo of open models"\n'
    flipped = text.replace('[load_balancer.lb1]\ntype = "application"\n', public)
    assert flipped != text
    with pytest.raises(FleetSpecError) as refused:
        _synth(flipped, path, budget=400)
    assert str(refused.value) == (
        f"{path}: load_balancer.lb1: internet_facing was false when last synthesized, and is true: CloudFormation "
        "replaces a balancer whose scheme changes (a new DNS name), and the services stacks, whose templates do not "
        "change, would not be deployed again and would keep routing to the old listener; give the balancer a new "
        "name instead (its services move to it through new target groups)"
    )
    # The way through: a new name, its services moved with it.
    renamed = flipped.replace("[load_balancer.lb1]", "[load_balancer.public]").replace(
        'load_balancer = "lb1"', 'load_balancer = "public"'
    )
    after = _service_view(_synth(renamed, path, budget=400)["templates"])
    assert json.loads(path.read_text())["services"]["m001"]["target_group"] == 1
    assert "m001" in after


def test_the_committed_wide_fleets_are_what_the_generator_writes() -> None:
    """tests/fleets/wide.toml and its edit, which the rehearsal deploys: 120 rich services over two ALBs."""
    wide = (REPO / "tests" / "fleets" / "wide.toml").read_text()
    edited = (REPO / "tests" / "fleets" / "wide-edited.toml").read_text()
    assert wide.endswith(wide_fleet_text(120, balancers=2)) and edited.endswith(
        wide_fleet_text(120, first="aaa", balancers=2)
    )
    spec = fleet.load(REPO / "tests" / "fleets" / "wide.toml")
    assert len(spec.services) == 120
    layout = plan_layout(
        list(spec.services.values()), None, application_balancers=frozenset({"lb0", "lb1"}), service_connect=True
    )
    assert len(layout.shard_members()) == 4
