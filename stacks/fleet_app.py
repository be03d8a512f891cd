"""Builds the deployable app's stacks from a fleet spec; shared by app.py and the tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

import ecs_gpu_sharing.core.fleet as fleet_file
from ecs_gpu_sharing import FleetPlan, known_regions
from ecs_gpu_sharing.core.fleet import APPLICATION, BRIDGE, FleetSpec, ServiceSpec

from .cluster import ClusterStack
from .layout import (
    SHARD_BUDGET,
    Layout,
    check_priorities,
    check_schemes,
    layout_path,
    plan_layout,
    read_layout,
    write_layout,
)
from .network import NetworkStack
from .nist import AcceptNistFindings
from .observability import ObservabilityStack
from .services import ServicesStack

DEFAULT_FLEET = Path(__file__).resolve().parent.parent / "fleet.toml"


@dataclass
class FleetStacks:
    network: NetworkStack | None  # None when the fleet names an existing VPC
    cluster: ClusterStack
    services: list[ServicesStack] = field(default_factory=list)
    observability: list[ObservabilityStack] = field(default_factory=list)  # dashboards and alarms, with telemetry

    def all(self) -> list[cdk.Stack]:
        return [*([self.network] if self.network else []), self.cluster, *self.services, *self.observability]


def fleet_path(app: cdk.App) -> Path:
    """The fleet file: ``-c fleet=PATH``, else ``fleet.toml`` at the repository root."""
    given = app.node.try_get_context("fleet")
    return Path(given) if given else DEFAULT_FLEET


def build_app(
    app: cdk.App,
    spec: FleetSpec | None = None,
    *,
    layout_file: Path | None = None,
    resource_budget: int = SHARD_BUDGET,
) -> FleetStacks:
    """Adds the fleet's stacks to ``app``: network (unless the fleet names an existing VPC), cluster with
    capacities, and the services in shards of at most ``resource_budget`` counted resources each.

    Shards and ALB rule priorities come from ``layout_file`` and are written back to it when they change; when the
    app reads its own fleet file (no ``spec``), that is the layout file beside it. Without one, they are laid out
    afresh."""
    if spec is None:
        path = fleet_path(app)
        spec = fleet_file.load(path)
        layout_file = layout_file or layout_path(path)
    if spec.region is not None:
        fleet_file.check_region(spec, known_regions())
    prices = spec.prices_path
    if prices is not None and app.node.try_get_context(FleetPlan.PRICES_CONTEXT) is None:
        app.node.set_context(FleetPlan.PRICES_CONTEXT, str(prices))  # the plan files show the fleet's cost
    # cdk-nag's AwsSolutions pack runs at every synth; acknowledgments sit next to the resources they concern.
    # AWS's limits and the rules its services enforce at deploy run on every template too: the fleet plan (which every
    # GPU capacity brings) checks them once the templates are written (core.service_rules).
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    env = cdk.Environment(account=spec.account, region=spec.region) if spec.account else None
    network = None if spec.vpc_id else NetworkStack(app, spec.stack_name("network"), env=env)
    cluster = ClusterStack(
        app,
        spec.stack_name("cluster"),
        vpc=network.vpc if network else None,
        vpc_id=spec.vpc_id,
        capacities=spec.capacities,
        load_balancers=spec.load_balancers,
        service_connect_namespace=spec.service_connect_namespace,
        telemetry=spec.telemetry,
        host_port_routes=[
            (s.load_balancer, s.capacity)
            for s in spec.services.values()
            if s.load_balancer is not None and s.network_mode == BRIDGE
        ],
        task_port_routes=[
            s.load_balancer for s in spec.services.values() if s.load_balancer is not None and s.network_mode != BRIDGE
        ],
        bridge_capacities=[s.capacity for s in spec.services.values() if s.network_mode == BRIDGE],
        bridge_listeners=[s.capacity for s in spec.services.values() if s.network_mode == BRIDGE and s.port],
        env=env,
    )
    stacks = FleetStacks(network=network, cluster=cluster)
    cdk.Aspects.of(app).add(AcceptNistFindings())
    services = list(spec.services.values())
    layout = _layout(app, spec, services, layout_file, resource_budget)
    # Services kept off each other's hosts, and those the expressions name, get fixed ECS service names.
    isolation = spec.host_isolation()
    isolated = set(isolation) | {
        o for expression in isolation.values() for o in spec.services if f":{spec.ecs_service_name(o)})" in expression
    }
    for shard, members in layout.shard_members().items():
        stacks.services.append(
            ServicesStack(
                app,
                spec.stack_name(f"services-{shard}"),
                cluster=cluster.cluster,
                capacities=cluster.capacities,
                load_balancers=cluster.load_balancers,
                priorities=layout.priorities,
                target_groups=layout.targets,
                isolation=isolation,
                service_names={name: spec.ecs_service_name(name) for name in isolated},
                services=[s for s in services if s.name in members],
                proxy_memory_mib=spec.proxy_memory_mib,
                connect_members=cluster.service_connect_members,
                env=env,
            )
        )
    if cluster.telemetry is not None:
        # One dashboard per shard of services (a dashboard holds 500 widgets): for most fleets, one in all.
        # Numbered as the services stack they watch, so an emptied shard does not shift the others.
        for shard, stack in zip(layout.shard_members(), stacks.services, strict=True):
            stacks.observability.append(
                ObservabilityStack(
                    app,
                    spec.stack_name(f"observability-{shard}"),
                    cluster=cluster.cluster,
                    services=dict(stack.services),  # their budgets are read from the plan
                    alarm_topic=cluster.scaling_events,
                    env=env,
                )
            )
    return stacks


def _layout(app: cdk.App, spec: FleetSpec, services: list[ServiceSpec], path: Path | None, budget: int) -> Layout:
    """Each service's shard and ALB priority: kept from the layout file, new services placed, the file updated."""
    balancers = spec.load_balancers.values()
    previous = read_layout(path) if path is not None else None
    facing = {b.name: b.internet_facing for b in balancers}
    check_schemes(previous, facing, path)
    layout = plan_layout(
        services,
        previous,
        application_balancers=frozenset(b.name for b in balancers if b.type == APPLICATION),
        internet_facing=facing,
        service_connect=spec.service_connect_namespace is not None,
        budget=budget,
    )
    check_priorities(layout, services, path)
    if path is not None and write_layout(path, layout):
        cdk.Annotations.of(app).add_info(f"updated {path}: commit it, so the next deploy keeps each service in place")
    return layout
