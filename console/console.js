// rpcd console: calls rpcd's JSON-RPC over HTTP POST /rpc, watches events over a WebSocket to /rpc.
// Plain browser JavaScript, no dependencies; everything it shows from the daemon goes through textContent,
// never innerHTML, and the page runs under a Content-Security-Policy without inline script.
"use strict";

const RPC_PATH = "/rpc";
const MAX_EVENTS = 500;
// Server-defined error codes (docs/PROTOCOL.md §5), to name an error even when its message is terse.
const ERROR_NAMES = {
  "-32700": "Parse error", "-32600": "Invalid request", "-32601": "Method not found", "-32602": "Invalid params",
  "-32603": "Internal error", "-32000": "Frame too large", "-32001": "Batch too large", "-32002": "Nesting too deep",
  "-32003": "Call timed out", "-32004": "Service busy", "-32005": "Service unavailable", "-32006": "Server shutting down",
  "-32007": "Access denied", "-32008": "Reply too large", "-32009": "Server busy", "-32010": "Frame timeout",
  "-32011": "Call cancelled", "-32012": "Too many subscriptions", "-32013": "Reload failed", "-32014": "Command failed",
  "-32015": "Command output too large",
};
const ACCESS_DENIED = -32007;

const $ = (id) => document.getElementById(id);
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// ---- JSON-RPC over HTTP ---------------------------------------------------------------------------------

let nextId = 1;

/** Calls `method`; resolves to {result} or {error} (a JSON-RPC error object), rejects on transport failure. */
async function call(method, params) {
  const request = { jsonrpc: "2.0", method, id: nextId++ };
  if (params !== undefined) request.params = params;
  const response = await fetch(RPC_PATH, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(request),
    cache: "no-store", credentials: "same-origin",
  });
  const text = await response.text();
  let reply;
  try { reply = JSON.parse(text); } catch {
    throw new Error(`HTTP ${response.status}: ${text.slice(0, 200) || response.statusText}`);
  }
  if (reply && typeof reply === "object" && ("result" in reply || "error" in reply)) return reply;
  throw new Error(`HTTP ${response.status}: not a JSON-RPC reply`);
}

// ---- Rendering JSON -------------------------------------------------------------------------------------

/** A <pre> holding `value` as indented JSON, colored by token. */
function jsonView(value) {
  const pre = el("pre", { class: "json" });
  appendJSON(pre, value, 0);
  return pre;
}
function appendJSON(parent, value, depth) {
  const pad = "  ".repeat(depth + 1), end = "  ".repeat(depth);
  if (value === null) return parent.append(el("span", { class: "z", text: "null" }));
  if (typeof value === "string") return parent.append(el("span", { class: "s", text: JSON.stringify(value) }));
  if (typeof value === "number") return parent.append(el("span", { class: "n", text: String(value) }));
  if (typeof value === "boolean") return parent.append(el("span", { class: "b", text: String(value) }));
  if (Array.isArray(value)) {
    if (value.length === 0) return parent.append("[]");
    parent.append("[\n");
    value.forEach((item, i) => {
      parent.append(pad);
      appendJSON(parent, item, depth + 1);
      parent.append(i < value.length - 1 ? ",\n" : "\n");
    });
    return parent.append(end + "]");
  }
  const keys = Object.keys(value);
  if (keys.length === 0) return parent.append("{}");
  parent.append("{\n");
  keys.forEach((key, i) => {
    parent.append(pad, el("span", { class: "k", text: JSON.stringify(key) }), ": ");
    appendJSON(parent, value[key], depth + 1);
    parent.append(i < keys.length - 1 ? ",\n" : "\n");
  });
  parent.append(end + "}");
}
function compactJSON(value) {
  const text = JSON.stringify(value);
  return text === undefined ? "" : text.length > 300 ? text.slice(0, 300) + "…" : text;
}

// ---- State ----------------------------------------------------------------------------------------------

const state = {
  discover: null,   // rpc.discover's document
  methods: new Map(), // name -> method entry
  selected: null,
};

function setLink(kind, text) {
  $("link-dot").className = "dot " + kind;
  $("link-text").textContent = text;
}

// ---- Methods --------------------------------------------------------------------------------------------

/** Methods a form could not use over POST (see loadMethods). */
const POST_USELESS = new Set(["rpc.subscribe", "rpc.unsubscribe", "rpc.cancel"]);

async function loadMethods() {
  const reply = await call("rpc.discover");
  if (reply.error) {
    state.discover = null;
    state.methods.clear();
    $("method-list").replaceChildren(errorView(reply.error, "rpc.discover"));
    $("method-count").textContent = "";
    return;
  }
  const doc = reply.result;
  state.discover = doc;
  // Calls from this page go by POST, one exchange each: rpc.subscribe has nowhere to send events and rpc.cancel
  // no call of the same exchange to reach, so their forms could do nothing (the Events panel subscribes over a
  // WebSocket). They are left out of the list, and the note under it says so.
  state.methods = new Map((doc.methods || []).filter((m) => !POST_USELESS.has(m.name)).map((m) => [m.name, m]));
  renderMethodList();
  renderEventChoices(doc["x-events"] || []);
  const wanted = decodeURIComponent(location.hash.slice(1));
  if (wanted && state.methods.has(wanted)) selectMethod(wanted, false);
  else if (state.selected && state.methods.has(state.selected)) selectMethod(state.selected, false);
}

function renderMethodList() {
  const filter = $("filter").value.trim().toLowerCase();
  const services = new Map();
  for (const service of (state.discover && state.discover["x-rpcd-services"]) || []) services.set(service.name, { info: service, methods: [] });
  for (const method of state.methods.values()) {
    if (filter && !method.name.toLowerCase().includes(filter) && !(method.summary || "").toLowerCase().includes(filter)) continue;
    const serviceName = method.name.slice(0, method.name.lastIndexOf("."));
    if (!services.has(serviceName)) services.set(serviceName, { info: { name: serviceName }, methods: [] });
    services.get(serviceName).methods.push(method);
  }
  const groups = [];
  let shown = 0;
  for (const { info, methods } of [...services.values()].sort((a, b) => a.info.name.localeCompare(b.info.name))) {
    if (methods.length === 0) continue;
    methods.sort((a, b) => a.name.localeCompare(b.name));
    shown += methods.length;
    groups.push(el("div", { class: "service", title: info.summary || undefined },
      el("div", { class: "service-name" }, el("span", { text: info.name }), info.version ? el("span", { class: "version", text: "v" + info.version }) : null),
      el("ul", {}, methods.map((m) => el("li", {},
        el("button", {
          type: "button", "data-method": m.name, "aria-current": m.name === state.selected ? "true" : "false",
          title: m.summary || m.name, onclick: () => selectMethod(m.name, true),
        }, el("span", { text: m.name.slice(info.name.length + 1) }), m["x-rpcd-read-only"] ? el("span", { class: "ro", text: "read" }) : null))))));
  }
  $("method-list").replaceChildren(...(groups.length ? groups : [el("p", { class: "note", text: filter ? "No method matches." : "No method may be called by you." })]));
  $("method-count").textContent = filter ? `${shown} of ${state.methods.size}` : String(state.methods.size);
}

function selectMethod(name, focus) {
  const method = state.methods.get(name);
  if (!method) return;
  state.selected = name;
  if (decodeURIComponent(location.hash.slice(1)) !== name) history.replaceState(null, "", "#" + encodeURIComponent(name));
  for (const button of document.querySelectorAll(".method-list button")) {
    button.setAttribute("aria-current", button.dataset.method === name ? "true" : "false");
  }
  $("method-empty").hidden = true;
  $("method-view").hidden = false;
  $("method-title").textContent = name;
  $("method-summary").textContent = method.summary || "";
  $("method-description").textContent = method.description || "";
  const badges = [method["x-rpcd-read-only"] ? el("span", { class: "badge read", text: "read-only" }) : el("span", { class: "badge write", text: "changes state" })];
  if (method.paramStructure === "by-position") badges.push(el("span", { class: "badge", text: "by position" }));
  if (method["x-rpcd-may-block"]) badges.push(el("span", { class: "badge", text: "may block" }));
  $("method-badges").replaceChildren(...badges);
  renderParams(method);
  renderDocumentedErrors(method);
  $("reply-card").hidden = true;
  updatePreview();
  if (focus) {
    const first = $("params").querySelector("input, select, textarea");
    (first || $("call-button")).focus();
  }
}

function renderDocumentedErrors(method) {
  const errors = method.errors || [];
  if (errors.length === 0) return $("method-errors").replaceChildren();
  $("method-errors").replaceChildren("Documented errors:", el("table", {}, errors.map((e) =>
    el("tr", {}, el("td", { class: "mono", text: String(e.code) }), el("td", { text: e.message || "" })))));
}

// ---- Forms from JSON Schema -----------------------------------------------------------------------------

/** How a parameter is edited: "number", "integer", "string", "boolean", "enum" or "json". */
function kindOf(schema) {
  if (!schema || typeof schema !== "object") return "json";
  if (Array.isArray(schema.enum) && schema.enum.length > 0 && schema.enum.every((v) => ["string", "number", "boolean"].includes(typeof v))) return "enum";
  if (["number", "integer", "string", "boolean"].includes(schema.type)) return schema.type;
  return "json";
}
function typeLabel(schema) {
  if (!schema || typeof schema !== "object") return "any JSON";
  if (Array.isArray(schema.enum)) return "one of " + schema.enum.map((v) => JSON.stringify(v)).join(", ");
  if (Array.isArray(schema.type)) return schema.type.join(" | ");
  if (schema.type === "array" && schema.items && schema.items.type) return `array of ${schema.items.type}`;
  return schema.type || (schema.anyOf || schema.oneOf ? "one of several" : "any JSON");
}

function renderParams(method) {
  const container = $("params");
  const params = method.params || [];
  const whole = method["x-rpcd-params"];
  if (params.length === 0 && whole) {
    // Declares no parameter, yet takes params: one field for the whole params value (PROTOCOL.md §6).
    const list = whole.type === "array";
    return container.replaceChildren(paramField({
      name: "params", required: false, schema: whole,
      summary: list ? "A list of any length, by position, as JSON; empty: none." : "Any JSON value, sent as the call's params as it is; empty: none.",
    }, "whole"));
  }
  if (params.length === 0) return container.replaceChildren(el("p", { class: "none", text: "No parameters." }));
  container.replaceChildren(...params.map((param, index) => paramField(param, index)));
}

function paramField(param, index) {
  const schema = param.schema || {};
  const id = "param-" + index;
  const kind = kindOf(schema);
  const hintId = id + "-hint";
  const hint = [param.summary || param.description || schema.description || "", rangeHint(schema)].filter(Boolean).join(" ");
  const common = { id, name: param.name, "data-kind": kind, "aria-describedby": hint ? hintId : undefined, "aria-required": param.required ? "true" : undefined };
  let control;
  if (kind === "number" || kind === "integer") {
    control = el("input", { ...common, type: "number", step: kind === "integer" ? "1" : "any", min: schema.minimum, max: schema.maximum, inputmode: kind === "integer" ? "numeric" : "decimal", placeholder: schema.default !== undefined ? String(schema.default) : undefined });
  } else if (kind === "string") {
    control = el("input", { ...common, type: "text", spellcheck: "false", autocomplete: "off", placeholder: schema.default !== undefined ? String(schema.default) : undefined });
  } else if (kind === "boolean" || kind === "enum") {
    const values = kind === "boolean" ? [true, false] : schema.enum;
    control = el("select", common,
      param.required ? el("option", { value: "", text: "— choose —" }) : el("option", { value: "", text: "— omit —" }),
      values.map((v) => el("option", { value: JSON.stringify(v), text: typeof v === "string" ? v : JSON.stringify(v) })));
  } else {
    control = el("textarea", { ...common, rows: schema.type === "object" || schema.type === "array" ? 4 : 2, spellcheck: "false",
      placeholder: schema.type === "array" ? "[ … ]  (JSON)" : schema.type === "object" ? "{ … }  (JSON)" : "any JSON value" });
  }
  control.addEventListener("input", () => { field.classList.remove("invalid"); problem.textContent = ""; updatePreview(); });
  const problem = el("div", { class: "problem", id: id + "-problem", "aria-live": "polite" });
  const field = el("div", { class: "param" },
    el("label", { for: id }, param.name, el("span", { class: "type", text: typeLabel(schema) }),
      param.required ? el("span", { class: "req", text: "required" }) : el("span", { class: "opt", text: "optional" })),
    control,
    hint ? el("div", { class: "hint", id: hintId, text: hint }) : null,
    problem);
  return field;
}

function rangeHint(schema) {
  const parts = [];
  if (schema.minimum !== undefined) parts.push(`≥ ${schema.minimum}`);
  if (schema.maximum !== undefined) parts.push(`≤ ${schema.maximum}`);
  if (schema.minLength !== undefined) parts.push(`at least ${schema.minLength} characters`);
  if (schema.maxLength !== undefined) parts.push(`at most ${schema.maxLength} characters`);
  return parts.length ? `(${parts.join(", ")})` : "";
}

class FormProblem extends Error {
  constructor(field, message) { super(message); this.field = field; }
}

/** The value of one control, or `undefined` when left empty; throws FormProblem when it cannot be read. */
function controlValue(control) {
  const raw = control.value;
  switch (control.dataset.kind) {
    case "number":
    case "integer": {
      if (raw.trim() === "") return undefined;
      const number = Number(raw);
      if (!Number.isFinite(number)) throw new FormProblem(control, "Not a number.");
      if (control.dataset.kind === "integer" && !Number.isInteger(number)) throw new FormProblem(control, "Must be a whole number.");
      return number;
    }
    case "string":
      return raw === "" ? undefined : raw;
    case "boolean":
    case "enum":
      return raw === "" ? undefined : JSON.parse(raw);
    default:
      if (raw.trim() === "") return undefined;
      try { return JSON.parse(raw); } catch (error) { throw new FormProblem(control, "Not valid JSON: " + error.message); }
  }
}

/** The call's params from the form: by name, or by position when the method takes only that. */
function formParams(method) {
  const params = method.params || [];
  if (params.length === 0 && method["x-rpcd-params"]) {
    const control = $("param-whole");
    const value = controlValue(control);
    if (value !== undefined && method["x-rpcd-params"].type === "array" && !Array.isArray(value)) {
      throw new FormProblem(control, "A list, in [ ].");
    }
    return value;
  }
  if (params.length === 0) return undefined;
  const values = params.map((param, index) => {
    const control = $("param-" + index);
    const value = controlValue(control);
    if (value === undefined && param.required) throw new FormProblem(control, "Required.");
    return value;
  });
  if (method.paramStructure === "by-position") {
    let last = values.length;
    while (last > 0 && values[last - 1] === undefined) last--;
    const positional = values.slice(0, last);
    const gap = positional.indexOf(undefined);
    if (gap >= 0) throw new FormProblem($("param-" + gap), "By position: fill this one too, or leave every later one empty.");
    return positional;
  }
  const named = {};
  params.forEach((param, index) => { if (values[index] !== undefined) named[param.name] = values[index]; });
  return named;
}

function updatePreview() {
  const method = state.methods.get(state.selected);
  if (!method) return;
  let request = { jsonrpc: "2.0", method: method.name, id: nextId };
  try {
    const params = formParams(method);
    if (params !== undefined) request.params = params;
  } catch (problem) {
    request = { jsonrpc: "2.0", method: method.name, params: "…", id: nextId };
  }
  $("request-json").replaceChildren(...jsonView(request).childNodes);
}

async function submitCall(event) {
  event.preventDefault();
  const method = state.methods.get(state.selected);
  if (!method) return;
  for (const field of document.querySelectorAll(".param.invalid")) field.classList.remove("invalid");
  let params;
  try {
    params = formParams(method);
  } catch (problem) {
    if (!(problem instanceof FormProblem)) throw problem;
    const field = problem.field.closest(".param");
    field.classList.add("invalid");
    field.querySelector(".problem").textContent = problem.message;
    problem.field.setAttribute("aria-invalid", "true");
    problem.field.focus();
    return;
  }
  const button = $("call-button");
  button.disabled = true;
  const started = performance.now();
  try {
    const reply = await call(method.name, params);
    showReply(method.name, reply, performance.now() - started);
  } catch (error) {
    showTransportError(error);
  } finally {
    button.disabled = false;
    updatePreview();
    loadStatus();  // the counters just moved
  }
}

function showReply(methodName, reply, elapsed) {
  $("reply-card").hidden = false;
  $("reply-timing").textContent = `${elapsed.toFixed(1)} ms`;
  if (reply.error) {
    $("reply").replaceChildren(errorView(reply.error, methodName));
  } else {
    const value = reply.result;
    const simple = value === null || ["number", "string", "boolean"].includes(typeof value);
    const method = state.methods.get(methodName);
    const resultName = method && method.result && method.result.name;
    const view = simple ? el("div", { class: "result-value", text: JSON.stringify(value) }) : jsonView(value);
    view.id = "result-value";
    $("reply").replaceChildren(
      el("div", { class: "reply-ok" }, "✓ Result", resultName && resultName !== "result" ? el("span", { class: "result-name", text: resultName }) : null),
      view);
  }
}

function errorView(error, methodName) {
  const denied = error.code === ACCESS_DENIED;
  const name = ERROR_NAMES[String(error.code)];
  const title = denied ? "Access denied" : (error.message || name || "Error");
  const explanation = denied
    ? `The access rules do not let you call ${(error.data && error.data.method) || methodName}: nothing was run. An administrator can allow it in rpcd.conf's [Access] (docs/SECURITY.md).`
    : name && name !== error.message ? name + "." : null;
  return el("div", { class: "reply-error" + (denied ? " denied" : ""), role: "alert", "data-code": String(error.code) },
    el("h3", {}, denied ? "⊘ " : "✕ ", title, el("span", { class: "code", text: String(error.code) })),
    explanation ? el("p", { text: explanation }) : null,
    error.data !== undefined ? jsonView(error.data) : null);
}

function showTransportError(error) {
  $("reply-card").hidden = false;
  $("reply-timing").textContent = "";
  $("reply").replaceChildren(el("div", { class: "reply-error", role: "alert" },
    el("h3", { text: "✕ No reply" }), el("p", { text: String(error.message || error) })));
}

// ---- Status ---------------------------------------------------------------------------------------------

let statusLoadedAt = 0;

async function loadStatus() {
  let reply;
  try {
    reply = await call("rpcd.info");
    setLink("ok", "connected");
  } catch (error) {
    setLink("bad", "unreachable");
    $("status").replaceChildren(el("p", { class: "note", text: String(error.message || error) }));
    return;
  }
  if (reply.error) return $("status").replaceChildren(errorView(reply.error, "rpcd.info"));
  const info = reply.result;
  statusLoadedAt = Date.now();
  const number = (v) => (typeof v === "number" ? v.toLocaleString() : "—");
  const tile = (value, label) => el("div", { class: "tile" }, el("div", { class: "v", text: value }), el("div", { class: "l", text: label }));
  const calls = info.calls || {}, connections = info.connections || {}, events = info.events || {};
  $("status").replaceChildren(
    el("div", { class: "tiles" },
      tile(formatDuration(info.uptime_seconds), "uptime"),
      tile(number(connections.open), "connections"),
      tile(number(calls.total), "calls"),
      tile(number(calls.errors), "errors"),
      tile(number(calls.denied), "denied"),
      tile(number(events.subscriptions), "subscriptions")),
    el("dl", {},
      el("dt", { text: "version" }), el("dd", { text: `${info.version || "?"} (protocol ${info.protocol ?? "?"})` }),
      el("dt", { text: "pid" }), el("dd", { text: String(info.pid ?? "—") }),
      el("dt", { text: "started" }), el("dd", { text: info.started ? new Date(info.started).toLocaleString() : "—" }),
      el("dt", { text: "listeners" }), el("dd", {}, el("ul", {}, (info.listeners || []).map((l) => el("li", { class: "mono", text: typeof l === "string" ? l : JSON.stringify(l) })))),
      el("dt", { text: "services" }), el("dd", { text: (info.services || []).map((s) => s.name + (s.host && s.host.state ? ` (${s.host.state})` : "")).join(", ") || "—" }),
      el("dt", { text: "events" }), el("dd", { text: `${number(events.published)} published, ${number(events.delivered)} delivered, ${number(events.lost)} lost` })));
  updateStatusAge();
}

function formatDuration(seconds) {
  if (typeof seconds !== "number") return "—";
  const s = Math.floor(seconds), d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${m}m`;
  if (m) return `${m}m ${s % 60}s`;
  return `${s}s`;
}
function updateStatusAge() {
  $("status-age").textContent = statusLoadedAt ? `rpcd.info, ${Math.round((Date.now() - statusLoadedAt) / 1000)} s ago` : "";
}

// ---- Events over WebSocket ------------------------------------------------------------------------------

const events = {
  socket: null,
  opening: null,
  pending: new Map(),         // id -> {resolve, reject}
  subscriptions: new Map(),   // subscription id -> event name
  paused: false,
  held: [],
  count: 0,
  reconnecting: null,         // the timer of the next try to subscribe again after the socket closed
};

function socketURL() {
  return (location.protocol === "https:" ? "wss://" : "ws://") + location.host + RPC_PATH;
}

function openSocket() {
  if (events.socket && events.socket.readyState === WebSocket.OPEN) return Promise.resolve(events.socket);
  if (events.opening) return events.opening;
  events.opening = new Promise((resolve, reject) => {
    const socket = new WebSocket(socketURL());
    socket.addEventListener("open", () => { events.socket = socket; events.opening = null; setEventsNote("WebSocket open."); resolve(socket); });
    socket.addEventListener("message", (message) => receive(message.data));
    socket.addEventListener("close", (close) => {
      const wasOpen = events.socket === socket;
      events.socket = null; events.opening = null;
      for (const { reject: fail } of events.pending.values()) fail(new Error("WebSocket closed"));
      events.pending.clear();
      const names = [...new Set(events.subscriptions.values())];
      if (events.subscriptions.size) {
        events.subscriptions.clear();
        renderSubscriptions();
      }
      setEventsNote(wasOpen ? `WebSocket closed (${close.code}${close.reason ? ": " + close.reason : ""}).` : "Could not open a WebSocket to /rpc.");
      if (!wasOpen) reject(new Error("Could not open a WebSocket to " + RPC_PATH));
      if (wasOpen && names.length) resubscribe(names, 250);
    });
  });
  return events.opening;
}

function setEventsNote(text) { $("events-note").textContent = text; }

// The socket closed under subscriptions (rpcd restarted, the network went): open a new one and subscribe to the
// same events again, trying every PAUSE ms (doubling to 5 s) until rpcd answers, then mark the gap in the log.
function resubscribe(names, pause) {
  clearTimeout(events.reconnecting);
  setEventsNote(`WebSocket closed; subscribing again to ${names.join(", ")}…`);
  events.reconnecting = setTimeout(async () => {
    events.reconnecting = null;
    const again = [];
    for (const name of names) {
      try {
        const reply = await socketCall("rpc.subscribe", { event: name });
        if (reply.error) { $("events-note").replaceChildren(errorView(reply.error, name)); continue; }
        events.subscriptions.set(reply.result.subscription, reply.result.event || name);
        again.push(name);
      } catch {
        return resubscribe(names, Math.min(pause * 2, 5000));
      }
    }
    renderSubscriptions();
    if (again.length) {
      setEventsNote(`Subscribed again to ${again.join(", ")}.`);
      addEvent({ kind: "resubscribed", params: { events: again }, at: new Date() });
    }
  }, pause);
}

async function socketCall(method, params) {
  const socket = await openSocket();
  const id = nextId++;
  return new Promise((resolve, reject) => {
    events.pending.set(id, { resolve, reject });
    socket.send(JSON.stringify({ jsonrpc: "2.0", method, params, id }));
  });
}

function receive(text) {
  let message;
  try { message = JSON.parse(text); } catch { return; }
  for (const item of Array.isArray(message) ? message : [message]) {
    if (item && item.id !== undefined && item.id !== null && events.pending.has(item.id)) {
      events.pending.get(item.id).resolve(item);
      events.pending.delete(item.id);
    } else if (item && item.method === "rpc.event") {
      addEvent({ kind: "event", params: item.params || {}, at: new Date() });
    } else if (item && item.method === "rpc.eventsLost") {
      addEvent({ kind: "lost", params: item.params || {}, at: new Date() });
    } else if (item && item.method === "rpc.goingAway") {
      setEventsNote("rpcd is stopping or restarting; the subscriptions will be made again.");
    } else if (item && item.method === "rpc.subscriptionEnded") {
      const params = item.params || {};
      events.subscriptions.delete(params.subscription);
      renderSubscriptions();
      addEvent({ kind: "ended", params, at: new Date() });
    }
  }
}

async function subscribe(event) {
  event.preventDefault();
  const name = $("event-select").value;
  if (!name) return;
  const button = $("subscribe-button");
  button.disabled = true;
  try {
    const reply = await socketCall("rpc.subscribe", { event: name });
    if (reply.error) {
      setEventsNote("");
      $("events-note").replaceChildren(errorView(reply.error, name));
    } else {
      events.subscriptions.set(reply.result.subscription, reply.result.event || name);
      renderSubscriptions();
      setEventsNote(`Subscribed to ${name}.`);
    }
  } catch (error) {
    setEventsNote(String(error.message || error));
  } finally {
    button.disabled = false;
  }
}

async function unsubscribe(id) {
  events.subscriptions.delete(id);
  renderSubscriptions();
  try { await socketCall("rpc.unsubscribe", { subscription: id }); } catch { /* the socket is gone: so is the subscription */ }
}

function renderSubscriptions() {
  $("subscriptions").replaceChildren(...[...events.subscriptions].map(([id, name]) =>
    el("li", { "data-event": name }, el("span", { text: name }),
      el("button", { type: "button", "aria-label": `Unsubscribe from ${name}`, title: "Unsubscribe", onclick: () => unsubscribe(id) }, "×"))));
}

function renderEventChoices(list) {
  const select = $("event-select");
  const names = list.map((e) => e.name).sort();
  select.replaceChildren(...(names.length ? names.map((n) => el("option", { value: n, text: n })) : [el("option", { value: "", text: "No events you may watch" })]));
  $("subscribe-button").disabled = names.length === 0;
}

function addEvent(entry) {
  if (events.paused) {
    events.held.push(entry);
    $("pause-button").textContent = `Resume (${events.held.length})`;
    return;
  }
  showEvent(entry);
}

function showEvent(entry) {
  const log = $("event-log");
  const placeholder = log.querySelector(".placeholder");
  if (placeholder) placeholder.remove();
  events.count++;
  $("event-count").textContent = String(events.count);
  const p = entry.params;
  const time = entry.at.toLocaleTimeString();
  let item;
  if (entry.kind === "event") {
    item = el("li", { "data-event": p.event },
      el("div", { class: "meta" }, el("span", { class: "ev", text: p.event }), el("span", { text: "#" + p.seq }), el("span", { text: time })),
      $("json-toggle").checked ? jsonView(p) : el("div", { class: "data", text: compactJSON(p.data) }));
  } else {
    const text = entry.kind === "lost" ? `${p.count} events lost (the console read too slowly)`
      : entry.kind === "resubscribed" ? `connection lost or rpcd restarted; subscribed again to ${p.events.join(", ")}: events in between may have been missed, numbering starts again`
      : `subscription ${p.subscription} ended: ${p.reason || ""}`;
    item = el("li", { class: "lost" }, el("div", { class: "meta" }, el("span", { text: time })), el("div", { text }));
  }
  item.entry = entry;
  log.prepend(item);
  while (log.children.length > MAX_EVENTS) log.lastElementChild.remove();
}

function togglePause() {
  events.paused = !events.paused;
  const button = $("pause-button");
  button.setAttribute("aria-pressed", String(events.paused));
  if (!events.paused) {
    const held = events.held;
    events.held = [];
    held.forEach(showEvent);
  }
  button.textContent = events.paused ? "Resume (0)" : "Pause";
}

function clearEvents() {
  events.held = [];
  events.count = 0;
  $("event-count").textContent = "0";
  $("event-log").replaceChildren($("tpl-empty-events").content.cloneNode(true));
  if (events.paused) $("pause-button").textContent = "Resume (0)";
}

function rerenderEvents() {
  const entries = [...$("event-log").children].map((li) => li.entry).filter(Boolean).reverse();
  $("event-log").replaceChildren();
  events.count -= entries.length;
  entries.forEach(showEvent);
  if (entries.length === 0) clearEvents();
}

// ---- Start ----------------------------------------------------------------------------------------------

async function refresh() {
  await Promise.all([loadStatus(), loadMethods().catch((error) => {
    $("method-list").replaceChildren(el("p", { class: "note", text: String(error.message || error) }));
  })]);
}

function start() {
  $("host").textContent = location.host;
  clearEvents();
  $("filter").addEventListener("input", renderMethodList);
  $("call-form").addEventListener("submit", submitCall);
  $("call-form").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); $("call-form").requestSubmit(); }
  });
  $("reset-button").addEventListener("click", () => { if (state.selected) selectMethod(state.selected, true); });
  $("refresh").addEventListener("click", refresh);
  $("subscribe-form").addEventListener("submit", subscribe);
  $("pause-button").addEventListener("click", togglePause);
  $("clear-button").addEventListener("click", clearEvents);
  $("json-toggle").addEventListener("change", rerenderEvents);
  window.addEventListener("hashchange", () => {
    const name = decodeURIComponent(location.hash.slice(1));
    if (name !== state.selected && state.methods.has(name)) selectMethod(name, false);
  });
  document.addEventListener("keydown", (e) => {
    const typing = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
    if (e.key === "/" && !typing) { e.preventDefault(); $("filter").focus(); }
    else if (e.key === "r" && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) refresh();
  });
  setInterval(updateStatusAge, 1000);
  setInterval(() => { if (!document.hidden) loadStatus(); }, 10000);
  refresh();
}

document.addEventListener("DOMContentLoaded", start);
