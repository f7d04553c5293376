"""Where the service keeps its files, and how settings read the environment."""

from __future__ import annotations

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    return int(raw) if raw not in (None, "") else default


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def parse_tiers(name: str, default: str, *, high: int) -> list[tuple[int, int]]:
    """`"10:120,500:80"` from the environment as [(10, 120), (500, 80)]: thresholds rising, values 0..`high`;
    anything else stops the service at start, naming the variable."""
    from django.core.exceptions import ImproperlyConfigured

    raw = os.environ.get(name) or default
    try:
        tiers = [
            (int(bound), int(value)) for bound, _, value in (item.partition(":") for item in raw.split(","))
        ]
    except ValueError:
        raise ImproperlyConfigured(f"{name} is tiers such as {default!r}, not {raw!r}") from None
    bounds = [bound for bound, _ in tiers]
    if bounds != sorted(set(bounds)) or any(not 0 <= value <= high for _, value in tiers) or bounds[0] <= 0:
        raise ImproperlyConfigured(f"{name}: thresholds must rise and each value be 0 to {high} ({raw!r})")
    return tiers
