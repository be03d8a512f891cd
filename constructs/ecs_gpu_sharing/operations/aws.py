"""Clients and readable failures for the operations commands.

Every AWS failure becomes one ``AwsOperationError`` line: what was being done, what went wrong, what to do.
Clients use botocore's standard retry mode, so throttling is retried with backoff before it is reported.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import boto3
import botocore.exceptions
import botocore.parsers
from botocore.config import Config

from ..core.errors import AwsOperationError
from ..regions import known_regions

Clients = Callable[[str, str | None], Any]  # a client for (service, region): ``client`` here, or a test's

# Bounded: an endpoint that never answers fails in about a minute and a half, not after minutes of waiting.
RETRIES = Config(connect_timeout=5, read_timeout=15, retries={"mode": "standard", "max_attempts": 5})

_ACCESS_DENIED = {"AccessDenied", "AccessDeniedException", "UnauthorizedOperation", "UnrecognizedClientException"}
_THROTTLED = {"Throttling", "ThrottlingException", "RequestLimitExceeded", "TooManyRequestsException"}
_EXPIRED = {"ExpiredToken", "ExpiredTokenException", "RequestExpired"}
_NOT_FOUND = {"ClusterNotFoundException", "ResourceNotFoundException", "ServiceNotFoundException", "NotFound"}


def _one_line(text: str, most: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= most else flat[: most - 1] + "…"


def require_known_region(name: str, where: str = "") -> None:
    """Refuses a region botocore's endpoint data does not know (``where``: the option it was given with, if any)."""
    if name not in known_regions():
        prefix = f"{where}: " if where else ""
        raise AwsOperationError(f"{prefix}unknown region {name!r}: use a region name such as us-east-1")


REGION_VARIABLES = ("AWS_REGION", "AMAZON_REGION", "AWS_DEFAULT_REGION", "AMAZON_DEFAULT_REGION")
NO_REGION = "no AWS region: pass --region, or set AWS_REGION or AWS_DEFAULT_REGION (or a region in your AWS profile)"


def default_region(environ: Mapping[str, str], profile_region: str | None) -> str | None:
    """The region the CDK CLI deploys an environment-agnostic stack to, so that the checks read the region ``cdk
    deploy`` writes to: the first of ``REGION_VARIABLES`` that is set, then the profile's region (aws-cdk-cli,
    toolkit-lib's aws-auth/awscli-compatible.ts, ``region()``; it falls back to the instance's region and then
    us-east-1, where these checks refuse instead). botocore reads only AWS_DEFAULT_REGION and the profile
    (botocore/configprovider.py), so with AWS_REGION alone, as Lambda, CodeBuild and CI actions set it, it found no
    region, and beside a profile's other region it read that one."""
    for name in REGION_VARIABLES:
        if environ.get(name):
            return environ[name]
    return profile_region


def _configured() -> tuple[Any, str | None]:
    """A boto3 session and its profile's region; a broken AWS configuration (a profile that does not exist, an
    unreadable config file) is one line."""
    with aws_errors("reading your AWS configuration"):
        try:
            session = boto3.session.Session()
            return session, session.region_name
        except OSError as error:
            raise AwsOperationError(
                f"reading your AWS configuration: {error.filename or 'a config file'}: {error.strerror}; fix its "
                "permissions or point AWS_CONFIG_FILE elsewhere"
            ) from None


def region_or_refuse(region: str | None, configured: tuple[Any, str | None] | None = None) -> str:
    """``region`` (an option's), else the default region (``default_region``; the configuration read here unless
    ``configured`` holds it); refuses, in one line, where there is none."""
    name = region or default_region(os.environ, (configured or _configured())[1])
    if not name:
        raise AwsOperationError(NO_REGION)
    return name


def client(service: str, region: str | None) -> Any:
    """A boto3 client with standard retries; refuses a region botocore does not know, and turns a broken AWS
    configuration (a profile that does not exist, an unreadable config file, a malformed endpoint URL) into one
    line."""
    configured = _configured()
    name = region_or_refuse(region, configured)
    require_known_region(name)
    make: Any = configured[0].client  # the stubs type each service by a literal name
    with aws_errors(f"creating the {service} client"):
        try:
            return make(service, region_name=name, config=RETRIES)
        except ValueError as error:  # botocore refuses a malformed endpoint URL (AWS_ENDPOINT_URL) this way
            raise AwsOperationError(
                f"creating the {service} client: {error}; check AWS_ENDPOINT_URL (a URL such as https://host:port)"
            ) from None


def caller_account(clients: Clients, region: str | None) -> str:
    """The account of the credentials the checks run with (sts GetCallerIdentity, which needs no permission: where it
    fails, every check after it would)."""
    with aws_errors("reading the credentials' account (sts GetCallerIdentity)"):
        return str(clients("sts", region).get_caller_identity()["Account"])


def same_account_or_refuse(clients: Clients, region: str | None, targets: Mapping[str, str]) -> str:
    """The credentials' account (``caller_account``), refused in one line where ``targets`` (what is checked -> the
    account it deploys to: a fleet file's ``account``, an environment-bound stack's) name another. The checks would
    read the credentials' account, not the one ``cdk deploy`` writes to, and the CDK CLI refuses to deploy there
    with them (aws-cdk-cli, toolkit-lib's aws-auth/sdk-provider.ts, ``fmtObtainCredentialsError``: "Need to perform
    AWS calls for account X, but the current credentials are for Y")."""
    actual = caller_account(clients, region)
    others = {what: account for what, account in targets.items() if account != actual}
    if others:
        named = "; ".join(f"{what} deploys to account {account}" for what, account in sorted(others.items()))
        raise AwsOperationError(
            f"the credentials are for account {actual}, but {named}: the checks would read account {actual}, and "
            "cdk deploy refuses these credentials there; run with credentials for that account (AWS_PROFILE)"
        )
    return actual


def fleet_account_or_refuse(
    clients: Clients, region: str | None, name: str, account: str | None, *, always: bool = False
) -> None:
    """``same_account_or_refuse`` for the fleet file ``name`` whose ``account`` (if any) binds its stacks. A fleet
    without one deploys to the credentials' account, whose identity is read only with ``always`` (to refuse missing
    or expired credentials before any check)."""
    if account or always:
        same_account_or_refuse(clients, region, {f"fleet {name}": account} if account else {})


@contextmanager
def aws_errors(doing: str) -> Iterator[None]:
    """Turns botocore's failures inside the block into one readable ``AwsOperationError`` line."""
    try:
        yield
    except botocore.exceptions.NoCredentialsError:
        raise AwsOperationError(
            f"{doing}: no AWS credentials found; configure a profile (aws configure / AWS_PROFILE) or set "
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        ) from None
    except botocore.exceptions.ClientError as error:
        code = str(error.response.get("Error", {}).get("Code", "") or "")
        message = _one_line(str(error.response.get("Error", {}).get("Message", "") or ""))
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if not code or code.isdigit() or message.lstrip().startswith("<"):
            # Not an AWS answer (an HTML page of a proxy, or of another endpoint): say so, not its markup.
            raise AwsOperationError(
                f"{doing}: the endpoint answered HTTP {status or code or '?'} with no AWS error; check "
                "AWS_ENDPOINT_URL, the region and any proxy"
            ) from None
        if code in _ACCESS_DENIED:
            hint = "grant the caller this permission, or use credentials that have it"
        elif code in _THROTTLED:
            hint = "AWS kept throttling after retries; wait and run again"
        elif code in _EXPIRED:
            hint = "the credentials have expired; refresh them"
        elif code in _NOT_FOUND:
            hint = "check the name and the region (--region)"
        else:
            hint = "what AWS said is above; correct the request, or the account, and run again"
        said = f"{code}: {message}" if message else code
        raise AwsOperationError(f"{doing}: {said}; {hint}") from None
    except botocore.exceptions.EndpointConnectionError as error:
        endpoint = error.kwargs.get("endpoint_url", "the AWS endpoint")
        raise AwsOperationError(f"{doing}: cannot reach {endpoint}; check the network and region") from None
    except botocore.parsers.ResponseParserError:
        # An answer botocore cannot read as AWS's (an HTML error page of a proxy, or of another endpoint, to a query
        # or XML service): not a ClientError, so said here rather than as a traceback.
        raise AwsOperationError(
            f"{doing}: the endpoint answered with no AWS response botocore could read; check AWS_ENDPOINT_URL, the "
            "region and any proxy"
        ) from None
    except botocore.exceptions.BotoCoreError as error:
        raise AwsOperationError(f"{doing}: {error}") from None


def customer_key(kms: Any, key_id: Any) -> str | None:
    """The ARN of the customer managed KMS key ``key_id`` names (a key id, key ARN, alias or alias ARN); ``None`` for
    none, or for a key AWS manages (``alias/aws/...``, which needs no grant). ``DescribeKey``'s failures are the
    caller's to handle."""
    if not isinstance(key_id, str) or not key_id or key_id.startswith("alias/aws/") or ":alias/aws/" in key_id:
        return None
    meta = kms.describe_key(KeyId=key_id)["KeyMetadata"]
    return str(meta["Arn"]) if meta.get("KeyManager") == "CUSTOMER" else None
