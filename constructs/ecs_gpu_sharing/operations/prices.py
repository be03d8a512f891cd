"""``ecs-gpu-sharing prices refresh``: on-demand prices of the catalog's GPU instance types, from AWS's Price List API.

``GetProducts`` (service ``AmazonEC2``, paginated) per instance type, filtered to one region's Linux, shared
tenancy, no pre-installed software, used capacity (``capacitystatus = Used``: the price of a running instance, not of
a reservation); each ``PriceList`` item is a JSON string whose ``terms.OnDemand`` offer has one price dimension in
hours. The Price List API answers from a few regions only; the client is made in us-east-1 and the region asked for
is a filter (``regionCode``). The result is a prices file (``core.cost``); nothing is committed to the repository.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable
from typing import Any

from ..core.cost import Prices
from ..core.errors import AwsOperationError
from .aws import aws_errors

PRICE_LIST_REGION = "us-east-1"
SOURCE = (
    "AWS Price List API, GetProducts: AmazonEC2, operatingSystem Linux, tenancy Shared, preInstalledSw NA, "
    "capacitystatus Used, on-demand price per hour"
)


def _filters(region: str, instance_type: str) -> list[dict[str, str]]:
    return [
        {"Type": "TERM_MATCH", "Field": field, "Value": value}
        for field, value in (
            ("instanceType", instance_type),
            ("regionCode", region),
            ("operatingSystem", "Linux"),
            ("tenancy", "Shared"),
            ("preInstalledSw", "NA"),
            ("capacitystatus", "Used"),
        )
    ]


def on_demand_price(items: Iterable[str], instance_type: str) -> float | None:
    """The on-demand price per hour in the Price List items of one instance type (``None``: no such offer)."""
    found: set[float] = set()
    for raw in items:
        item = json.loads(raw)
        for offer in item.get("terms", {}).get("OnDemand", {}).values():
            for dimension in offer.get("priceDimensions", {}).values():
                usd = dimension.get("pricePerUnit", {}).get("USD")
                if dimension.get("unit") == "Hrs" and usd is not None and float(usd) > 0:
                    found.add(float(usd))
    if len(found) > 1:
        raise AwsOperationError(
            f"the Price List API gives {len(found)} on-demand prices for {instance_type} ({sorted(found)}); "
            "report it: the filters no longer single out one offer"
        )
    return found.pop() if found else None


def refresh(pricing: Any, region: str, instance_types: Iterable[str], today: datetime.date) -> Prices:
    """The prices of ``instance_types`` in ``region``; a type without an on-demand offer there is left out."""
    prices: dict[str, float] = {}
    for instance_type in sorted(set(instance_types)):
        with aws_errors(f"reading the price of {instance_type} in {region} from the Price List API"):
            items = [
                raw
                for page in pricing.get_paginator("get_products").paginate(
                    ServiceCode="AmazonEC2", Filters=_filters(region, instance_type), FormatVersion="aws_v1"
                )
                for raw in page.get("PriceList", [])
            ]
        price = on_demand_price(items, instance_type)
        if price is not None:
            prices[instance_type] = price
    return Prices(region, today, "USD", prices, SOURCE)
