"""The fleet file (``fleet.toml``): capacities and services, read with the standard library. Pure Python.

A package by role: ``keys`` (the key table, the one declaration of every key: the parser, the JSON Schema and the
docs' reference are generated from it), ``model`` (the specs the parser builds), ``checks`` (reading and checking a
file, every problem at once) and ``schema`` (the JSON Schema editors use). It plans nothing:
``core.plan_inputs.from_fleet`` builds the planner's inputs from a spec, as ``cdk.discovery`` does from a construct
tree. The deployable app (``stacks/``) imports this package and the public ``ecs_gpu_sharing`` package only.
"""

from __future__ import annotations

from ..hardening import MANAGED_POLICY_ON_TASK_ROLE
from ..planner import EC2, MANAGED_INSTANCES
from ..telemetry import SERVICE_TAG
from .checks import check_region, load, parse
from .keys import ALLOCATION, CAPACITY, LOAD_BALANCER, METRIC, SERVICE, SIDECAR, STATEMENT, TOP, Key
from .model import (
    APPLICATION,
    AWSVPC,
    BRIDGE,
    CONTAINER_NAME,
    MAX_FLEET_FILE_BYTES,
    MAX_PLACEMENT_EXPRESSION,
    NETWORK,
    CapacitySpec,
    EcrImage,
    FleetSpec,
    LoadBalancerSpec,
    MetricTarget,
    ServiceSpec,
    SidecarSpec,
    Statement,
    ecr_image,
    scratch_volume_name,
)
from .schema import json_schema

__all__ = [
    "ALLOCATION",
    "APPLICATION",
    "AWSVPC",
    "BRIDGE",
    "CAPACITY",
    "CONTAINER_NAME",
    "EC2",
    "LOAD_BALANCER",
    "MANAGED_INSTANCES",
    "MANAGED_POLICY_ON_TASK_ROLE",
    "MAX_FLEET_FILE_BYTES",
    "MAX_PLACEMENT_EXPRESSION",
    "METRIC",
    "NETWORK",
    "SERVICE",
    "SERVICE_TAG",
    "SIDECAR",
    "STATEMENT",
    "TOP",
    "CapacitySpec",
    "EcrImage",
    "FleetSpec",
    "Key",
    "LoadBalancerSpec",
    "MetricTarget",
    "ServiceSpec",
    "SidecarSpec",
    "Statement",
    "check_region",
    "ecr_image",
    "json_schema",
    "load",
    "parse",
    "scratch_volume_name",
]
