"""checkout-cli's commands: listen, trigger, events (list, show, resend), logs tail."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from checkout_cli import listening, triggers
from checkout_cli.service import Service, ServiceError, Unreachable


def _home() -> Path:
    return Path(os.environ.get("CHECKOUT_CLI_HOME") or Path.home() / ".config" / "checkout-cli")


class Context:
    def __init__(self, api_url: str, api_key: str | None) -> None:
        self.api_url, self.api_key = api_url, api_key

    def service(self) -> Service:
        if not self.api_key:
            raise click.UsageError("no API key: set CHECKOUT_API_KEY (or pass --api-key)")
        return Service(self.api_url, self.api_key)


def _say(line: str) -> None:
    click.echo(line)
    sys.stdout.flush()


def _when(ms: int | None) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).astimezone().strftime("%Y-%m-%d %H:%M:%S") if ms else "-"


def _call(function, *args, **kwargs) -> Any:
    try:
        return function(*args, **kwargs)
    except (ServiceError, Unreachable) as exc:
        raise click.ClickException(str(exc)) from None


@click.group()
@click.option(
    "--api-url",
    envvar="CHECKOUT_API_URL",
    default="http://127.0.0.1:8000",
    show_default=True,
    help="The service's base URL (CHECKOUT_API_URL).",
)
@click.option("--api-key", envvar="CHECKOUT_API_KEY", help="An API key, svc_... (CHECKOUT_API_KEY).")
@click.pass_context
def cli(ctx: click.Context, api_url: str, api_key: str | None) -> None:
    """The checkout service from your laptop: webhook events forwarded to a local URL, read and resent, and
    made to happen in test mode (trigger)."""
    ctx.obj = Context(api_url, api_key)


@cli.command()
@click.option(
    "--forward-to", metavar="URL", help="Where each event is POSTed, e.g. http://localhost:3000/webhook."
)
@click.option(
    "--events",
    "types",
    metavar="TYPES",
    help="Comma-separated types to forward, e.g. payment.completed,refund.*",
)
@click.option("--print-secret", is_flag=True, help="Print the local signing secret (whsec_...) and exit.")
@click.pass_obj
def listen(obj: Context, forward_to: str | None, types: str | None, print_secret: bool) -> None:
    """Forward the organization's events as they happen to a local URL, signed with a local secret."""
    home = _home()
    secret = listening.local_secret(home)
    if print_secret:
        click.echo(secret)
        return
    if not forward_to:
        raise click.UsageError("--forward-to URL is needed (or --print-secret)")
    service = obj.service()
    cursor = listening.Cursor.load(listening.state_path(home, obj.api_url, obj.api_key or ""))
    wanted = [t.strip() for t in types.split(",") if t.strip()] if types else None
    stopper = listening.Stopper()
    signal.signal(signal.SIGTERM, stopper.request)
    signal.signal(signal.SIGINT, stopper.request)
    resumed = f" after {cursor.after}" if cursor.after else ""
    _say(f"Ready{resumed}: forwarding {', '.join(wanted) if wanted else 'every event'} to {forward_to}")
    _say(f"Signing with {secret[:10]}… (checkout-cli listen --print-secret)")
    sys.stdout.flush()
    try:
        status = listening.listen(
            service,
            url=forward_to,
            secret=secret,
            cursor=cursor,
            types=wanted,
            say=_say,
            stopper=stopper,
        )
    except KeyboardInterrupt:
        status = 0
    sys.exit(status)


@cli.command()
@click.argument("event", type=click.Choice(triggers.TRIGGERS))
@click.option(
    "--amount",
    type=click.IntRange(1),
    default=1_000_000,
    show_default=True,
    help="What the checkout costs, in the test token's smallest unit (1000000: 1 dUSDC).",
)
@click.option("--timeout", type=click.FloatRange(5, 3600), default=180, show_default=True, help="Seconds.")
@click.pass_obj
def trigger(obj: Context, event: str, amount: int, timeout: float) -> None:
    """Make EVENT happen in test mode: real objects, paid by the devnet wallet (a svc_test_ key)."""
    started = time.monotonic()
    _say(f"Triggering {event} in test mode")
    try:
        found = triggers.trigger(obj.service(), event, say=_say, amount=amount, timeout=timeout)
    except (triggers.TriggerError, Unreachable) as exc:
        raise click.ClickException(str(exc)) from None
    _say(f"{found['type']}  {found['id']}  after {time.monotonic() - started:.1f} s")
    if (why := triggers.amount_explained(found.get("data") or {})) is not None:
        _say(why)


@cli.group()
def events() -> None:
    """The organization's webhook events (kept 30 days)."""


@events.command("list")
@click.option("--type", "event_type", help="e.g. payment.completed")
@click.option("--delivered", type=click.Choice(["true", "false"]), help="Whether some endpoint answered 2xx.")
@click.option("--endpoint", help="Only events sent to this endpoint (wh_...).")
@click.option("--limit", type=click.IntRange(1, 100), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="The API's answer as it is.")
@click.pass_obj
def events_list(
    obj: Context,
    event_type: str | None,
    delivered: str | None,
    endpoint: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """The newest events, with how their deliveries stand."""
    params = {"limit": limit, "type": event_type, "delivered": delivered, "endpoint": endpoint}
    answer = _call(
        obj.service().call, "GET", "/api/v1/webhook-events", params={k: v for k, v in params.items() if v}
    )
    if as_json:
        click.echo(json.dumps(answer, indent=2))
        return
    for event in answer["data"]:
        outcomes = ", ".join(f"{d['endpoint']} {d['status']}" for d in event["deliveries"]) or "no endpoint"
        click.echo(f"{_when(event['created_at'])}  {event['id']}  {event['type']:<18} {outcomes}")
    if answer["has_more"]:
        click.echo(f"… {answer['total_count']} in all")


@events.command("show")
@click.argument("event_id")
@click.pass_obj
def events_show(obj: Context, event_id: str) -> None:
    """One event: its data, each delivery's body as sent and every attempt."""
    click.echo(json.dumps(_call(obj.service().call, "GET", f"/api/v1/webhook-events/{event_id}"), indent=2))


@events.command("resend")
@click.argument("event_id")
@click.option("--endpoint", help="Only to this endpoint (wh_...); default every endpoint it went to.")
@click.pass_obj
def events_resend(obj: Context, event_id: str, endpoint: str | None) -> None:
    """Send an event again (a new delivery, the same webhook-id): needs an admin key."""
    answer = _call(
        obj.service().call,
        "POST",
        f"/api/v1/webhook-events/{event_id}/resend",
        json={"endpoint": endpoint} if endpoint else {},
    )
    for delivery in answer["deliveries"]:
        if delivery["status"] == "pending" and delivery["attempts"] == 0:
            click.echo(f"{delivery['id']} queued to {delivery['endpoint']}")


@cli.group()
def logs() -> None:
    """The organization's API requests (its audit log)."""


@logs.command("tail")
@click.option("--every", type=click.FloatRange(0.5, 60), default=2.0, show_default=True, help="Seconds.")
@click.pass_obj
def logs_tail(obj: Context, every: float) -> None:
    """Print the organization's API writes as they happen, one line each (Ctrl-C to stop)."""
    service = obj.service()
    since = _call(service.call, "GET", "/api/v1/events", params={"limit": 1})
    shown = {event["id"] for event in since["data"]}
    newest = since["data"][0]["created_at"] if since["data"] else None
    try:
        while True:
            time.sleep(every)
            params: dict[str, Any] = {"limit": 100}
            if newest:
                params["from"] = newest
            try:
                answer = service.call("GET", "/api/v1/events", params=params)
            except Unreachable as exc:
                click.echo(f"logs: {exc}; asking again")
                continue
            except ServiceError as exc:
                raise click.ClickException(str(exc)) from None
            for event in reversed(answer["data"]):
                if event["id"] in shown:
                    continue
                shown.add(event["id"])
                newest = event["created_at"]
                click.echo(
                    f"{event['created_at']}  {event.get('request_method', '')} {event.get('request_path', '')} "
                    f"{event.get('status_code', '')}  {event.get('event_type', '')}  {event.get('resource_id', '')}"
                )
                sys.stdout.flush()
    except KeyboardInterrupt:
        return
