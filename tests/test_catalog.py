"""The GPU catalog: committed data equals the generator's output over AWS's published data, and the rules."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from ecs_gpu_sharing.core import catalog
from ecs_gpu_sharing.core.catalog import Support
from ecs_gpu_sharing.core.errors import CatalogError, GpuSharingError
from ecs_gpu_sharing.operations import catalog_refresh


@pytest.fixture(scope="module")
def generated_text() -> str:
    with mock_aws():
        return catalog_refresh.generate(boto3.client("ec2", region_name="us-east-1"))


def test_committed_catalog_is_what_the_generator_writes(generated_text: str) -> None:
    committed = catalog.data_path().read_text(encoding="utf-8")
    assert committed == generated_text, (
        "the committed catalog differs from the generator's output: run 'ecs-gpu-sharing catalog refresh'"
    )


def test_generator_keeps_only_gpu_types(generated_text: str) -> None:
    records = catalog.parse(generated_text)
    assert records and all(r.gpus >= 1 and r.ec2_gpu_memory_mib > 0 for r in records.values())
    assert "m5.large" not in records and "inf2.xlarge" not in records


def test_g6_xlarge() -> None:
    g6 = catalog.lookup("g6.xlarge")
    assert (g6.gpu_manufacturer, g6.gpu_name, g6.gpus, g6.ec2_gpu_memory_mib) == ("NVIDIA", "L4", 1, 22888)
    assert (g6.vcpus, g6.instance_memory_mib, g6.architectures) == (4, 16384, ("x86_64",))
    assert g6.support is Support.SUPPORTED


def test_p5_48xlarge() -> None:
    p5 = catalog.lookup("p5.48xlarge")
    assert (p5.gpu_name, p5.gpus, p5.ec2_gpu_memory_mib, p5.support) == ("H100", 8, 81920, Support.SUPPORTED)


@pytest.mark.parametrize(
    "instance_type",
    ["g4dn.xlarge", "g5.xlarge", "g6e.xlarge", "gr6.4xlarge", "p4d.24xlarge", "p6-b200.48xlarge"],
)
def test_launch_families_are_supported(instance_type: str) -> None:
    assert catalog.lookup(instance_type).support is Support.SUPPORTED


@pytest.mark.parametrize(
    ("instance_type", "reason_part"),
    [("g6f.large", "vGPU"), ("gr6f.4xlarge", "vGPU"), ("g5g.xlarge", "arm64")],
)
def test_unsupported_types_in_the_data(instance_type: str, reason_part: str) -> None:
    record = catalog.lookup(instance_type)
    assert record.support is Support.UNSUPPORTED and reason_part in record.reason
    with pytest.raises(CatalogError, match=rf"{instance_type!r} cannot use ECS GPU sharing: .*{reason_part}"):
        catalog.lookup_usable(instance_type)


@pytest.mark.parametrize("instance_type", ["p3dn.24xlarge", "g7e.2xlarge", "p6-b300.48xlarge"])
def test_unnamed_nvidia_families_are_unverified_but_usable(instance_type: str) -> None:
    record = catalog.lookup_usable(instance_type)
    assert record.support is Support.UNVERIFIED and record.family in record.reason


@pytest.mark.parametrize(
    ("manufacturer", "gpu_name", "arches", "family", "partition", "expected", "reason_part"),
    [
        ("AMD", "Radeon Pro V520", ("x86_64",), "g4ad", 1.0, Support.UNSUPPORTED, "AMD GPU"),
        ("Habana", "Gaudi HL-205", ("x86_64",), "dl1", 1.0, Support.UNSUPPORTED, "Habana GPU"),
        ("NVIDIA", "T4g", ("arm64",), "g5g", 1.0, Support.UNSUPPORTED, "arm64"),
        ("NVIDIA", "L4", ("x86_64",), "g6f", 0.125, Support.UNSUPPORTED, "vGPU"),
        ("NVIDIA", "L4", ("x86_64",), "g9x", 0.5, Support.UNSUPPORTED, "vGPU"),
        ("NVIDIA", "M60", ("x86_64",), "g3", 1.0, Support.UNSUPPORTED, "Volta"),
        ("NVIDIA", "L4", ("x86_64",), "g6", 1.0, Support.SUPPORTED, "launch"),
        ("NVIDIA", "V100", ("x86_64",), "p3dn", 1.0, Support.UNVERIFIED, "p3dn"),
    ],
)
def test_classify(
    manufacturer: str,
    gpu_name: str,
    arches: tuple[str, ...],
    family: str,
    partition: float,
    expected: Support,
    reason_part: str,
) -> None:
    support, reason = catalog.classify(
        family=family, manufacturer=manufacturer, gpu_name=gpu_name, architectures=arches, partition=partition
    )
    assert support is expected and reason_part in reason


def test_unknown_type_names_the_type_and_the_refresh_command() -> None:
    with pytest.raises(CatalogError, match=r"'g99.huge' is not in the GPU catalog.*catalog refresh"):
        catalog.lookup("g99.huge")


@pytest.mark.parametrize(
    ("typo", "meant"), [("p5.48xlarg", "p5.48xlarge"), ("g6.2xl", "g6.2xlarge"), ("G6E.XLARGE", "g6e.xlarge")]
)
def test_a_mistyped_gpu_type_is_told_the_nearest_one(typo: str, meant: str) -> None:
    with pytest.raises(CatalogError, match=rf"{typo!r} is not in the GPU catalog.*did you mean {meant}\?"):
        catalog.lookup(typo)


def test_a_type_with_no_gpu_is_not_told_a_gpu_type_it_might_mean() -> None:
    with pytest.raises(CatalogError) as error:
        catalog.lookup("m5.large")
    assert "did you mean" not in str(error.value)


@pytest.mark.parametrize("instance_type", ["m5.large", "inf2.xlarge"])
def test_types_without_a_gpu_are_refused(instance_type: str) -> None:
    with pytest.raises(CatalogError, match=rf"{instance_type!r} is not in the GPU catalog: it has no GPU"):
        catalog.lookup(instance_type)


def test_errors_are_value_errors() -> None:
    assert issubclass(CatalogError, GpuSharingError) and issubclass(GpuSharingError, ValueError)


def test_refresh_reports_changes(tmp_path: Path, generated_text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # What the region describes is the module's one description through moto (four seconds a call): this test is
    # about what a refresh writes and refuses.
    monkeypatch.setattr(catalog_refresh, "generate", lambda ec2_client: generated_text)
    old = dict(catalog.load())
    del old["g6.xlarge"]
    old["g5.xlarge"] = replace(old["g5.xlarge"], vcpus=1)
    old["zz1.fake"] = replace(old["g5.xlarge"], instance_type="zz1.fake")
    out = tmp_path / "catalog.json"
    out.write_text(catalog.render(old.values(), source="test"))
    with mock_aws():
        ec2 = boto3.client("ec2", region_name="us-east-1")
        with pytest.raises(CatalogError, match=r"would drop 1 instance types .* \(zz1.fake\); nothing was written"):
            catalog_refresh.refresh(ec2, out)
        assert "zz1.fake" in out.read_text()
        changes = catalog_refresh.refresh(ec2, out, allow_removals=True)
    assert changes.added == ["g6.xlarge"] and changes.removed == ["zz1.fake"] and changes.changed == ["g5.xlarge"]
    assert catalog.parse(out.read_text()) == dict(catalog.load())
