"""Builds the deployable app's stacks from a fleet spec; shared by app.py and the tests."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks

from ecs_gpu_sharing import FleetSpecError
from ecs_gpu_sharing.core import fleet as fleet_file
from ecs_gpu_sharing.core.fleet import FleetSpec
from ecs_gpu_sharing.operations.aws import known_regions

from .cluster import ClusterStack
from .network import NetworkStack
from .nist import AcceptNistFindings
from .observability import ObservabilityStack
from .services import ServicesStack

DEFAULT_FLEET = Path(__file__).resolve().parent.parent / "fleet.toml"
SERVICES_PER_STACK = 40  # about 6 resources each: far below CloudFormation's 500 per stack


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


def build_app(app: cdk.App, spec: FleetSpec | None = None) -> FleetStacks:
    """Adds the fleet's stacks to ``app``: network (unless the fleet names an existing VPC), cluster with
    capacities, and the services in shards of at most ``SERVICES_PER_STACK``."""
    spec = spec or fleet_file.load(fleet_path(app))
    if spec.region is not None and spec.region not in known_regions():
        raise FleetSpecError(
            f"{spec.source}: region {spec.region!r} is not an AWS region botocore knows; give one such as us-east-1"
        )
    # cdk-nag's AwsSolutions pack runs at every synth; acknowledgments sit next to the resources they concern.
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    env = cdk.Environment(account=spec.account, region=spec.region) if spec.account else None
    network = None if spec.vpc_id else NetworkStack(app, f"{spec.name}-network", env=env)
    cluster = ClusterStack(
        app,
        f"{spec.name}-cluster",
        vpc=network.vpc if network else None,
        vpc_id=spec.vpc_id,
        capacities=spec.capacities,
        load_balancers=spec.load_balancers,
        service_connect_namespace=spec.service_connect_namespace,
        telemetry=spec.telemetry,
        env=env,
    )
    stacks = FleetStacks(network=network, cluster=cluster)
    cdk.Aspects.of(app).add(AcceptNistFindings())
    services = list(spec.services.values())
    # ALB listener rules are evaluated by priority: the order the services appear in the fleet file.
    priorities = {s.name: (i + 1) * 10 for i, s in enumerate(services)}
    # Services kept off each other's hosts, and those the expressions name, get fixed ECS service names.
    isolation = spec.host_isolation()
    isolated = set(isolation) | {
        o for expression in isolation.values() for o in spec.services if f":{spec.ecs_service_name(o)})" in expression
    }
    for shard, start in enumerate(range(0, len(services), SERVICES_PER_STACK), start=1):
        stacks.services.append(
            ServicesStack(
                app,
                f"{spec.name}-services-{shard}",
                cluster=cluster.cluster,
                capacities=cluster.capacities,
                load_balancers=cluster.load_balancers,
                priorities=priorities,
                isolation=isolation,
                service_names={name: spec.ecs_service_name(name) for name in isolated},
                services=services[start : start + SERVICES_PER_STACK],
                env=env,
            )
        )
    if cluster.telemetry is not None:
        # One dashboard per shard of services (a dashboard holds 500 widgets): for most fleets, one in all.
        for shard, stack in enumerate(stacks.services, start=1):
            stacks.observability.append(
                ObservabilityStack(
                    app,
                    f"{spec.name}-observability-{shard}",
                    cluster=cluster.cluster,
                    services={
                        name: (service, spec.services[name].shape(spec.source).task_gpu_budget_mib)
                        for name, service in stack.services.items()
                    },
                    alarm_topic=cluster.scaling_events,
                    env=env,
                )
            )
    return stacks
