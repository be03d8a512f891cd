"""The validators the other tests rely on do find errors (so a clean result means something)."""

from __future__ import annotations

from validators import cfn_lint_errors, ecs_register_task_definition_errors


def test_cfn_lint_flags_a_bad_template() -> None:
    template = {
        "Resources": {
            "Lt": {
                "Type": "AWS::EC2::LaunchTemplate",
                "Properties": {"LaunchTemplateData": {"BlockDeviceMappings": [{"Ebs": {"VolumeType": "gp9"}}]}},
            }
        }
    }
    assert any("gp9" in e for e in cfn_lint_errors(template))


def test_cfn_lint_knows_sharing_strategy_and_its_ranges() -> None:
    def task(mps: dict[str, object]) -> dict[str, object]:
        container = {
            "Name": "a",
            "Image": "x",
            "Memory": 128,
            "ResourceRequirements": [{"Type": "GPU", "SharingStrategy": {"NvidiaMps": mps}}],
        }
        return {
            "Resources": {
                "Td": {
                    "Type": "AWS::ECS::TaskDefinition",
                    "Properties": {"ContainerDefinitions": [container]},
                }
            }
        }

    assert cfn_lint_errors(task({"Memory": 1024, "MaxComputePercent": 50})) == []
    assert cfn_lint_errors(task({"Memory": 1024, "Bogus": 1})) != []


def test_botocore_flags_a_wrong_type_and_an_unknown_field() -> None:
    assert "memory" in ecs_register_task_definition_errors({"ContainerDefinitions": [{"Name": "a", "Memory": "lots"}]})
    assert "Unknown parameter" in ecs_register_task_definition_errors({"ContainerDefinitions": [{"Nmae": "a"}]})
