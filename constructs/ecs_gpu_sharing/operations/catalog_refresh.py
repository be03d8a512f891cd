"""Regenerate the GPU catalog from EC2 ``DescribeInstanceTypes``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import catalog
from ..core.catalog import GpuInstanceType


def fetch(ec2_client: Any) -> list[GpuInstanceType]:
    """Every GPU instance type the client's region describes (paginated)."""
    records = []
    for page in ec2_client.get_paginator("describe_instance_types").paginate(PaginationConfig={"PageSize": 100}):
        for item in page["InstanceTypes"]:
            record = catalog.record_from_description(item)
            if record is not None:
                records.append(record)
    return records


def generate(ec2_client: Any) -> str:
    """The catalog data file's text, from the client's region."""
    region = ec2_client.meta.region_name
    return catalog.render(fetch(ec2_client), source=f"EC2 DescribeInstanceTypes ({region})")


@dataclass(frozen=True)
class CatalogChanges:
    added: list[str]
    removed: list[str]
    changed: list[str]

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


def diff(old: Mapping[str, GpuInstanceType], new: Mapping[str, GpuInstanceType]) -> CatalogChanges:
    return CatalogChanges(
        added=sorted(set(new) - set(old)),
        removed=sorted(set(old) - set(new)),
        changed=sorted(name for name in set(old) & set(new) if old[name] != new[name]),
    )


def refresh(ec2_client: Any, output: Path) -> CatalogChanges:
    """Write the regenerated catalog to ``output`` and say what changed against the file there."""
    text = generate(ec2_client)
    old = catalog.parse(output.read_text(encoding="utf-8")) if output.exists() else {}
    output.write_text(text, encoding="utf-8")
    return diff(old, catalog.parse(text))
