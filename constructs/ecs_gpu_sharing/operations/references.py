"""``fleet references``: before deploy, whether what the fleet names outside itself exists in the account.

The stacks deploy without them, and a task then fails to start: a secret that is not there (the task stops with
``ResourceInitializationError``), an ECR image that is not there (``CannotPullContainerError``). A model bucket that
is not there fails the model's first read. This looks each one up: Secrets Manager secrets and
SSM parameters in the fleet's region, ECR images in their own registry's region, S3 buckets. A secret, SecureString
parameter or bucket encrypted with a customer managed KMS key needs that key as the service's ``kms_key_arn``, or
no role of the task may decrypt it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import botocore.exceptions

from ..core.fleet import FleetSpec, ecr_image
from ..regions import partition_of
from .aws import aws_errors, customer_key


@dataclass(frozen=True)
class Reference:
    service: str  # the service that names it ("" for a load balancer's)
    kind: str  # secret, parameter, image, bucket, policy (an AWS managed policy, by ARN), certificate
    name: str
    problem: str | None
    load_balancer: str = ""  # the load balancer that names it (a certificate)

    @property
    def where(self) -> str:
        """The fleet file's table that names it."""
        return f"load_balancer.{self.load_balancer}" if self.load_balancer else f"service.{self.service}"

    def to_json(self) -> dict[str, Any]:
        out = {"service": self.service, "kind": self.kind, "name": self.name, "problem": self.problem}
        return {**out, "load_balancer": self.load_balancer} if self.load_balancer else out


def _named(spec: FleetSpec, partition: str) -> Iterator[tuple[str, str, str]]:
    """(service, kind, name) for each secret, parameter, private ECR image, bucket and AWS managed policy the fleet
    names (the policies by ARN in ``partition``, as the app's roles attach them)."""
    for service in spec.services.values():
        for policy in service.task_role_managed_policies:
            yield service.name, "policy", aws_managed_policy_arn(partition, policy)
        for ref in service.secrets.values():
            kind, _, name = ref.partition(":")
            yield service.name, "parameter" if kind == "ssm" else "secret", name
        for image in (service.image, *(s.image for s in service.sidecars)):
            if ecr_image(image) is not None:
                yield service.name, "image", image
        if service.model_bucket:
            yield service.name, "bucket", service.model_bucket


def _code(error: botocore.exceptions.ClientError) -> str:
    return str(error.response.get("Error", {}).get("Code", ""))


Found = tuple[str | None, str | None]  # what is wrong, and the customer managed key that encrypts it


def _customer_key(clients: Callable[[str, str | None], Any], region: str | None, key_id: Any) -> str | None:
    """``aws.customer_key``; a key the caller may not describe is taken as named, when it is named by ARN."""
    try:
        return customer_key(clients("kms", region), key_id)
    except botocore.exceptions.ClientError:
        return key_id if key_id.startswith("arn:") and ":key/" in key_id else None


def _secret(clients: Callable[[str, str | None], Any], region: str | None, name: str) -> Found:
    client = clients("secretsmanager", region)
    try:
        described = client.describe_secret(SecretId=name)
    except client.exceptions.ResourceNotFoundException:
        return f"no Secrets Manager secret {name!r} in {client.meta.region_name}: the task would not start", None
    return None, _customer_key(clients, region, described.get("KmsKeyId"))


def _parameter(clients: Callable[[str, str | None], Any], region: str | None, name: str) -> Found:
    client = clients("ssm", region)
    try:
        client.get_parameter(Name=name, WithDecryption=False)
    except client.exceptions.ParameterNotFound:
        return f"no SSM parameter {name!r} in {client.meta.region_name}: the task would not start", None
    found = client.describe_parameters(ParameterFilters=[{"Key": "Name", "Values": [name]}])["Parameters"]
    secure = [p for p in found if p.get("Type") == "SecureString"]
    return None, _customer_key(clients, region, secure[0].get("KeyId")) if secure else None


def _image(clients: Callable[[str, str | None], Any], region: str | None, name: str) -> Found:
    ref = ecr_image(name)
    assert ref is not None
    client = clients("ecr", ref.region)
    key = {"imageDigest": ref.reference} if ref.reference.startswith("sha256:") else {"imageTag": ref.reference}
    try:
        client.describe_images(registryId=ref.account, repositoryName=ref.repository, imageIds=[key])
    except client.exceptions.RepositoryNotFoundException:
        return (
            f"no ECR repository {ref.repository!r} in {ref.account}, {ref.region}: the task could not pull {name}",
            None,
        )
    except client.exceptions.ImageNotFoundException:
        return f"no image {ref.reference} in ECR repository {ref.repository!r}: the task could not pull {name}", None
    return None, None  # an image's encryption is ECR's to apply: not judged here


def _bucket(clients: Callable[[str, str | None], Any], region: str | None, name: str) -> Found:
    client = clients("s3", region)
    try:
        client.head_bucket(Bucket=name)
    except botocore.exceptions.ClientError as error:
        if _code(error) in ("404", "NoSuchBucket", "NotFound"):
            return f"no S3 bucket {name!r}: the model could not read its weights", None
        if _code(error) in ("403", "AccessDenied", "Forbidden"):
            return None, None  # it exists; whether the task role may read it is the app's grant, not this view
        raise
    try:
        rules = client.get_bucket_encryption(Bucket=name)["ServerSideEncryptionConfiguration"]["Rules"]
    except botocore.exceptions.ClientError:
        return None, None  # no default encryption, or not ours to read: nothing to say
    default = rules[0].get("ApplyServerSideEncryptionByDefault", {}) if rules else {}
    if not str(default.get("SSEAlgorithm", "")).startswith("aws:kms"):
        return None, None
    return None, _customer_key(clients, region, default.get("KMSMasterKeyID"))


def _policy(clients: Callable[[str, str | None], Any], region: str | None, arn: str) -> Found:
    client = clients("iam", region)
    try:
        client.get_policy(PolicyArn=arn)
    except client.exceptions.NoSuchEntityException:
        name = arn.rpartition("/")[2]
        return (
            f"no AWS managed policy {name}: IAM would refuse the role and the stack would not deploy; check its name "
            "in the IAM console's list of AWS managed policies",
            None,
        )
    return None, None


def _certificate(clients: Callable[[str, str | None], Any], region: str | None, arn: str) -> Found:
    """An HTTPS or TLS listener's certificate: ELB takes one that is there and issued (CreateListener answers
    CertificateNotFound for one that is not there, also while it waits for validation, aws/aws-cdk#6081, and
    UnsupportedCertificate for one not issued)."""
    client = clients("acm", arn.split(":")[3] or region)
    try:
        status = client.describe_certificate(CertificateArn=arn)["Certificate"].get("Status")
    except client.exceptions.ResourceNotFoundException:
        return (
            f"no ACM certificate {arn}: ELB would create no listener with it and the stack would not deploy; check the "
            "ARN and its region, or request or import the certificate in ACM there",
            None,
        )
    if status != "ISSUED":
        return (
            f"its status is {status}, not ISSUED: ELB would create no listener with it and the stack would not "
            "deploy; finish its validation (or import it again) first",
            None,
        )
    return None, None


def aws_managed_policy_arn(partition: str, name: str) -> str:
    """An AWS managed policy's ARN, as aws-iam's ``ManagedPolicy.from_aws_managed_policy_name`` writes it."""
    return f"arn:{partition}:iam::aws:policy/{name}"


LOOKUPS = {
    "secret": _secret,
    "parameter": _parameter,
    "image": _image,
    "bucket": _bucket,
    "policy": _policy,
    "certificate": _certificate,
}


def check(clients: Callable[[str, str | None], Any], region: str | None, spec: FleetSpec) -> list[Reference]:
    """Each reference, looked up once (by kind and name), with what is wrong with it."""
    seen: dict[tuple[str, str], Found] = {}
    out = []
    partition = partition_of(clients("sts", region).meta.region_name)
    for service, kind, name in _named(spec, partition):
        if (kind, name) not in seen:
            with aws_errors(f"looking up {kind} {name}"):
                seen[(kind, name)] = LOOKUPS[kind](clients, region, name)
        problem, key = seen[(kind, name)]
        given = spec.services[service].kms_key_arn
        if problem is None and key is not None and key != given:
            role = "task role could not read its weights" if kind == "bucket" else "task would not start"
            problem = (
                f"encrypted with the customer managed key {key}, which the app lets no role of this service use "
                f'(the {role}): set kms_key_arn = "{key}" on service.{service}'
            )
        out.append(Reference(service, kind, name, problem))
    for balancer in spec.load_balancers.values():
        if balancer.certificate_arn:
            arn = balancer.certificate_arn
            if ("certificate", arn) not in seen:
                with aws_errors(f"looking up certificate {arn}"):
                    seen[("certificate", arn)] = _certificate(clients, region, arn)
            out.append(Reference("", "certificate", arn, seen[("certificate", arn)][0], balancer.name))
    return out
