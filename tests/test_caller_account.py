"""The account the checks read is the one cdk deploy writes to: a fleet file's ``account``, or an environment-bound
stack's, against the credentials' (moto answers sts GetCallerIdentity for its account, 123456789012)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from moto import mock_aws

from ecs_gpu_sharing import preflight
from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.core.errors import AwsOperationError

from conftest import write_assembly

MOTO_ACCOUNT = "123456789012"
FLEET = (
    'name = "acct"\n{account}[capacity.gpu]\ninstance_types = ["g6.2xlarge"]\n'
    '[service.m]\ncapacity = "gpu"\nimage = "r/m:1"\ndesired_count = 1\ncpu_units = 256\nmemory_mib = 512\n'
    "gpu_budget_mib = 1024\n"
)


def _fleet(tmp_path: Path, account: str | None) -> Path:
    path = tmp_path / "fleet.toml"
    line = f'account = "{account}"\nregion = "us-east-1"\n' if account else ""
    path.write_text(FLEET.format(account=line))
    return path


@mock_aws
def test_a_fleet_of_another_account_is_refused_before_any_check(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every check would read the credentials' account, and cdk deploy refuses them for the fleet's: the preflight,
    and each check on its own, says so in one line and reads nothing else."""
    other = _fleet(tmp_path, "111111111111")
    assert main(["fleet", "preflight", str(other)]) == 1
    captured = capsys.readouterr()
    assert "== " not in captured.out and "preflight: passed" not in captured.out
    assert captured.err == (
        f"error: the credentials are for account {MOTO_ACCOUNT}, but fleet acct deploys to account 111111111111: the "
        f"checks would read account {MOTO_ACCOUNT}, and cdk deploy refuses these credentials there; run with "
        "credentials for that account (AWS_PROFILE)\n"
    )
    assert main(["fleet", "zones", str(other)]) == 1
    assert "fleet acct deploys to account 111111111111" in capsys.readouterr().err


@mock_aws
def test_a_fleet_of_the_credentials_account_or_of_none_is_checked(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for account in (MOTO_ACCOUNT, None):
        assert main(["fleet", "zones", str(_fleet(tmp_path, account))]) == 0
        assert capsys.readouterr().out.startswith("gpu: g6.2xlarge in us-east-1a")


def test_a_preflight_without_credentials_is_refused_before_any_check(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No credentials at all: every check would go unanswered and the preflight would pass; it is refused first. (No
    call leaves the machine: botocore finds no credentials before it would sign one.)"""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "empty").write_text("")
    for name in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.setenv(name, str(tmp_path / "empty"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    assert main(["fleet", "preflight", str(_fleet(tmp_path, None))]) == 1
    captured = capsys.readouterr()
    assert "== " not in captured.out
    assert captured.err.startswith(
        "error: reading the credentials' account (sts GetCallerIdentity): no AWS credentials"
    )


@mock_aws
def test_a_preflight_whose_every_check_went_unanswered_fails(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def unanswered(spec: object, region: object) -> None:
        raise AwsOperationError("not allowed")

    monkeypatch.setattr(preflight, "CHECKS", (("zones", unanswered, ""), ("quotas", unanswered, "")))
    monkeypatch.setattr(preflight, "_ami_report", unanswered)
    assert main(["fleet", "preflight", str(_fleet(tmp_path, None))]) == 1
    assert (
        capsys.readouterr()
        .out.strip()
        .endswith("preflight: failed: nothing was checked; not checked: zones, quotas, ami")
    )


def _assembly(tmp_path: Path, environment: str) -> Path:
    """One stack, Models, bound to ``environment`` (``aws://account/region``)."""
    out = write_assembly(tmp_path, {"Models": {"Resources": {}}})
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["artifacts"]["Models"]["environment"] = environment
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out


@pytest.mark.parametrize("command", ["zones", "quotas", "references", "replacements"])
@mock_aws
def test_a_stack_bound_to_another_account_is_refused(
    command: str, fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _assembly(tmp_path, "aws://111111111111/eu-west-1")
    assert main(["stacks", command, "--cdk-out", str(out)]) == 1
    assert "but stack Models deploys to account 111111111111" in capsys.readouterr().err


@mock_aws
def test_a_stack_bound_to_the_credentials_account_or_to_none_is_checked(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i, environment in enumerate((f"aws://{MOTO_ACCOUNT}/eu-west-1", "aws://unknown-account/unknown-region")):
        (tmp_path / str(i)).mkdir()
        out = _assembly(tmp_path / str(i), environment)
        assert main(["stacks", "zones", "--cdk-out", str(out)]) == 0
        assert capsys.readouterr().out.strip() == "the stacks have no Auto Scaling group of GPU instances"


@pytest.mark.parametrize("command", [["cluster", "status"], ["evaluate"]])
@mock_aws
def test_a_live_cluster_read_for_a_fleet_of_another_account_is_refused(
    command: list[str], fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """cluster status and evaluate read a live cluster beside a fleet file: one of another account's cluster is not
    in the credentials' (or is another one of the same name), so it is refused, naming both."""
    assert main([*command, "--cluster", "models", "--fleet", str(_fleet(tmp_path, "111111111111"))]) == 1
    assert "but fleet acct deploys to account 111111111111" in capsys.readouterr().err


@mock_aws
def test_a_live_cluster_is_read_in_the_fleets_region_where_no_region_is_given(
    fake_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fleet file's region is where its stacks deployed the cluster: read there, as the fleet checks read it, not
    in the configuration's (us-east-1 here); --region still comes first."""
    import boto3

    boto3.client("ecs", region_name="eu-west-1").create_cluster(clusterName="models")
    path = _fleet(tmp_path, MOTO_ACCOUNT)
    path.write_text(path.read_text().replace('region = "us-east-1"', 'region = "eu-west-1"'))
    main(["cluster", "status", "--cluster", "models", "--fleet", str(path)])
    assert "cluster models: 0 instances" in capsys.readouterr().out
    assert main(["cluster", "status", "--cluster", "models", "--fleet", str(path), "--region", "us-east-1"]) == 1
    assert "models" in capsys.readouterr().err
