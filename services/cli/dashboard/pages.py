"""The dashboard's HTML: one pure function per page, from its view model to text.

Every value that comes from the topics (names, reasons, messages, labels) goes through
``esc`` (``html.escape`` with quotes) or ``quote`` (URL parts). The pages work without
JavaScript; ``/static/live.js`` only swaps ``<main>`` for a fresh copy when the server says
something changed (server-sent events). No CDN: the stylesheet and the script are served
by the app itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from urllib.parse import quote, urlencode

from services.cli.dashboard.job_detail import JobDetail
from services.cli.dashboard.views import (
    Bar,
    JobList,
    JobRow,
    NodeCell,
    Overview,
    QueueView,
)

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


def _phase(phase: str) -> str:
    return f'<span class="phase phase-{esc(phase.lower())}">{esc(phase or "-")}</span>'


# -- pages --------------------------------------------------------------------------------


def overview_page(model: Overview) -> str:
    """The Overview: cluster use, jobs by phase, queues, the reservation."""
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
    return layout("Overview", "/", body)


def _job_cells(row: JobRow) -> tuple[str, ...]:
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
    return (
        f'<a class="job" href="{job_href(row.key)}">{esc(row.key)}</a>',
        esc(row.queue),
        _phase(row.phase),
        esc(row.podgroup_phase or "-"),
        tasks,
        reason,
    )


def _select(name: str, label: str, chosen: str, values: Sequence[str]) -> str:
    options = "".join(
        f'<option value="{esc(v)}"{" selected" if v == chosen else ""}>{esc(v or "all")}</option>'
        for v in ("", *values)
    )
    return f'<label>{label} <select name="{name}">{options}</select></label>'


def jobs_page(model: JobList) -> str:
    """The Jobs list, with its filters (a plain GET form)."""
    wanted = model.filter
    form = (
        '<form class="filters" method="get" action="/jobs">'
        + _select("namespace", "Namespace", wanted.namespace, model.namespaces)
        + _select("queue", "Queue", wanted.queue, model.queues)
        + _select("phase", "Phase", wanted.phase, model.phases)
        + '<button type="submit">Filter</button></form>'
    )
    table = _table(
        ("Job", "Queue", "Phase", "PodGroup", "Tasks (pend/run/succ/fail)", "Reason"),
        map(_job_cells, model.rows),
        "jobs",
    )
    shown = f"<p>{len(model.rows)} of {model.total} jobs</p>"
    return layout("Jobs", "/jobs", form + shown + table)


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
    parts.append(
        "<section><h2>Events</h2>"
        + _table(
            ("Time", "Topic", "Event", "Summary"),
            [(esc(e.at), esc(e.topic), esc(e.type), esc(e.summary)) for e in model.events],
            "events",
        )
        + "</section>"
    )
    if token and row.phase != "Rejected":
        parts.append(action(f"{job_href(row.key)}/delete", "Delete job", token))
    return layout(f"Job {row.key}", "/jobs", "\n".join(parts))


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
    return layout("Nodes", "/nodes", body)


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
