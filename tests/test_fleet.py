"""The fleet file: the example parses, and every malformed input is refused naming the file and the key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ecs_gpu_sharing import FleetSpecError
from ecs_gpu_sharing.core import fleet as fleet_module
from ecs_gpu_sharing.core.plan_inputs import from_fleet

from conftest import REPO

BASE = """
name = "t"
[capacity.l4]
instance_types = ["g6.xlarge"]
[service.emb]
capacity = "l4"
image = "img"
desired_count = 2
cpu_units = 512
memory_mib = 1024
gpu_budget_mib = 2048
"""


def _load(tmp_path: Path, text: str) -> fleet_module.FleetSpec:
    path = tmp_path / "fleet.toml"
    path.write_text(text)
    return fleet_module.load(path)


def test_example_fleet_parses() -> None:
    spec = fleet_module.load(REPO / "fleet.toml")
    assert set(spec.capacities) == {"l4", "l40s"}
    assert set(spec.services) == {"embedder", "reranker", "llm"}
    assert spec.capacities["l4"].max_instances is None
    # The platform the example describes: one internal ALB by path, Service Connect, a scaled vLLM with a sidecar.
    assert spec.load_balancers["internal"].internet_facing is False
    assert spec.service_connect_namespace == "models.internal"
    llm = spec.services["llm"]
    assert (llm.paths, llm.max_tasks, llm.shm_size_mib) == (("/v1/*",), 3, 2048)
    assert [c.name for c in llm.sidecars] == ["metrics"] and llm.read_only_root_filesystem
    assert {s.load_balancer for s in spec.services.values()} == {"internal"}


def test_an_unlisted_ami_release_needs_to_be_stated_verified(tmp_path: Path) -> None:
    text = BASE.replace("[capacity.l4]", '[capacity.l4]\nami_release = "20261120"')
    with pytest.raises(FleetSpecError, match=r"capacity.l4.ami_release: AMI release '20261120' is not a release"):
        _load(tmp_path, text)
    spec = _load(tmp_path, text.replace("[capacity.l4]", "[capacity.l4]\nami_release_verified = true"))
    assert spec.capacities["l4"].ami_release_verified is True


def test_minimal_fleet_defaults(tmp_path: Path) -> None:
    spec = _load(tmp_path, BASE)
    cap, svc = spec.capacities["l4"], spec.services["emb"]
    assert (cap.ami_release, cap.min_instances, cap.max_instances) == ("20261113", 0, None)
    assert cap.facts.usable_gpu_memory_mib == 22563 - 256
    assert (svc.max_compute_percent, svc.port, dict(svc.environment)) == (None, None, {})
    (inp,) = from_fleet(spec)[1]
    assert inp.shape.gpu_budgets_mib == (2048,) and inp.cpu_units == 512


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t + "colour = 'blue'\n", r"unknown key service.emb.colour"),
        (lambda t: t.replace("[capacity.l4]", "[capacity.l4]\nspot = true"), r"unknown key capacity.l4.spot"),
        (lambda t: t.replace('name = "t"', 'name = "t"\nregion_x = "a"'), r"unknown key region_x"),
        (
            lambda t: t.replace("desired_count = 2", 'desired_count = "2"'),
            r"service.emb.desired_count must be an integer, got '2'",
        ),
        (lambda t: t.replace("cpu_units = 512", "cpu_units = 512.0"), r"service.emb.cpu_units must be an integer"),
        (
            lambda t: t.replace("cpu_units = 512", "cpu_units = true"),
            r"service.emb.cpu_units must be an integer, got True",
        ),
        (
            lambda t: t.replace('capacity = "l4"', 'capacity = "h100"'),
            r"service.emb.capacity names 'h100', which is not defined",
        ),
        (lambda t: t.replace('image = "img"\n', ""), r"missing key service.emb.image"),
        (
            lambda t: t.replace('"g6.xlarge"', '"m5.large"'),
            r"capacity.l4: .*'m5.large' is not in the GPU catalog",
        ),
        (lambda t: t.replace('"g6.xlarge"', '"g6f.large"'), r"capacity.l4: .*vGPU"),
        (lambda t: t.replace('"g6.xlarge"]', '"g6.xlarge", "g6e.xlarge"]'), r"same GPU model"),
        (lambda t: t.replace('["g6.xlarge"]', "[]"), r"instance_types must be a non-empty list"),
        (
            lambda t: t.replace("[capacity.l4]", '[capacity.l4]\nami_release = "20260929"'),
            r"ami_release: .*older than 20261019",
        ),
        (
            lambda t: t.replace("[capacity.l4]", "[capacity.l4]\nmin_instances = 3\nmax_instances = 2"),
            r"capacity.l4.max_instances 2 is below min_instances 3; raise it or lower min_instances$",
        ),
        (
            lambda t: t.replace("gpu_budget_mib = 2048", "gpu_budget_mib = 0"),
            r"gpu_budget_mib must be from 1 to 1048576, got 0",
        ),
        (lambda t: t + "max_compute_percent = 101\n", r"max_compute_percent must be from 1 to 100"),
        (lambda t: t + "environment = { A = 1 }\n", r"environment.A must be a string"),
        (
            lambda t: t.replace("[service.emb]", "[service.'bad name']"),
            r"service.'bad name' is not a usable name",
        ),
        (
            lambda t: t.replace("[capacity.l4]", "[capacity.l4]\ngpu_margin_mib = 30000"),
            r"gpu_margin_mib 30000 leaves nothing",
        ),
        (lambda t: t + "[[", r"not valid TOML"),
    ],
)
def test_refuses_malformed_fleets_naming_file_and_key(tmp_path: Path, edit: Any, message: str) -> None:
    with pytest.raises(FleetSpecError, match=message) as caught:
        _load(tmp_path, edit(BASE))
    assert str(tmp_path / "fleet.toml") in str(caught.value)


def test_missing_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FleetSpecError, match="cannot read the fleet file"):
        fleet_module.load(tmp_path / "nope.toml")


def test_account_region_and_vpc_id(tmp_path: Path) -> None:
    env = 'name = "t"\naccount = "123456789012"\nregion = "eu-west-1"\nvpc_id = "vpc-0123456789abcdef0"\n'
    spec = _load(tmp_path, BASE.replace('name = "t"\n', env))
    assert (spec.account, spec.region, spec.vpc_id) == ("123456789012", "eu-west-1", "vpc-0123456789abcdef0")
    assert _load(tmp_path, BASE).account is None


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ('account = "12345"\nregion = "eu-west-1"\n', r"account '12345' is malformed"),
        ('account = "123456789012"\n', r"account and region go together"),
        ('vpc_id = "vpc-0123456789abcdef0"\n', r"vpc_id needs account and region"),
        ('account = "123456789012"\nregion = "eu-west-1"\nvpc_id = "vpc-xyz"\n', r"vpc_id 'vpc-xyz' is malformed"),
    ],
)
def test_refuses_bad_environment_keys(tmp_path: Path, extra: str, message: str) -> None:
    with pytest.raises(FleetSpecError, match=message):
        _load(tmp_path, BASE.replace('name = "t"\n', 'name = "t"\n' + extra))


# --- acknowledgments: a capacity's in its table, a service's in its own -----------------------------------


def test_a_capacity_acknowledges_its_warning_and_the_plan_shows_it_acknowledged(tmp_path: Path) -> None:
    from ecs_gpu_sharing.core.rules import assess

    text = BASE.replace(
        'instance_types = ["g6.xlarge"]',
        'instance_types = ["g6.xlarge"]\nmax_instances = 1\nacknowledge = { "ecs-gpu-sharing:SurgeDoesNotFit" = "ok" }',
    ).replace("gpu_budget_mib = 2048", "gpu_budget_mib = 8192")  # 2 per GPU: the surge of 4 needs 2 hosts
    result = assess(*from_fleet(_load(tmp_path, text)))
    assert [(f.rule_id, f.acknowledged) for f in result.findings if "Surge" in f.rule_id] == [
        ("ecs-gpu-sharing:SurgeDoesNotFit", "ok")
    ]
    assert result.warnings == [w for w in result.warnings if "Surge" not in w.rule_id]


def test_a_service_cannot_acknowledge_a_capacity_warning(tmp_path: Path) -> None:
    text = BASE + 'acknowledge = { "ecs-gpu-sharing:SurgeDoesNotFit" = "ok" }\n'
    with pytest.raises(
        FleetSpecError,
        match=r"service.emb.acknowledge 'ecs-gpu-sharing:SurgeDoesNotFit' is not a "
        r"service warning; acknowledge it in the \[capacity.<name>\] table",
    ):
        _load(tmp_path, text)


def test_a_capacity_cannot_acknowledge_a_service_warning(tmp_path: Path) -> None:
    text = BASE.replace(
        'instance_types = ["g6.xlarge"]',
        'instance_types = ["g6.xlarge"]\nacknowledge = { "ecs-gpu-sharing:BudgetIsAGuess" = "ok" }',
    )
    with pytest.raises(FleetSpecError, match=r"capacity.l4.acknowledge 'ecs-gpu-sharing:BudgetIsAGuess' is not a "):
        _load(tmp_path, text)


def test_a_fleet_files_problems_come_in_one_round(tmp_path: Path) -> None:
    # A malformed key of one service and a task of another that can never fit: both in one error.
    text = BASE + (
        '[service.big]\ncapacity = "l4"\nimage = "img"\ndesired_count = 1\ncpu_units = 512\nmemory_mib = 1024\n'
        "gpu_budget_mib = 90000\n"
    )
    text = text.replace("desired_count = 2", "desired_count = -1")
    with pytest.raises(FleetSpecError) as error:
        _load(tmp_path, text)
    lines = str(error.value).splitlines()
    assert any("service.emb.desired_count" in line for line in lines)
    assert any("service.big.gpu_budget_mib" in line and "TaskExceedsGpuMemory" in line for line in lines)


def test_a_budget_below_the_gpus_cuda_context_names_the_key(tmp_path: Path) -> None:
    text = BASE + (
        '[capacity.h200]\ninstance_types = ["p5e.48xlarge"]\nmax_instances = 2\n\n'
        '[service.tiny]\ncapacity = "h200"\nimage = "img"\ndesired_count = 1\ncpu_units = 512\nmemory_mib = 1024\n'
        "gpu_budget_mib = 512\n"
    )
    with pytest.raises(FleetSpecError) as error:
        _load(tmp_path, text)
    (line,) = [line for line in str(error.value).splitlines() if "service.tiny" in line]
    assert "service.tiny.gpu_budget_mib" in line and "[ecs-gpu-sharing:TaskBelowCudaContext]" in line
    assert "budget of 512 MiB cannot hold a CUDA context" in line


def test_the_example_llms_memory_fraction_is_of_the_whole_gpu_and_fits_its_budget(tmp_path: Path) -> None:
    """The example's vLLM asks for 0.33 of an L40S (about 15 GiB of its 16 GiB budget); 0.9, what vLLM's own examples
    write, would ask for 0.9 of the whole GPU under MPS, and the plan warns."""
    from ecs_gpu_sharing.core.rules import FRACTION_WARNING, assess

    def judged(spec: fleet_module.FleetSpec) -> tuple[object, list[str]]:
        capacities, services = from_fleet(spec)
        (llm,) = [s for s in services if s.name == "llm"]
        found = [f.message for f in assess(capacities, services).findings if f.rule_id == FRACTION_WARNING]
        return llm.shape.memory_fractions, found

    assert judged(fleet_module.load(REPO / "fleet.toml")) == ((("--gpu-memory-utilization", 0.33, 16384),), [])
    text = (
        (REPO / "fleet.toml")
        .read_text()
        .replace('"--gpu-memory-utilization", "0.33"', '"--gpu-memory-utilization", "0.9"')
    )
    fractions, (message,) = judged(_load(tmp_path, text))
    assert fractions == (("--gpu-memory-utilization", 0.9, 16384),)
    assert "--gpu-memory-utilization 0.9 asks for 40799 MiB" in message and "set it at most 0.33" in message


def test_a_mistyped_key_gets_a_did_you_mean(tmp_path: Path) -> None:
    with pytest.raises(FleetSpecError, match=r"unknown key service.emb.gpu_budget_mb; did you mean gpu_budget_mib\?"):
        _load(tmp_path, BASE.replace("gpu_budget_mib = 2048", "gpu_budget_mib = 2048\ngpu_budget_mb = 1"))
    with pytest.raises(FleetSpecError) as error:
        _load(tmp_path, BASE + "colour = 1\n")
    assert "did you mean" not in str(error.value)  # nothing close: no guess


def test_a_misnamed_required_key_is_guessed_from_the_keys_missing_beside_it(tmp_path: Path) -> None:
    """gpu_memory_mib for gpu_budget_mib: memory_mib is the closer name, but it is there, and gpu_budget_mib, a key of
    the same type, is missing from the same table: that is the guess, and it says so."""
    misnamed = BASE.replace("gpu_budget_mib = 2048", "gpu_memory_mib = 2048")
    with pytest.raises(FleetSpecError) as error:
        _load(tmp_path, misnamed)
    assert "unknown key service.emb.gpu_memory_mib; did you mean gpu_budget_mib (missing here)?" in str(error.value)
    with pytest.raises(FleetSpecError) as error:  # a text is no budget: the closest name, as for any key
        _load(tmp_path, BASE.replace("gpu_budget_mib = 2048", 'gpu_memory_mib = "2048"'))
    assert "gpu_memory_mib; did you mean memory_mib?" in str(error.value)
    with pytest.raises(FleetSpecError) as error:  # nothing close to the missing key: no guess
        _load(tmp_path, BASE.replace("gpu_budget_mib = 2048", "colour = 2048"))
    assert "did you mean" not in str(error.value)


def test_the_hosts_root_volume_is_sized_in_the_fleet_file(tmp_path: Path) -> None:
    """Images and model caches (model_cache_path) fill the hosts' root volume; 200 GiB unless the fleet says."""
    assert _load(tmp_path, BASE).capacities["l4"].root_volume_gib == 200
    sized = BASE.replace("[capacity.l4]", "[capacity.l4]\nroot_volume_gib = 1000")
    assert _load(tmp_path, sized).capacities["l4"].root_volume_gib == 1000
    with pytest.raises(FleetSpecError, match=r"capacity.l4.root_volume_gib"):
        _load(tmp_path, BASE.replace("[capacity.l4]", "[capacity.l4]\nroot_volume_gib = 20"))
    managed = BASE.replace("[capacity.l4]", '[capacity.l4]\nkind = "managed-instances"\nroot_volume_gib = 400')
    with pytest.raises(
        FleetSpecError,
        match=r'capacity.l4.root_volume_gib does not apply to kind = "managed-instances".*task_volume_gib',
    ):
        _load(tmp_path, managed)


def test_managed_instances_hosts_data_volume_is_sized_in_the_fleet_file(tmp_path: Path) -> None:
    """On Managed Instances the images, logs and model caches go on the hosts' data volume, which ECS sizes at 80 GiB
    unless told (aws-cdk-lib, ManagedInstancesCapacityProviderProps.taskVolumeStorage); an EC2 host has a root
    volume instead."""
    managed = BASE.replace("[capacity.l4]", '[capacity.l4]\nkind = "managed-instances"')
    assert _load(tmp_path, managed).capacities["l4"].task_volume_gib is None
    sized = managed.replace('kind = "managed-instances"', 'kind = "managed-instances"\ntask_volume_gib = 400')
    assert _load(tmp_path, sized).capacities["l4"].task_volume_gib == 400
    with pytest.raises(FleetSpecError, match=r"capacity.l4.task_volume_gib"):
        _load(tmp_path, sized.replace("task_volume_gib = 400", "task_volume_gib = 10"))
    ec2 = BASE.replace("[capacity.l4]", "[capacity.l4]\ntask_volume_gib = 400")
    with pytest.raises(
        FleetSpecError, match=r'capacity.l4.task_volume_gib applies to kind = "managed-instances".*root_volume_gib'
    ):
        _load(tmp_path, ec2)


def test_a_fleet_file_is_built_into_the_planners_inputs_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``fleet.load`` builds the planner's inputs to check each task alone, and ``plan`` builds them again from the
    same spec: the second is the first's (11 ms of a 1,176-service command), in lists of its own; a spec replaced, not
    the same object, is built anew."""
    from dataclasses import replace

    from ecs_gpu_sharing.core import plan_inputs

    spec = fleet_module.load(REPO / "fleet.toml")
    built = []
    real = plan_inputs.service_input
    monkeypatch.setattr(plan_inputs, "service_input", lambda *a, **k: built.append(a[0]) or real(*a, **k))
    caps, services = from_fleet(spec)
    assert built == []  # load built them
    again = from_fleet(spec)
    assert again == (caps, services) and again[1] is not services and again[0] is not caps
    services.clear()  # a caller's lists are its own
    assert from_fleet(spec)[1] == again[1]
    other = replace(spec, name="other")
    assert from_fleet(other)[1] == again[1] and sorted(built) == sorted(spec.services)
