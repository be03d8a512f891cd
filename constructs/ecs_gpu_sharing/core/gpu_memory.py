"""How much of one GPU's memory a plan may fill: what ECS registers for the GPU, less a margin. Pure Python.

ECS registers each GPU at NVML's total less NVML's reserved memory (``DeviceGetMemoryInfo_v2``: Total - Reserved)
and places MPS containers against that figure (amazon-ecs-agent PR #5061, "Report per-GPU memory at container
instance registration"). EC2 lists a GPU's memory differently, per model: for an NVIDIA L4, EC2 lists 22888 MiB,
nvidia-smi shows 23034 MiB total, NVML reserves 471 MiB, and ECS registers 22563 MiB: 325 MiB below EC2. For the other
models with a public ``nvidia-smi -q`` output (``data/gpu_memory.json``, each with its source and driver), the figure
is that total less that reserve, less an allowance for drivers that reserve more.

Plans fill, per GPU, the memory ECS registers less a margin for what lives outside every client limit: the MPS
server's own memory, whose size NVIDIA does not document. Where this table has no data for a GPU model, the plan uses
a conservative figure (EC2's less 10%, more than the gap on every model whose figures are known) and says so; a
capacity can instead take the figure its own cluster reports (``cluster status`` shows ``totalMemoryInMiB``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from importlib.resources import files

DEFAULT_GPU_MARGIN_MIB = 256
"""Per-GPU memory kept free below what ECS registers, for the MPS server (outside every client's limit)."""

FALLBACK_PERCENT = 90
"""For a GPU model without data: plan against this percentage of EC2's figure."""


@dataclass(frozen=True)
class RegisteredMemory:
    """What ECS registers for one GPU model, and where the figure comes from."""

    nvml_total_mib: int
    nvml_reserved_mib: int
    source: str
    driver: str = ""
    allowance_mib: int = 0  # more off the figure, for a reserve that differs by driver (0: registered by ECS)
    cuda_context_mib: int = 0  # what one CUDA context takes of an MPS client's limit (0: not measured)
    cuda_context_source: str = ""

    @property
    def ecs_mib(self) -> int:
        return self.nvml_total_mib - self.nvml_reserved_mib - self.allowance_mib


DATA_FILE = "gpu_memory.json"


def _load_table() -> dict[tuple[str, int], RegisteredMemory]:
    doc = json.loads(files(__package__).joinpath("data", DATA_FILE).read_text(encoding="utf-8"))
    allowance = int(doc["driver_allowance_mib"])
    return {
        (m["gpu"], int(m["ec2_mib"])): RegisteredMemory(
            nvml_total_mib=int(m["nvml_total_mib"]),
            nvml_reserved_mib=int(m["nvml_reserved_mib"]),
            source=(
                m["source"]
                if m["registered_by_ecs"]
                else f"{m['source']}: {m['nvml_total_mib']} total - {m['nvml_reserved_mib']} reserved (driver "
                f"{m['driver']}) - {allowance} for drivers that reserve more"
            ),
            driver=str(m["driver"]),
            allowance_mib=0 if m["registered_by_ecs"] else allowance,
            cuda_context_mib=int(m.get("cuda_context_mib", 0)),
            cuda_context_source=str(m.get("cuda_context_source", "")),
        )
        for m in doc["models"]
    }


# Keyed by (GPU name, EC2's per-GPU MiB) as the catalog records them, so a fractional slice never matches. One data
# file holds the figures and their sources (core/data/gpu_memory.json), like the AMI releases.
REGISTERED: dict[tuple[str, int], RegisteredMemory] = _load_table()


def readme_rows() -> list[str]:
    """The table of per-model figures in docs/constructs.md, from the data file (a test keeps the page in step)."""
    doc = json.loads(files(__package__).joinpath("data", DATA_FILE).read_text(encoding="utf-8"))
    rows = []
    for m in doc["models"]:
        known = REGISTERED[(m["gpu"], int(m["ec2_mib"]))]
        source = m["source"].split(":")[0] if m["registered_by_ecs"] else m["source"].split(" (")[0]
        rows.append(
            f"| {m['gpu']} | {m['ec2_mib']} | {m['nvml_total_mib']} | {m['nvml_reserved_mib']} | {m['driver']} | "
            f"{known.ecs_mib} | {source} |"
        )
    rows += [f"| {name} | | | | | fallback (90% of EC2's) | {why} |" for name, why in doc["without_a_source"].items()]
    return rows


def without_a_source() -> dict[str, str]:
    """Models the table has no sourced figure for (label -> why), as the data file lists them."""
    doc = json.loads(files(__package__).joinpath("data", DATA_FILE).read_text(encoding="utf-8"))
    return dict(doc["without_a_source"])


class Basis(StrEnum):
    MEASURED = "measured"  # the capacity's own figure (ecs_gpu_memory_mib), from a live cluster
    TABLE = "table"  # REGISTERED, with its source
    FALLBACK = "fallback"  # no data: FALLBACK_PERCENT of EC2's figure


@dataclass(frozen=True)
class GpuMemory:
    """One GPU's memory figures as a capacity plans with them."""

    ec2_mib: int  # as EC2 lists it
    ecs_mib: int  # as ECS registers it (measured, from the table, or the conservative fallback)
    margin_mib: int
    basis: Basis
    source: str
    cuda_context_mib: int = 0  # what one CUDA context takes of an MPS client's limit on this model (0: not measured)
    cuda_context_source: str = ""

    @property
    def usable_mib(self) -> int:
        return self.ecs_mib - self.margin_mib


def gpu_memory(gpu_name: str, ec2_mib: int, *, margin_mib: int, measured_mib: int | None = None) -> GpuMemory:
    """The figures for one GPU of ``gpu_name`` (EC2 lists ``ec2_mib``); ``measured_mib`` overrides the table."""
    known = REGISTERED.get((gpu_name, ec2_mib))
    context = (known.cuda_context_mib, known.cuda_context_source) if known is not None else (0, "")
    if measured_mib is not None:
        return GpuMemory(ec2_mib, measured_mib, margin_mib, Basis.MEASURED, "ecs_gpu_memory_mib, measured", *context)
    if known is not None:
        return GpuMemory(ec2_mib, known.ecs_mib, margin_mib, Basis.TABLE, known.source, *context)
    fallback = ec2_mib * FALLBACK_PERCENT // 100
    source = (
        f"no data for the {gpu_name}: {FALLBACK_PERCENT}% of EC2's {ec2_mib} MiB, conservative; measure it "
        "(cluster status shows ECS's totalMemoryInMiB) and set ecs_gpu_memory_mib"
    )
    return GpuMemory(ec2_mib, fallback, margin_mib, Basis.FALLBACK, source)
