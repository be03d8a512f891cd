"""``stacks names``: before a deploy, whether a name a CDK app's stacks would create is taken in the account already,
which CloudFormation refuses, rolling the stack back:

- a Cloud Map private DNS namespace in a looked-up VPC whose name a private hosted zone of that VPC has
  (``namespace_zone``: Route 53 refuses the zone Cloud Map makes for it);
- a log group, role, instance profile, bucket, ECR repository or secret of a name known before deploy that is taken:
  a log group kept from an earlier deploy of the same app is the common case, since CDK keeps log groups (and buckets
  and repositories) when their stack is deleted; IAM's names are the account's in every region, a bucket's every
  account's, and a deleted secret's kept for its recovery window (``core.outside_names.names_made``). CloudFormation
  makes a resource of a given name only where none of that name exists ("Resource of type 'AWS::Logs::LogGroup' with
  identifier '...' already exists", handler error code AlreadyExists).

A name the deployed stack holds already (its physical id under the same logical id) is the stack's own: an update
keeps it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from ..core.outside_names import NAME_PROPERTIES, names_made
from .assembly import assembly_stacks, with_nested_stacks
from .aws import Clients, aws_errors
from .deployed import deployed_ids
from .namespace_zone import NamespaceZone
from .namespace_zone import check_assembly as namespaces_in_vpcs
from .stack_references import stack_pseudo_parameters


class Kind(NamedTuple):
    word: str  # what the lines call it
    why: str  # why a name of it is found taken
    service: str  # the AWS service it is looked up in


KINDS = {  # each type of core.outside_names.NAME_PROPERTIES
    "AWS::Logs::LogGroup": Kind(
        "log group", " (one kept from an earlier deploy: CDK keeps log groups when their stack goes)", "logs"
    ),
    "AWS::IAM::Role": Kind("role", " (IAM's names are the account's, in every region)", "iam"),
    "AWS::IAM::InstanceProfile": Kind("instance profile", " (IAM's names are the account's, in every region)", "iam"),
    "AWS::S3::Bucket": Kind("bucket", " (a bucket's name is every account's: this one or another holds it)", "s3"),
    "AWS::ECR::Repository": Kind("repository", " (CDK keeps repositories when their stack goes)", "ecr"),
    "AWS::SecretsManager::Secret": Kind(
        "secret", " (a secret deleted keeps its name until its recovery window ends: up to 30 days)", "secretsmanager"
    ),
}


@dataclass(frozen=True)
class NameTaken:
    owner: str  # the construct path of the resource
    kind: str  # its CloudFormation type
    name: str
    region: str
    taken: bool  # the account has one of this name that the deployed stack does not hold
    own: bool = False  # the deployed stack holds it under the same logical id: an update keeps it

    @property
    def problem(self) -> str | None:
        if not self.taken:
            return None
        word, why = KINDS[self.kind].word, KINDS[self.kind].why
        return (
            f"{self.owner}: the {word} {self.name!r} exists in {self.region} outside the stack{why}: CloudFormation "
            f"would refuse to create it and roll the stack back; delete it if it is not needed, or give the {word} "
            "another name (or none)"
        )

    def line(self) -> str:
        state = "taken" if self.taken else "the deployed stack's own" if self.own else "free"
        return f"{self.owner}: {KINDS[self.kind].word} {self.name}: {state} in {self.region}"

    def to_json(self) -> dict[str, Any]:
        return {
            "resource": self.owner,
            "kind": KINDS[self.kind].word,
            "name": self.name,
            "region": self.region,
            "problem": self.problem,
        }


def check_assembly(clients: Clients, cdk_out: Path, region: str | None) -> list[NamespaceZone | NameTaken | str]:
    """Every namespace in a looked-up VPC (``namespace_zone.check_assembly``) and every resource of
    ``core.outside_names.NAME_PROPERTIES`` named before deploy (``names_made``), each against the account, in its
    stack's region (else ``region``)."""
    out: list[NamespaceZone | NameTaken | str] = list(namespaces_in_vpcs(clients, cdk_out, region))
    stacks, templates = with_nested_stacks(assembly_stacks(cdk_out))
    if not _names_given(templates):
        return out  # nothing to read: the caller's account is not asked for
    _, pseudo = stack_pseudo_parameters(clients, stacks, region)
    where = {s.name: s.region or region for s in stacks}
    for made in names_made(templates, pseudo):
        at = where.get(made.stack)
        cloudformation = clients("cloudformation", at)
        shown = cloudformation.meta.region_name  # the stack's region (IAM's and S3's clients are the partition's)
        with aws_errors(f"{shown}: looking up the {KINDS[made.kind].word} {made.name}"):
            exists = _exists(clients(KINDS[made.kind].service, at), made.kind, made.name)
        own = False
        if exists:
            with aws_errors(f"{shown}: reading the deployed stack {made.stack}"):
                own = deployed_ids(cloudformation, made.stack).get(made.logical_id) == made.name
        out.append(NameTaken(made.owner, made.kind, made.name, shown, exists and not own, own))
    return out


def _names_given(templates: dict[str, Any]) -> bool:
    """Whether a resource of ``NAME_PROPERTIES`` is given a name at all (known now or only at deploy)."""
    return any(
        isinstance(r, dict) and (r.get("Properties") or {}).get(NAME_PROPERTIES.get(str(r.get("Type")), ""))
        for t in templates.values()
        for r in (t.get("Resources") or {}).values()
    )


def _exists(client: Any, kind: str, name: str) -> bool:
    """Whether ``name`` is taken for ``kind``: the lookup finds it. A bucket: S3 answers HeadBucket 404 for a name no
    account holds and 403 for one it may not read, another account's among them (Amazon S3 API Reference,
    HeadBucket). A secret: one scheduled for deletion is found too, and CreateSecret refuses its name until its
    recovery window (7 to 30 days) ends (Secrets Manager API Reference, CreateSecret, InvalidRequestException: "The
    secret is scheduled for deletion"; DeleteSecret)."""
    if kind == "AWS::Logs::LogGroup":
        groups = client.describe_log_groups(logGroupNamePrefix=name)["logGroups"]
        return any(g["logGroupName"] == name for g in groups)
    if kind == "AWS::S3::Bucket":
        try:
            client.head_bucket(Bucket=name)
        except client.exceptions.ClientError as error:
            status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if status == 404:
                return False
            if status == 403:
                return True  # the name is another account's
            raise
        return True
    calls: dict[str, tuple[str, dict[str, Any], str]] = {
        "AWS::IAM::Role": ("get_role", {"RoleName": name}, "NoSuchEntityException"),
        "AWS::IAM::InstanceProfile": ("get_instance_profile", {"InstanceProfileName": name}, "NoSuchEntityException"),
        "AWS::ECR::Repository": ("describe_repositories", {"repositoryNames": [name]}, "RepositoryNotFoundException"),
        "AWS::SecretsManager::Secret": ("describe_secret", {"SecretId": name}, "ResourceNotFoundException"),
    }
    method, arguments, missing = calls[kind]
    try:
        getattr(client, method)(**arguments)
    except getattr(client.exceptions, missing):
        return False
    return True
