"""``fleet roles``: an account without ECS's service-linked role is told to create it before the first deploy.
Against moto's IAM, which speaks IAM's wire protocol (its own service-linked roles are misnamed, ``AWSServiceRoleForecs``,
so the role is made here under the name and path AWS gives it)."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from ecs_gpu_sharing.cli import main
from ecs_gpu_sharing.core.hardening import ECS_SERVICE_ROLE_PATH

from conftest import THREE_MODELS

TRUST = '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "ecs.amazonaws.com"}, "Action": "sts:AssumeRole"}]}'


@mock_aws
def test_an_account_without_ecss_service_linked_role_is_told_how_to_create_it(
    fake_credentials: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fleet", "roles", str(THREE_MODELS), "--region", "us-east-1"]) == 1
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "AWSServiceRoleForECS: missing",
        "the account has no AWSServiceRoleForECS (Amazon ECS's service-linked role): the cluster stack's capacity "
        "providers would fail ('ECS Service Linked Role does not exist') and the stack roll back; create it once for "
        "the account: aws iam create-service-linked-role --aws-service-name ecs.amazonaws.com",
    ]

    path, name = ECS_SERVICE_ROLE_PATH.rsplit("/", 1)
    boto3.client("iam", region_name="us-east-1").create_role(
        RoleName=name, Path=f"/{path}/", AssumeRolePolicyDocument=TRUST
    )
    assert main(["fleet", "roles", str(THREE_MODELS), "--region", "us-east-1", "--json"]) == 0
    assert '"exists": true' in capsys.readouterr().out


def test_a_caller_who_may_not_read_iam_gets_one_line(
    fake_credentials: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from botocore.stub import Stubber

    from ecs_gpu_sharing.operations import aws

    iam = boto3.client("iam", region_name="us-east-1")
    monkeypatch.setattr(aws, "client", lambda service, region: iam)
    with Stubber(iam) as stub:
        stub.add_client_error("get_role", "AccessDenied", "not allowed", 403, {"RoleName": "AWSServiceRoleForECS"})
        assert main(["fleet", "roles", str(THREE_MODELS), "--region", "us-east-1"]) == 1
    assert capsys.readouterr().err.strip() == (
        "error: reading IAM role AWSServiceRoleForECS: AccessDenied: not allowed; grant the caller this permission, "
        "or use credentials that have it"
    )
