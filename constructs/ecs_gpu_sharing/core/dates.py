"""Dates compared with today. Pure Python.

"Today" is not one date: it is two at once somewhere on Earth, from UTC-12 to UTC+14. A date a person writes (the
day evidence was measured) or an AMI's release date is refused as in the future only when it is after today
everywhere, so a team west or east of the machine that checks it is not refused for a date that is already theirs.
"""

from __future__ import annotations

import datetime

_EARLIEST_ZONE_AHEAD = datetime.timedelta(hours=14)  # UTC+14 (Line Islands): the first zone to reach a date


def latest_today(now: datetime.datetime | None = None) -> datetime.date:
    """The latest date it is anywhere now: a date after it is in the future for everyone."""
    moment = now or datetime.datetime.now(datetime.UTC)
    return (moment.astimezone(datetime.UTC) + _EARLIEST_ZONE_AHEAD).date()
