"""Where the caller is: a trusted edge header, or a GeoLite2-City format database."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings

from core.http import client_ip

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Location:
    country: str | None  # ISO 3166-1 alpha-2
    region: str | None  # ISO 3166-2 subdivision code without the country, e.g. "HI"
    source: str


@lru_cache(maxsize=1)
def _reader(path: str):
    import geoip2.database

    return geoip2.database.Reader(path)


def locate(request) -> Location:
    if settings.GEOLOCATION_COUNTRY_HEADER:
        # Only set this when an edge you control overwrites the header on every request.
        country = request.headers.get(settings.GEOLOCATION_COUNTRY_HEADER, "").strip().upper() or None
        region = None
        if settings.GEOLOCATION_REGION_HEADER:
            region = request.headers.get(settings.GEOLOCATION_REGION_HEADER, "").strip().upper() or None
        return Location(
            country=country if country and len(country) == 2 else None, region=region, source="header"
        )
    if settings.GEOIP_DATABASE_PATH:
        import geoip2.errors

        try:
            city = _reader(settings.GEOIP_DATABASE_PATH).city(client_ip(request))
        except (geoip2.errors.AddressNotFoundError, ValueError):
            return Location(country=None, region=None, source="database")
        return Location(
            country=city.country.iso_code, region=city.subdivisions.most_specific.iso_code, source="database"
        )
    return Location(country=None, region=None, source="none")
