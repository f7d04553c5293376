"""A flash sale on the hosted page: PAYERS simulated payers arrive over RAMP seconds; each opens the link's
page, starts a checkout (the form's POST, with its CSRF cookie), opens the deposit page, then polls the
status every 2 s for POLL_SECONDS, sending back the ETag it was given as a browser does (`no-cache`).

The payers share one pool of CONNECTIONS keep-alive connections (a proxy in front of the service holds its
own to each node; 2,000 browsers' own connections would measure the operating system, not the service).
Latency is measured per step from the payer's point of view, queueing for a connection included.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import time
from collections import defaultdict

import aiohttp

STEPS = ("link page", "start checkout", "deposit page", "status poll")
CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


class Tally:
    def __init__(self) -> None:
        self.times: dict[str, list[float]] = defaultdict(list)
        self.queued: dict[str, list[float]] = defaultdict(list)  # waiting for one of the shared connections
        self.new_connections: dict[str, int] = defaultdict(int)  # requests that opened a connection
        self.errors: dict[str, int] = defaultdict(int)
        self.not_modified = 0

    def record(self, step: str, started: float, ok: bool) -> None:
        self.times[step].append((time.perf_counter() - started) * 1000)
        if not ok:
            self.errors[step] += 1

    def summary(self) -> dict[str, dict[str, float]]:
        out = {}
        for step in STEPS:
            times = sorted(self.times.get(step, []))
            if not times:
                continue
            q = statistics.quantiles(times, n=100, method="inclusive") if len(times) > 1 else [times[0]] * 99
            queued = self.queued.get(step, [])
            out[step] = {
                "count": len(times),
                "p50": q[49],
                "p95": q[94],
                "p99": q[98],
                "errors": self.errors[step],
                "queued": len(queued),
                "queued p50": statistics.median(queued) if queued else 0.0,
                "queued p95": statistics.quantiles(queued, n=20)[18] if len(queued) > 1 else 0.0,
                "new connections": self.new_connections[step],
            }
        return out


def _queue_trace(tally: Tally, step: list[str]) -> aiohttp.TraceConfig:
    """Records, by the payer's step, how long each request waited in all for one of the shared connections
    (a request may wait more than once: a freed connection can go to a request that did not wait), and the
    requests that opened a connection."""
    trace = aiohttp.TraceConfig()

    async def started(_session, context, _params) -> None:
        context.waited = 0.0

    async def queued(_session, context, _params) -> None:
        context.queued_at = time.perf_counter()

    async def dequeued(_session, context, _params) -> None:
        context.waited += time.perf_counter() - context.queued_at

    async def ended(_session, context, _params) -> None:
        if context.waited:
            tally.queued[step[0]].append(context.waited * 1000)

    async def created(_session, _context, _params) -> None:
        tally.new_connections[step[0]] += 1

    trace.on_request_start.append(started)
    trace.on_connection_queued_start.append(queued)
    trace.on_connection_queued_end.append(dequeued)
    trace.on_request_end.append(ended)
    trace.on_request_exception.append(ended)
    trace.on_connection_create_start.append(created)
    return trace


async def _payer(http, tally: Tally, *, delay: float, code: str, pay_with: str, poll_seconds: float) -> None:
    await asyncio.sleep(delay)
    jar = aiohttp.CookieJar(unsafe=True)  # its own cookies (CSRF), as its own browser
    current = ["link page"]
    async with aiohttp.ClientSession(
        base_url=http["base"],
        connector=http["connector"],
        connector_owner=False,
        cookie_jar=jar,
        timeout=aiohttp.ClientTimeout(total=30),
        trace_configs=[_queue_trace(tally, current)],
    ) as session:
        step = "link page"
        try:
            started = time.perf_counter()
            async with session.get(f"/pay/{code}") as response:
                page = await response.text()
                tally.record(step, started, response.status == 200)
            token = CSRF.search(page)
            step = current[0] = "start checkout"
            started = time.perf_counter()
            form = {"csrfmiddlewaretoken": token.group(1) if token else "", "pay_with": pay_with}
            async with session.post(f"/pay/{code}", data=form, allow_redirects=False) as response:
                await response.read()
                location = response.headers.get("Location", "")
                tally.record(step, started, response.status == 302 and "/pay/s/" in location)
            if "/pay/s/" not in location:
                return
            step = current[0] = "deposit page"
            started = time.perf_counter()
            async with session.get(location) as response:
                await response.read()
                tally.record(step, started, response.status == 200)
            step = current[0] = "status poll"
            etag, until = None, time.monotonic() + poll_seconds
            while time.monotonic() < until:
                await asyncio.sleep(2)
                started = time.perf_counter()
                headers = {"If-None-Match": etag} if etag else {}
                async with session.get(f"{location}/status", headers=headers) as response:
                    await response.read()
                    tally.record(step, started, response.status in (200, 304))
                    tally.not_modified += response.status == 304
                    etag = response.headers.get("ETag") or etag
        except (TimeoutError, aiohttp.ClientError):
            tally.record(step, started, False)


async def _surge(
    base: str, code: str, pay_with: str, payers: int, ramp: float, poll: float, connections: int
):
    tally = Tally()
    connector = aiohttp.TCPConnector(limit=connections)
    http = {"base": base, "connector": connector}
    try:
        await asyncio.gather(
            *(
                _payer(http, tally, delay=ramp * n / payers, code=code, pay_with=pay_with, poll_seconds=poll)
                for n in range(payers)
            )
        )
    finally:
        await connector.close()
    return tally


def run_surge(
    base: str, *, code: str, pay_with: str, payers: int, ramp: float, poll: float, connections: int
) -> dict:
    started = time.monotonic()
    tally = asyncio.run(_surge(base, code, pay_with, payers, ramp, poll, connections))
    return {
        "payers": payers,
        "seconds": time.monotonic() - started,
        "steps": tally.summary(),
        "not_modified": tally.not_modified,
    }


def payer_steps(base: str, *, code: str, pay_with: str, payers: int = 40) -> dict[str, dict[str, float]]:
    """Each payer step's server time with nothing else running: `payers` payers one after another, each with
    its own cookies (link page, the form's POST, the deposit page at its first view, and again); median and
    worst in ms."""
    import requests

    times: dict[str, list[float]] = defaultdict(list)
    for _ in range(payers + 3):
        with requests.Session() as session:

            def timed(step: str, method: str, url: str, session=session, **options):
                started = time.perf_counter()
                response = session.request(method, url, timeout=30, allow_redirects=False, **options)
                times[step].append((time.perf_counter() - started) * 1000)
                return response

            page = timed("link page", "GET", f"{base}/pay/{code}")
            token = CSRF.search(page.text)
            form = {"csrfmiddlewaretoken": token.group(1) if token else "", "pay_with": pay_with}
            location = (
                base + timed("start checkout", "POST", f"{base}/pay/{code}", data=form).headers["Location"]
            )
            timed("deposit page", "GET", location).raise_for_status()
            timed("deposit page, again", "GET", location).raise_for_status()
    return {
        step: {"median": statistics.median(values[3:]), "worst": max(values[3:])}  # 3 warm-up payers
        for step, values in times.items()
    }
