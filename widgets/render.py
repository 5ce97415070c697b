"""HTML (and plain text) for the widgets, as pure functions of snapshots, diffs and trace entries.

Every function answers a string, so tests read the same markup the browser shows.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from echomq_teach.connector import TraceEntry
from echomq_teach.keyspace import SETS, base
from echomq_teach.lab.styles import SETS as SET_STYLES
from echomq_teach.snapshots import Change, Snapshot

from .model import when

# fields in the order a learner reads a row; the rest follow alphabetically
ROW_ORDER = (
    "state",
    "attempts",
    "prior_attempts",
    "payload",
    "last_error",
    "parent",
    "parent_policy",
    "flow",
    "stalled",
    "lease_epoch",
)
_SHORT = 28

# The sheet's last rules reach past the kit's own elements. Links in the text of a notebook that shows
# the kit's widgets are underlined: JupyterLab draws them plain, in a blue that tells them from the words
# around them by colour alone (WCAG 1.4.1), and a style sheet in a widget is the one the kit carries to
# every JupyterLab a learner opens the course in. The kit's buttons (class emq-btn, render.button) take
# darker greens, teals and oranges than JupyterLab's, on which their white labels fell below 4.5:1.
CSS = """
<style>
.emq{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px;line-height:1.4;
  color:var(--jp-ui-font-color1,#1f2328);max-width:1080px}
.emq code,.emq .emq-mono{font-family:var(--jp-code-font-family,ui-monospace,monospace);font-size:12px}
.emq-title{font-weight:600;font-size:14px;margin:2px 0 6px}
.emq-title span{font-weight:400;color:var(--jp-ui-font-color2,#59636e)}
.emq-head{color:var(--jp-ui-font-color2,#59636e);font-size:12px;margin:2px 0 6px}
.emq-body{display:flex;gap:10px;align-items:flex-start;flex-wrap:wrap}
.emq-sets{display:grid;grid-template-columns:repeat(4,minmax(124px,1fr));gap:8px;flex:3 1 530px}
.emq-set{border:1px solid var(--jp-border-color2,#d1d9e0);border-top:3px solid var(--c);border-radius:6px;
  padding:5px 7px 6px;background:var(--jp-layout-color1,#fff);min-height:70px}
.emq-set-head{margin:0 0 4px;font-size:12px;font-weight:600;display:flex;justify-content:space-between;
  color:var(--t)}
.emq-set-head small{color:var(--jp-ui-font-color2,#59636e);font-weight:400}
.emq-glyph{margin-right:4px}
.emq-entry{padding:2px 5px;border-radius:4px;margin:2px 0;white-space:nowrap}
.emq-entry .emq-score{display:block;color:var(--jp-ui-font-color2,#59636e);font-size:11.5px;
  white-space:normal;text-wrap:balance}
.emq-tag{font-size:10.5px;padding:0 5px;border-radius:8px;background:#eef1f4;color:#59636e;margin-left:3px;
  font-family:var(--jp-ui-font-family,system-ui,sans-serif);text-decoration:none}
.emq-none{color:var(--jp-ui-font-color2,#59636e);font-style:italic;font-size:12px}
.emq-chg{background:#fff8c5;box-shadow:inset 0 0 0 1px #d4a72c;color:#1f2328}
.emq-chg .emq-score{color:#59636e}
.emq-gone{text-decoration:line-through}
.emq-rows{flex:1 1 230px;min-width:220px;max-width:440px}
.emq-card{border:1px solid var(--jp-border-color2,#d1d9e0);border-radius:6px;padding:5px 8px;margin:0 0 6px;
  background:var(--jp-layout-color1,#fff)}
.emq-card-head{margin:0 0 3px;font-size:12px;font-weight:600}
.emq-card table{border-collapse:collapse}
.emq-table{border-collapse:collapse;width:100%}
.emq-card td{padding:1px 4px;vertical-align:top;white-space:nowrap;font-size:12px}
.emq-card td+td{font-family:var(--jp-code-font-family,ui-monospace,monospace)}
.emq-card td:first-child{color:var(--jp-ui-font-color2,#59636e);width:1%}
.emq-table{margin-top:8px}
.emq-table th{text-align:left;font-weight:600;font-size:12px;border-bottom:1px solid var(--jp-border-color2,#d1d9e0);
  padding:2px 6px}
.emq-table td{padding:2px 6px;white-space:nowrap;border-bottom:1px solid var(--jp-border-color3,#eef1f4);
  font-size:12px;font-family:var(--jp-code-font-family,ui-monospace,monospace)}
.emq-extra{margin-top:6px;font-size:12px}
.emq-changes{margin-top:6px;font-size:12px;color:var(--jp-ui-font-color2,#59636e)}
.emq-changes code{background:#fff8c5;padding:0 3px;border-radius:3px;color:#1f2328}
.emq-cap{border-left:3px solid #1f6feb;padding:4px 10px;margin:4px 0 6px;background:var(--jp-layout-color2,#f6f8fa)}
.emq-cap .emq-h{font-weight:600;font-family:var(--jp-code-font-family,ui-monospace,monospace);font-size:12.5px}
.emq-cap .emq-c{margin-top:2px}
.emq-cap .emq-d{margin-top:3px;color:var(--jp-ui-font-color1,#1f2328);font-size:12px}
.emq-trace{background:#0d1117;color:#e6edf3;border-radius:6px;padding:6px 10px;margin:4px 0 8px;
  font-family:var(--jp-code-font-family,ui-monospace,monospace);font-size:12px;overflow-x:auto}
.emq-trace div{white-space:pre-wrap;overflow-wrap:anywhere;padding-left:2.2em;text-indent:-2.2em}
.emq-trace .emq-sent::before{content:"> ";color:#7d8590}
.emq-trace .emq-reply{color:#7ee787}
.emq-trace .emq-reply{padding-left:3.4em}
.emq-trace .emq-reply::before{content:"← ";color:#7d8590}
.emq-trace .emq-err{color:#ff7b72}
.emq-trace .emq-note{color:#7d8590;font-style:italic}
.emq-steps{display:flex;gap:4px;flex-wrap:wrap;margin:2px 0 6px;padding:0;list-style:none}
.emq-dot{font-size:11.5px;padding:1px 8px;border-radius:10px;border:1px solid var(--jp-border-color2,#d1d9e0);
  color:var(--jp-ui-font-color2,#59636e)}
.emq-dot.emq-done{background:#ddf4ff;border-color:#54aeff;color:#0a3069}
.emq-dot.emq-now{background:#0b3d91;border-color:#0b3d91;color:#fff;font-weight:600}
.emq-badge{display:inline-block;padding:0 7px;border-radius:10px;font-size:12px;background:#eef1f4;color:#1f2328}
.emq-b-awaiting_children{background:#fff8c5}.emq-b-pending{background:#ddf4ff}.emq-b-active{background:#dafbe1}
.emq-b-dead{background:#ffebe9}.emq-b-done{background:#eef1f4}
.emq-diff{margin:4px 0}
.emq-diff li{margin:1px 0}
.emq-doc{background:#ddf4ff;color:#0a3069}.emq-same{color:#116329}
.emq-undoc{background:#ffebe9;color:#82071e;font-weight:600}
.emq-cols{display:grid;grid-template-columns:1fr 1fr;gap:10px}
.emq-col{border:1px solid var(--jp-border-color2,#d1d9e0);border-radius:6px;padding:6px 8px;min-width:0}
.emq-col-head{margin:0 0 4px;font-size:13px;font-weight:600}
.emq-error{color:#cf222e;font-weight:600}
.emq-b-running{background:#dafbe1}.emq-b-frozen{background:#ddf4ff;color:#0a3069}.emq-b-ended{background:#ffebe9}
.emq-slotline{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.emq-events-head{margin:0 0 4px;font-size:12px;font-weight:600}
.emq-event{font-size:12px;margin:2px 0;padding-left:3.6em;text-indent:-3.6em}
.emq-verdict{border-left:4px solid #1a7f37;padding:4px 10px;margin:6px 0;background:var(--jp-layout-color2,#f6f8fa)}
.emq-verdict.emq-invalid{border-left-color:#cf222e}
.emq-verdict pre{margin:4px 0 0;font-size:12px;white-space:pre-wrap;word-break:normal;overflow-wrap:break-word}
.jp-Notebook:has(.emq) .jp-RenderedMarkdown a:link,.jp-Notebook:has(.emq) .jp-RenderedMarkdown a:visited{
  text-decoration:underline}
.emq-btn.mod-success,.emq-btn.mod-success:active,.emq-btn.mod-success.mod-active{background-color:#2e7d32}
.emq-btn.mod-info,.emq-btn.mod-info:active,.emq-btn.mod-info.mod-active{background-color:#00737e}
.emq-btn.mod-warning,.emq-btn.mod-warning:active,.emq-btn.mod-warning.mod-active{background-color:#b35c00}
</style>
"""
# each set's colour (the card's top border) and its ink (text: 4.5:1 on white), from the kit's one palette
CSS = CSS.replace(
    "</style>",
    "".join(f".emq-{name}{{--c:{st.colour};--t:{st.ink}}}" for name, st in SET_STYLES.items()) + "\n</style>",
)


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def short(value: str, width: int = _SHORT) -> str:
    return value if len(value) <= width else value[: width - 1] + "…"


def wrap(inner: str, style: bool = False) -> str:
    """One block in the kit's look; ``style=True`` carries the style sheet with it (HTML shown on its own).

    A widget carries the sheet once, in a hidden ``stylesheet()`` child, not in
    every value: a ``<style>`` inserted again with each update made the browser
    restyle the whole page at every click.
    """
    return (CSS if style else "") + f'<div class="emq">{inner}</div>'


def button(**kwargs: Any) -> Any:
    """An ``ipywidgets.Button`` in the kit's look: its white label at least 4.5:1 on its colour.

    JupyterLab's own success, info and warning colours carry white text at 4.1, 3.5 and 2.7 to 1;
    the kit's stylesheet darkens them for its buttons (class ``emq-btn``), and for no one else's.
    """
    import ipywidgets

    b = ipywidgets.Button(**kwargs)
    b.add_class("emq-btn")
    return b


def stylesheet() -> Any:
    """A hidden ``ipywidgets.HTML`` holding the style sheet: the first child of each of the kit's widgets."""
    import ipywidgets

    return ipywidgets.HTML(CSS, layout=ipywidgets.Layout(display="none"))


# -- what a diff highlights ------------------------------------------------------------------------
def tag(job_id: str, names: dict[str, str] | None) -> str:
    """A small role tag after an id ("parent", "child 2"), when the widget knows one."""
    name = (names or {}).get(job_id)
    return f' <span class="emq-tag">{esc(name)}</span>' if name else ""


class Marks:
    """The ids, set entries, row fields and counters one diff touched."""

    def __init__(self, changes: Iterable[Change] = ()) -> None:
        self.ids: set[str] = set()  # moved or scored: highlight the id where it is now
        self.fields: set[tuple[str, str]] = set()
        self.rows_added: set[str] = set()
        self.rows_removed: set[str] = set()
        self.counters: set[str] = set()
        self.other: list[Change] = []
        for c in changes:
            if c.kind in ("moved", "score") and c.job_id:
                self.ids.add(c.job_id)
            elif c.kind == "field" and c.job_id:
                name = c.detail[len(c.job_id) + 1 :].split(": ", 1)[0]
                self.fields.add((c.job_id, name))
            elif c.kind == "added" and c.job_id:
                self.rows_added.add(c.job_id)
            elif c.kind == "removed" and c.job_id:
                self.rows_removed.add(c.job_id)
            elif c.kind == "counter":
                self.counters.add(c.detail.split(":")[0] + ":" + c.detail.split(":")[1])
            else:
                self.other.append(c)


# -- the set view ------------------------------------------------------------------------------------
def _set_card(
    name: str, after: Snapshot, before: Snapshot | None, marks: Marks, limit: int, names: dict[str, str] | None
) -> str:
    members = after.sets[name]
    gone = [m for m in (before.sets[name] if before else {}) if m not in members]
    entries = []
    for i, job_id in enumerate(members):
        if i >= limit:
            entries.append(f'<div class="emq-none">… and {len(members) - limit} more</div>')
            break
        cls = "emq-entry emq-chg" if job_id in marks.ids else "emq-entry"
        entries.append(
            f'<div class="{cls}" data-id="{esc(job_id)}"><span class="emq-mono">{esc(job_id)}</span>'
            f'{tag(job_id, names)}<span class="emq-score">{esc(when(after, name, job_id))}</span></div>'
        )
    for job_id in gone:
        entries.append(
            f'<div class="emq-entry emq-gone" data-id="{esc(job_id)}"><span class="emq-mono">{esc(job_id)}</span>'
            f'{tag(job_id, names)}<span class="emq-score">left this set</span></div>'
        )
    if not members and not gone:
        entries.append('<div class="emq-none">empty</div>')
    # the set's shape beside its name, as on the plots (its colour is never all that tells it apart)
    glyph = f'<span class="emq-glyph" aria-hidden="true">{SET_STYLES[name].glyph}</span>'
    return (
        f'<div class="emq-set emq-{name}" data-set="{name}" role="group" aria-label="{name}: {len(members)}">'
        f'<div class="emq-set-head"><span>{glyph}{name}</span><small>{len(members)}</small></div>'
        + "".join(entries)
        + "</div>"
    )


def ordered_fields(rows: Iterable[dict[str, str]]) -> list[str]:
    seen: set[str] = set()
    for r in rows:
        seen.update(r)
    return [f for f in ROW_ORDER if f in seen] + sorted(seen - set(ROW_ORDER))


def _cell(job_id: str, f: str, value: str | None, marks: Marks) -> str:
    cls = ' class="emq-chg"' if (job_id, f) in marks.fields or job_id in marks.rows_added else ""
    if value is None:
        return f"<td{cls}>·</td>"
    return f'<td{cls} title="{esc(value)}">{esc(short(value))}</td>'


def _row_cards(after: Snapshot, before: Snapshot | None, marks: Marks) -> str:
    out = []
    for job_id in sorted(after.rows):
        row = after.rows[job_id]
        head_cls = " emq-chg" if job_id in marks.rows_added else ""
        lines = "".join(
            f"<tr><td>{esc(f)}</td>{_cell(job_id, f, row.get(f), marks)}</tr>" for f in ordered_fields([row])
        )
        gone = [f for f in (before.rows.get(job_id, {}) if before else {}) if f not in row]
        lines += "".join(f'<tr class="emq-gone"><td>{esc(f)}</td><td class="emq-chg">deleted</td></tr>' for f in gone)
        out.append(
            f'<div class="emq-card" data-row="{esc(job_id)}"><div class="emq-card-head{head_cls}">row '
            f"<code>job:{esc(job_id)}</code></div><table>{lines}</table></div>"
        )
    for job_id in sorted(marks.rows_removed):
        out.append(
            f'<div class="emq-card emq-gone" data-row="{esc(job_id)}"><div class="emq-card-head">row '
            f'<code>job:{esc(job_id)}</code></div><span class="emq-chg">row deleted</span></div>'
        )
    if not out:
        out.append('<div class="emq-card"><div class="emq-card-head">rows</div>'
                   '<span class="emq-none">no rows</span></div>')
    return '<div class="emq-rows">' + "".join(out) + "</div>"


def _row_table(after: Snapshot, marks: Marks, order: Sequence[str] | None, names: dict[str, str] | None) -> str:
    ids = [i for i in (order or []) if i in after.rows] + sorted(set(after.rows) - set(order or []))
    fields = ordered_fields(after.rows[i] for i in ids)
    head = "<tr><th>row job:&lt;id&gt;</th>" + "".join(f"<th>{esc(f)}</th>" for f in fields) + "</tr>"
    body = []
    for job_id in ids:
        row = after.rows[job_id]
        cls = ' class="emq-chg"' if job_id in marks.rows_added else ""
        body.append(
            f'<tr data-row="{esc(job_id)}"><td{cls}><code>{esc(job_id)}</code>{tag(job_id, names)}</td>'
            + "".join(_cell(job_id, f, row.get(f), marks) for f in fields)
            + "</tr>"
        )
    for job_id in sorted(marks.rows_removed):
        body.append(
            f'<tr class="emq-gone" data-row="{esc(job_id)}"><td><code>{esc(job_id)}</code>{tag(job_id, names)}</td>'
            f'<td colspan="{max(len(fields), 1)}" class="emq-chg">row deleted</td></tr>'
        )
    if not body:
        return '<div class="emq-none">no rows</div>'
    return f'<table class="emq-table">{head}{"".join(body)}</table>'


def _extras(after: Snapshot, marks: Marks) -> str:
    bits = []
    for key, value in sorted(after.counters.items()):
        cls = ' class="emq-chg"' if key in marks.counters else ""
        bits.append(f"<code{cls}>job:{esc(key)} = {esc(value)}</code>")
    for key, value in sorted(after.flow_hashes.items()):
        cls = ' class="emq-chg"' if key in marks.counters else ""
        bits.append(f"<code{cls}>job:{esc(key)}: {len(value)} entr{'y' if len(value) == 1 else 'ies'}</code>")
    bits.append(f"<code>metrics:completed count = {after.completed}</code>")
    return '<div class="emq-extra">' + " · ".join(bits) + "</div>"


def _clock(after: Snapshot, before: Snapshot | None) -> str:
    """The server's clock as a reader takes it in: time since the previous picture, or the time of day.

    A raw epoch in ms (1796324027985) says nothing at a glance; the scores below are already relative.
    """
    if before is not None and before.now_ms <= after.now_ms:
        return f"<code>+{after.now_ms - before.now_ms:,} ms</code> since the previous picture"
    at = datetime.fromtimestamp(after.now_ms / 1000, tz=UTC)
    return f"<code>{at:%H:%M:%S}.{after.now_ms % 1000:03d}</code> UTC"


def setview_html(
    after: Snapshot,
    before: Snapshot | None = None,
    changes: Sequence[Change] | None = None,
    *,
    rows: str = "auto",
    row_order: Sequence[str] | None = None,
    limit: int = 10,
    title: str | None = None,
    names: dict[str, str] | None = None,
    standalone: bool = True,
) -> str:
    """The four sets with scores read against server now, the rows beside them, and the last diff marked.

    ``rows`` is ``"side"`` (a card per row, beside the sets), ``"table"`` (one
    line per row, below them) or ``"auto"`` (cards for up to two rows).
    """
    marks = Marks(changes or [])
    layout = rows if rows != "auto" else ("side" if len(after.rows) + len(marks.rows_removed) <= 2 else "table")
    cards = "".join(_set_card(s, after, before, marks, limit, names) for s in SETS)
    head = (
        f'<div class="emq-head">queue <code>{esc(base(after.queue))}</code> · server clock '
        f"{_clock(after, before)}{' · <b>paused</b>' if after.paused else ''}</div>"
    )
    if layout == "side":
        body = f'<div class="emq-body"><div class="emq-sets">{cards}</div>{_row_cards(after, before, marks)}</div>'
    else:
        body = f'<div class="emq-sets">{cards}</div>{_row_table(after, marks, row_order, names)}'
    if changes:
        changed = " ".join(f"<code>{esc(c.detail)}</code>" for c in changes)
        foot = f'<div class="emq-changes">changed by the last call: {changed}</div>'
    elif before is not None:
        foot = '<div class="emq-changes">changed by the last call: nothing</div>'
    else:
        foot = ""
    top = f'<div class="emq-title">{esc(title)}</div>' if title else ""
    inner = f'<div class="emq-view">{top}{head}{body}{_extras(after, marks)}{foot}</div>'
    return wrap(inner, style=True) if standalone else inner


def setview_text(snap: Snapshot) -> str:
    """The same view as plain text: one line per set, then the rows."""
    lines = [f"queue {base(snap.queue)}" + (" (paused)" if snap.paused else "")]
    for s in SETS:
        members = ", ".join(f"{m} ({when(snap, s, m)})" for m in snap.sets[s]) or "—"
        lines.append(f"{s:<9}{members}")
    for job_id in sorted(snap.rows):
        row = snap.rows[job_id]
        lines.append(f"row {job_id}: " + ", ".join(f"{f} {short(row[f])}" for f in ordered_fields([row])))
    for key, value in sorted(snap.counters.items()):
        lines.append(f"job:{key} = {value}")
    return "\n".join(lines)


# -- captions and traces -------------------------------------------------------------------------------
def caption_html(headline: str, caption: str, detail: str = "") -> str:
    d = f'<div class="emq-d">{esc(detail)}</div>' if detail else ""
    return (
        f'<div class="emq-cap"><div class="emq-h">{esc(headline)}</div><div class="emq-c">{esc(caption)}</div>{d}</div>'
    )


def trace_html(entries: Sequence[TraceEntry], empty: str = "nothing sent") -> str:
    """The commands as a learner would type them, each with its reply."""
    if not entries:
        return f'<div class="emq-trace"><div class="emq-note">{esc(empty)}</div></div>'
    lines = []
    for e in entries:
        who = f"   # {e.script}" if e.script else ""
        lines.append(f'<div class="emq-sent">{esc(e.line)}<span class="emq-note">{esc(who)}</span></div>')
        cls = "emq-reply emq-err" if e.error else "emq-reply"
        lines.append(f'<div class="{cls}">{esc(e.reply_text)}</div>')
    return '<div class="emq-trace">' + "".join(lines) + "</div>"


def steps_html(names: Sequence[str], done: int) -> str:
    """The path as a row of dots: done (✓), the one just run (▸, and ``aria-current``), and the ones to come."""
    out = []
    for i, name in enumerate(names):
        if i == done - 1:
            cls, mark, now = "emq-dot emq-now", "▸ ", ' aria-current="step"'
        elif i < done:
            cls, mark, now = "emq-dot emq-done", "✓ ", ""
        else:
            cls, mark, now = "emq-dot", "", ""
        out.append(f'<li class="{cls}"{now}>{mark}{i + 1} · {esc(name)}</li>')
    return f'<ol class="emq-steps" aria-label="the path, {done} of {len(names)} steps run">' + "".join(out) + "</ol>"


def badge(state: str) -> str:
    return f'<span class="emq-badge emq-b-{esc(state.split()[0])}">{esc(state)}</span>'


def sizes_text(snap: Snapshot | None) -> str:
    """The four set sizes on one short line, for a widget's text/plain fallback: no ids, no clocks."""
    if snap is None:
        return "nothing read yet"
    return ", ".join(f"{name} {n}" for name, n in snap.sizes().items())


def fallback(text: str) -> str:
    """A widget's text/plain, which ipywidgets cuts at 110 characters: kept within them."""
    return text if len(text) <= 110 else text[:109] + "…"
