// The console: reads a bounded first view (GET /api/console) and the chosen plan's
// timeline, then applies what each stream message says changed (GET /api/console/events),
// step by step, without reading everything again. More of a plan's steps, or only some
// kinds, come a page at a time (GET /api/console/steps). When a lease runs out (nothing is
// written) it reads the first view again. Read-only unless an operator unlocks
// force-release with the admin token.

import { askForKey, withKey } from "./access.js";
import { Drawer } from "./detail.js";
import { clock, labeller } from "./dom.js";
import { anyLapsed, serverNow, setServerTime, tick } from "./lease.js";
import { renderLoose, renderNow } from "./now.js";
import { moreRow, renderPlans, stepRow, updatePlanHead } from "./plans.js";
import { Store, finished } from "./store.js";
import { openStream } from "./stream.js";
import { renderTabs, renderTimeline } from "./timeline.js";

const TOKEN_KEY = "planledger.admin-token";
const PAGE = 100;  // steps per "show more"
const $ = (id) => document.getElementById(id);
const store = new Store();
const state = { timeline: null, plan: null, changed: new Set(), loading: new Set(), token: sessionStorage.getItem(TOKEN_KEY) };

// A read with this tab's access key; a refusal for want of one asks for it, then reads
// again. A call that brings its own credential (force-release) is answered as it is.
async function getJSON(url, init = {}) {
  for (;;) {
    const own = init.headers?.Authorization;
    const headers = withKey({ Accept: "application/json", ...(init.headers || {}) });
    const response = await fetch(url, { ...init, headers });
    const body = await response.json().catch(() => ({}));
    if (response.status === 401 && !own) {
      await askForKey(body.message || response.statusText);
      continue;
    }
    if (!response.ok) throw Object.assign(new Error(body.message || response.statusText), { status: response.status });
    return body;
  }
}

// --- what every section looks up -----------------------------------------------------

const ctx = {
  getJSON,
  label: (id) => id,
  stepNumber: (id) => { const s = store.step(id) || holdOf(id); return s?.position === undefined ? undefined : s.position + 1; },
  stepTitle: (id) => (store.step(id) || holdOf(id))?.title,
  stepStatus: (id) => store.step(id)?.status,
  leaseOf: (id) => holdOf(id)?.lease_seconds,
  operator: () => Boolean(state.token && store.admin),
  openStep: (id, opener) => drawer.openStep(id, opener).catch(report),
  openEntry: (entry, opener) => drawer.openEntry(entry, opener).catch(report),
  selectPlan: (slug, scroll) => selectPlan(slug, scroll),
  filterPlan: (slug, change) => filterPlan(slug, change).catch(report),
  morePlan: (slug) => morePlan(slug).catch(report),
  forceRelease: (id) => forceRelease(id),
  tip: { show: showTip, hide: hideTip },
  refocus,
};
let holds = null;

function holdOf(stepId) {
  if (!holds) {
    holds = new Map();
    for (const { session } of store.sessions.values()) for (const held of session.holds) holds.set(held.step_id, held);
  }
  return holds.get(stepId);
}

function names() {
  const all = { ...store.names };
  for (const lane of state.timeline?.lanes || []) {
    if (lane.session_id && !all[lane.session_id]) all[lane.session_id] = { name: lane.name, ended: false };
  }
  return all;
}

// What the sections draw, from what the store holds.
function view() {
  const plans = [...store.plans.values()].map((p) => p.summary);
  const cards = new Map();
  for (const plan of plans) {
    const detail = store.details.get(plan.slug);
    if (detail && (!finished(plan) || plan.slug === state.plan)) {
      cards.set(plan.slug, { ...detail, steps: store.listed(plan.slug), loading: state.loading.has(plan.slug) });
    }
  }
  const { shown, hidden } = store.shownSessions();
  return { plans, cards, sessions: shown, idle_hidden: hidden, names: store.names, loose: store.loose(), looseHidden: store.looseHidden };
}

// --- reading --------------------------------------------------------------------------

let loading = null;
let again = false;

// Reads the first view again (at the start, after a lapse or a break, for a plan not read
// yet) and merges it into what the page holds; one read at a time.
function refresh() {
  if (loading) { again = true; return loading; }
  loading = (async () => {
    do { again = false; await load(); } while (again);
  })().catch(report).finally(() => { loading = null; });
  return loading;
}

function pickPlan() {
  const plans = [...store.plans.values()].map((p) => p.summary);
  if (state.plan && store.plans.has(state.plan)) return state.plan;
  const open = plans.filter((p) => store.details.has(p.slug) && !finished(p));
  const busy = open.find((p) => p.progress.in_flight > 0) || open[0];
  return busy ? busy.slug : plans[plans.length - 1]?.slug || null;
}

// A plan's timeline: its newest part first (the whole of a large plan's is megabytes, and
// the page draws the newest few hundred entries), then only what came since (`after`).
async function timelineOf(slug) {
  const held = state.timeline?.plan === slug ? state.timeline : null;
  const plan = encodeURIComponent(slug);
  const page = await getJSON(held ? `/api/timeline?plan=${plan}&after=${held.next_after}`
    : `/api/console/timeline?plan=${plan}`);
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
  // Both reads at once when the plan is known: one round trip, not two.
  const [snap, early] = await Promise.all([
    getJSON(`/api/console${asked ? `?plan=${encodeURIComponent(asked)}` : ""}`),
    asked ? timelineOf(asked).catch(() => null) : null]);
  setServerTime(snap.now, sent, Date.now());
  store.takeSnapshot(snap);
  state.plan = pickPlan();
  const timeline = state.plan === asked && early ? early : state.plan ? await timelineOf(state.plan) : null;
  if (state.plan && !store.details.has(state.plan) && state.plan !== asked) {
    again = true;  // a finished plan chosen on the first read: its steps come with the next
  }
  state.timeline = timeline;
  $("problem").hidden = true;
  render();
}

// The chosen plan's timeline: what came since, one read at a time.
let timelineLoading = null;
let timelineAgain = false;

function refreshTimeline() {
  if (timelineLoading) { timelineAgain = true; return timelineLoading; }
  timelineLoading = (async () => {
    do {
      timelineAgain = false;
      const slug = state.plan;
      if (!slug) return;
      const timeline = await timelineOf(slug);
      if (slug === state.plan) { state.timeline = timeline; drawTimeline(); }
    } while (timelineAgain);
  })().catch(report).finally(() => { timelineLoading = null; });
  return timelineLoading;
}

// --- applying changes -----------------------------------------------------------------

function applyChange(change) {
  const { steps, plansChanged, stale } = store.takeChange(change);
  for (const id of steps) state.changed.add(id);
  for (const event of change.events) state.changed.add(event.data?.step_id || event.stream);
  if (stale.length) {
    for (const slug of stale) { store.details.delete(slug); store.forgetSteps(slug); }
    refresh();  // too wide to send step by step: read their first pages again
  } else if (plansChanged) {
    render();
  } else {
    redraw(steps, change.plans.map((p) => p.slug));
  }
  refreshTimeline();
  if (drawer.open && steps.includes(drawer.stepId)) drawer.refresh().catch(report);
}

// Redraws in place what a change touched: each changed step's row, each touched plan's
// rollup and bar, and the Now and Loose ends sections (a few cards each).
function redraw(steps, plans) {
  const focused = document.activeElement?.dataset?.key;
  prepare();
  drawSide();
  for (const slug of plans) {
    const card = document.querySelector(`article.plan[data-plan="${CSS.escape(slug)}"]`);
    if (card) updatePlanHead(card, store.summary(slug));
    else $("plan-list").replaceChildren(...renderPlans(view(), ctx));  // a folded plan's line
  }
  const touched = new Set(steps.map((id) => store.step(id)?.plan).filter(Boolean));
  for (const slug of touched) drawSteps(slug, steps);
  renderOperator();
  flash();
  if (focused && !document.activeElement?.dataset?.key) refocus(document.querySelector(`[data-key="${CSS.escape(focused)}"]`));
}

// One plan's listed steps: changed rows replaced where they stand; the list rebuilt only
// when which steps it lists changed.
function drawSteps(slug, changed = []) {
  const rows = document.querySelector(`[data-rows="${CSS.escape(slug)}"]`);
  if (!rows) return;
  const card = view().cards.get(slug);
  if (!card) return;
  const wanted = card.steps.map((s) => s.step_id);
  const drawn = [...rows.children].map((row) => row.dataset.step);
  if (wanted.length === drawn.length && wanted.every((id, i) => id === drawn[i])) {
    for (const id of changed) {
      const row = rows.querySelector(`[data-step="${CSS.escape(id)}"]`);
      if (row) row.replaceWith(stepRow(store.step(id), ctx));
    }
  } else {
    rows.replaceChildren(...card.steps.map((step) => stepRow(step, ctx)));
  }
  rows.closest("article").querySelector(".steps-more")?.replaceWith(moreRow(store.summary(slug), card, ctx));
}

// --- paging ---------------------------------------------------------------------------

async function readSteps(slug, listing, offset) {
  const query = new URLSearchParams({ plan: slug, offset: String(offset), limit: String(PAGE), show: listing.show });
  if (listing.text) query.set("text", listing.text);
  return getJSON(`/api/console/steps?${query}`);
}

async function morePlan(slug) {
  const listing = store.details.get(slug)?.listing;
  if (!listing || listing.next === null || state.loading.has(slug)) return;
  const asked = { ...listing };
  state.loading.add(slug);
  drawSteps(slug);
  try {
    const page = await readSteps(slug, listing, listing.next);
    if (listing.show === asked.show && listing.text === asked.text && listing.next === asked.next) store.takePage(page, listing);
  } finally {
    state.loading.delete(slug);
  }
  prepare();
  drawSteps(slug);
  refocusMore(slug);
}

async function filterPlan(slug, change) {
  const listing = store.details.get(slug)?.listing;
  if (!listing) return;
  Object.assign(listing, change, { next: 0 });
  const asked = { ...listing };
  state.loading.add(slug);
  drawSteps(slug);
  try {
    const page = await readSteps(slug, listing, 0);
    if (listing.show === asked.show && listing.text === asked.text && listing.next === 0) store.takePage(page, listing);
  } finally {
    state.loading.delete(slug);
  }
  prepare();
  drawSteps(slug);
}

// After more steps arrive, keyboard focus stays on "show more" (or the first new step).
function refocusMore(slug) {
  if (document.activeElement && document.activeElement !== document.body) return;
  refocus(document.querySelector(`[data-key="more-${CSS.escape(slug)}"]`));
}

// --- drawing --------------------------------------------------------------------------

function prepare() {
  holds = null;
  ctx.label = labeller(names());
  $("position").textContent = `#${store.position}`;
}

function drawSide() {
  const shown = view();
  $("sessions").replaceChildren(...renderNow(shown, ctx));
  // Both counts, each named: the cards are every live session, and only some hold steps.
  const holding = shown.sessions.filter((s) => s.holds.length).length;
  $("now-count").textContent = `${holding} holding · ${shown.sessions.length + shown.idle_hidden} live`;
  $("loose-list").replaceChildren(...renderLoose(shown, ctx));
  $("loose-count").textContent = String(shown.loose.length + shown.looseHidden);
}

function drawTimeline() {
  const scroller = $("timeline-scroll");
  const atEnd = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 40 || !scroller.dataset.drawn;
  const entries = state.timeline?.entries || [];
  const drawn = `${state.plan}:${entries.length}:${entries[entries.length - 1]?.position}`;
  if (scroller.dataset.drawn === drawn) return;  // the longest section: rebuilt only when it grew
  hideTip();  // its anchor is about to go
  ctx.label = labeller(names());
  scroller.replaceChildren(renderTimeline(state.timeline, ctx));
  if (atEnd) scroller.scrollTop = scroller.scrollHeight;
  scroller.dataset.drawn = drawn;
}

function render() {
  const focused = document.activeElement?.dataset?.key;
  prepare();
  drawSide();
  const shown = view();
  $("plan-list").replaceChildren(...renderPlans(shown, ctx));
  $("plan-tabs").replaceChildren(...renderTabs(shown, state.plan, ctx));
  drawTimeline();
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
  const read = store.details.has(slug) ? refreshTimeline().then(render) : refresh();
  read.then(() => { if (scroll) $("timeline").scrollIntoView({ behavior: "smooth", block: "start" }); });
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
  openStream(`/api/console/events${position === undefined ? "" : `?after=${position}`}`, (name, data) => {
    if (name === "ready") {
      if (live.dataset.state === "down") refresh();  // back after a break: read everything again
      live.dataset.state = "live";
      live.textContent = "live";
    } else if (name === "resync") {
      refresh();  // resumed from too far back: the server sends no backlog, the first view has it
    } else if (name === "log") {
      try {
        applyChange(JSON.parse(data));
      } catch (error) {
        report(error);
      }
    }
  }, (busy) => {
    live.dataset.state = "down";
    live.textContent = busy ? "server busy, retrying…" : "reconnecting…";
  });
}

let lastLapse = 0;
let lapseWait = 1000;

// A lease ran out: no event says so, the first view does. The page's clock is the server's
// only to within a request's latency, so the view read at once may still show the claim
// held: until it agrees, the page asks again, less and less often (1 s, 2 s, ... 30 s).
function everyTick() {
  $("clock").textContent = clock(new Date(serverNow()).toISOString());
  const newly = tick();
  if (newly) lapseWait = 1000;
  if ((newly || anyLapsed()) && Date.now() - lastLapse > lapseWait) {
    if (!newly) lapseWait = Math.min(lapseWait * 2, 30000);
    lastLapse = Date.now();
    refresh();
  }
}

// --- operator -------------------------------------------------------------------------

function renderOperator() {
  const button = $("operator");
  const admin = store.admin;
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
  if (event.key === "Escape" && drawer.open && !$("token-dialog").open && !$("key-dialog").open) {
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
  connect(store.loaded ? store.position : undefined);
  setInterval(everyTick, 250);
  everyTick();
});

