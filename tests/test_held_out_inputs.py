"""#22 section 4: the inputs an audit found still getting through, each now one clear line (or a warning), never a
traceback or a hang. Each case names the file and the key."""

from __future__ import annotations

import datetime
import os
import stat
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecs_gpu_sharing import GpuSharingError
from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.core import fleet
from ecs_gpu_sharing.core.files import write_atomic
from ecs_gpu_sharing.core.hardening import is_root

from conftest import THREE_MODELS

EXAMPLE = THREE_MODELS.read_text()
EMBEDDER_ENV = 'environment = { MODEL_ID = "BAAI/bge-small-en-v1.5" }'
NOTE = """
[service.embedder.allocation]
residency_mib = 1024
peak_working_mib = 1024
shared_failure = "requests fail until ECS restarts the task; callers retry"
"""


def _refused(text: str, message: str) -> None:
    with pytest.raises(GpuSharingError) as error:
        fleet.parse(tomllib.loads(text), source="f.toml")
    assert message in str(error.value), str(error.value)
    assert all(line.startswith("f.toml: ") for line in str(error.value).splitlines())


def _embedder(extra: str) -> str:
    return EXAMPLE.replace(EMBEDDER_ENV, f"{EMBEDDER_ENV}\n{extra}", 1)


def _top(extra: str) -> str:
    return EXAMPLE.replace('name = "models"', f'name = "models"\n{extra}', 1)


# --- names: whole-string, ASCII ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (EXAMPLE.replace('name = "models"', 'name = "models\\n"'), "name 'models\\n' is malformed"),
        (_top('account = "12345678901\\n"\nregion = "us-east-1"'), "account '12345678901\\n' is malformed"),
        (_top('account = "' + "\uff11" * 12 + '"\nregion = "us-east-1"'), "account"),  # fullwidth digits
        (_top('account = "' + "\u0661" * 12 + '"\nregion = "us-east-1"'), "account"),  # Arabic-Indic digits
        (EXAMPLE.replace('ami_release = "20261113"', 'ami_release = "20261113\\n"'), "ami_release"),
        (EXAMPLE.replace('ami_release = "20261113"', 'ami_release = "٢٠٢٦١١١٣"'), "ami_release"),
    ],
)
def test_a_trailing_newline_or_a_non_ascii_digit_is_refused(text: str, message: str) -> None:
    _refused(text, message)


_VALID = {"name": "models", "account": "123456789012", "ami_release": "20261113"}


@settings(max_examples=60, deadline=None)
@given(
    key=st.sampled_from(sorted(_VALID)),
    suffix=st.sampled_from(["\n", "\r\n", " ", "\u00a0", "\u0663", "\u2028"]),
    where=st.sampled_from(["end", "middle"]),
)
def test_property_names_with_trailing_newlines_or_non_ascii_characters_are_refused(
    key: str, suffix: str, where: str
) -> None:
    value = _VALID[key]
    bad = value + suffix if where == "end" else value[:3] + suffix + value[3:]
    doc = tomllib.loads(_top('account = "123456789012"\nregion = "us-east-1"'))
    if key == "ami_release":
        doc["capacity"]["l4"]["ami_release"] = bad
    else:
        doc[key] = bad
    with pytest.raises(GpuSharingError):
        fleet.parse(doc, source="f.toml")


@pytest.mark.parametrize("depth", [50, 3000])
def test_deep_toml_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int) -> None:
    path = tmp_path / "deep.toml"
    path.write_text(EXAMPLE + "\nx = " + "[" * depth + "]" * depth + "\n")
    assert main(["plan", str(path)]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


# --- AWS formats and semantics -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (EXAMPLE.replace('name = "models"', 'name = "ecs-models"'), "ECS refuses for a capacity provider"),
        (EXAMPLE.replace('name = "models"', 'name = "Fargate-x"'), "would start with aws, ecs or fargate"),
        (_top(f'service_connect_namespace = "{".".join(["a" * 60] * 5)}"'), "service_connect_namespace"),
        (EXAMPLE.replace("python:3.12-slim", "Python:3.12-slim", 1), "image"),
        (EXAMPLE.replace("python:3.12-slim", "python@sha256:abc", 1), "image"),
        (EXAMPLE.replace("python:3.12-slim", "python:3.12-slim\\n", 1), "image"),
        (EXAMPLE.replace("python:3.12-slim", "python 3.12", 1), "image"),
        (_embedder("shm_size_mib = 4096"), "shm_size_mib 4096 is more than the container's memory_mib 3072"),
        (
            _embedder("") + NOTE + "compute_percent = 40\n",
            "max_compute_percent 25 caps the service below the 40% its allocation note says",
        ),
        (_embedder('health_check = ["curl", "-f", "http://localhost/"]'), "health_check starts with 'curl'"),
        (_embedder('secrets = { DB = "ssm:/app/../admin/key" }'), "an SSM parameter name has no '..'"),
        (_embedder(f'secrets = {{ DB = "ssm:/{"a" * 2048}" }}'), "at most 2048 characters"),
        (_embedder('model_bucket = "192.168.1.10"'), "formatted as an IP address"),
        (_embedder('model_bucket = "team..weights"'), "a period may not be next to"),
        (_embedder('model_bucket = "xn--weights"'), "the prefix xn-- is reserved"),
        (_embedder('model_bucket = "weights-s3alias"'), "the suffix -s3alias is reserved"),
        (
            _embedder(
                'max_tasks = 8\nscale_on_metric = { namespace = "Q", metric_name = "Backlog", target = 10, '
                "dimensions = { Queue = 3 } }"
            ),
            "dimensions.Queue must be a non-empty string",
        ),
        (_embedder('writable_paths = ["/"]'), "is the root or a system folder"),
        (_embedder('writable_paths = ["/proc/x"]'), "is the root or a system folder"),
        (_embedder('writable_paths = ["/app/../etc"]'), "climbs with '..'"),
        (_embedder('writable_paths = ["/tmp", "/tmp"]'), "/tmp"),
        (_embedder('writable_paths = ["/a.b", "/a_b"]'), "would get one volume name"),
        (
            _embedder("") + NOTE + "measured_peak_mib = 900\nmeasured_on = 2999-01-01\n",
            "measured_on 2999-01-01 is in the future",
        ),
        (
            _embedder("") + NOTE + "measured_peak_mib = 900\nmeasured_p99_mib = 950\nmeasured_on = 2026-11-01\n",
            "measured_p99_mib 950 is above measured_peak_mib 900",
        ),
        (
            _embedder("") + NOTE + "measured_peak_mib = 4000\nmeasured_on = 2026-11-01\n",
            "measured_peak_mib 4000 is above the task's GPU budget 3072",
        ),
        (
            _embedder("") + NOTE.replace("callers retry", "x" * 1_000_000),
            "shared_failure",
        ),
        (
            EXAMPLE.replace('instance_types = ["g6.2xlarge"]', 'instance_types = ["g6.2xlarge", "g6.2xlarge"]'),
            "instance_types names g6.2xlarge more than once",
        ),
    ],
)
def test_a_value_aws_docker_or_the_note_contradicts_is_refused(text: str, message: str) -> None:
    _refused(text, message)


def test_a_good_image_still_parses() -> None:
    for image in (
        "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/chat@sha256:" + "a" * 64,
        "localhost:5000/a/b:v1",
        "my-registry/embedder:1.4",
        "ghcr.io/org/x:1",
        "public.ecr.aws/docker/library/python:3.12-slim@sha256:" + "b" * 64,
    ):
        fleet.parse(tomllib.loads(EXAMPLE.replace("public.ecr.aws/docker/library/python:3.12-slim", image, 1)))


def _two_on_one_alb(embedder_route: str, reranker_route: str) -> str:
    text = EXAMPLE.replace(EMBEDDER_ENV, f'{EMBEDDER_ENV}\nload_balancer = "internal"\n{embedder_route}', 1)
    text = text.replace(
        'environment = { MODEL_ID = "BAAI/bge-reranker-base" }',
        f'environment = {{ MODEL_ID = "BAAI/bge-reranker-base" }}\nload_balancer = "internal"\n{reranker_route}',
        1,
    )
    return text + "\n[load_balancer.internal]\n"


@pytest.mark.parametrize(
    ("embedder", "reranker", "message"),
    [
        ('path = ["/*"]', 'path = ["/rerank/*"]', "path '/*' on load_balancer 'internal' matches every request"),
        ('host = "*"', 'path = ["/rerank/*"]', "host '*' on load_balancer 'internal' matches every request"),
        (f'path = ["/{"p" * 130}"]', 'path = ["/rerank/*"]', "path"),
    ],
)
def test_a_route_that_swallows_the_others_or_is_too_long_is_refused(embedder: str, reranker: str, message: str) -> None:
    _refused(_two_on_one_alb(embedder, reranker), message)


def test_service_connect_names_that_differ_only_in_case_are_refused() -> None:
    block = EXAMPLE[EXAMPLE.index("[service.embedder]") : EXAMPLE.index("[service.reranker]")]
    text = _top('service_connect_namespace = "models.internal"') + "\n" + block.replace("embedder", "Embedder", 1)
    _refused(text, "service.Embedder and service.embedder are one DNS name to Service Connect")


def test_a_kms_key_that_is_no_key_arn_unused_or_of_another_region_is_refused() -> None:
    key = "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
    secret = 'secrets = { TOKEN = "ssm:/team/token" }'
    fleet.parse(tomllib.loads(_embedder(f'kms_key_arn = "{key}"\n{secret}')), source="k.toml")  # a key ARN passes
    _refused(_embedder(f'kms_key_arn = "alias/team-secrets"\n{secret}'), "kms_key_arn")
    _refused(
        _embedder(f'kms_key_arn = "{key}"'),
        "service.embedder.kms_key_arn is given, but the service names no secrets and no model_bucket",
    )
    bound = _top('account = "123456789012"\nregion = "eu-west-1"')
    _refused(
        bound.replace(EMBEDDER_ENV, f'{EMBEDDER_ENV}\nkms_key_arn = "{key}"\n{secret}', 1),
        "service.embedder.kms_key_arn is in region us-east-1; Secrets Manager, SSM and S3 decrypt only with a key of "
        "their own region (eu-west-1)",
    )


def test_a_certificate_from_another_region_or_account_is_refused() -> None:
    cert = "arn:aws:acm:eu-west-1:999999999999:certificate/0a1b2c3d-1111-2222-3333-444455556666"
    text = _top('account = "123456789012"\nregion = "us-east-1"')
    text = text.replace(EMBEDDER_ENV, f'{EMBEDDER_ENV}\nload_balancer = "public"\npath = ["/e/*"]', 1)
    text += f'\n[load_balancer.public]\ninternet_facing = true\ncertificate_arn = "{cert}"\n'
    _refused(text, "certificate_arn is in region eu-west-1, account 999999999999")


def test_a_fake_region_is_refused_by_plan_as_by_synth(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "f.toml"
    path.write_text(_top('account = "123456789012"\nregion = "xx-nowhere-1"'))
    assert main(["plan", str(path)]) == 1
    assert "region 'xx-nowhere-1' is not an AWS region botocore knows" in capsys.readouterr().err


def test_root_stated_explicitly_is_still_root() -> None:
    assert is_root("root") and is_root("0") and is_root("0:0") and is_root("root:wheel")
    assert not is_root("1000:1000") and not is_root("app")
    # Docker reads a numeric user as a uid (Go's strconv.Atoi): "00" and "+0" are uid 0 where no user has that name
    assert is_root("00") and is_root("000:1000") and is_root("+0")
    assert not is_root("10") and not is_root("0app")


# --- tracebacks and hangs -------------------------------------------------------------------------------------


def test_a_fifo_or_a_device_as_the_fleet_file_is_refused_without_reading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "fleet.toml"
    os.mkfifo(fifo)
    assert main(["plan", str(fifo)]) == 1  # would block forever on a read
    assert "not a regular file" in capsys.readouterr().err
    assert main(["plan", "/dev/zero"]) == 1  # would fill the memory
    assert "not a regular file" in capsys.readouterr().err


def test_ten_thousand_services_are_refused_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    head = EXAMPLE[: EXAMPLE.index("[service.embedder]")]
    body = "".join(
        f'[service.s{i}]\ncapacity = "l4"\nimage = "repo/x:1"\ndesired_count = 1\ncpu_units = 64\n'
        f"memory_mib = 64\ngpu_budget_mib = 64\n"
        for i in range(10_000)
    )
    path = tmp_path / "wide.toml"
    path.write_text(head + body)
    start = datetime.datetime.now()
    assert main(["plan", str(path)]) == 1
    assert (datetime.datetime.now() - start).total_seconds() < 30  # was 677 s, then accepted
    assert "10000 [service.<name>] tables, more than one ECS cluster holds (5000" in capsys.readouterr().err


def test_plan_diff_of_a_plan_malformed_inside_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.json"
    assert main(["plan", str(THREE_MODELS), "--json"]) in (0, 1)
    good.write_text(capsys.readouterr().out)
    bad = tmp_path / "bad.json"
    bad.write_text('{"capacities": [{"name": 1}], "services": "x"}')
    assert main(["plan", "diff", str(good), str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}: not a fleet plan" in err and "capacities[].name is 1, not text" in err and "Traceback" not in err


def test_svg_into_proc_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(THREE_MODELS), "--svg", "/proc/x.svg"]) == 1
    err = capsys.readouterr().err
    assert "/proc/x.svg: cannot write it" in err and "Traceback" not in err


def test_aws_clients_give_up_on_an_endpoint_that_never_answers() -> None:
    from ecs_gpu_sharing.operations.aws import RETRIES

    assert RETRIES.connect_timeout == 5 and RETRIES.read_timeout == 15
    # botocore rewrites the dict when a client is made (max_attempts 5 becomes total_max_attempts 6): both bounded.
    assert RETRIES.retries is not None and RETRIES.retries["mode"] == "standard"
    assert RETRIES.retries.get("max_attempts", 5) == 5 and RETRIES.retries.get("total_max_attempts", 6) == 6


# --- writing the fleet file -----------------------------------------------------------------------------------


def test_writing_through_a_link_keeps_the_link_and_the_mode_and_cleans_up(tmp_path: Path) -> None:
    real = tmp_path / "team" / "fleet.toml"
    real.parent.mkdir()
    real.write_text("old")
    os.chmod(real, 0o644)
    link = tmp_path / "fleet.toml"
    link.symlink_to(real)
    leftover = real.parent / ".fleet.toml.abc123.ecs-gpu-sharing-tmp"  # from a write killed earlier
    leftover.write_text("half")
    write_atomic(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    assert stat.S_IMODE(real.stat().st_mode) == 0o644
    assert not leftover.exists() and sorted(p.name for p in real.parent.iterdir()) == ["fleet.toml"]


def test_a_new_file_gets_the_mode_the_umask_allows(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "plan.svg", "<svg/>")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "plan.svg").stat().st_mode) == 0o644
