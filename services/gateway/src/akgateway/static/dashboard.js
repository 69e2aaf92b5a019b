// The provider dashboard: renders /api/view, then every view pushed on /api/stream.
// Data is written with textContent only: tenants' strings never become markup.
"use strict";

const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs = {}, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = String(text);
  return node;
}

function table(id, headers, rows, empty) {
  const t = document.getElementById(id);
  t.replaceChildren();
  const head = el("tr");
  headers.forEach((h) => head.appendChild(el("th", {}, h)));
  t.appendChild(head);
  if (!rows.length) {
    const tr = el("tr");
    tr.appendChild(el("td", { colspan: headers.length, class: "empty" }, empty));
    t.appendChild(tr);
    return;
  }
  for (const row of rows) {
    const tr = el("tr");
    for (const cell of row) {
      const td = el("td");
      if (cell instanceof Node) td.appendChild(cell); else td.textContent = short(cell);
      if (typeof cell === "string" && td.textContent !== cell) td.title = cell;
      else if (typeof cell === "string" && cell.length > 40) td.title = cell;
      tr.appendChild(td);
    }
    t.appendChild(tr);
  }
}

function state(text) {
  return el("span", { class: "state " + String(text).replace(/\s+/g, "-") }, text);
}

function meter(use, color) {
  const box = el("div");
  box.appendChild(el("div", {}, `${human(use.allocated, use.kind)} / ${human(use.allocatable, use.kind)}`));
  const bar = el("div", { class: "bar" });
  bar.appendChild(el("div", { style: `width:${Math.min(use.used_pct, 100)}%;background:${color}` }));
  box.appendChild(bar);
  return box;
}

function human(value, kind) {
  if (kind === "cpu") return (value / 1000).toFixed(value % 1000 ? 1 : 0);
  if (kind === "gpu") return String(value);
  const units = ["B", "Ki", "Mi", "Gi", "Ti"];
  let v = value, i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v.toFixed(v >= 10 || i === 0 ? 0 : 1)}${units[i]}`;
}

function short(text) {
  // bech32 addresses shortened (the full text stays in the cell's title)
  return String(text ?? "").replace(/akash1[0-9a-z]{38}/g, (a) => `${a.slice(0, 10)}…${a.slice(-4)}`);
}

function price(text) {
  return String(text ?? "").replace(/(\.\d*?)0+([a-z])/, "$1$2").replace(/\.([a-z])/, "$1");
}

function time(iso) {
  return iso ? new Date(iso).toLocaleTimeString() : "";
}

function lines(svg, series, max) {
  svg.replaceChildren();
  const w = 600, h = 180, pad = 24;
  for (const pct of [0, 50, 100]) {
    const y = h - pad - (pct / max) * (h - 2 * pad);
    const grid = svg.appendChild(document.createElementNS(SVG, "line"));
    grid.setAttribute("x1", pad); grid.setAttribute("x2", w); grid.setAttribute("y1", y); grid.setAttribute("y2", y);
    grid.setAttribute("stroke", "#263040");
    const label = document.createElementNS(SVG, "text");
    label.setAttribute("x", 0); label.setAttribute("y", y + 3); label.textContent = pct;
    svg.appendChild(label);
  }
  for (const { points, color } of series) {
    if (!points.length) continue;
    const step = (w - pad) / Math.max(points.length - 1, 1);
    const path = points.map((p, i) => `${i ? "L" : "M"}${pad + i * step},${h - pad - (p / max) * (h - 2 * pad)}`).join(" ");
    const line = document.createElementNS(SVG, "path");
    line.setAttribute("d", path); line.setAttribute("fill", "none");
    line.setAttribute("stroke", color); line.setAttribute("stroke-width", "2");
    svg.appendChild(line);
  }
}

function bars(svg, buckets) {
  svg.replaceChildren();
  const w = 600, h = 180, pad = 24;
  const recent = buckets.slice(-30);
  const max = Math.max(1, ...recent.map((b) => b.placed + b.declined));
  const width = (w - pad) / 30;
  recent.forEach((b, i) => {
    let y = h - pad;
    for (const [count, color] of [[b.placed, "#3fb950"], [b.declined, "#d29922"]]) {
      const height = (count / max) * (h - 2 * pad);
      const rect = document.createElementNS(SVG, "rect");
      rect.setAttribute("x", pad + i * width + 1); rect.setAttribute("width", width - 2);
      rect.setAttribute("y", y - height); rect.setAttribute("height", height);
      rect.setAttribute("fill", color);
      svg.appendChild(rect);
      y -= height;
    }
  });
  const label = document.createElementNS(SVG, "text");
  label.setAttribute("x", 0); label.setAttribute("y", pad); label.textContent = max;
  svg.appendChild(label);
}

function render(view) {
  table("services", ["service", "state", "age", "figures"],
    Object.entries(view.services).map(([name, s]) => [
      name, state(s.state), s.age_s === null ? "" : `${Math.round(s.age_s)} s`,
      Object.entries(s.figures).filter(([, v]) => v !== "" && v !== null).map(([k, v]) => `${k} ${v}`).join(" · "),
    ]), "no service has reported yet");
  table("nodes", ["node", "CPU", "memory", "GPU", "ephemeral", "storage classes"],
    view.nodes.map((n) => [
      n.name,
      meter({ ...n.cpu, kind: "cpu" }, "var(--cpu)"),
      meter({ ...n.memory, kind: "memory" }, "var(--mem)"),
      n.gpu.allocatable ? meter({ ...n.gpu, kind: "gpu" }, "var(--gpu)") : "—",
      meter({ ...n.storage_ephemeral, kind: "storage" }, "#6e7681"),
      [n.gpu_model, n.storage_classes.join(", ")].filter(Boolean).join(" · "),
    ]), "no inventory yet");
  const caps = view.capabilities;
  const said = document.getElementById("capabilities-state");
  said.textContent = !caps.checked
    ? `not checked yet: ${caps.error}`
    : `${caps.mismatches.length} difference(s) with ${short(caps.provider)}'s on-chain attributes`
      + (caps.error ? ` (last read kept: ${caps.error})` : "");
  table("capabilities", ["difference", "kind", "what", "attributes", "why"],
    caps.mismatches.map((m) => [state(m.difference), m.kind, m.subject, m.attributes.join(" "), m.message]),
    caps.checked ? "the on-chain capabilities match the inventory" : "—");
  const totals = document.getElementById("totals");
  totals.replaceChildren();
  for (const kind of ["cpu", "memory", "gpu"]) {
    if (view.totals[kind]) totals.appendChild(meter({ ...view.totals[kind], kind }, `var(--${kind === "memory" ? "mem" : kind})`));
  }
  const earnings = document.getElementById("earnings");
  earnings.textContent = view.earnings
    ? Object.entries(view.earnings).map(([k, v]) => `${k}: ${v}`).join(" · ")
    : "the balance service has not reported";
  lines(document.getElementById("capacity"), [
    { points: view.capacity.map((c) => c.cpu), color: "#58a6ff" },
    { points: view.capacity.map((c) => c.memory), color: "#bc8cff" },
    { points: view.capacity.map((c) => c.gpu), color: "#f0883e" },
  ], 100);
  bars(document.getElementById("bids"), view.bids_per_minute);
  table("orders", ["order", "state", "price", "why not", "updated"],
    view.orders.slice(0, 40).map((o) => [o.order, state(o.state), price(o.price), o.reasons.join("; "), time(o.updated)]),
    "no orders seen yet");
  table("leases", ["lease", "state", "services", "price", "updated"],
    view.leases.slice(0, 40).map((l) => [l.lease, state(l.state), l.services.join(", "), price(l.price), time(l.updated)]),
    "no leases yet");
  table("events", ["time", "stream", "event", ""],
    view.events.slice(0, 60).map((e) => [time(e.time), e.stream.split(".").slice(-2).join("."), e.type, price(e.text)]),
    "no events yet");
  document.getElementById("live").textContent = `live · updated ${time(view.time)}`;
}

async function start() {
  const first = await fetch("api/view", { credentials: "same-origin" });
  if (first.ok) render(await first.json());
  const source = new EventSource("api/stream");
  source.addEventListener("view", (event) => render(JSON.parse(event.data)));
  source.onerror = () => { document.getElementById("live").textContent = "reconnecting…"; };
}

start();
