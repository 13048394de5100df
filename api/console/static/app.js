// The console: reads /api/console and /api/timeline, then reads again whenever the log
// moves (server-sent events from /api/console/events) or a lease runs out. Read-only
// unless an operator unlocks force-release with the admin token.

import { Drawer } from "./detail.js";
import { clock, labeller } from "./dom.js";
import { serverNow, setServerTime, tick } from "./lease.js";
import { renderLoose, renderNow } from "./now.js";
import { renderPlans } from "./plans.js";
import { renderTabs, renderTimeline } from "./timeline.js";

const TOKEN_KEY = "planledger.admin-token";
const $ = (id) => document.getElementById(id);
const state = { snap: null, timeline: null, plan: null, changed: new Set(), token: sessionStorage.getItem(TOKEN_KEY) };

async function getJSON(url, init) {
  const response = await fetch(url, { headers: { Accept: "application/json" }, ...init });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw Object.assign(new Error(body.message || response.statusText), { status: response.status });
  return body;
}

// --- what every section looks up -----------------------------------------------------

const ctx = {
  getJSON,
  label: (id) => id,
  stepNumber: (id) => stepIndex().get(id)?.number,
  stepTitle: (id) => stepIndex().get(id)?.title,
  leaseOf: (id) => stepIndex().get(id)?.lease,
  operator: () => Boolean(state.token && state.snap?.admin),
  openStep: (id, opener) => drawer.openStep(id, opener).catch(report),
  openEntry: (entry, opener) => drawer.openEntry(entry, opener).catch(report),
  selectPlan: (slug, scroll) => selectPlan(slug, scroll),
  forceRelease: (id) => forceRelease(id),
  tip: { show: showTip, hide: hideTip },
  refocus,
};
let index = null;

function stepIndex() {
  if (index) return index;
  index = new Map();
  for (const plan of state.snap?.details || []) {
    for (const s of plan.steps) index.set(s.step_id, { number: s.position + 1, title: s.title });
  }
  for (const session of state.snap?.sessions || []) {
    for (const held of session.holds) {
      const known = index.get(held.step_id) || { title: held.title };
      index.set(held.step_id, { ...known, lease: held.lease_seconds });
    }
  }
  return index;
}

function names() {
  const all = { ...(state.snap?.names || {}) };
  for (const lane of state.timeline?.lanes || []) {
    if (lane.session_id && !all[lane.session_id]) all[lane.session_id] = { name: lane.name, ended: false };
  }
  return all;
}

// --- reading --------------------------------------------------------------------------

let loading = null;
let again = false;

function refresh() {
  if (loading) { again = true; return loading; }
  loading = (async () => {
    do { again = false; await load(); } while (again);
  })().catch(report).finally(() => { loading = null; });
  return loading;
}

function pickPlan(snap) {
  const slugs = snap.plans.map((p) => p.slug);
  if (state.plan && slugs.includes(state.plan)) return state.plan;
  const busy = snap.details.find((p) => p.progress.in_flight > 0) || snap.details[0];
  return busy ? busy.slug : slugs[slugs.length - 1] || null;
}

// A plan's timeline is read whole once, then only what came since (`after`): on a long
// log the whole of it is megabytes, and the console reads again on every change.
async function timelineOf(slug) {
  const held = state.timeline?.plan === slug ? state.timeline : null;
  const since = held ? `&after=${held.next_after}` : "";
  const page = await getJSON(`/api/timeline?plan=${encodeURIComponent(slug)}${since}`);
  return { ...(held ? merged(held, page) : page), plan: slug };
}

// Pages merge by log position (a page may carry the start of a session that acted for the
// first time, from before `after`); lanes follow the entries' first appearance.
function merged(held, page) {
  const byPosition = new Map(held.entries.map((e) => [e.position, e]));
  for (const e of page.entries) byPosition.set(e.position, e);
  const entries = [...byPosition.values()].sort((a, b) => a.position - b.position);
  const lanes = new Map([...page.lanes, ...held.lanes].map((lane) => [lane.session_id, lane]));
  const order = [...new Set(entries.map((e) => e.session_id))].filter((id) => lanes.has(id));
  return { ...page, entries, lanes: order.map((id) => lanes.get(id)),
           next_after: Math.max(held.next_after, page.next_after) };
}

async function load() {
  const sent = Date.now();
  const asked = state.plan;
  // Both reads at once when the plan is known: one round trip, not two, per change.
  const [snap, early] = await Promise.all([
    getJSON(`/api/console${asked ? `?plan=${encodeURIComponent(asked)}` : ""}`),
    asked ? timelineOf(asked).catch(() => null) : null]);
  setServerTime(snap.now, sent, Date.now());
  state.plan = pickPlan(snap);
  const timeline = state.plan === asked && early ? early : state.plan ? await timelineOf(state.plan) : null;
  if (state.plan && !snap.details.some((p) => p.slug === state.plan) && state.plan !== asked) {
    again = true;  // a finished plan chosen on the first read: its steps come with the next
  }
  state.snap = snap;
  state.timeline = timeline;
  $("problem").hidden = true;
  render();
}

// --- drawing --------------------------------------------------------------------------

function render() {
  const focused = document.activeElement?.dataset?.key;
  const scroller = $("timeline-scroll");
  const atEnd = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 40 || !scroller.dataset.drawn;
  index = null;
  ctx.label = labeller(names());
  const snap = state.snap;
  $("position").textContent = `#${snap.position}`;
  $("sessions").replaceChildren(...renderNow(snap, ctx));
  $("now-count").textContent = String(snap.sessions.filter((s) => s.holds.length).length);
  const loose = renderLoose(snap, ctx);
  $("loose-list").replaceChildren(...loose);
  $("loose-count").textContent = String(document.querySelectorAll("#loose-list li").length);
  $("plan-list").replaceChildren(...renderPlans(snap, ctx));
  $("plan-tabs").replaceChildren(...renderTabs(snap, state.plan, ctx));
  const entries = state.timeline?.entries || [];
  const drawn = `${state.plan}:${entries.length}:${entries[entries.length - 1]?.position}`;
  if (scroller.dataset.drawn !== drawn) {  // the longest section: rebuilt only when it grew
    hideTip();  // its anchor is about to go
    scroller.replaceChildren(renderTimeline(state.timeline, ctx));
    if (atEnd) scroller.scrollTop = scroller.scrollHeight;
    scroller.dataset.drawn = drawn;
  }
  renderOperator();
  flash();
  if (focused) refocus(document.querySelector(`[data-key="${CSS.escape(focused)}"]`));
  drawer.refresh().catch(report);
}

function flash() {
  for (const id of state.changed) {
    for (const node of document.querySelectorAll(`[data-step="${CSS.escape(id)}"]`)) node.classList.add("flash");
  }
  state.changed.clear();
}

function selectPlan(slug, scroll) {
  state.plan = slug;
  history.replaceState(null, "", `#plan=${encodeURIComponent(slug)}`);
  $("timeline-scroll").dataset.drawn = "";
  refresh().then(() => { if (scroll) $("timeline").scrollIntoView({ behavior: "smooth", block: "start" }); });
}

// --- tooltip --------------------------------------------------------------------------

let refocusing = false;

// Focus put back by the page (after a redraw, or closing the panel) shows no tooltip:
// tooltips follow what the person points at or tabs to.
function refocus(element) {
  if (!element) return;
  refocusing = true;
  try { element.focus({ preventScroll: true }); } finally { refocusing = false; }
}

function showTip(anchor, content) {
  if (refocusing) return;
  const tip = $("tip");
  tip.replaceChildren(...content);
  tip.hidden = false;
  const box = anchor.getBoundingClientRect();
  const width = tip.offsetWidth;
  const left = Math.min(Math.max(8, box.left), window.innerWidth - width - 8);
  const below = box.bottom + 6 + tip.offsetHeight < window.innerHeight;
  tip.style.setProperty("left", `${left + window.scrollX}px`);
  tip.style.setProperty("top", `${(below ? box.bottom + 6 : box.top - tip.offsetHeight - 6) + window.scrollY}px`);
}

function hideTip() {
  $("tip").hidden = true;
}

// --- live -----------------------------------------------------------------------------

function connect(position) {
  const live = $("live");
  const source = new EventSource(`/api/console/events${position === undefined ? "" : `?after=${position}`}`);
  source.addEventListener("ready", () => {
    if (live.dataset.state === "down") refresh();  // back after a break: read everything again
    live.dataset.state = "live";
    live.textContent = "live";
  });
  source.addEventListener("log", (message) => {
    const page = JSON.parse(message.data);
    for (const event of page.events) {
      state.changed.add(event.data?.step_id || event.stream);
    }
    refresh();
  });
  source.addEventListener("error", () => {
    live.dataset.state = "down";
    live.textContent = "reconnecting…";
  });
}

let lastLapse = 0;

function everyTick() {
  $("clock").textContent = clock(new Date(serverNow()).toISOString());
  if (tick() && Date.now() - lastLapse > 1000) {
    lastLapse = Date.now();
    refresh();  // a lease ran out: no event says so, the read model does
  }
}

// --- operator -------------------------------------------------------------------------

function renderOperator() {
  const button = $("operator");
  const admin = state.snap?.admin;
  const on = ctx.operator();
  button.disabled = !admin;
  button.setAttribute("aria-pressed", on ? "true" : "false");
  button.replaceChildren(on ? "operator" : "read-only");
  button.title = !admin ? "Force-release is disabled: the server has no PLANLEDGER_ADMIN_TOKEN"
    : on ? "Force-release is unlocked for this tab; click to lock" : "Unlock force-release with the admin token";
}

function toggleOperator() {
  if (ctx.operator()) {
    state.token = null;
    sessionStorage.removeItem(TOKEN_KEY);
    render();
    return;
  }
  $("token-error").textContent = "";
  $("token-dialog").showModal();
}

function unlock() {
  const value = $("token-input").value.trim();
  if (!value) { $("token-error").textContent = "Enter the admin token."; return; }
  state.token = value;
  sessionStorage.setItem(TOKEN_KEY, value);
  $("token-input").value = "";
  $("token-dialog").close();
  render();
}

async function forceRelease(stepId) {
  try {
    const answer = await getJSON(`/api/steps/${encodeURIComponent(stepId)}/force-release`, {
      method: "POST", headers: { Accept: "application/json", Authorization: `Bearer ${state.token}` },
    });
    return answer.released ? "Released." : "The step carried no claim.";
  } catch (error) {
    if (error.status === 401 || error.status === 403) {
      state.token = null;
      sessionStorage.removeItem(TOKEN_KEY);
      renderOperator();
    }
    return `Refused: ${error.message}`;
  }
}

// --- start ----------------------------------------------------------------------------

function report(error) {
  $("problem").hidden = false;
  $("problem").textContent = `Could not read the ledger: ${error.message}`;
}

const drawer = new Drawer($("detail"), ctx);

document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && drawer.open && !$("token-dialog").open) {
    drawer.close();
    hideTip();
  }
});
$("operator").addEventListener("click", toggleOperator);
$("token-form").addEventListener("submit", (event) => { event.preventDefault(); unlock(); });
$("token-cancel").addEventListener("click", () => $("token-dialog").close());

const wanted = new URLSearchParams(location.hash.slice(1)).get("plan");
if (wanted) state.plan = wanted;
refresh().then(() => {
  connect(state.snap?.position);
  setInterval(everyTick, 250);
  everyTick();
});

