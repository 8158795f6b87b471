"""The dashboard's HTML: one pure function per page, from its view model to text.

Every value that comes from the topics (names, reasons, messages, labels) goes through
``esc`` (``html.escape`` with quotes) or ``quote`` (URL parts). The pages work without
JavaScript; ``/static/live.js`` only swaps ``<main>`` for a fresh copy when the server says
something changed (server-sent events). No CDN: the stylesheet and the script are served
by the app itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from html import escape
from urllib.parse import quote, urlencode

from vcbus.core.views.age import age
from vcbus.core.views.events import MAX_EVENTS
from vcbus.services.cli.dashboard.job_detail import JobDetail
from vcbus.services.cli.dashboard.views import (
    PAGE_SIZE,
    SORTS,
    Bar,
    JobList,
    JobRow,
    NodeCell,
    Overview,
    QueueView,
)

DELETED_SHOWN = 20
"""Recently deleted jobs listed under the Jobs list (the newest); the rest are counted."""

ACTIVE = ' class="active" aria-current="page"'
PAGES = (("/", "Overview"), ("/jobs", "Jobs"), ("/nodes", "Nodes"), ("/queues", "Queues"))


def esc(value: object) -> str:
    """``value`` as text safe in HTML content and in quoted attributes."""
    return escape(str(value), quote=True)


def job_href(key: str) -> str:
    """The address of a job's page."""
    namespace, _, name = key.partition("/")
    return f"/jobs/{quote(namespace, safe='')}/{quote(name, safe='')}"


def pod_log_href(namespace: str, pod: str) -> str:
    """The address of a pod's log (its node's agent's, through the dashboard)."""
    return f"/pods/{quote(namespace, safe='')}/{quote(pod, safe='')}/log"


def layout(title: str, active: str, body: str) -> str:
    """A whole page: head, navigation, and ``body`` inside ``<main id="main">``."""
    nav = " ".join(
        f'<a href="{href}"{ACTIVE if href == active else ""}>{label}</a>' for href, label in PAGES
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>vcbus · {esc(title)}</title>"
        '<link rel="stylesheet" href="/static/dashboard.css">'
        '<script src="/static/live.js" defer></script></head>'
        f'<body><header><strong class="brand">vcbus</strong><nav>{nav}</nav>'
        '<span id="live" class="live" title="live updates">static</span></header>'
        f'<main id="main"><h1>{esc(title)}</h1>\n{body}\n</main></body></html>\n'
    )


def _bar(item: Bar) -> str:
    return (
        f'<div class="meter"><span class="label">{esc(item.label)}</span>'
        f'<span class="bar"><span class="fill" style="width:{item.percent}%"></span></span>'
        f'<span class="text">{esc(item.text)} ({item.percent}%)</span></div>'
    )


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    if not body:
        body = f'<tr><td colspan="{len(header)}" class="empty">none</td></tr>'
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def ago(at: datetime | None, now: datetime | None) -> str:
    """How long ago ``at`` was (``12s ago``), in a ``<time>`` the page's script keeps current."""
    if at is None or now is None:
        return "-"
    return f'<time class="ago" datetime="{esc(at.isoformat())}">{esc(age(at, now))} ago</time>'


def _phase(phase: str) -> str:
    return f'<span class="phase phase-{esc(phase.lower())}">{esc(phase or "-")}</span>'


# -- pages --------------------------------------------------------------------------------


def overview_page(model: Overview, charts: Sequence[str] = ()) -> str:
    """The Overview: cluster use, jobs by phase, queues, the reservation, charts over time.

    ``charts`` are inline SVG figures (:mod:`vcbus.core.views.charts`), drawn as given.
    """
    phases = "".join(
        f'<a class="count" href="/jobs?{urlencode({"phase": phase})}">'
        f"{_phase(phase)} <b>{count}</b></a>"
        for phase, count in model.phases
    )
    locks = (
        f'<p>Reservation target: <a href="{job_href(model.target)}">{esc(model.target)}</a>'
        if model.target
        else "<p>No reservation."
    )
    if model.locked:
        locks += " Locked nodes: " + ", ".join(
            f'<span class="lock">{esc(node)}</span>' for node, _ in model.locked
        )
    body = (
        f"<section><h2>Cluster ({model.nodes} nodes)</h2>{''.join(map(_bar, model.resources))}"
        f"{locks}</p></section>"
        f'<section><h2>Jobs ({model.jobs})</h2><div class="counts">{phases or "none"}</div>'
        f"</section><section><h2>Queues</h2>{_queue_table(model.queues)}</section>"
    )
    if charts:
        body += f'<section><h2>Over time</h2><div class="charts">{"".join(charts)}</div></section>'
    return layout("Overview", "/", body)


def _job_cells(row: JobRow, now: datetime | None) -> tuple[str, ...]:
    tasks = " ".join(
        f'<span class="task" title="pending/running/succeeded/failed">{esc(t.name)} '
        f"{t.pending}/{t.running}/{t.succeeded}/{t.failed}</span>"
        for t in row.tasks
    )
    reason = (
        f'<span class="reason">{esc(row.reason)}</span>'
        f'<span class="message">{esc(row.message)}</span>'
        if row.reason
        else ""
    )
    if row.admission:
        reason = f'<span class="admission">{esc(row.admission)}</span> {reason}'
    return (
        f'<a class="job" href="{job_href(row.key)}">{esc(row.key)}</a>',
        esc(row.queue),
        _phase(row.phase),
        esc(row.podgroup_phase or "-"),
        ago(row.created, now),
        tasks,
        reason,
    )


def _select(name: str, label: str, chosen: str, values: Sequence[str]) -> str:
    options = "".join(
        f'<option value="{esc(v)}"{" selected" if v == chosen else ""}>{esc(v or "all")}</option>'
        for v in ("", *values)
    )
    return f'<label>{label} <select name="{name}">{options}</select></label>'


HEADINGS = (
    ("Job", "name"),
    ("Queue", "queue"),
    ("Phase", "phase"),
    ("PodGroup", ""),
    ("Age", "age"),
    ("Tasks (pend/run/succ/fail)", ""),
    ("Reason", "reason"),
)
"""The Jobs list's columns and the order each heading sorts by (``""``: none)."""


def _heading(model: JobList, label: str, sort: str) -> str:
    """A column heading: a link sorting by it (again: the other way), marked when sorted."""
    if not sort or sort not in SORTS:
        return esc(label)
    wanted = model.filter
    current = wanted.sort == sort
    descending = not wanted.descending if current else sort == "age"
    href = "/jobs?" + urlencode(wanted.query(sort=sort, order="desc" if descending else "", page=1))
    mark = (" ▼" if wanted.descending else " ▲") if current else ""
    sorted_attr = (
        ' aria-sort="descending"'
        if current and wanted.descending
        else (' aria-sort="ascending"' if current else "")
    )
    return f'<a class="sort" href="{esc(href)}"{sorted_attr}>{esc(label)}{mark}</a>'


def _pager(model: JobList) -> str:
    wanted = model.filter
    if model.pages <= 1:
        return ""

    def link(page: int, label: str) -> str:
        href = "/jobs?" + urlencode(wanted.query(page=page))
        return f'<a class="page" href="{esc(href)}">{esc(label)}</a>'

    parts = []
    if wanted.page > 1:
        parts.append(link(wanted.page - 1, "‹ previous"))
    parts.append(f'<span class="where">page {wanted.page} of {model.pages}</span>')
    if wanted.page < model.pages:
        parts.append(link(wanted.page + 1, "next ›"))
    return f'<nav class="pager">{" ".join(parts)}</nav>'


def jobs_page(model: JobList) -> str:
    """The Jobs list: filters and search (a plain GET form), sortable columns, pages.

    Under it, the jobs deleted recently, each linking to its kept page.
    """
    wanted = model.filter
    hidden = "".join(
        f'<input type="hidden" name="{k}" value="{esc(v)}">'
        for k, v in wanted.query().items()
        if k in ("sort", "order")
    )
    form = (
        '<form class="filters" method="get" action="/jobs">'
        + _select("namespace", "Namespace", wanted.namespace, model.namespaces)
        + _select("queue", "Queue", wanted.queue, model.queues)
        + _select("phase", "Phase", wanted.phase, model.phases)
        + f'<label>Search <input type="search" name="q" value="{esc(wanted.search)}" '
        'placeholder="name, reason…"></label>'
        + hidden
        + '<button type="submit">Filter</button></form>'
    )
    head = "".join(f"<th>{_heading(model, label, sort)}</th>" for label, sort in HEADINGS)
    body = (
        "".join(
            "<tr>" + "".join(f"<td>{cell}</td>" for cell in _job_cells(row, model.now)) + "</tr>"
            for row in model.rows
        )
        or f'<tr><td colspan="{len(HEADINGS)}" class="empty">none</td></tr>'
    )
    table = f'<table class="jobs"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    first = (wanted.page - 1) * PAGE_SIZE + 1 if model.rows else 0
    shown = (
        f'<p class="shown">{first}–{first + len(model.rows) - 1 if model.rows else 0} of '
        f"{model.matched} matching, {model.total} jobs</p>"
    )
    return layout("Jobs", "/jobs", form + shown + table + _pager(model) + _deleted(model))


def _deleted(model: JobList) -> str:
    if not model.deleted:
        return ""
    items = "".join(
        f'<li><a href="{job_href(key)}">{esc(key)}</a> deleted {ago(at, model.now)}</li>'
        for key, at in model.deleted[:DELETED_SHOWN]
    )
    more = len(model.deleted) - DELETED_SHOWN
    rest = f"<p>{more} more deleted jobs are kept.</p>" if more > 0 else ""
    return (
        f'<section class="deleted"><h2>Deleted recently ({len(model.deleted)})</h2>'
        f"<ul>{items}</ul>{rest}</section>"
    )


def action(href: str, label: str, token: str) -> str:
    """A button posting to ``href`` with the dashboard's token (actions are on)."""
    return (
        f'<form class="action" method="post" action="{esc(href)}">'
        f'<input type="hidden" name="token" value="{esc(token)}">'
        f'<button type="submit">{esc(label)}</button></form>'
    )


def job_page(model: JobDetail, *, token: str = "") -> str:
    """One job: the describe view, with its events timeline and trace link.

    With ``token`` (actions are on), a button deletes the job.
    """
    row = model.row
    facts = [
        ("Phase", _phase(row.phase)),
        ("Queue", esc(row.queue or "-")),
        ("PodGroup", esc(row.podgroup_phase or "-")),
    ]
    if model.deleted_at is not None:
        facts.insert(
            0, ("Deleted", f'<span class="gone">{ago(model.deleted_at, model.now)}</span>')
        )
        facts[1] = ("Last phase", _phase(row.phase))
    if row.created is not None:
        facts.append(("Age", ago(row.created, model.now)))
    if model.admission:
        facts.append(("Admission", f'<span class="admission">{esc(model.admission)}</span>'))
    if model.place:
        facts.append(("Queue position", f'<span class="place">{esc(model.place)}</span>'))
    if model.trace_url:
        facts.append(
            (
                "Trace",
                f'<a class="trace" href="{esc(model.trace_url)}" rel="noopener">'
                f"{esc(model.trace_id)}</a>",
            )
        )
    parts = [
        '<dl class="facts">'
        + "".join(f"<dt>{label}</dt><dd>{value}</dd>" for label, value in facts)
        + "</dl>"
    ]
    if model.reasons:
        code, message, source = model.reasons[0]
        parts.append(
            f'<section class="why"><h2>Why it waits</h2><p><b class="reason">{esc(code)}</b>: '
            f'<span class="message">{esc(message)}</span> <small>({esc(source)})</small></p>'
            + "".join(
                f'<p class="also">also {esc(c)}: {esc(m)} <small>({esc(s)})</small></p>'
                for c, m, s in model.reasons[1:]
            )
            + "</section>"
        )
    elif row.reason:
        parts.append(
            f'<section class="why"><h2>Reason</h2><p><b class="reason">{esc(row.reason)}</b>: '
            f'<span class="message">{esc(row.message)}</span></p></section>'
        )
    if model.violations:
        parts.append(
            "<section><h2>Violations</h2>"
            + _table(("Path", "Reason", "Message"), [tuple(map(esc, v)) for v in model.violations])
            + "</section>"
        )
    parts.append(
        "<section><h2>Tasks</h2>"
        + _table(
            ("Task", "Replicas", "Min", "Depends on", "Pending", "Running", "Succeeded", "Failed"),
            [
                (
                    esc(t.name),
                    esc(t.replicas),
                    esc(t.min_available),
                    esc(t.depends_on or "-"),
                    *(str(n) for n in (c.pending, c.running, c.succeeded, c.failed)),
                )
                for t in model.tasks
                for c in (t.counts,)
            ],
        )
        + "</section>"
    )
    group = model.podgroup
    if group is not None:
        minimums = ", ".join(f"{esc(t)}={n}" for t, n in group.min_task_member) or "-"
        parts.append(
            '<section><h2>PodGroup</h2><dl class="facts">'
            f"<dt>Name</dt><dd>{esc(group.name)}</dd><dt>Phase</dt><dd>{_phase(group.phase)}</dd>"
            f"<dt>Min member</dt><dd>{group.min_member}</dd>"
            f"<dt>Min task member</dt><dd>{minimums}</dd>"
            f"<dt>Min resources</dt><dd>{esc(group.min_resources or '-')}</dd></dl></section>"
        )
    locked = ", ".join(f'<span class="lock">{esc(n)}</span>' for n in model.locked_nodes)
    parts.append(
        f"<section><h2>Reservation</h2><p>Locked nodes: {locked or 'none'}"
        + (f" ({esc(model.reservation)})" if model.reservation else "")
        + "</p></section>"
    )
    parts.append(
        "<section><h2>Pods</h2>"
        + _table(
            ("Pod", "Task", "Phase", "Node", "Log"),
            [
                (
                    esc(p.name),
                    esc(p.task),
                    _phase(p.phase),
                    esc(p.node or "-"),
                    f'<a href="{pod_log_href(row.namespace, p.name)}">log</a>' if p.node else "-",
                )
                for p in model.pods
            ],
        )
        + "</section>"
    )
    parts.append(
        "<section><h2>Conditions</h2>"
        + _table(
            ("Source", "Type", "Status", "Reason", "Message"),
            [
                (esc(c.source), esc(c.type), esc(c.status), esc(c.reason), esc(c.message))
                for c in model.conditions
            ],
        )
        + "</section>"
    )
    parts.append(_events(model))
    if token and row.phase != "Rejected" and model.deleted_at is None:
        parts.append(action(f"{job_href(row.key)}/delete", "Delete job", token))
    return layout(f"Job {row.key}", "/jobs", "\n".join(parts))


def _events(model: JobDetail) -> str:
    """``describe``'s events: type, reason, age (``x3 over 1m``), from, message; newest last."""
    shown = model.events[-MAX_EVENTS:]
    rows = []
    for e in shown:
        when = ago(e.at, model.now)
        if e.count > 1 and e.first is not None:
            when += f' <small class="count">(x{e.count} since {ago(e.first, model.now)})</small>'
        kind = f'<span class="event-{esc(e.type.lower())}">{esc(e.type)}</span>'
        rows.append((kind, esc(e.reason), when, esc(e.source), esc(e.message)))
    older = len(model.events) - len(shown)
    note = f"<p>{older} older events not shown.</p>" if older > 0 else ""
    table = _table(("Type", "Reason", "Age", "From", "Message"), rows, "events")
    return f"<section><h2>Events</h2>{note}{table}</section>"


NODE_LEVELS = (
    ("level-0", "idle"),
    ("level-1", "up to 25 % used"),
    ("level-2", "up to 50 %"),
    ("level-3", "up to 75 %"),
    ("level-4", "over 75 %"),
)
"""The node card's left edge by its fullest resource, as the legend says."""


def _legend() -> str:
    items = "".join(
        f'<li><span class="swatch node-edge {cls}"></span>{esc(text)}</li>'
        for cls, text in NODE_LEVELS
    )
    return (
        f'<ul class="legend node-legend">{items}'
        '<li><span class="swatch node-edge locked"></span>locked for a job (dashed outline)</li>'
        "</ul>"
    )


def nodes_page(cells: Sequence[NodeCell]) -> str:
    """The node grid, coloured by use; locked nodes marked with their target.

    A real node shows its heartbeat's age, and says NotReady and unenforced limits.
    """
    cards = []
    for cell in cells:
        classes = f"node level-{cell.level}" + (" locked" if cell.locked_for else "")
        lock = (
            f'<p class="lock">locked for <a href="{job_href(cell.locked_for)}">'
            f"{esc(cell.locked_for)}</a></p>"
            if cell.locked_for
            else ""
        )
        cordon = '<p class="cordon">unschedulable</p>' if cell.unschedulable else ""
        health = "".join(
            (
                f'<p class="cordon">{esc(cell.status)}</p>' if cell.status != "Ready" else "",
                f'<p class="heartbeat">heartbeat {esc(cell.heartbeat)}</p>'
                if cell.heartbeat != "-"
                else "",
                f'<p class="cordon">{esc(cell.limits)}</p>' if cell.limits != "-" else "",
            )
        )
        cards.append(
            f'<div class="{classes}" data-node="{esc(cell.name)}"><h3>{esc(cell.name)}</h3>'
            f"{''.join(map(_bar, cell.bars))}{lock}{cordon}{health}</div>"
        )
    body = f'<div class="grid">{"".join(cards)}</div>' if cards else "<p>No nodes yet.</p>"
    return layout("Nodes", "/nodes", _legend() + body)


def _queue_table(queues: Sequence[QueueView], token: str = "") -> str:
    header = ("Queue", "State", "Weight", "Share", "Allocated", "Capability", "PodGroups")
    return _table(
        (*header, "Action") if token else header,
        [
            (
                f'<a href="/jobs?{urlencode({"queue": q.name})}">{esc(q.name)}</a>',
                esc(q.state),
                str(q.weight),
                _bar(Bar("share", q.share, 100, "of the open queues' weight")),
                "".join(map(_bar, q.allocated)),
                esc(q.capability or "-"),
                " ".join(f"{esc(p)}={n}" for p, n in q.podgroups) or "-",
                *([_queue_action(q, token)] if token else []),
            )
            for q in queues
        ],
        "queues",
    )


def _queue_action(queue: QueueView, token: str) -> str:
    verb = "open" if queue.state == "Closed" else "close"
    return action(f"/queues/{quote(queue.name, safe='')}/{verb}", f"{verb.title()} queue", token)


def queues_page(queues: Sequence[QueueView], *, token: str = "") -> str:
    """Every queue: weight and share, what it holds, its capability, PodGroups by phase.

    With ``token`` (actions are on), a button closes or opens each queue.
    """
    return layout("Queues", "/queues", _queue_table(queues, token))


def message_page(title: str, text: str) -> str:
    """A page saying one thing (not found, bad request)."""
    return layout(title, "", f"<p>{esc(text)}</p>")
