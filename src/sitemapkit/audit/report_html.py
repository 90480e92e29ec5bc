"""The audit as one self-contained HTML file: inline CSS, a little inline JavaScript for the tables, and
charts drawn here as static SVG (no chart library, nothing fetched: the page opens offline, from e-mail or
a CI artifact, and a Content-Security-Policy forbids any network request).

Everything shown is computed from `AuditReport.to_dict()`, the same dictionary `--json` writes, so the
numbers of the page and of the JSON are the same numbers.
"""

# ruff: noqa: E501  (the inline CSS and JavaScript below keep their natural line lengths)
from __future__ import annotations

import base64
import hashlib
import html
import json
import os
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

from sitemapkit.audit.findings import help_for
from sitemapkit.audit.report import AuditReport, write_file

RED, AMBER, GREEN, BLUE, GREY = "#c62828", "#b26a00", "#2e7d32", "#1f5fae", "#6b7280"
INDEXABILITY_COLOURS = {
    "indexable": GREEN,
    "redirect": AMBER,
    "canonicalized": AMBER,
    "soft-404": AMBER,
    "not-html": GREY,
    "noindex": RED,
    "error": RED,
    "blocked": RED,
    "unreachable": RED,
    "unchecked": GREY,
}


_SCRIPT_UNSAFE = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def script_json(value: Any) -> str:
    """`value` as JSON to embed in an HTML `<script>` element: `<`, `>` and `&` written as `\\u003c`,
    `\\u003e`, `\\u0026` (so no `</script>`, `<!--` or `<script` a site wrote in a lastmod, a title or a URL
    can end the element or switch the HTML parser into its escaped states), and U+2028 / U+2029 as
    `\\u2028` / `\\u2029`. The same JSON to `JSON.parse`: these characters only ever occur inside
    strings, where the escapes mean the same characters."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).translate(_SCRIPT_UNSAFE)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def _status_colour(status: str) -> str:
    if status.startswith("2"):
        return GREEN
    if status.startswith("3"):
        return AMBER
    if status.startswith(("4", "5")):
        return RED
    return GREY


def hbars(items: list[tuple[str, int, str]], *, title: str) -> str:
    """A horizontal bar chart as static SVG: one labelled bar per (label, value, colour)."""
    if not items:
        return f'<p class="empty">No data for {_e(title.lower())}.</p>'
    top = max(v for _, v, _ in items) or 1
    row, label_w, bar_w = 26, 150, 210
    height = row * len(items) + 4
    parts = [
        f'<svg class="chart" viewBox="0 0 {label_w + bar_w + 60} {height}" role="img" '
        f'aria-label="{_e(title)}"><title>{_e(title)}</title>'
    ]
    for i, (label, value, colour) in enumerate(items):
        y = i * row + 2
        w = max(2.0, bar_w * value / top)
        short = label if len(label) <= 22 else "…" + label[-21:]
        parts.append(
            f"<g><title>{_e(label)}: {value:,}</title>"
            f'<text x="{label_w - 8}" y="{y + 16}" text-anchor="end" class="lbl">{_e(short)}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{w:.1f}" height="{row - 8}" rx="3" fill="{colour}"/>'
            f'<text x="{label_w + w + 6:.1f}" y="{y + 16}" class="val">{value:,}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def columns(items: list[tuple[str, int]], *, title: str, colour: str = BLUE) -> str:
    """A column chart as static SVG (lastmod by month); labels thinned out to stay readable."""
    if not items:
        return f'<p class="empty">No data for {_e(title.lower())}.</p>'
    top = max(v for _, v in items) or 1
    n = len(items)
    width, height, base = 420, 190, 160
    slot = min((width - 20) / n, 48.0)
    every = max(1, round(n / 8))
    parts = [
        f'<svg class="chart" viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}">'
        f"<title>{_e(title)}</title>"
        f'<line x1="10" y1="{base}" x2="{width - 10}" y2="{base}" stroke="#d1d5db"/>'
    ]
    for i, (label, value) in enumerate(items):
        h = max(1.0, (base - 20) * value / top)
        x = 10 + i * slot
        parts.append(
            f'<g><title>{_e(label)}: {value:,}</title><rect x="{x + slot * 0.12:.1f}" y="{base - h:.1f}" '
            f'width="{slot * 0.76:.1f}" height="{h:.1f}" rx="2" fill="{colour}"/></g>'
        )
        if i % every == 0 or i == n - 1:
            parts.append(
                f'<text x="{x + slot / 2:.1f}" y="{base + 16}" text-anchor="middle" class="lbl">'
                f"{_e(label)}</text>"
            )
    parts.append(f'<text x="12" y="14" class="val">max {top:,}</text></svg>')
    return "".join(parts)


def gauge(score: int) -> str:
    """The score as a ring."""
    colour = GREEN if score >= 90 else AMBER if score >= 60 else RED
    circumference = 2 * 3.14159 * 52
    filled = circumference * score / 100
    return (
        '<svg class="gauge" viewBox="0 0 120 120" role="img" aria-label="score">'
        '<circle cx="60" cy="60" r="52" fill="none" stroke="#e5e7eb" stroke-width="12"/>'
        f'<circle cx="60" cy="60" r="52" fill="none" stroke="{colour}" stroke-width="12" '
        f'stroke-dasharray="{filled:.1f} {circumference:.1f}" transform="rotate(-90 60 60)" '
        'stroke-linecap="round"/>'
        f'<text x="60" y="68" text-anchor="middle" class="score" data-count="score">{score}</text></svg>'
    )


def _folder(url: str | None) -> str:
    if not url:
        return "(sitemap files)"
    path = urlsplit(url).path
    first = path.strip("/").split("/", 1)[0]
    return "/" + first + ("/" if "/" in path.strip("/") else "") if first else "/"


def charts(data: dict[str, Any]) -> dict[str, str]:
    s = data["summary"]
    status = [(k if k != "none" else "no answer", v, _status_colour(k)) for k, v in s["status_codes"].items()]
    index = [(k, v, INDEXABILITY_COLOURS.get(k, GREY)) for k, v in s["indexability"].items()]
    per_sitemap = [
        (f["url"] or f["source"], f["urls"], BLUE)
        for f in data["sitemaps"]
        if f.get("kind") != "sitemapindex"
    ]
    months = Counter(u["lastmod"][:7] for u in data["urls"] if u.get("lastmod"))
    month_items = sorted(months.items())
    folders = Counter(_folder(f["url"]) for f in data["findings"])
    folder_items = [(k, v, AMBER) for k, v in folders.most_common(12)]
    return {
        "Status codes": hbars(status, title="Status codes"),
        "Indexability": hbars(index, title="Indexability"),
        "URLs per sitemap": hbars(sorted(per_sitemap, key=lambda t: -t[1])[:15], title="URLs per sitemap"),
        "Lastmod by month": columns(month_items[-36:], title="Lastmod by month"),
        "Findings by folder": hbars(folder_items, title="Findings by folder"),
    }


def _tree(files: list[dict[str, Any]]) -> str:
    children: dict[str | None, list[dict[str, Any]]] = {}
    for f in files:
        children.setdefault(f.get("parent"), []).append(f)

    def node(f: dict[str, Any], depth: int) -> str:
        kind = f.get("kind") or "unreadable"
        what = f"{f['entries']:,} sitemaps" if kind == "sitemapindex" else f"{f['urls']:,} URLs"
        problems = []
        if f.get("errors"):
            problems.append(f'<span class="pill err">{_n(f["errors"], "error")}</span>')
        if f.get("warnings"):
            problems.append(f'<span class="pill warn">{_n(f["warnings"], "warning")}</span>')
        if f.get("error"):
            problems.append(f'<span class="pill err">{_e(f["error"])}</span>')
        sub = children.get(f["source"], []) if depth < 5 else []
        inner = "".join(node(c, depth + 1) for c in sub)
        return (
            f'<li><span class="file">{_e(f["url"] or f["source"])}</span> '
            f'<span class="muted">{_e(kind)} · {what}</span> {"".join(problems)}'
            + (f"<ul>{inner}</ul>" if inner else "")
            + "</li>"
        )

    roots = children.get(None, [])
    if not roots:
        return '<p class="empty">No sitemap was read.</p>'
    return '<ul class="tree">' + "".join(node(f, 0) for f in roots) + "</ul>"


def _findings(data: dict[str, Any]) -> str:
    s = data["summary"]
    groups: dict[str, list[str]] = {"error": [], "warning": []}
    for code, item in s["by_code"].items():
        h = help_for(code)
        sev = item["severity"]
        examples = [f for f in data["findings"] if f["code"] == code][:5]
        basis = ""
        if data["sample"]:
            said = "in the sample" if item.get("counted_over") == "sample" else "exact"
            basis = f'<span class="basis muted">{said}</span>'

        ex = "".join(
            f'<li><span class="url">{_e(f["url"] or f["sitemap"] or "")}</span>'
            f'<span class="muted"> {_e(f["message"])}</span></li>'
            for f in examples
        )
        groups[sev].append(
            f'<article class="finding {sev}" data-code="{_e(code)}">'
            f'<header><span class="pill {"err" if sev == "error" else "warn"}">{sev}</span> '
            f'<code>{_e(code)}</code>{basis}<span class="count" data-count="code:{_e(code)}">'
            f"{item['count']:,}</span>"
            f'</header><p>{_e(h.explanation)}</p><p class="fix"><b>Fix:</b> {_e(h.fix)}</p>'
            f'<details><summary>Examples</summary><ul class="examples">{ex}</ul></details></article>'
        )
    if not s["by_code"]:
        return '<p class="good">No findings: every sitemap is valid and every listed URL is indexable.</p>'
    return "".join(
        f'<h3>{title} <span class="muted">· {s[key]:,}</span></h3>'
        f'<div class="findings">{"".join(items)}</div>'
        for title, key, items in (
            ("Errors", "errors", groups["error"]),
            ("Warnings", "warnings", groups["warning"]),
        )
        if items
    )


def render(report: AuditReport) -> str:
    """The whole page."""
    data = report.to_dict()
    s = data["summary"]
    graphs = "".join(
        f'<figure class="card"><figcaption>{_e(name)}</figcaption>{svg}</figure>'
        for name, svg in charts(data).items()
    )
    sample = ""
    if data["sample"]:
        sm = data["sample"]
        rows = "".join(
            f"<tr><td><code>{_e(c)}</code></td><td>{v['count']:,}</td><td>{v['share']:.1%}</td>"
            f"<td>{v['low']:.1%} – {v['high']:.1%}</td><td>~{v['estimate']:,}</td></tr>"
            for c, v in sm.get("shares", {}).items()
        )
        sample = (
            f"<section><h2>Sample</h2><p>{sm.get('checked', 0):,} URLs drawn at random (seed {sm['seed']}) "
            f"from {sm['population']:,}. The findings of the live checks are counted in the sample; each "
            "share has a 95% confidence interval (Wilson) and gives an estimate for all listed URLs. The "
            "counts of the other findings (the sitemap files, read in full) are exact.</p>"
            '<div class="scroll"><table class="static"><thead><tr><th>Finding</th><th>In the sample</th>'
            "<th>Share</th><th>95% CI</th>"
            f"<th>Estimate, all {sm['population']:,} listed</th></tr></thead><tbody>{rows}</tbody></table>"
            "</div></section>"
        )
    baseline = ""
    if data["baseline"]:
        b = data["baseline"]
        baseline = (
            f'<p class="baseline">Against the baseline of {_e(b.get("generated") or "?")}: '
            f'<b data-count="new">{b["new"]:,}</b> new, {b["unchanged"]:,} unchanged, '
            f"<b>{b['fixed']:,}</b> fixed.</p>"
        )
        gone = b["fixed_findings"]
        if gone:
            items = "".join(
                f'<li><code>{_e(f["code"])}</code> <span class="url">{_e(f["url"] or f["sitemap"] or "")}</span></li>'
                for f in gone[:200]
            )
            if len(gone) > 200:
                items += f"<li>… and {len(gone) - 200:,} more</li>"
            baseline += (
                '<details class="fixed"><summary>Fixed since the baseline</summary>'
                f"<ul>{items}</ul></details>"
            )
    coverage = ""
    if data["coverage"]:
        c = data["coverage"]
        coverage = (
            f'<div class="stat"><b>{c["crawled"]:,}</b><span>pages crawled</span></div>'
            f'<div class="stat"><b>{c["not_in_sitemap"]:,}</b><span>not in a sitemap</span></div>'
            f'<div class="stat"><b>{c["orphans"]:,}</b><span>orphans</span></div>'
        )
    notes = "".join(f'<p class="note">{_e(n)}</p>' for n in data["notes"])
    payload = script_json(
        {"urls": data["urls"], "findings": data["findings"], "baseline": bool(data["baseline"])}
    )
    via = data["discovery"].get("via")
    return PAGE.format(
        title=_e(f"Sitemap audit · {data['target']}"),
        target=_e(data["target"]),
        generated=_e(data["generated"].replace("T", " ").replace("+00:00", " UTC")),
        via=_e(f"found via {via}" if via else "no sitemap found"),
        gauge=gauge(data["score"]),
        listed=f"{s['urls_listed']:,}",
        checked=f"{s['urls_checked']:,}",
        errors=f"{s['errors']:,}",
        err_class="err" if s["errors"] else "",
        warn_class="warn" if s["warnings"] else "",
        warnings=f"{s['warnings']:,}",
        sitemaps=f"{s['sitemaps']:,}",
        coverage=coverage,
        baseline=baseline,
        baseline_filter=(
            '<select data-filter="baseline" aria-label="Baseline"><option value="">New or not</option></select>'
            if data["baseline"]
            else ""
        ),
        baseline_class=" has-baseline" if data["baseline"] else "",
        baseline_th=(
            '\n<th data-key="baseline" class="w-base"><button type="button">Baseline</button></th>'
            if data["baseline"]
            else ""
        ),
        notes=notes,
        findings=_findings(data),
        charts=graphs,
        sample=sample,
        tree=_tree(data["sitemaps"]),
        payload=payload,
        css=CSS,
        js=JS,
        script_hash=SCRIPT_HASH,
    )


def write_html(report: AuditReport, path: str | os.PathLike[str]) -> None:
    """Write the report as one HTML file (atomically)."""
    text = render(report)
    write_file(path, lambda out: out.write(text))


CSS = """
:root{--fg:#1f2328;--muted:#57606a;--line:#e5e7eb;--bg:#f6f7f9;--card:#fff;--red:#c62828;--amber:#b26a00;
--green:#2e7d32;--blue:#1f5fae}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
color:var(--fg);background:var(--bg);-webkit-text-size-adjust:100%}
main{max-width:1180px;margin:0 auto;padding:24px 20px 60px}
h1{font-size:1.55rem;margin:0 0 2px;letter-spacing:-.01em}
h2{font-size:1.15rem;margin:36px 0 12px;padding-bottom:6px;border-bottom:1px solid var(--line)}
code,.url,.file{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.86em}
.url,.file{word-break:break-all}
.muted{color:var(--muted)}
.hero{display:flex;gap:24px;align-items:center;flex-wrap:wrap;background:var(--card);border:1px solid var(--line);
border-radius:12px;padding:20px}
.gauge{width:112px;height:112px;flex:none}
.gauge .score{font-size:34px;font-weight:700;fill:var(--fg)}
.hero .who{flex:1 1 260px;min-width:0}
.stats{display:flex;flex-wrap:wrap;gap:10px;margin-top:12px}
.stat{background:var(--bg);border-radius:8px;padding:6px 12px;min-width:92px}
.stat b{display:block;font-size:1.25rem}
.stat span{color:var(--muted);font-size:.82rem}
.stat.err b{color:var(--red)}.stat.warn b{color:var(--amber)}
.pill{display:inline-block;border-radius:999px;padding:0 9px;font-size:.76rem;font-weight:600;line-height:1.7;
vertical-align:middle}
.pill.err{background:#fdecea;color:var(--red)}.pill.warn{background:#fff4e0;color:var(--amber)}
h3{font-size:1rem;margin:18px 0 8px}
.findings{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:10px}
.finding{background:var(--card);border:1px solid var(--line);border-left:4px solid var(--amber);border-radius:8px;
padding:12px 16px;margin:0}
.finding.error{border-left-color:var(--red)}
.finding header{display:flex;align-items:center;gap:8px;flex-wrap:wrap}
.finding header code{font-size:.95rem;font-weight:600}
.finding .count{margin-left:auto;font-weight:700;font-size:1.1rem}
.finding .basis{margin-left:auto;font-size:.8rem}.finding .basis+.count{margin-left:0}
.finding p{margin:6px 0}.fix{color:#24492c}
.examples{margin:6px 0 0;padding-left:18px}.examples li{margin:3px 0}
details summary{cursor:pointer;color:var(--blue);font-size:.9rem}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(330px,1fr));gap:14px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px 14px;margin:0}
figcaption{font-weight:600;margin-bottom:6px}
.chart{width:100%;height:auto;display:block}
.chart .lbl{font-size:11px;fill:var(--muted)}.chart .val{font-size:11px;fill:var(--fg);font-weight:600}
.controls{display:flex;flex-wrap:wrap;gap:8px;margin:8px 0}
.controls input,.controls select{font:inherit;padding:6px 10px;border:1px solid #cfd4da;border-radius:6px;
background:#fff;min-width:0}
.controls input{flex:1 1 220px}
.scroll{overflow-x:auto;background:var(--card);border:1px solid var(--line);border-radius:10px}
table{border-collapse:collapse;width:100%;font-size:.88rem}
table.rows{table-layout:fixed}
th,td{text-align:left;padding:7px 10px;border-bottom:1px solid var(--line);vertical-align:top}
td{overflow-wrap:break-word}
td.url,td.long{overflow-wrap:anywhere}
th{background:#f0f2f5;position:sticky;top:0;z-index:1}
th[data-key]{padding:0;height:1px}
th button{all:unset;box-sizing:border-box;display:block;width:100%;height:100%;padding:7px 10px;cursor:pointer;
font-weight:600}
th button:hover{background:#e4e8ee}
th button:focus-visible{outline:2px solid var(--blue);outline-offset:-2px}
th button::after{content:" ↕";color:#9aa1a9}
th[aria-sort=ascending] button::after{content:" ↑";color:var(--fg)}
th[aria-sort=descending] button::after{content:" ↓";color:var(--fg)}
.w-url{width:25%}.w-status{width:7%}.w-index{width:12%}.w-codes{width:17%}.w-date{width:10.5%}.w-depth{width:6.5%}
.w-sitemap{width:11.5%}
.w-sev{width:8%}.w-code{width:15%}.w-furl{width:24%}.w-msg{width:31%}.w-fsitemap{width:10%}.w-line{width:5.5%}
.w-base{width:7%}.has-baseline .w-msg{width:24%}
.controls select.sort{display:none}
.tag{display:inline-block;white-space:nowrap;background:#f0f2f5;border-radius:4px;padding:0 6px;margin:1px 2px 1px 0;
font-size:.8rem;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
tr:hover td{background:#fafbfc}
.shown{color:var(--muted);font-size:.85rem;margin:6px 2px}
.more{font:inherit;margin:10px 0;padding:6px 14px;border-radius:6px;border:1px solid #cfd4da;background:#fff;
cursor:pointer}
.tree,.tree ul{list-style:none;padding-left:18px;margin:4px 0}
.tree{padding-left:0;background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px 16px}
.tree li{margin:4px 0}
.tree ul{border-left:1px dashed #cfd4da;margin-left:4px}
.good{background:#eaf6ec;border:1px solid #b7dfbf;border-radius:8px;padding:12px 16px;color:var(--green)}
.note,.baseline{background:#eef4fb;border-radius:8px;padding:8px 12px}
.empty{color:var(--muted)}
.fixed{margin:8px 0}.fixed ul{margin:6px 0;padding-left:18px}
footer{margin-top:40px;color:var(--muted);font-size:.82rem}
@media (max-width:600px){main{padding:14px 10px 40px}h1{font-size:1.25rem}.hero{padding:14px;gap:14px}
.gauge{width:84px;height:84px}.grid,.findings{grid-template-columns:1fr}
.stat{min-width:78px;padding:5px 9px}.stat b{font-size:1.05rem}
.scroll{overflow:visible;background:none;border:0}
.controls select.sort{display:block;flex:1 1 100%}
table.rows,table.rows tbody{display:block;width:100%}
table.rows thead{position:absolute;left:-9999px}
.tags{min-width:0}
table.rows tr{display:block;background:var(--card);border:1px solid var(--line);border-radius:8px;margin:0 0 8px;
padding:6px 10px}
table.rows td{display:flex;gap:10px;border:0;padding:3px 0;min-width:0}
table.rows td::before{content:attr(data-label);flex:0 0 86px;color:var(--muted);font-size:.8rem;
font-family:system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;font-weight:400}
table.rows td:empty{display:none}
table.rows td.url{font-weight:600}}
"""

JS = r"""
(function(){
"use strict";
var data=JSON.parse(document.getElementById("audit-data").textContent);
function cell(v){return v===null||v===undefined?"":Array.isArray(v)?v.join(", "):String(v);}
function table(id,rows,cols,filters){
  var root=document.getElementById(id),tbody=root.querySelector("tbody"),shown=root.querySelector(".shown"),
      more=root.querySelector(".more"),search=root.querySelector("input[type=search]");
  var state={key:null,dir:1,limit:200},heads=[].slice.call(root.querySelectorAll("th[data-key]")),
      sorter=root.querySelector("select.sort");
  var labels=heads.map(function(th){return th.textContent;});
  heads.forEach(function(th){[["1","↑"],["-1","↓"]].forEach(function(d){var o=document.createElement("option");
    o.value=th.dataset.key+" "+d[0];o.textContent=th.textContent+" "+d[1];sorter.appendChild(o);});});
  function sortBy(k,dir){state.key=k;state.dir=dir;
    heads.forEach(function(o){if(o.dataset.key===k)o.setAttribute("aria-sort",dir>0?"ascending":"descending");
      else o.removeAttribute("aria-sort");});
    sorter.value=k?k+" "+dir:"";draw();}
  heads.forEach(function(th){th.querySelector("button").addEventListener("click",function(){
    var k=th.dataset.key;sortBy(k,state.key===k?-state.dir:1);});});
  sorter.addEventListener("change",function(){var v=sorter.value.split(" ");
    sortBy(v[0]||null,v[0]?Number(v[1]):1);});
  filters.forEach(function(f){
    var sel=root.querySelector("select[data-filter="+f+"]"),seen={};
    rows.forEach(function(r){[].concat(r[f]===null?[]:r[f]).forEach(function(v){seen[v]=(seen[v]||0)+1;});});
    Object.keys(seen).sort().forEach(function(v){var o=document.createElement("option");o.value=v;
      o.textContent=v+" ("+seen[v]+")";sel.appendChild(o);});
    sel.addEventListener("change",function(){state.limit=200;draw();});});
  search.addEventListener("input",function(){state.limit=200;draw();});
  more.addEventListener("click",function(){state.limit+=1000;draw();});
  function draw(){
    var q=search.value.trim().toLowerCase(),out=rows.filter(function(r){
      for(var i=0;i<filters.length;i++){var v=root.querySelector("select[data-filter="+filters[i]+"]").value;
        if(v&&[].concat(r[filters[i]]).map(String).indexOf(v)<0)return false;}
      if(!q)return true;
      for(var j=0;j<cols.length;j++){if(cell(r[cols[j]]).toLowerCase().indexOf(q)>=0)return true;}return false;});
    if(state.key){var k=state.key,d=state.dir;out.sort(function(a,b){var x=a[k],y=b[k];
      if(x===y)return 0;if(x===null||x===undefined)return 1;if(y===null||y===undefined)return -1;
      if(typeof x==="number"&&typeof y==="number")return (x-y)*d;return cell(x).localeCompare(cell(y))*d;});}
    var frag=document.createDocumentFragment();
    out.slice(0,state.limit).forEach(function(r){var tr=document.createElement("tr");
      cols.forEach(function(c,i){var td=document.createElement("td"),v=r[c];td.dataset.label=labels[i];
        if(c==="codes"){var box=document.createElement("span");box.className="tags";
          (v||[]).forEach(function(code){var t=document.createElement("span");t.className="tag";
          t.textContent=code;box.appendChild(t);});if(box.firstChild)td.appendChild(box);}
        else if(c==="sitemap"&&v){td.textContent=v.replace(/^[a-z]+:\/\/[^\/]+/i,"");td.title=v;}
        else{td.textContent=cell(v);}
        td.className=c==="url"?"url":c==="message"||c==="sitemap"||/lastmod/.test(c)?"long":"";
        tr.appendChild(td);});frag.appendChild(tr);});
    tbody.replaceChildren(frag);
    shown.textContent="Showing "+Math.min(out.length,state.limit).toLocaleString("en")+" of "+
      out.length.toLocaleString("en")+" matching ("+rows.length.toLocaleString("en")+" in all)";
    shown.dataset.matching=out.length;more.hidden=out.length<=state.limit;}
  draw();}
table("urls",data.urls,["url","status","indexability","codes","lastmod","page_lastmod","depth","sitemap"],
  ["indexability","codes"]);
table("all-findings",data.findings,["severity","code","url","message","status","sitemap","line"].concat(
  data.baseline?["baseline"]:[]),data.baseline?["severity","code","baseline"]:["severity","code"]);
})();
"""

SCRIPT_HASH = "sha256-" + base64.b64encode(hashlib.sha256(JS.encode("utf-8")).digest()).decode("ascii")
"""The Content-Security-Policy lets exactly the script above run, no other inline script (the data is in
a `<script type="application/json">`, which is not run)."""

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; \
script-src '{script_hash}'; img-src data:">
<title>{title}</title><style>{css}</style></head>
<body><main>
<section class="hero">{gauge}<div class="who"><h1>Sitemap audit</h1>
<div class="url">{target}</div><div class="muted">{generated} · {via}</div>
<div class="stats">
<div class="stat"><b data-count="urls_listed">{listed}</b><span>URLs listed</span></div>
<div class="stat"><b data-count="urls_checked">{checked}</b><span>checked</span></div>
<div class="stat {err_class}"><b data-count="errors">{errors}</b><span>errors</span></div>
<div class="stat {warn_class}"><b data-count="warnings">{warnings}</b><span>warnings</span></div>
<div class="stat"><b data-count="sitemaps">{sitemaps}</b><span>sitemap files</span></div>{coverage}
</div></div></section>
{baseline}{notes}
<section><h2>Findings</h2>{findings}</section>
<section><h2>Charts</h2><div class="grid">{charts}</div></section>
{sample}
<section id="urls"><h2>URLs</h2>
<div class="controls"><input type="search" placeholder="Filter URLs…" aria-label="Filter URLs">
<select data-filter="indexability" aria-label="Indexability"><option value="">Any indexability</option></select>
<select data-filter="codes" aria-label="Finding"><option value="">Any finding</option></select>
<select class="sort" aria-label="Sort URLs by"><option value="">Sort: as listed</option></select></div>
<div class="shown"></div>
<div class="scroll"><table class="rows"><thead><tr>
<th data-key="url" class="w-url"><button type="button">URL</button></th>
<th data-key="status" class="w-status"><button type="button">Status</button></th>
<th data-key="indexability" class="w-index"><button type="button">Indexability</button></th>
<th data-key="codes" class="w-codes"><button type="button">Findings</button></th>
<th data-key="lastmod" class="w-date"><button type="button">lastmod</button></th>
<th data-key="page_lastmod" class="w-date"><button type="button">Page date</button></th>
<th data-key="depth" class="w-depth"><button type="button">Depth</button></th>
<th data-key="sitemap" class="w-sitemap"><button type="button">Sitemap</button></th>
</tr></thead><tbody></tbody></table></div><button type="button" class="more" hidden>Show more</button></section>
<section id="all-findings"><h2>All findings</h2>
<div class="controls"><input type="search" placeholder="Filter findings…" aria-label="Filter findings">
<select data-filter="severity" aria-label="Severity"><option value="">Any severity</option></select>
<select data-filter="code" aria-label="Code"><option value="">Any code</option></select>{baseline_filter}
<select class="sort" aria-label="Sort findings by"><option value="">Sort: worst first</option></select></div>
<div class="shown"></div>
<div class="scroll"><table class="rows{baseline_class}"><thead><tr>
<th data-key="severity" class="w-sev"><button type="button">Severity</button></th>
<th data-key="code" class="w-code"><button type="button">Code</button></th>
<th data-key="url" class="w-furl"><button type="button">URL</button></th>
<th data-key="message" class="w-msg"><button type="button">Message</button></th>
<th data-key="status" class="w-status"><button type="button">Status</button></th>
<th data-key="sitemap" class="w-fsitemap"><button type="button">Sitemap</button></th>
<th data-key="line" class="w-line"><button type="button">Line</button></th>{baseline_th}
</tr></thead><tbody></tbody></table></div><button type="button" class="more" hidden>Show more</button></section>
<section><h2>Sitemap tree</h2>{tree}</section>
<footer>Written by sitemapkit audit. One file: no network request is made to show it.</footer>
</main>
<script type="application/json" id="audit-data">{payload}</script>
<script>{js}</script>
</body></html>
"""

__all__ = ["render", "write_html"]
