"""Usable GPU memory: what ECS registers per GPU model (with its source), less a named margin."""

from __future__ import annotations

from ecs_gpu_sharing.core.capacity_facts import host_facts
from ecs_gpu_sharing.core.gpu_memory import (
    DEFAULT_GPU_MARGIN_MIB,
    FALLBACK_PERCENT,
    REGISTERED,
    Basis,
    gpu_memory,
    readme_rows,
    without_a_source,
)


def test_an_l4_is_planned_at_what_ecs_registers_less_the_margin() -> None:
    memory = gpu_memory("L4", 22888, margin_mib=DEFAULT_GPU_MARGIN_MIB)
    assert (memory.ecs_mib, memory.usable_mib, memory.basis) == (22563, 22563 - 256, Basis.TABLE)
    assert "PR #5061" in memory.source and "23034 total - 471 reserved" in memory.source


def test_every_table_entry_names_its_source_and_sits_near_ec2s_figure() -> None:
    for (name, ec2_mib), known in REGISTERED.items():
        assert known.source and 0 < known.ecs_mib <= ec2_mib * 11 // 10, name


def test_a_model_without_data_falls_back_to_a_conservative_figure_and_says_so() -> None:
    memory = gpu_memory("T4", 16384, margin_mib=256)
    assert memory.basis is Basis.FALLBACK and memory.ecs_mib == 16384 * FALLBACK_PERCENT // 100
    assert "no data for the T4" in memory.source and "set ecs_gpu_memory_mib" in memory.source


def test_a_model_from_a_public_nvidia_smi_output_keeps_a_driver_allowance_off() -> None:
    memory = gpu_memory("L40S", 45776, margin_mib=256)
    assert (memory.basis, memory.ecs_mib) == (Basis.TABLE, 46068 - 479 - 256)  # 4135 MiB more than the fallback
    assert "thamada/gls" in memory.source and "driver 550.127.05" in memory.source


def test_the_h200_takes_the_reserve_measured_on_the_amis_driver_branch_and_keeps_the_allowance() -> None:
    """docs/gpu-measured.md: NVML on driver 580.159.04 reserves 615 MiB of an H200 (700 on driver 550.90.12); the
    AMI's exact 580 driver was not the one measured, so the allowance for other drivers stays."""
    h200 = REGISTERED[("H200", 144384)]
    assert (h200.ecs_mib, h200.driver, h200.cuda_context_mib) == (143771 - 615 - 256, "580.159.04", 514)
    assert "gpu-measured.md" in h200.source and "gpu-measured.md" in h200.cuda_context_source
    assert all(known.cuda_context_mib == 0 for (name, _), known in REGISTERED.items() if name != "H200")


def test_every_gpu_the_catalog_supports_has_a_sourced_figure_or_says_why_not() -> None:
    from ecs_gpu_sharing.core import catalog

    missing = without_a_source()
    for r in catalog.load().values():
        if not r.usable:
            continue
        key = (r.gpu_name, r.ec2_gpu_memory_mib)
        label = f"{r.gpu_name} {r.ec2_gpu_memory_mib // 1024} GB"
        assert key in REGISTERED or r.gpu_name in missing or label in missing, key
    assert all(name in {r.gpu_name for r in catalog.load().values()} for name, _ in REGISTERED)


def test_the_docs_table_is_the_data_file() -> None:
    from conftest import REPO

    text = (REPO / "docs" / "constructs.md").read_text()
    block = text.split("<!-- gpu-memory-table:", 1)[1].split("<!-- end gpu-memory-table -->", 1)[0]
    assert [line for line in block.splitlines() if line.startswith("| ") and "---" not in line][1:] == readme_rows()


def test_a_fractional_slice_does_not_take_the_whole_gpus_figure() -> None:
    assert gpu_memory("L4", 5722, margin_mib=0).basis is Basis.FALLBACK


def test_a_measured_figure_wins_and_the_margin_is_configurable() -> None:
    facts = host_facts(["g6e.xlarge"], ecs_gpu_memory_mib=45000, gpu_margin_mib=500)
    assert (facts.gpu_memory.basis, facts.usable_gpu_memory_mib) == (Basis.MEASURED, 44500)
