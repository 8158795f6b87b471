"""The dashboard's shell: follow the topics into a store, serve the pages, push changes.

``Dashboard.follow`` reads the status topics from their beginning (the newest record per
key, as ``vcbus get`` does), then keeps polling; every poll that changed something bumps
``version``. ``build_app`` is a Starlette app rendering each page from the store on
request (the Overview with charts of the samples ``Dashboard.sample`` takes every few
seconds); ``/events`` is a server-sent event stream saying ``change`` (at most twice a
second) so open pages fetch themselves again. ``serve`` runs both in the caller's event
loop with uvicorn, which leaves the signals to the caller.

With ``actions`` (``vcbus dashboard --actions``) the Job page can delete its job and the
Queues page can close and open queues: POST forms carrying a token made at start, which
publish the very records ``vcbus delete job`` and ``vcbus queue close|open`` publish.
Without it the routes that write answer 403.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import os
import secrets
import socket
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from urllib.parse import parse_qs, urlsplit

import msgspec
import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from vcbus.contracts.objects import QueueState
from vcbus.core.bus.protocol import Bus
from vcbus.core.bus.records import OutRecord
from vcbus.core.runtime.clock import SystemClock
from vcbus.core.runtime.settings import Settings
from vcbus.core.runtime.topology import ensure_topics
from vcbus.core.views.read_model import STORE_TOPICS
from vcbus.services.cli.commands import existing
from vcbus.services.cli.dashboard import pages
from vcbus.services.cli.dashboard.assets import CSS, LIVE_JS
from vcbus.services.cli.dashboard.job_detail import job_detail
from vcbus.services.cli.dashboard.samples import Samples, charts, sample_seconds, take_sample
from vcbus.services.cli.dashboard.store import HISTORY_SECONDS, DashboardStore, history_seconds
from vcbus.services.cli.dashboard.views import (
    JobFilter,
    job_list,
    node_cells,
    overview,
    queue_views,
)
from vcbus.services.cli.delete import delete_record
from vcbus.services.cli.logs import Target, request_log, target_of
from vcbus.services.cli.queue import current_queue
from vcbus.services.cli.status_store import StatusReader
from vcbus.services.submission import queue_record

TOPICS = tuple(sorted(STORE_TOPICS))
"""Everything the pages show."""

PUSH_INTERVAL = 0.5
"""Seconds between two ``change`` events on one stream (changes in between are merged)."""

SAMPLE_SHARE = 20.0
"""The wait after a sample is at least this many times as long as the sample took."""

KEEPALIVE = 15.0
"""Seconds of quiet after which a stream sends a comment, so proxies keep it open."""

HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; style-src 'self' 'unsafe-inline'; script-src 'self'; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
"""Sent with every page: only the app's own script runs; nothing is framed or leaks."""


class Dashboard:
    """The store the pages read, kept up to date from the topics."""

    def __init__(
        self,
        bus: Bus,
        settings: Settings,
        *,
        keep_deleted: float = HISTORY_SECONDS,
        every: float = 5.0,
    ) -> None:
        self.store = DashboardStore(settings.topic_prefix, keep_deleted=keep_deleted)
        self.samples = Samples()
        self.every = every
        """Seconds between two samples of the charts."""
        self.version = 0
        self.caught_up = asyncio.Event()
        self._bus = bus
        self._settings = settings
        self._changed = asyncio.Condition()

    async def follow(self, stop: asyncio.Event) -> None:
        """Read every topic from its beginning, then follow it until ``stop`` is set."""
        settings = self._settings
        await ensure_topics(self._bus, [], settings.topic_prefix, settings.partitions)
        store = self.store
        async with StatusReader(
            self._bus, settings.topic_prefix, TOPICS, client_id="vcbus-dashboard"
        ) as reader:
            while not stop.is_set():
                await reader.poll(store)
                if reader.caught_up and not self.caught_up.is_set():
                    self.caught_up.set()
                if store.touched and reader.caught_up:
                    store.touched.clear()
                    async with self._changed:
                        self.version += 1
                        self._changed.notify_all()

    async def sample(self, stop: asyncio.Event) -> None:
        """Sample the store for the charts every ``every`` seconds once caught up.

        A sample runs in the event loop that serves the pages: when one takes long (tens
        of thousands of jobs), the next waits :data:`SAMPLE_SHARE` times as long, so
        sampling never takes more than a twentieth of the loop.
        """
        loop = asyncio.get_running_loop()
        while not stop.is_set():
            took = 0.0
            if self.caught_up.is_set():
                started = loop.time()
                self.samples.add(take_sample(self.store, self.store.now()))
                took = loop.time() - started
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(self.every, SAMPLE_SHARE * took)):
                    await stop.wait()

    async def wait_change(self, seen: int, timeout: float) -> int:
        """The version after ``seen`` once there is one, or ``seen`` after ``timeout``."""
        async with self._changed:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._changed.wait_for(lambda: self.version != seen)
            return self.version


class Actions:
    """What the dashboard may change, sent as the CLI sends it; forms carry ``token``."""

    def __init__(self, bus: Bus, settings: Settings) -> None:
        self.token = secrets.token_urlsafe(32)
        self._bus = bus
        self._settings = settings

    def allows(self, form_token: str) -> bool:
        """Whether a form carries this dashboard's token."""
        return hmac.compare_digest(form_token.encode(), self.token.encode())

    async def delete_job(self, key: str) -> None:
        """Ask for the job to be deleted (``vcbus delete job``), in the job's trace."""
        found = await existing(self._bus, self._settings, [key])
        now = SystemClock().now()
        record, _ = delete_record(key, self._settings.topic_prefix, now, found.get(key))
        await self._publish(record)

    async def set_queue_state(self, name: str, state: QueueState) -> bool:
        """Declare the queue again in ``state`` (``vcbus queue close|open``); False: unknown."""
        queue = await current_queue(self._bus, self._settings, name)
        if queue is None:
            return False
        changed = msgspec.structs.replace(queue, state=state)
        now = SystemClock().now()
        await self._publish(queue_record(changed, self._settings.topic_prefix, now).record)
        return True

    async def _publish(self, record: OutRecord) -> None:
        producer = self._bus.producer(client_id="vcbus-dashboard")
        try:
            await producer.send([record])
        finally:
            await producer.stop()


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")


def allowed_hosts(bound: str) -> list[str]:
    """The ``Host`` names the dashboard answers: loopback's, the host's, the bound address.

    Bound to every interface, every address of the host's name counts too.

    A page of another site that rebinds its name to this address (DNS rebinding) sends its
    own name as ``Host``, and is refused; ``VCBUS_DASHBOARD_HOSTS`` (comma-separated) adds
    the names a proxy in front uses.
    """
    names = [*LOOPBACK_NAMES, bound, socket.gethostname(), socket.getfqdn()]
    if bound in ("0.0.0.0", "::"):
        with contextlib.suppress(OSError):
            names += socket.gethostbyname_ex(socket.gethostname())[2]
    names += [n.strip() for n in os.environ.get("VCBUS_DASHBOARD_HOSTS", "").split(",")]
    return sorted({name for name in names if name and name not in ("0.0.0.0", "::")})


def same_origin(request: Request, hosts: Sequence[str] | None) -> bool:
    """Whether an action's ``Origin`` (when the browser sends one) is one of ``hosts``."""
    origin = request.headers.get("origin")
    if hosts is None or origin is None:
        return True
    return (urlsplit(origin).hostname or "") in hosts


def build_app(
    dashboard: Dashboard,
    *,
    jaeger_url: str,
    actions: Actions | None = None,
    hosts: Sequence[str] | None = None,
) -> Starlette:
    """The web app: the pages, their assets, the change stream, and the actions if allowed.

    With ``hosts`` (as :func:`serve` gives), a request whose ``Host`` is none of them is
    refused (400), and an action whose ``Origin`` is another site's (403).
    """
    store = dashboard.store
    token = actions.token if actions is not None else ""

    def page(text: str, status: int = 200) -> HTMLResponse:
        return HTMLResponse(text, status_code=status, headers=HEADERS)

    def forbidden() -> HTMLResponse:
        return page(pages.message_page("Forbidden", "Actions are off, or the form is stale."), 403)

    async def overview_route(_: Request) -> Response:
        drawn = charts(dashboard.samples.ring, store.now())
        return page(pages.overview_page(overview(store), drawn))

    async def jobs_route(request: Request) -> Response:
        wanted = JobFilter.of(request.query_params)
        return page(pages.jobs_page(job_list(store, wanted)))

    async def job_route(request: Request) -> Response:
        key = f"{request.path_params['namespace']}/{request.path_params['name']}"
        detail = job_detail(store, key, jaeger_url=jaeger_url)
        if detail is None:
            return page(pages.message_page("Not found", f"No job {key} is known."), 404)
        return page(pages.job_page(detail, token=token))

    async def log_route(request: Request) -> Response:
        pod = f"{request.path_params['namespace']}/{request.path_params['pod']}"
        found = target_of(store, pod)
        if isinstance(found, str):
            return page(pages.message_page("No log", found), 404)
        status, body = await asyncio.to_thread(_pod_log, found)
        return Response(body, status_code=status, media_type="text/plain", headers=HEADERS)

    async def nodes_route(_: Request) -> Response:
        return page(pages.nodes_page(node_cells(store)))

    async def queues_route(_: Request) -> Response:
        return page(pages.queues_page(queue_views(store), token=token))

    async def delete_route(request: Request) -> Response:
        key = f"{request.path_params['namespace']}/{request.path_params['name']}"
        if actions is None or not same_origin(request, hosts):
            return forbidden()
        if not actions.allows(await _token(request)):
            return forbidden()
        await actions.delete_job(key)
        return RedirectResponse(pages.job_href(key), status_code=303)

    async def queue_route(request: Request) -> Response:
        name, verb = request.path_params["name"], request.path_params["verb"]
        if verb not in ("close", "open"):
            return page(pages.message_page("Not found", f"No action {verb}."), 404)
        if actions is None or not same_origin(request, hosts):
            return forbidden()
        if not actions.allows(await _token(request)):
            return forbidden()
        state = QueueState.CLOSED if verb == "close" else QueueState.OPEN
        if not await actions.set_queue_state(name, state):
            return page(pages.message_page("Not found", f"No queue {name} is known."), 404)
        return RedirectResponse("/queues", status_code=303)

    async def events_route(_: Request) -> Response:
        return StreamingResponse(
            _changes(dashboard),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    def asset(text: str, media_type: str) -> Callable[[Request], Response]:
        def route(_: Request) -> Response:
            return Response(text, media_type=media_type, headers=HEADERS)

        return route

    async def healthz(_: Request) -> Response:
        ready = dashboard.caught_up.is_set()
        return Response("ok\n" if ready else "catching up\n", status_code=200 if ready else 503)

    return Starlette(
        routes=[
            Route("/", overview_route),
            Route("/jobs", jobs_route),
            Route("/jobs/{namespace}/{name}", job_route),
            Route("/jobs/{namespace}/{name}/delete", delete_route, methods=["POST"]),
            Route("/queues/{name}/{verb:str}", queue_route, methods=["POST"]),
            Route("/pods/{namespace}/{pod}/log", log_route),
            Route("/nodes", nodes_route),
            Route("/queues", queues_route),
            Route("/events", events_route),
            Route("/static/dashboard.css", asset(CSS, "text/css")),
            Route("/static/live.js", asset(LIVE_JS, "text/javascript")),
            Route("/healthz", healthz),
        ],
        middleware=[]
        if hosts is None
        else [Middleware(TrustedHostMiddleware, allowed_hosts=hosts)],
    )


LOG_TAIL = 1000
"""The lines of a pod's log the dashboard shows (its last)."""


def _pod_log(target: Target) -> tuple[int, bytes]:
    """The last :data:`LOG_TAIL` lines of a pod's log from its agent: status and text."""
    try:
        connection = request_log(target, {"tail": str(LOG_TAIL)})
        try:
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()
    except OSError as exc:
        return 502, f"the agent at {target.host}:{target.port} did not answer: {exc}\n".encode()


async def _token(request: Request) -> str:
    """The ``token`` field of a URL-encoded form (the only kind the pages send)."""
    fields = parse_qs((await request.body()).decode("utf-8", "replace"))
    return fields.get("token", [""])[0]


async def _changes(dashboard: Dashboard) -> AsyncIterator[str]:
    seen = dashboard.version
    yield "retry: 2000\n\n"
    while True:
        version = await dashboard.wait_change(seen, KEEPALIVE)
        if version == seen:
            yield ": keepalive\n\n"
            continue
        seen = version
        yield f"event: change\ndata: {version}\n\n"
        await asyncio.sleep(PUSH_INTERVAL)


class _Server(uvicorn.Server):
    """uvicorn, leaving SIGINT and SIGTERM to the command that runs it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def listen(host: str, port: int, *, any_port_if_taken: bool = False) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free one).

    Raises:
        OSError: the port is taken (and ``any_port_if_taken`` is false).
    """
    try:
        return socket.create_server((host, port), family=_family(host))
    except OSError:
        if not any_port_if_taken or port == 0:
            raise
        return socket.create_server((host, 0), family=_family(host))


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def url_of(sock: socket.socket) -> str:
    """The address a listening socket serves the dashboard on."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


async def serve(
    bus: Bus,
    settings: Settings,
    sock: socket.socket,
    *,
    jaeger_url: str,
    stop: asyncio.Event,
    actions: bool = False,
) -> None:
    """Follow the topics and serve the dashboard on ``sock`` until ``stop`` is set.

    How long deleted jobs are kept and how often the charts are sampled come from
    ``VCBUS_DASHBOARD_HISTORY_SECONDS`` and ``VCBUS_DASHBOARD_SAMPLE_SECONDS``; a value
    that is not one is said on standard error and the default used.
    """
    dashboard = Dashboard(
        bus,
        settings,
        keep_deleted=_setting(history_seconds, HISTORY_SECONDS),
        every=_setting(sample_seconds, 5.0),
    )
    allowed = Actions(bus, settings) if actions else None
    config = uvicorn.Config(
        build_app(
            dashboard,
            jaeger_url=jaeger_url,
            actions=allowed,
            hosts=allowed_hosts(str(sock.getsockname()[0])),
        ),
        lifespan="off",
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=1,
    )
    server = _Server(config)
    async with asyncio.TaskGroup() as tasks:
        tasks.create_task(dashboard.follow(stop))
        tasks.create_task(dashboard.sample(stop))
        serving = tasks.create_task(server.serve(sockets=[sock]))
        await stop.wait()
        server.should_exit = True
        await serving


def _setting(read: Callable[[Mapping[str, str]], float], default: float) -> float:
    """A setting read from the environment, or ``default`` (said on stderr) when it is bad."""
    try:
        return read(os.environ)
    except ValueError as exc:
        sys.stderr.write(f"dashboard: {exc}; using {default:g}\n")
        return default
