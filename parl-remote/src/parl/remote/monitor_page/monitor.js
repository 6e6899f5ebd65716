// The xparl monitor page: polls /api/overview and renders it. Every value from the cluster is
// set as text (never as HTML), so an actor's log or error cannot inject markup.
"use strict";

const REFRESH_MS = 2000;
let selected = null;
let lastOverview = null;

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function bytes(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

function duration(s) {
  if (s === null || s === undefined) return "–";
  s = Math.max(0, Math.round(s));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} m ${s % 60} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} m`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

function clock(epoch) {
  return new Date(epoch * 1000).toLocaleString();
}

function stateBadge(state) {
  return el("span", state, `state state-${state.replace(/ /g, "-")}`);
}

function row(cells) {
  const tr = document.createElement("tr");
  for (const cell of cells) {
    if (cell instanceof Node) { const td = el("td"); td.appendChild(cell); tr.appendChild(td); }
    else if (Array.isArray(cell)) tr.appendChild(el("td", cell[0], cell[1]));
    else tr.appendChild(el("td", cell));
  }
  return tr;
}

function fill(tableId, rows, empty, columns) {
  const body = document.querySelector(`#${tableId} tbody`);
  body.replaceChildren(...rows);
  if (!rows.length) {
    const td = el("td", empty, "muted");
    td.colSpan = columns;
    const tr = document.createElement("tr");
    tr.appendChild(td);
    body.appendChild(tr);
  }
}

function renderCluster(c) {
  document.getElementById("address").textContent = `${c.address} · ${c.security}`;
  const cards = [
    ["uptime", duration(c.uptime_s)],
    ["CPUs used / vacant", `${c.cpus_used} / ${c.cpus_vacant}`],
    ["GPUs used / vacant", `${c.gpus_used} / ${c.gpus_vacant}`],
    [`memory used (of ${bytes(c.memory_total)})`, bytes(c.memory_used)],
    [`load 1 m (${c.host_cpus} CPUs)`, c.load_1m],
    ["workers", c.lost_workers ? `${c.workers} (+${c.lost_workers} lost)` : c.workers],
    ["clients", c.clients],
    ["actors", c.actors],
    ["master lag", c.behind ? `${c.lag_s} s (behind)` : `${c.lag_s} s`],
    ["workers heartbeat", `every ${c.beat_every_s} s`],
    ["parl-remote", `${c.version} · py ${c.python}`],
  ];
  const nodes = cards.map(([label, value]) => {
    const card = el("div", null, "card");
    card.append(el("div", label, "label"), el("div", value, "value"));
    return card;
  });
  document.getElementById("cluster").replaceChildren(...nodes);
}

function errorLine(a) {
  if (a.error) return `${a.error.type.replace(/^builtins\./, "")}: ${a.error.message}`;
  if (a.state === "died") return a.message;
  return "";
}

function renderActors(actors) {
  const rows = actors.map((a) => {
    const tr = row([
      [a.job_id],
      [a.class_name || "–"],
      stateBadge(a.state),
      [`${a.client}${a.client_host ? " @ " + a.client_host : ""}`],
      [`${a.worker_id}${a.worker_host ? " @ " + a.worker_host : ""}`],
      [a.cpu_percent === null ? "–" : `${a.cpu_percent.toFixed(0)} %`, "num"],
      [bytes(a.rss), "num"],
      [duration(a.uptime_s), "num"],
      [errorLine(a), "error"],
    ]);
    tr.lastChild.title = errorLine(a);
    tr.dataset.job = a.job_id;
    tr.dataset.state = a.state;
    if (a.job_id === selected) tr.classList.add("selected");
    tr.addEventListener("click", () => select(a.job_id));
    return tr;
  });
  fill("actors", rows, "no actors yet", 9);
}

function renderWorkers(workers) {
  const rows = workers.map((w) => {
    const gpus = w.gpus.length ? `${w.gpus_used.length} of ${w.gpus.join(",")}` : "–";
    const load = w.load ? w.load.join(" / ") : "–";
    const memory = w.memory_total ? `${bytes(w.memory_used)} of ${bytes(w.memory_total)}` : "–";
    return row([
      [w.worker_id],
      [`${w.hostname} (${w.address})`],
      stateBadge(w.state),
      [`${w.cpus_used} / ${w.cpus_total}`, "num"],
      [gpus],
      [memory, "num"],
      [load, "num"],
      [w.jobs, "num"],
      [w.idle_jobs, "num"],
    ]);
  });
  fill("workers", rows, "no workers", 9);
}

function renderClients(clients) {
  const rows = clients.map((c) => row([
    [c.client], [c.hostname], [c.pid, "num"], [c.script], [c.actors_alive, "num"],
    [`${clock(c.since)} (${duration(c.connected_s)})`],
  ]));
  fill("clients", rows, "no clients connected", 6);
}

function renderDetail() {
  const box = document.getElementById("detail");
  const actor = lastOverview && lastOverview.actors.find((a) => a.job_id === selected);
  if (!actor) { box.hidden = true; return; }
  box.hidden = false;
  document.getElementById("detail-id").textContent = `${actor.job_id} (${actor.class_name || "?"})`;
  document.getElementById("detail-state").replaceChildren(stateBadge(actor.state));
  const parts = [`pid ${actor.pid}`, `since ${clock(actor.since)}`];
  if (actor.message) parts.push(actor.message);
  document.getElementById("detail-summary").textContent = parts.join(" · ");
  const errorBox = document.getElementById("detail-error-box");
  errorBox.hidden = !actor.error;
  document.getElementById("detail-error").textContent = actor.error ? actor.error.traceback : "";
}

async function loadLog() {
  if (!selected) return;
  const job = selected;
  const target = document.getElementById("detail-log");
  try {
    const answer = await fetch(`/api/actors/${encodeURIComponent(job)}/log?lines=200`);
    const body = await answer.json();
    if (job !== selected) return;
    if (body.found) target.textContent = (body.cut ? "[older lines left out]\n" : "") + body.log;
    else target.textContent = body.error || "no log found (its worker may have pruned it)";
  } catch (err) {
    target.textContent = `could not read the log: ${err}`;
  }
}

function select(job) {
  selected = job;
  document.querySelectorAll("#actors tbody tr").forEach((tr) => {
    tr.classList.toggle("selected", tr.dataset.job === job);
  });
  renderDetail();
  document.getElementById("detail-log").textContent = "loading…";
  loadLog();
}

async function refresh() {
  const problem = document.getElementById("problem");
  try {
    const answer = await fetch("/api/overview");
    const body = await answer.json();
    if (!answer.ok) throw new Error(body.error || answer.statusText);
    lastOverview = body;
    renderCluster(body.cluster);
    renderActors(body.actors);
    renderWorkers(body.workers);
    renderClients(body.clients);
    renderDetail();
    loadLog();
    problem.hidden = true;
    document.getElementById("updated").textContent =
      `updated ${new Date().toLocaleTimeString()} · every ${REFRESH_MS / 1000} s`;
  } catch (err) {
    problem.hidden = false;
    problem.textContent = `No answer from the cluster: ${err.message}. Retrying…`;
  } finally {
    setTimeout(refresh, REFRESH_MS);
  }
}

refresh();
