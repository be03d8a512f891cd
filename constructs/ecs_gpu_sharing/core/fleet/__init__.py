"""The fleet file (``fleet.toml``): capacities and services, read with the standard library. Pure Python.

A package by role: ``model`` and ``service_spec`` (the specs the parser builds; each key of the file is declared once,
on the field it fills, with ``core.file_key.key``), ``keys`` (the key tables read off those fields: the parser, the
JSON Schema and the docs' reference walk them), ``values`` (named values and patterns), ``checks`` with ``tables``,
``service_checks`` and ``fleet_checks`` (reading and checking a file, every problem at once) and ``schema`` (the
JSON Schema editors use). It plans nothing:
``core.plan_inputs.from_fleet`` builds the planner's inputs from a spec, as ``cdk.discovery`` does from a construct
tree. The deployable app (``stacks/``) imports this package and the public ``ecs_gpu_sharing`` package only.
"""

from __future__ import annotations

from ..escalation import TASK_ROLE_WILDCARD, nag_wildcards
from ..hardening import AUTO_SCALING_SERVICE_ROLE_PATH, MANAGED_POLICY_ON_TASK_ROLE
from ..planner import EC2, MANAGED_INSTANCES
from ..telemetry import SERVICE_TAG
from .checks import check_region, load, parse
from .keys import ALLOCATION, CAPACITY, LOAD_BALANCER, METRIC, SERVICE, SIDECAR, STATEMENT, TOP, Key
from .model import (
    MAX_FLEET_FILE_BYTES,
    MAX_PLACEMENT_EXPRESSION,
    CapacitySpec,
    EcrImage,
    FleetSpec,
    LoadBalancerSpec,
    ecr_image,
    scratch_volume_name,
)
from .schema import json_schema
from .service_spec import (
    DEFAULT_STARTUP_SECONDS,
    MAX_CONTAINER_START_PERIOD,
    MetricTarget,
    ServiceSpec,
    SidecarSpec,
    Statement,
)
from .values import APPLICATION, AWSVPC, BRIDGE, CONTAINER_NAME, LOAD_BALANCER_METADATA, NETWORK

__all__ = [
    "ALLOCATION",
    "APPLICATION",
    "AUTO_SCALING_SERVICE_ROLE_PATH",
    "AWSVPC",
    "BRIDGE",
    "CAPACITY",
    "CONTAINER_NAME",
    "DEFAULT_STARTUP_SECONDS",
    "EC2",
    "LOAD_BALANCER",
    "LOAD_BALANCER_METADATA",
    "MANAGED_INSTANCES",
    "MANAGED_POLICY_ON_TASK_ROLE",
    "MAX_CONTAINER_START_PERIOD",
    "MAX_FLEET_FILE_BYTES",
    "MAX_PLACEMENT_EXPRESSION",
    "METRIC",
    "NETWORK",
    "SERVICE",
    "SERVICE_TAG",
    "SIDECAR",
    "STATEMENT",
    "TASK_ROLE_WILDCARD",
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
    "nag_wildcards",
    "parse",
    "scratch_volume_name",
]
