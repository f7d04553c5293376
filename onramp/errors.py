"""What can go wrong talking to an onramp vendor, as order-interface errors."""

from orders.envelope import OrderError


def not_configured(vendor: str, settings_names: list[str]) -> OrderError:
    return OrderError(
        f"{vendor} is not configured on this service: set {', '.join(settings_names)}.",
        503,
    )


def vendor_unavailable(vendor: str) -> OrderError:
    return OrderError(f"{vendor} is unavailable right now; retry shortly.", 502)


def vendor_refused(vendor: str, reason: str | None) -> OrderError:
    return OrderError(f"{vendor} refused the request: {reason or 'no reason given'}.", 400)
