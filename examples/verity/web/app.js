// The page of `verity view`: everything it shows comes from the JSON
// endpoints of the server that served it (same origin, no other host).
"use strict";

const PAGE = 100;
const SVG = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

const view = { offset: 0, q: "", kinds: null, total: 0, selected: null, status: null, claimsOffset: 0, callsOffset: 0 };

async function api(path) {
  const r = await fetch(path, { headers: { Accept: "application/json" } });
  if (!r.ok) throw new Error(path + ": " + r.status + " " + (await r.text()));
  return r.json();
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

function fact(dl, name, value, cls) {
  dl.append(el("dt", {}, name), el("dd", cls ? { class: cls } : {}, value));
}

// ---- chain status ----

function renderStatus(s) {
  view.status = s;
  $("source").textContent = s.source;
  const st = $("status");
  st.dataset.status = s.ok ? "ok" : "bad";
  st.textContent = s.ok ? "chain verified" : s.problem;
  const dl = $("chain-facts");
  dl.replaceChildren();
  fact(dl, "verified entries", s.entries.toLocaleString());
  fact(dl, "head", s.head || "(empty log)");
  if (s.kept) fact(dl, "kept head", s.kept + (s.kept_ok ? "  ✓ extended" : "  ✗ not extended"), s.kept_ok ? "" : "error");
  const kinds = Object.entries(s.kinds).sort((a, b) => b[1] - a[1]).map(([k, n]) => k + " " + n).join(", ");
  fact(dl, "kinds", kinds || "none");
  if (s.replay_error) fact(dl, "belief replay", s.replay_error, "error");
  fact(dl, "indexed in", s.index_ms + " ms");
  const err = $("chain-error");
  err.hidden = s.ok;
  err.textContent = s.ok ? "" : (s.bad_seq !== undefined ? "entry " + s.bad_seq + ": " : "") + s.error;
  $("goto-bad").hidden = s.bad_seq === undefined;
}

// ---- charts ----

// chart draws series (each {cls, points:[[x,y]…]}) in one SVG.
// niceStep rounds a tick step up to 1, 2 or 5 times a power of ten.
function niceStep(raw) {
  const p = Math.pow(10, Math.floor(Math.log10(raw > 0 ? raw : 1)));
  return [1, 2, 2.5, 5, 10].map((m) => m * p).find((s) => s >= raw);
}

// steps turns points into a step line: a value holds until the next.
function steps(points) {
  return points.flatMap((p, i) => (i === 0 ? [p] : [[p[0], points[i - 1][1]], p]));
}

// ticks returns the multiples of a nice step from lo to hi, about n of them.
function ticks(lo, hi, n) {
  const step = niceStep((hi - lo) / n);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-9; v += step) out.push(+v.toFixed(6));
  return out;
}

// width is the SVG's drawing width: the box's own for a chart alone, so
// that it is drawn at its size rather than scaled up. opts.xLabel and
// opts.yLabel name the axes; opts.dots marks every point of the series
// with that class, so that a short or small series is seen.
function chart(title, series, yMax, kind, width, opts) {
  opts = opts || {};
  const W = Math.round(width), H = 250, L = 58, R = 14, T = 10, B = 44;
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const x0 = Math.min(...xs), x1 = Math.max(...xs, x0 + 1);
  const ymax = yMax > 0 ? yMax : 1;
  const sx = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
  const sy = (y) => T + (1 - Math.min(y, ymax) / ymax) * (H - T - B);
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: kind + "-chart", role: "img", "aria-label": title });
  for (const y of ticks(0, ymax, 5)) {
    root.append(svg("line", { class: "grid", x1: L, x2: W - R, y1: sy(y), y2: sy(y) }));
    const t = svg("text", { x: L - 6, y: sy(y) + 3, "text-anchor": "end", class: "y-tick" });
    t.textContent = +y.toFixed(3);
    root.append(t);
  }
  root.append(svg("line", { class: "axis", x1: L, x2: L, y1: T, y2: H - B }));
  root.append(svg("line", { class: "axis", x1: L, x2: W - R, y1: H - B, y2: H - B }));
  for (const x of ticks(x0, x1, Math.max(2, Math.min(8, Math.floor((W - L - R) / 90))))) {
    root.append(svg("line", { class: "axis", x1: sx(x), x2: sx(x), y1: H - B, y2: H - B + 4 }));
    const t = svg("text", { x: sx(x), y: H - B + 15, "text-anchor": "middle", class: "x-tick" });
    t.textContent = x.toLocaleString();
    root.append(t);
  }
  if (opts.xLabel) {
    const t = svg("text", { x: L + (W - L - R) / 2, y: H - 6, "text-anchor": "middle", class: "axis-label" });
    t.textContent = opts.xLabel;
    root.append(t);
  }
  if (opts.yLabel) {
    const t = svg("text", { x: 12, y: T + (H - T - B) / 2, "text-anchor": "middle", class: "axis-label", transform: `rotate(-90 12 ${T + (H - T - B) / 2})` });
    t.textContent = opts.yLabel;
    root.append(t);
  }
  for (const s of series) {
    const pts = s.points.map((p) => sx(p[0]).toFixed(1) + "," + sy(p[1]).toFixed(1)).join(" ");
    root.append(svg("polyline", { class: "series series-" + s.cls, points: pts, "data-points": s.points.length }));
  }
  for (const s of opts.dots || []) {
    for (const p of s.points) root.append(svg("circle", { class: "dot series-" + s.cls, cx: sx(p[0]).toFixed(1), cy: sy(p[1]).toFixed(1), r: 3 }));
  }
  const head = el("h4", {}, title);
  if (opts.note) head.append(el("span", { class: "note" }, " — " + opts.note));
  return el("figure", { class: "chart" }, head, root);
}

function chartWidth(box, n) {
  return n === 1 ? Math.max(480, box.clientWidth - 20) : 640;
}

// renderBudget draws each kernel session's budget. A spend far below the
// limit would lie flat on zero at the limit's scale: then the chart is
// scaled to the spend, and the limit, off the scale, is named instead.
function renderBudget(list) {
  const box = $("budget-charts");
  box.replaceChildren();
  $("budget").hidden = !list || list.length === 0;
  if ($("budget").hidden) return;
  for (const s of list) {
    const col = (i) => steps(s.points.map((p) => [p[0], p[i]]));
    const spend = Math.max(...s.points.map((p) => p[1]));
    const limit = Math.max(...s.points.map((p) => p[4]));
    const small = spend < limit / 10;
    const series = [
      { cls: "gross", points: col(1) },
      { cls: "refunded", points: col(2) },
      { cls: "net", points: col(3) },
    ];
    if (!small) series.unshift({ cls: "limit", points: col(4) });
    const net = s.points.map((p) => [p[0], p[3]]);
    const last = s.points[s.points.length - 1];
    box.append(chart(`session ${s.session}: net ${+last[3].toFixed(3)} of ${+last[4].toFixed(3)}`, series,
      (small ? Math.max(spend, limit / 1000) : Math.max(spend, limit)) * 1.1, "budget", chartWidth(box, list.length),
      { xLabel: "log entry (seq)", yLabel: "units", note: small ? `scaled to the spend; the limit, ${+limit.toFixed(3)}, is above it` : "",
        dots: net.length <= 80 ? [{ cls: "net", points: net }] : [] }));
  }
}

function renderBelief(list) {
  const box = $("belief-charts");
  box.replaceChildren();
  $("belief").hidden = !list || list.length === 0;
  if ($("belief").hidden) return;
  for (const s of list) {
    const last = s.points[s.points.length - 1];
    box.append(chart(`session ${s.session}: ${last[1]} of ${s.declared} survive`, [{ cls: "survivors", points: steps(s.points) }], s.declared, "belief", chartWidth(box, list.length),
      { xLabel: "log entry (seq)", yLabel: "hypotheses" }));
  }
}

// ---- tool calls ----

// loadCalls fills the tool calls table: one row per call a tool gate
// decided, refusals and denials coloured.
async function loadCalls() {
  const page = await api(`/api/calls?offset=${view.callsOffset}&limit=${PAGE}`);
  $("calls").hidden = page.total === 0;
  if (page.total === 0) return;
  const counts = Object.entries(page.counts).sort().map(([v, n]) => `${n} ${v}`).join(", ");
  $("calls-counts").textContent = `${page.total.toLocaleString()}: ${counts}`;
  const body = $("calls-table").tBodies[0];
  body.replaceChildren(...page.rows.map((c) => {
    const verdict = el("td", { class: "verdict" }, el("span", { class: "v v-" + c.verdict }, c.verdict));
    if (c.reason) verdict.append(el("div", { class: "why" }, c.reason));
    if (c.outcome && c.outcome !== "ok") verdict.append(el("div", { class: "why" }, "tool " + c.outcome));
    const tool = el("td", { class: "tool" }, c.tool);
    if (c.definition) tool.append(el("div", { class: "why definition", title: c.definition }, "definition " + c.definition.slice(0, 19) + "…"));
    const tr = el("tr", { class: "call r-" + c.verdict, "data-seq": c.seq, title: `call ${c.call_id}, entry ${c.seq}` },
      el("td", {}, c.seq), el("td", {}, c.time), el("td", {}, c.caller), tool,
      verdict, el("td", {}, c.rule || "—"), el("td", { class: "num" }, c.cost), el("td", {}, (c.approvers || []).join(", ") || "—"));
    tr.addEventListener("click", () => showEntry(c.seq));
    return tr;
  }));
  pager($("calls-pager"), view.callsOffset, page.total, (off) => { view.callsOffset = off; loadCalls(); });
}

// ---- claims ----

async function loadClaims() {
  const page = await api(`/api/claims?offset=${view.claimsOffset}&limit=${PAGE}`);
  const body = $("claims-table").tBodies[0];
  body.replaceChildren();
  $("claims").hidden = page.total === 0;
  for (const c of page.rows) {
    const approvals = (c.approvals || []).map((a) => `${a.approver} ${a.decision} ${a.timestamp}${a.reason ? ": " + a.reason : ""}`);
    const pending = (c.required || []).filter((r) => !(c.approvals || []).some((a) => a.approver === r));
    if (pending.length) approvals.push("waiting for " + pending.join(", "));
    const tr = el("tr", { class: "claim", "data-seq": c.seq },
      el("td", {}, c.seq), el("td", {}, c.time), el("td", {}, c.bundle),
      el("td", { class: "decision d-" + c.decision }, c.decision), el("td", {}, c.reason), el("td", {}, approvals.join("; ") || "—"));
    tr.addEventListener("click", () => showEntry(c.seq));
    body.append(tr);
  }
  pager($("claims-pager"), view.claimsOffset, page.total, (off) => { view.claimsOffset = off; loadClaims(); });
}

// ---- timeline ----

function pager(box, offset, total, go) {
  box.replaceChildren();
  const prev = el("button", { type: "button", disabled: offset === 0 }, "◀ previous");
  const next = el("button", { type: "button", disabled: offset + PAGE >= total }, "next ▶");
  prev.addEventListener("click", () => go(Math.max(0, offset - PAGE)));
  next.addEventListener("click", () => go(offset + PAGE));
  const info = total === 0 ? "nothing to show" : `${(offset + 1).toLocaleString()}–${Math.min(total, offset + PAGE).toLocaleString()} of ${total.toLocaleString()}`;
  box.append(prev, el("span", { class: "range" }, info), next);
}

function family(kind) {
  const f = kind.split(".")[0];
  return ["kernel", "belief", "claims", "speculative", "toolgate"].includes(f) ? f : "other";
}

async function loadEntries() {
  const params = new URLSearchParams({ offset: view.offset, limit: PAGE });
  if (view.q) params.set("q", view.q);
  if (view.kinds !== null) params.set("kinds", view.kinds.join(","));
  const page = await api("/api/entries?" + params);
  view.total = page.total;
  const body = $("entries").tBodies[0];
  const rows = page.rows.map((r) => {
    const tr = el("tr", { class: "row " + (r.state === "ok" ? "" : r.state), "data-seq": r.seq, title: r.hash ? "hash " + r.hash : r.summary },
      el("td", {}, r.seq), el("td", {}, r.time), el("td", { class: "k-" + family(r.kind) }, r.kind), el("td", {}, r.summary));
    if (r.seq === view.selected) tr.classList.add("selected");
    tr.addEventListener("click", () => showEntry(r.seq));
    return tr;
  });
  body.replaceChildren(...rows);
  pager($("pager"), view.offset, page.total, (off) => { view.offset = off; loadEntries(); });
}

// pretty indents canonical JSON without parsing it, so every number and
// string stays exactly as hashed.
function pretty(text) {
  let out = "", depth = 0, inStr = false;
  const nl = () => "\n" + "  ".repeat(depth);
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inStr) {
      out += c;
      if (c === "\\") out += text[++i];
      else if (c === '"') inStr = false;
      continue;
    }
    if (c === '"') { inStr = true; out += c; }
    else if ((c === "{" || c === "[") && (text[i + 1] === "}" || text[i + 1] === "]")) { out += c + text[++i]; }
    else if (c === "{" || c === "[") { depth++; out += c + nl(); }
    else if (c === "}" || c === "]") { depth--; out += nl() + c; }
    else if (c === ",") out += c + nl();
    else if (c === ":") out += ": ";
    else out += c;
  }
  return out;
}

async function showEntry(seq) {
  view.selected = seq;
  history.replaceState(null, "", "#entry=" + seq);
  for (const tr of document.querySelectorAll("#entries tr.selected")) tr.classList.remove("selected");
  const row = document.querySelector(`#entries tr[data-seq="${seq}"]`);
  if (row) row.classList.add("selected");
  const e = await api("/api/entry?seq=" + seq);
  $("detail").hidden = false;
  $("detail-seq").textContent = seq;
  const dl = $("detail-facts");
  dl.replaceChildren();
  if (e.error) {
    fact(dl, "error", e.error, "error");
    $("detail-payload").textContent = "";
    $("detail-entry").textContent = "";
  } else {
    fact(dl, "kind", e.kind);
    fact(dl, "time", e.time);
    fact(dl, "hash", e.hash);
    fact(dl, "recomputed", e.computed_hash === e.hash ? e.computed_hash + "  ✓" : e.computed_hash + "  ✗ differs", e.computed_hash === e.hash ? "" : "error");
    fact(dl, "prev", e.prev);
    fact(dl, "status", e.state === "ok" ? "verified" : e.state === "bad" ? "the first entry that does not verify" : "after the bad entry: not verified", e.state === "ok" ? "" : "error");
    fact(dl, "summary", e.summary);
    $("detail-payload").textContent = pretty(e.payload);
    $("detail-entry").textContent = JSON.stringify(e.entry);
  }
  $("detail").scrollIntoView({ block: "nearest" });
}

async function gotoBad() {
  const bad = view.status.bad_seq;
  view.q = "";
  $("search").value = "";
  view.kinds = null;
  for (const c of document.querySelectorAll("#filters input[type=checkbox]")) c.checked = true;
  view.offset = Math.floor(bad / PAGE) * PAGE;
  await loadEntries();
  await showEntry(bad);
  const row = document.querySelector(`#entries tr[data-seq="${bad}"]`);
  if (row) row.scrollIntoView({ block: "center" });
}

function readFilters() {
  const boxes = [...document.querySelectorAll("#filters input[type=checkbox]")];
  view.kinds = boxes.every((b) => b.checked) ? null : boxes.filter((b) => b.checked).map((b) => b.value);
  view.q = $("search").value.trim();
  view.offset = 0;
  loadEntries();
}

// reportResources lists every resource the page has loaded, so anyone
// (and the browser test) can see it loads nothing from another origin.
function reportResources() {
  const names = [location.href, ...performance.getEntriesByType("resource").map((r) => r.name)];
  $("resources").textContent = names.join("\n");
}

async function main() {
  let timer;
  $("filters").addEventListener("change", readFilters);
  $("filters").addEventListener("submit", (ev) => ev.preventDefault());
  $("search").addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(readFilters, 250); });
  $("goto-bad").addEventListener("click", gotoBad);
  $("detail-close").addEventListener("click", () => {
    $("detail").hidden = true;
    history.replaceState(null, "", location.pathname);
  });
  try {
    const [status, budget, belief] = await Promise.all([api("/api/status"), api("/api/budget"), api("/api/belief")]);
    renderStatus(status);
    renderBudget(budget);
    renderBelief(belief);
    await Promise.all([loadEntries(), loadClaims(), loadCalls()]);
    const linked = /^#entry=(\d+)$/.exec(location.hash);
    if (linked) await showEntry(Number(linked[1]));
    document.body.dataset.loadMs = Math.round(performance.now());
    document.body.dataset.ready = "true";
  } catch (err) {
    $("status").dataset.status = "bad";
    $("status").textContent = "the page could not load: " + err.message;
    document.body.dataset.ready = "error";
  }
  reportResources();
}

main();
