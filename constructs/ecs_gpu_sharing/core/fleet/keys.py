"""The fleet file's keys, as tables read off the specs' fields (each key is declared once, on the field it fills:
``core.file_key``): the parser, the JSON Schema and the reference docs walk these tables. Pure Python."""

from __future__ import annotations

import datetime

from ..allocation import AllocationNote, Evidence
from ..file_key import Key, keys_of
from .model import CapacitySpec, FleetSpec, LoadBalancerSpec
from .service_spec import MetricTarget, ServiceSpec, SidecarSpec, Statement

TOP = keys_of(FleetSpec)
LOAD_BALANCER = keys_of(LoadBalancerSpec)
CAPACITY = keys_of(CapacitySpec)
METRIC = keys_of(MetricTarget)
STATEMENT = keys_of(Statement)
SIDECAR = keys_of(SidecarSpec)
EVIDENCE = keys_of(Evidence)
"""What was measured: in an allocation table beside the note, or as a service's own [service.<name>.evidence]
table (what evaluate --write creates where there is no note). Declared once (on ``Evidence``), used in both."""
ALLOCATION = keys_of(AllocationNote)
NOTE = tuple(k for k in ALLOCATION if k not in EVIDENCE)  # the note's own keys: those beside it are its evidence
SERVICE = keys_of(ServiceSpec)

_JSON_TYPES = {str: "string", int: "integer", list: "array", dict: "object", bool: "boolean", datetime.date: "string"}


__all__ = [
    "ALLOCATION",
    "CAPACITY",
    "EVIDENCE",
    "LOAD_BALANCER",
    "METRIC",
    "NOTE",
    "SERVICE",
    "SIDECAR",
    "STATEMENT",
    "TOP",
    "Key",
]
