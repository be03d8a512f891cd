"""Regenerate the GPU catalog from EC2 ``DescribeInstanceTypes``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import catalog
from ..core.catalog import GpuInstanceType
from ..core.errors import CatalogError, GpuSharingError
from ..core.files import check_output_path, read_input, write_atomic


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


def read_existing(output: Path) -> dict[str, GpuInstanceType]:
    """The catalog already at ``output`` (empty when there is none); refuses, before any AWS call, a path that
    cannot be written or a file that is not a catalog."""
    check_output_path(output, what="catalog", option="--output")
    if not output.exists():
        return {}
    try:
        return catalog.parse(read_input(output, what="catalog", option="--output"))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError, GpuSharingError):
        raise CatalogError(
            f"--output {output}: is not a GPU catalog file; give a new path, or the catalog to replace"
        ) from None


def refresh(ec2_client: Any, output: Path, *, allow_removals: bool = False) -> CatalogChanges:
    """Writes the regenerated catalog to ``output`` (atomically) and says what changed against the file there.

    A region that lacks some GPU types would drop them: without ``allow_removals`` nothing is written then, and
    the error lists them."""
    old = read_existing(output)
    text = generate(ec2_client)
    changes = diff(old, catalog.parse(text))
    if changes.removed and not allow_removals:
        raise CatalogError(
            f"the refresh would drop {len(changes.removed)} instance types that {ec2_client.meta.region_name} does "
            f"not describe ({', '.join(changes.removed)}); nothing was written: refresh from a region that has "
            "them, or pass --allow-removals"
        )
    write_atomic(output, text)
    return changes
