"""The AWS regions botocore's endpoint data knows, read from botocore's bundled data: no session, no credentials, no
call, and no boto3 (the synth imports this; boto3 stays in ``operations``)."""

from __future__ import annotations

import functools

import botocore.loaders


@functools.cache
def known_regions() -> tuple[str, ...]:
    """Every region botocore's endpoint data knows, sorted."""
    endpoints = botocore.loaders.create_loader().load_data("endpoints")
    return tuple(sorted({region for partition in endpoints["partitions"] for region in partition["regions"]}))


@functools.cache
def partition_of(region: str) -> str:
    """The partition a region is in (aws, aws-cn, aws-us-gov, ...), as an ARN writes it; aws for one botocore does not
    know."""
    endpoints = botocore.loaders.create_loader().load_data("endpoints")
    return next((p["partition"] for p in endpoints["partitions"] if region in p["regions"]), "aws")
