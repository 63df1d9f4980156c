"""The audit report's model rendered as one self-contained HTML page: inline CSS and SVG, no script at all.

Every value goes through ``_e``: control, bidi and other invisible code points dropped (the
terminal's rule, ``safetext.visible``), then HTML-escaped with quotes, so no memory text can close
an element, open an attribute or reorder what the reader sees. No link is ever built from memory
text, and the Content-Security-Policy forbids every fetch, so a page that slipped would still stay
offline.
"""

from __future__ import annotations

import difflib
import html

from ..safetext import counted, visible
from .report_model import Chain, Change, Entry

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:16px 24px;color:#1b1f24;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d0d7de}
.banner{padding:8px 12px;border-radius:6px;margin:8px 0 16px;font-weight:600}
.private{background:#fff1e5;border:1px solid #d4a72c}.public{background:#ddf4ff;border:1px solid #54aeff}
.bad{color:#a40e26;font-weight:600}.ok{color:#116329}
table{border-collapse:collapse}td,th{padding:2px 10px 2px 0;text-align:left;vertical-align:top}
ol.timeline{list-style:none;padding:0;margin:0}
ol.timeline li{border-left:3px solid #8c959f;padding:4px 10px;margin:0 0 6px}
li.receipt.failed{border-color:#cf222e;background:#ffebe9}li.receipt.chain-break{border-left-width:8px}
li.gap{border-color:#bf8700;background:#fff8c5}
.meta{color:#57606a;font-size:12px}
details.run{margin:6px 0;border:1px solid #d0d7de;border-radius:6px;padding:4px 10px}
details.run>summary{cursor:pointer;font-weight:600}
details.memory{margin:4px 0 4px 12px}
pre.diff{background:#f6f8fa;padding:6px;overflow:auto;max-height:420px;white-space:pre-wrap}
.del{background:#ffebe9;display:block}.ins{background:#e6ffec;display:block}
ul.lost li{color:#a40e26}
svg text{font-size:11px;fill:#57606a}
polyline{fill:none}.store{stroke:#0969da}.mirror{stroke:#8250df}
circle.store,text.store{fill:#0969da}circle.mirror,text.mirror{fill:#8250df}
"""


def _e(value: object) -> str:
    return html.escape(visible(str(value)), quote=True)


def render(chain: Chain) -> str:
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{_e(CSP)}\">",
        "<meta name=\"referrer\" content=\"no-referrer\">",
        f"<title>memfold audit report{' ' + _e(chain.scope_key[:12]) if chain.scope_key else ''}</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>memfold audit report</h1>",
        "<p class=\"meta\">" + (f"scope {_e(chain.scope_key)} · " if chain.scope_key else "")
        + (f"project {_e(chain.project)} · " if chain.project else "")
        + f"generated {_e(chain.generated_at)}</p>",
    ]
    if chain.public:
        parts.append("<p class=\"banner public\" id=\"visibility\">Public report: only safe memories, as the "
                     "mirror shows them. Private memories appear in totals only.</p>")
    else:
        parts.append("<p class=\"banner private\" id=\"visibility\">This report holds private memory text "
                     "(names and bodies of the private store). Do not attach it or share it; "
                     "use <code>memfold report --public</code> for that.</p>")
    parts += [_summary(chain), _chart(chain.entries), _timeline(chain), _runs(chain.entries), "</body></html>\n"]
    return "".join(parts)


def _summary(chain: Chain) -> str:
    verdict = "<span class=\"ok\">chain verified</span>" if chain.audit_ok else \
        "<span class=\"bad\">chain verification FAILED</span>"
    shown = f"{len(chain.entries)} of {chain.receipts_total}" if len(chain.entries) != chain.receipts_total \
        else str(chain.receipts_total)
    lines, size, max_lines, max_bytes = chain.capacity
    rows = [f"<tr><th>audit</th><td id=\"audit\">{verdict}</td></tr>",
            f"<tr><th>receipts</th><td id=\"receipts\">{_e(shown)}</td></tr>",
            f"<tr><th>memories now</th><td id=\"memories\">{chain.memories}"
            + (" safe (mirror)" if chain.public else "") + "</td></tr>",
            "<tr><th>by type</th><td>" + _counts(chain.by_type) + "</td></tr>",
            "<tr><th>by visibility</th><td>" + _counts(chain.by_visibility) + "</td></tr>",
            f"<tr><th>index capacity</th><td>{lines}/{max_lines} lines, {size}/{max_bytes} bytes</td></tr>"]
    findings = "".join(f"<li class=\"bad\">{_e(f)}</li>" for f in chain.findings)
    now = _hand_edit_lines(chain.hand_edits_now, chain.hidden_hand_edits_now)
    out = "<h2>Newest state</h2><table>" + "".join(rows) + "</table>"
    if findings:
        out += f"<h3>Chain findings</h3><ul>{findings}</ul>"
    if now:
        out += f'<div class="gap handedit" id="hand-edits-now"><b>Hand edits since the newest receipt</b>{now}</div>'
    return out


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{_e(k)} {v}" for k, v in counts.items()) or "none"


def _chart(entries: tuple[Entry, ...]) -> str:
    if not entries:
        return "<h2>Store and mirror size</h2><p>No receipts yet.</p>"
    width, height, pad = 1000, 240, 36
    top = max(max(e.memories for e in entries), 1)
    step = (width - 2 * pad) / max(len(entries) - 1, 1)

    def xy(i: int, value: int) -> tuple[float, float]:
        return pad + i * step, height - pad - (height - 2 * pad) * value / top

    out = [(f"<h2>Store and mirror size</h2><svg id=\"sizes\" role=\"img\" viewBox=\"0 0 {width} {height}\" "
            f"width=\"100%\" xmlns=\"http://www.w3.org/2000/svg\"><title>memories per receipt</title>"),
           f"<line x1=\"{pad}\" y1=\"{height - pad}\" x2=\"{width - pad}\" y2=\"{height - pad}\" stroke=\"#8c959f\"/>",
           f"<text x=\"2\" y=\"{pad}\">{top}</text><text x=\"2\" y=\"{height - pad}\">0</text>"]
    for series, attr in (("store", "memories"), ("mirror", "mirror")):
        points = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(i, getattr(e, attr)) for i, e in enumerate(entries)))
        out.append(f"<polyline class=\"{series}\" stroke-width=\"2\" points=\"{points}\"/>")
        for i, e in enumerate(entries):
            x, y = xy(i, getattr(e, attr))
            out.append(f"<circle class=\"point {series}\" data-seq=\"{e.seq}\" data-{attr}=\"{getattr(e, attr)}\" "
                       f"cx=\"{x:.1f}\" cy=\"{y:.1f}\" r=\"3\"><title>#{e.seq} {series} {getattr(e, attr)}"
                       "</title></circle>")
    out.append(f"<text x=\"{pad}\" y=\"{height - 8}\" class=\"store\">● private store (all memories)</text>"
               f"<text x=\"{pad + 240}\" y=\"{height - 8}\" class=\"mirror\">● mirror (safe memories)</text></svg>")
    return "".join(out)


def _hand_edit_lines(lines: tuple[str, ...], hidden: int) -> str:
    items = [f"<li>{_e(line)}</li>" for line in lines]
    if hidden:
        items.append(f"<li>{hidden} private file(s)</li>")
    return f"<ul>{''.join(items)}</ul>" if items else ""


def _timeline(chain: Chain) -> str:
    out = ["<h2>Timeline</h2><ol class=\"timeline\" id=\"timeline\">"]
    for e in chain.entries:
        edits = _hand_edit_lines(e.hand_edits, e.hidden_hand_edits)
        if edits:
            out.append(f"<li class=\"gap handedit\" data-before-seq=\"{e.seq}\"><b>HAND EDIT</b> between the "
                       f"previous receipt and #{e.seq}: files changed outside memfold{edits}</li>")
        classes = "receipt" + ("" if e.ok else " failed") + (" chain-break" if e.chain_break else "")
        status = "<span class=\"ok\">verified</span>" if e.ok else "<span class=\"bad\">FAILED</span>"
        if e.chain_break:
            status += " <span class=\"bad\">CHAIN BREAK</span>"
        counts = _kind_counts(e.changes)
        out.append(
            f"<li class=\"{classes}\" id=\"r{e.seq}\" data-seq=\"{e.seq}\" data-run=\"{_e(e.run_id)}\">"
            f"<b>#{e.seq}</b> {_e(e.command)}" + (f" (undoes {_e(e.undoes)})" if e.undoes else "")
            + f" · {status} · {_e(e.created_at)} · {counted(e.memories, 'memory')}, {e.mirror} mirrored"
            + (f" · {_e(counts)}" if counts else "")
            + f"<div class=\"meta\">run {_e(e.run_id)} · worker {_e(e.worker)} · sandbox {_e(e.sandbox)}</div>"
            + "".join(f"<div class=\"bad\">{_e(f)}</div>" for f in e.findings) + "</li>")
    out.append("</ol>")
    return "".join(out)


def _kind_counts(changes: tuple[Change, ...]) -> str:
    counts: dict[str, int] = {}
    for c in changes:
        counts[c.kind] = counts.get(c.kind, 0) + 1
        if c.reclassified and c.kind != "reclassified":
            counts["reclassified"] = counts.get("reclassified", 0) + 1
    return ", ".join(f"{n} {k}" for k, n in counts.items())


def _runs(entries: tuple[Entry, ...]) -> str:
    out = ["<h2>Runs</h2>"]
    for e in entries:
        if not e.changes and e.run_dir:
            continue
        out.append(f"<details class=\"run\" id=\"run-{e.seq}\"><summary>#{e.seq} {_e(e.command)} · "
                   f"{_e(e.run_id)} · {counted(len(e.changes), 'memory', 'memories')} touched</summary>")
        if not e.run_dir:
            out.append("<p class=\"bad\">The run dir is gone (pruned): verdicts, merges and plan reasons are not "
                       "available; changes come from the receipt's hash maps.</p>")
        out.extend(_change(c) for c in e.changes)
        out.append("</details>")
    return "".join(out)


def _change(c: Change) -> str:
    label = (
        c.kind + (f" into {', '.join(c.into)}" if c.into else "") + (f", {c.reclassified}" if c.reclassified else "")
    )
    if c.verdict:
        label += f", verdict {c.verdict}"
    out = [f"<details class=\"memory change-{_e(c.kind)}\"><summary>{_e(c.name)}: {_e(label)}</summary>"]
    if c.reason:
        out.append(f"<p class=\"meta\">{_e(c.reason)}</p>")
    if c.missing_text:
        out.append("<p class=\"meta\">Some of this memory's text is no longer on disk (its run was pruned).</p>")
    if c.lost:
        out.append("<p>Lines no memory carries after this run:</p><ul class=\"lost\">"
                   + "".join(f"<li>{_e(line)}</li>" for line in c.lost) + "</ul>")
    if c.before is not None or c.after is not None:
        out.append("<pre class=\"diff\">" + _diff(c.before or "", c.after or "") + "</pre>")
    out.append("</details>")
    return "".join(out)


def _diff(before: str, after: str) -> str:
    lines = []
    for line in difflib.unified_diff(before.splitlines(), after.splitlines(), "before", "after", lineterm="", n=3):
        if line.startswith(("---", "+++")):
            continue
        cls = "del" if line.startswith("-") else "ins" if line.startswith("+") else "hunk" if line.startswith("@@") \
            else "ctx"
        lines.append(f"<span class=\"{cls}\">{_e(line)}</span>" if cls in ("del", "ins") else _e(line) + "\n")
    return "".join(lines)
