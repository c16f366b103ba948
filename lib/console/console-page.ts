/**
 * The console's page: one document with its styles and script, nothing fetched from elsewhere,
 * so that it works offline and behind any proxy. It reads the API beside it every 2 s. Values
 * reach the page as text (never as HTML), so a tracker cannot inject markup.
 */
export const CONSOLE_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Rate limits</title>
<style>
  :root { font: 14px/1.4 system-ui, sans-serif; color: #1d2330; background: #f5f6f8; }
  body { margin: 0 auto; max-width: 1200px; padding: 16px; }
  h1 { font-size: 20px; margin: 0 0 4px; }
  h2 { font-size: 15px; margin: 0 0 8px; }
  section { background: #fff; border: 1px solid #dde1e7; border-radius: 6px; padding: 12px; margin: 12px 0; }
  .grid { display: grid; grid-template-columns: 2fr 1fr; gap: 12px; }
  .grid > section { margin: 0; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 4px 6px; border-bottom: 1px solid #eef0f3; vertical-align: top; }
  th { font-weight: 600; color: #4a5263; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  code { font-size: 13px; word-break: break-all; }
  button { font: inherit; padding: 2px 8px; border: 1px solid #b8c0cc; border-radius: 4px; background: #fff; cursor: pointer; }
  button.danger { border-color: #d9534f; color: #b52b27; }
  input, select { font: inherit; padding: 2px 4px; border: 1px solid #b8c0cc; border-radius: 4px; }
  .muted { color: #6b7385; }
  .up { color: #1e7d32; font-weight: 600; }
  .down { color: #b52b27; font-weight: 600; }
  #message { min-height: 20px; }
  #message.error { color: #b52b27; }
  .legend span { margin-right: 12px; }
  .swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; border-radius: 2px; }
  form { display: flex; flex-wrap: wrap; gap: 6px; align-items: center; margin-top: 8px; }
</style>
</head>
<body>
<h1>Rate limits</h1>
<div class="muted"><span id="reach"></span> · updated <span id="updated">never</span></div>
<div id="message" role="status"></div>
<div class="grid">
  <section>
    <h2>Decisions per second, last 15 minutes</h2>
    <select id="route" aria-label="route"><option value="">every route</option></select>
    <div class="legend"><span><i class="swatch" style="background:#2e7d32"></i>allowed</span><span><i class="swatch" style="background:#c62828"></i>limited</span><span><i class="swatch" style="background:#ef8f00"></i>degraded</span></div>
    <canvas id="chart" width="760" height="200" style="width:100%"></canvas>
  </section>
  <section>
    <h2>Store</h2>
    <div id="health" class="muted">…</div>
  </section>
</div>
<section>
  <h2>Most limited
    <select id="window" aria-label="window"><option value="60">last minute</option><option value="300">last 5 minutes</option><option value="900">last 15 minutes</option></select>
  </h2>
  <table><thead><tr><th>tracker</th><th>route</th><th>policy</th><th class="num">limited</th><th>last</th><th></th></tr></thead><tbody id="top"></tbody></table>
</section>
<section>
  <h2>A tracker</h2>
  <form id="lookup-form"><input id="tracker" placeholder="tracker, e.g. ip:203.0.113.7" size="40" aria-label="tracker"><button>Look up</button></form>
  <div id="tracker-view"></div>
</section>
<section>
  <h2>Overrides in force</h2>
  <table><thead><tr><th>policy</th><th>tracker</th><th class="num">threshold</th><th>period</th><th class="num">burst</th><th>ends</th><th></th></tr></thead><tbody id="overrides"></tbody></table>
  <form id="override-form">
    <input id="o-policy" placeholder="policy" size="12" aria-label="override policy">
    <input id="o-threshold" placeholder="threshold" size="8" aria-label="override threshold">
    <input id="o-period" placeholder="period (1m)" size="8" aria-label="override period">
    <input id="o-burst" placeholder="burst" size="6" aria-label="override burst">
    <input id="o-tracker" placeholder="tracker (all)" size="16" aria-label="override tracker">
    <input id="o-ttl" placeholder="ttl (until cleared)" size="10" aria-label="override ttl">
    <button>Set override</button>
  </form>
</section>
<script>
"use strict";
const base = location.pathname.replace(/\\/+$/, "") + "/api/";
const $ = (id) => document.getElementById(id);
let shownTracker = null;
let refreshFailed = false;

function say(text, error) { const m = $("message"); m.textContent = text; m.className = error ? "error" : ""; }

async function api(path, options) {
  // A content type only with a body: Fastify refuses an empty JSON body.
  const json = options && options.body !== undefined ? { "content-type": "application/json" } : {};
  const response = await fetch(base + path, { credentials: "same-origin", ...options, headers: json });
  const text = await response.text();
  let body; try { body = JSON.parse(text); } catch { body = { message: text }; }
  if (!response.ok) {
    const message = Array.isArray(body.message) ? body.message.join("; ") : body.message;
    throw new Error(response.status + ": " + (message || response.statusText));
  }
  return body;
}

function cell(row, value, cls) { const td = row.insertCell(); td.textContent = value; if (cls) td.className = cls; return td; }
function button(td, label, onClick, danger) { const b = document.createElement("button"); b.textContent = label; b.type = "button"; if (danger) b.className = "danger"; b.onclick = onClick; td.append(b, " "); return b; }
function ago(ms) { const s = Math.max(0, Math.round((Date.now() - ms) / 1000)); return s < 60 ? s + " s ago" : Math.round(s / 60) + " min ago"; }
function span(ms) { if (ms === 0) return "—"; if (!isFinite(ms)) return "never"; const s = Math.ceil(ms / 1000); return s < 120 ? s + " s" : Math.ceil(s / 60) + " min"; }

function act(promise, done) {
  return promise.then((body) => {
    // While the store fails, an action reaches this instance alone: said so, as a warning.
    if (body.instances === "this one" && body.reason !== "the store is in this process") say(done + ", on this instance alone: " + body.reason, true); else say(done);
    refresh(); if (shownTracker !== null) lookup(shownTracker); return body;
  }, (e) => say(e.message, true));
}

async function block(tracker) {
  const duration = $("block-duration").value.trim();
  const policy = $("block-policy").value || undefined;
  await act(api("trackers/" + encodeURIComponent(tracker) + "/block", { method: "POST", body: JSON.stringify({ duration, policy }) }), "Blocked " + tracker + " for " + duration);
}
const lift = (tracker) => act(api("trackers/" + encodeURIComponent(tracker) + "/block", { method: "DELETE" }), "Lifted the block of " + tracker);
const reset = (tracker) => act(api("trackers/" + encodeURIComponent(tracker) + "/reset", { method: "POST" }), "Reset " + tracker);

async function lookup(tracker) {
  shownTracker = tracker;
  const view = $("tracker-view");
  try {
    const body = await api("trackers/" + encodeURIComponent(tracker));
    view.textContent = "";
    const table = document.createElement("table");
    const head = table.createTHead().insertRow();
    for (const h of ["route", "policy", "remaining", "resets in", "blocked for"]) { const th = document.createElement("th"); th.textContent = h; head.append(th); }
    const rows = table.createTBody();
    for (const p of body.policies) {
      const row = rows.insertRow();
      cell(row, p.route); cell(row, p.policy); cell(row, p.remaining + " of " + p.limit, "num"); cell(row, span(p.resetAfterMs)); cell(row, span(p.blockedForMs), p.blockedForMs > 0 ? "down" : "");
    }
    if (body.policies.length === 0) { const row = rows.insertRow(); cell(row, "No route has decided anything yet.", "muted").colSpan = 5; }
    if (body.instances === "this one" && body.reason !== "the store is in this process") { const row = rows.insertRow(); cell(row, "This instance alone: " + body.reason, "down").colSpan = 5; }
    const actions = document.createElement("form");
    const title = document.createElement("code"); title.textContent = tracker;
    const duration = document.createElement("input"); duration.id = "block-duration"; duration.value = "10m"; duration.size = 6; duration.setAttribute("aria-label", "block duration");
    const policy = document.createElement("select"); policy.id = "block-policy"; policy.setAttribute("aria-label", "block policy");
    policy.append(new Option("every policy", ""));
    for (const name of new Set(body.policies.map((p) => p.policy))) policy.append(new Option(name, name));
    actions.append(title, " block for ", duration, " under ", policy, " ");
    button(actions, "Block", () => block(tracker), true); button(actions, "Lift block", () => lift(tracker)); button(actions, "Reset", () => reset(tracker), true);
    view.append(actions, table);
  } catch (e) { say(e.message, true); }
}

function drawChart(rates) {
  const select = $("route"), chosen = select.value;
  const known = new Set([...select.options].map((o) => o.value));
  for (const r of rates.routes) if (!known.has(r.route)) { const o = document.createElement("option"); o.value = o.textContent = r.route; select.append(o); }
  const routes = rates.routes.filter((r) => chosen === "" || r.route === chosen);
  const n = routes.length ? routes[0].allowed.length : 90;
  const sum = (field) => Array.from({ length: n }, (_, i) => routes.reduce((t, r) => t + r[field][i], 0));
  const series = [["degraded", "#ef8f00"], ["allowed", "#2e7d32"], ["limited", "#c62828"]].map(([f, c]) => [sum(f), c]);
  const canvas = $("chart"), g = canvas.getContext("2d"), w = canvas.width, h = canvas.height, pad = 30;
  const top = Math.max(1, ...series.flatMap(([v]) => v));
  g.clearRect(0, 0, w, h); g.font = "11px system-ui"; g.fillStyle = "#6b7385"; g.strokeStyle = "#eef0f3";
  for (const f of [0, 0.5, 1]) { const y = h - pad - f * (h - 2 * pad); g.beginPath(); g.moveTo(pad, y); g.lineTo(w, y); g.stroke(); g.fillText((top * f).toFixed(top < 10 ? 1 : 0), 0, y + 4); }
  g.fillText("15 min ago", pad, h - 8); g.fillText("now", w - 24, h - 8);
  for (const [values, color] of series) {
    g.strokeStyle = color; g.lineWidth = 2; g.beginPath();
    values.forEach((v, i) => { const x = pad + (i / Math.max(1, n - 1)) * (w - pad), y = h - pad - (v / top) * (h - 2 * pad); i ? g.lineTo(x, y) : g.moveTo(x, y); });
    g.stroke();
  }
}

function showHealth(health) {
  const view = $("health"); view.textContent = "";
  const status = document.createElement("div"); status.className = health.status === "up" ? "up" : "down"; status.textContent = health.status;
  view.append(status);
  const table = document.createElement("table");
  for (const [key, value] of Object.entries(health)) {
    if (key === "status" || key === "nodes") continue;
    const row = table.insertRow(); cell(row, key); cell(row, typeof value === "object" ? JSON.stringify(value) : String(value));
  }
  view.append(table);
  if (health.nodes === undefined) return;
  // A cluster: each master on its own row, a failing one in red.
  const nodes = document.createElement("table"); nodes.id = "nodes";
  const head = nodes.createTHead().insertRow();
  for (const h of ["node", "state", "breaker", "since", "fallback answers"]) { const th = document.createElement("th"); th.textContent = h; head.append(th); }
  const rows = nodes.createTBody();
  for (const [name, node] of Object.entries(health.nodes)) {
    const row = rows.insertRow();
    cell(row, name); cell(row, node.degraded ? "failing" : "up", node.degraded ? "down" : "up"); cell(row, node.breaker);
    cell(row, node.degradedSince ? new Date(node.degradedSince).toLocaleTimeString() : ""); cell(row, node.degraded ? String(node.fallbackAnswers) : "", "num");
    if (node.error) row.title = node.error;
  }
  view.append(nodes);
}

function showTop(body) {
  const rows = $("top"); rows.textContent = "";
  for (const t of body.trackers) {
    const row = rows.insertRow();
    const td = row.insertCell(); const code = document.createElement("code"); code.textContent = t.tracker; td.append(code);
    cell(row, t.route); cell(row, t.policy); cell(row, t.error ? t.limited + " (±" + t.error + ")" : String(t.limited), "num"); cell(row, ago(t.lastLimitedAt));
    const a = row.insertCell(); button(a, "Look up", () => { $("tracker").value = t.tracker; lookup(t.tracker); });
  }
  if (body.trackers.length === 0) { const row = rows.insertRow(); cell(row, "Nobody was turned away in this window.", "muted").colSpan = 6; }
}

function showOverrides(body) {
  const rows = $("overrides"); rows.textContent = "";
  for (const o of body.overrides) {
    const row = rows.insertRow();
    cell(row, o.policy); cell(row, o.tracker === undefined ? "every tracker" : o.tracker); cell(row, String(o.threshold), "num");
    cell(row, o.periodMs === undefined ? "its own" : span(o.periodMs)); cell(row, o.burst === undefined ? "" : String(o.burst), "num");
    cell(row, o.expiresInMs === undefined ? "when cleared" : "in " + span(o.expiresInMs));
    const query = o.tracker === undefined ? "" : "?tracker=" + encodeURIComponent(o.tracker);
    button(row.insertCell(), "Clear", () => act(api("overrides/" + encodeURIComponent(o.policy) + query, { method: "DELETE" }), "Cleared the override of " + o.policy), true);
  }
  if (body.overrides.length === 0) { const row = rows.insertRow(); cell(row, "None: every policy has its own limit.", "muted").colSpan = 7; }
}

async function refresh() {
  // Each panel on its own: while the store fails, health still shows though the overrides cannot.
  const [top, rates, health, overrides] = await Promise.allSettled([api("top?window=" + $("window").value), api("rates"), api("health"), api("overrides")]);
  // The overrides panel shows its own failure; the others' go to the message line.
  const failed = [top, rates, health].filter((r) => r.status === "rejected").map((r) => r.reason.message);
  if (top.status === "fulfilled") { showTop(top.value); $("reach").textContent = top.value.instances === "all" ? "every instance" : "this instance only: " + top.value.reason; }
  if (rates.status === "fulfilled") drawChart(rates.value);
  if (health.status === "fulfilled") showHealth(health.value);
  if (overrides.status === "fulfilled") showOverrides(overrides.value); else { const rows = $("overrides"); rows.textContent = ""; cell(rows.insertRow(), overrides.reason.message, "down").colSpan = 7; }
  if (failed.length > 0) { say(failed.join("; "), true); refreshFailed = true; } else if (refreshFailed) { say(""); refreshFailed = false; }
  $("updated").textContent = new Date().toLocaleTimeString();
}

$("lookup-form").onsubmit = (e) => { e.preventDefault(); const t = $("tracker").value.trim(); if (t) lookup(t); };
$("override-form").onsubmit = (e) => {
  e.preventDefault();
  const body = {}; const number = (v) => (/^\\d+$/.test(v) ? Number(v) : v);
  for (const f of ["threshold", "period", "burst", "tracker", "ttl"]) { const v = $("o-" + f).value.trim(); if (v) body[f] = f === "threshold" || f === "burst" ? number(v) : v; }
  const policy = $("o-policy").value.trim();
  if (!policy) return say("Name the policy to override.", true);
  act(api("overrides/" + encodeURIComponent(policy), { method: "PUT", body: JSON.stringify(body) }), "Set the override of " + policy);
};
$("window").onchange = refresh; $("route").onchange = refresh;
refresh(); setInterval(refresh, 2000);
</script>
</body>
</html>
`;
