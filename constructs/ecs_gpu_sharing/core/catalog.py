"""The GPU instance catalog: every EC2 instance type with a GPU, and whether ECS GPU sharing works there.

Pure Python: no jsii, no AWS call. The data file ``data/gpu_instance_types.json`` is generated from
EC2 ``DescribeInstanceTypes`` by ``ecs-gpu-sharing catalog refresh`` (see
``ecs_gpu_sharing.operations.catalog_refresh``); never edit it by hand. This module owns the rules
that turn one ``DescribeInstanceTypes`` item into a catalog record, so the generator and the tests
share them.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from functools import cache
from importlib import resources
from typing import Any

from .errors import CatalogError

DATA_FILE = "gpu_instance_types.json"
REFRESH_HINT = "run 'ecs-gpu-sharing catalog refresh' to regenerate the catalog from EC2 DescribeInstanceTypes"

# The NVIDIA x86_64 families that the ECS GPU sharing launch (2026-10-27) names as supported.
LAUNCH_FAMILIES = frozenset({"g4dn", "g5", "g6", "g6e", "gr6", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200"})
# Fractional-GPU (vGPU) families: the ECS agent does not advertise MPS on a vGPU slice.
VGPU_FAMILIES = frozenset({"g6f", "gr6f"})
# GPUs older than Volta: MPS has no per-client memory limit there (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT).
PRE_VOLTA_GPUS = frozenset({"K80", "K520", "M60", "M40"})


class Support(StrEnum):
    SUPPORTED = "supported"
    UNVERIFIED = "unverified"
    UNSUPPORTED = "unsupported"


@dataclass(frozen=True)
class GpuInstanceType:
    """One EC2 instance type with a GPU, as EC2 describes it, and its GPU-sharing verdict."""

    instance_type: str
    family: str
    gpu_manufacturer: str
    gpu_name: str
    gpus: int
    ec2_gpu_memory_mib: int  # per GPU, as EC2 lists it (ECS registers a little less)
    vcpus: int
    instance_memory_mib: int  # the instance's memory, as EC2 lists it
    architectures: tuple[str, ...]
    support: Support
    reason: str
    max_network_interfaces: int = 0  # EC2's NetworkInfo.MaximumNetworkInterfaces (0: not known)

    @property
    def usable(self) -> bool:
        """True where GPU sharing can be used (supported, or unverified with a warning)."""
        return self.support is not Support.UNSUPPORTED


def family_of(instance_type: str) -> str:
    return instance_type.split(".", 1)[0]


def classify(
    *, family: str, manufacturer: str, gpu_name: str, architectures: Iterable[str], partition: float
) -> tuple[Support, str]:
    """Whether ECS GPU sharing can work on an instance family, and why."""
    arches = tuple(architectures)
    if manufacturer.upper() != "NVIDIA":
        return (
            Support.UNSUPPORTED,
            f"{manufacturer} GPU: ECS GPU sharing uses NVIDIA MPS and needs an NVIDIA GPU",
        )
    if "x86_64" not in arches:
        return (
            Support.UNSUPPORTED,
            f"{'/'.join(arches) or 'unknown'} CPU: there is no ECS-optimized Amazon Linux 2023 GPU AMI for it",
        )
    if family in VGPU_FAMILIES or partition < 1:
        return (
            Support.UNSUPPORTED,
            "fractional GPU (vGPU slice): the ECS agent does not advertise gpu-sharing-mps there",
        )
    if gpu_name in PRE_VOLTA_GPUS:
        return Support.UNSUPPORTED, f"{gpu_name} predates Volta: MPS cannot limit client memory there"
    if family in LAUNCH_FAMILIES:
        return Support.SUPPORTED, "named by the ECS GPU sharing launch"
    return (
        Support.UNVERIFIED,
        f"NVIDIA {gpu_name} on x86_64, but the ECS GPU sharing launch did not name the {family} family",
    )


def record_from_description(item: Mapping[str, Any]) -> GpuInstanceType | None:
    """Turn one EC2 ``DescribeInstanceTypes`` item into a catalog record; ``None`` when it has no GPU."""
    gpus_info = item.get("GpuInfo", {}).get("Gpus") or []
    if not gpus_info:
        return None
    gpu = gpus_info[0]
    name = str(item["InstanceType"])
    family = family_of(name)
    partition = float(gpu.get("GpuPartitionSize", 1.0))
    # A vGPU slice reports Count 0 and one logical GPU.
    count = int(gpu.get("Count") or 0) or int(gpu.get("LogicalGpuCount") or 0)
    arches = tuple(sorted(item.get("ProcessorInfo", {}).get("SupportedArchitectures", [])))
    support, reason = classify(
        family=family,
        manufacturer=str(gpu.get("Manufacturer", "unknown")),
        gpu_name=str(gpu.get("Name", "unknown")),
        architectures=arches,
        partition=partition,
    )
    return GpuInstanceType(
        instance_type=name,
        family=family,
        gpu_manufacturer=str(gpu.get("Manufacturer", "unknown")),
        gpu_name=str(gpu.get("Name", "unknown")),
        gpus=count,
        ec2_gpu_memory_mib=int(gpu.get("MemoryInfo", {}).get("SizeInMiB", 0)),
        vcpus=int(item["VCpuInfo"]["DefaultVCpus"]),
        instance_memory_mib=int(item["MemoryInfo"]["SizeInMiB"]),
        architectures=arches,
        support=support,
        reason=reason,
        max_network_interfaces=int(item.get("NetworkInfo", {}).get("MaximumNetworkInterfaces") or 0),
    )


def render(records: Iterable[GpuInstanceType], *, source: str) -> str:
    """The catalog data file's text: deterministic, so a regenerated file diffs cleanly."""
    rows: dict[str, dict[str, Any]] = {}
    for rec in sorted(records, key=lambda r: r.instance_type):
        row = asdict(rec)
        del row["instance_type"]
        row["architectures"] = list(rec.architectures)
        row["support"] = str(rec.support)
        rows[rec.instance_type] = row
    # One line per instance type, so a regenerated file diffs by type.
    lines = [f"  {json.dumps(name)}: {json.dumps(row, sort_keys=True)}" for name, row in rows.items()]
    head = {"generated_by": "ecs-gpu-sharing catalog refresh", "source": source}
    return (
        "{\n"
        + "".join(f" {json.dumps(k)}: {json.dumps(v)},\n" for k, v in head.items())
        + ' "instance_types": {\n'
        + ",\n".join(lines)
        + "\n }\n}\n"
    )


def parse(text: str) -> dict[str, GpuInstanceType]:
    """The records of a catalog data file (the inverse of :func:`render`)."""
    rows = json.loads(text)["instance_types"]
    return {
        name: GpuInstanceType(
            instance_type=name,
            **{**row, "architectures": tuple(row["architectures"]), "support": Support(row["support"])},
        )
        for name, row in rows.items()
    }


def data_path() -> Any:
    return resources.files("ecs_gpu_sharing.core") / "data" / DATA_FILE


@cache
def load() -> Mapping[str, GpuInstanceType]:
    """Every catalogued GPU instance type, by name."""
    return parse(data_path().read_text(encoding="utf-8"))


def _nearest(instance_type: str, catalog: Mapping[str, GpuInstanceType]) -> list[str]:
    """The catalogued type a mistyped one most likely means: the nearest size of its own GPU family (``p5.48xlarg``,
    ``G6.2XL``). A family the catalog does not hold (``m5``) has no GPU, so no type of another family is offered."""
    family = instance_type.lower().partition(".")[0]
    same_family = [name for name in catalog if name.partition(".")[0] == family]
    return difflib.get_close_matches(instance_type.lower(), same_family, n=1, cutoff=0.5)


def lookup(instance_type: str) -> GpuInstanceType:
    """The catalog record of a GPU instance type; refuses unknown types and types with no GPU."""
    catalog = load()
    if not isinstance(instance_type, str) or not instance_type:
        raise CatalogError(f"instance type must be a non-empty string, got {instance_type!r}")
    record = catalog.get(instance_type)
    if record is None:
        near = _nearest(instance_type, catalog)
        raise CatalogError(
            f"instance type {instance_type!r} is not in the GPU catalog: it has no GPU or is unknown; "
            + (f"did you mean {near[0]}? " if near else "")
            + f"use a GPU instance type such as g6.xlarge, or {REFRESH_HINT} if it is new"
        )
    return record


def lookup_usable(instance_type: str) -> GpuInstanceType:
    """Like :func:`lookup`, but also refuses types where GPU sharing cannot work."""
    record = lookup(instance_type)
    if not record.usable:
        raise CatalogError(
            f"instance type {instance_type!r} cannot use ECS GPU sharing: {record.reason}; "
            f"choose a type of a supported NVIDIA x86_64 family ({', '.join(sorted(LAUNCH_FAMILIES))})"
        )
    return record
