// What the page knows of the ledger, merged from three sources: the first read
// (GET /api/console), pages of a plan's steps (GET /api/console/steps) and the changes
// each stream message carries. Every piece remembers the log position it was read at, so
// an answer that left before a change and arrived after it never undoes the change.

import { stepState } from "./plans.js";

export const SHOWS = ["all", "unfinished", "held", "claimable", "lapsed", "waiting", "done", "dropped"];
const MAX_IDLE = 12;  // idle session cards, as the server's first read shows them

export class Store {
  constructor() {
    this.position = 0;
    this.admin = false;
    this.now = null;
    this.plans = new Map();     // slug -> { summary, at }, oldest plan first
    this.details = new Map();   // slug -> { constraints, listing: { show, text, next } }
    this.steps = new Map();     // step id -> { step, at }
    this.sessions = new Map();  // session id -> { session, at }
    this.live = 0;              // live sessions, shown or not
    this.names = {};
    this.looseHidden = 0;
    this.loaded = false;        // a first view was read
  }

  // --- merging ------------------------------------------------------------------------

  takeSnapshot(snap) {
    const at = snap.position;
    this.loaded = true;
    this.position = Math.max(this.position, at);
    this.admin = snap.admin;
    this.now = snap.now;
    this.live = snap.live_sessions;
    this.looseHidden = snap.loose_hidden;
    Object.assign(this.names, snap.names);
    for (const plan of snap.plans) this.putPlan(plan, at);
    for (const plan of snap.details) {
      const known = this.details.get(plan.slug);
      if (!known) this.details.set(plan.slug, { constraints: plan.constraints, listing: { show: "all", text: "", next: plan.next_offset } });
      else if (known.listing.show === "all" && !known.listing.text && reach(plan.next_offset) > reach(known.listing.next)) {
        known.listing.next = plan.next_offset;
      }
      for (const step of plan.steps) this.putStep(step, at);
    }
    for (const step of snap.loose) this.putStep(step, at);
    // The snapshot lists every live session that holds something and the newest idle
    // ones: cards it leaves out that were not heard of since are gone or hidden now.
    const listed = new Set(snap.sessions.map((s) => s.session_id));
    for (const [id, known] of this.sessions) if (!listed.has(id) && known.at <= at) this.sessions.delete(id);
    for (const session of snap.sessions) this.putSession(session, at);
  }

  takePage(page, listing) {
    const at = page.position;
    const plan = this.plans.get(page.plan);
    if (plan) this.putPlan({ ...plan.summary, progress: page.progress }, at);
    Object.assign(this.names, page.names);
    for (const step of page.steps) this.putStep(step, at);
    listing.next = page.next_offset;
  }

  // Returns what the page must redraw: the steps that changed, and whether the plans
  // themselves changed (a new plan, one finished or reopened, or one to read again).
  takeChange(change) {
    const at = change.next_after;
    this.position = Math.max(this.position, at);
    this.now = change.now;
    this.live = change.live_sessions;
    Object.assign(this.names, change.names);
    let plansChanged = change.stale_plans.length > 0;
    for (const plan of change.plans) {
      const before = this.plans.get(plan.slug)?.summary;
      if (!before || finished(before) !== finished(plan)) plansChanged = true;
      this.putPlan(plan, at);
    }
    const steps = change.steps.filter((step) => this.putStep(step, at)).map((s) => s.step_id);
    for (const session of change.sessions) this.putSession(session, at);
    // The holder of each changed step came with the change: nobody else holds it now.
    const told = new Set(change.sessions.map((s) => s.session_id));
    for (const [id, known] of this.sessions) {
      if (told.has(id)) continue;
      const holds = known.session.holds.filter((held) => !steps.includes(held.step_id));
      if (holds.length !== known.session.holds.length) known.session = { ...known.session, holds };
    }
    return { steps, plansChanged, stale: change.stale_plans };
  }

  putPlan(summary, at) {
    const known = this.plans.get(summary.slug);
    if (known && known.at > at) return;
    this.plans.set(summary.slug, { summary, at });
  }

  putStep(step, at) {
    const known = this.steps.get(step.step_id);
    if (known && known.at > at) return false;
    this.steps.set(step.step_id, { step, at });
    return true;
  }

  putSession(session, at) {
    const known = this.sessions.get(session.session_id);
    if (known && known.at > at) return;
    if (session.ended) this.sessions.delete(session.session_id);
    else this.sessions.set(session.session_id, { session, at });
  }

  forgetSteps(slug) {
    for (const [id, known] of this.steps) if (known.step.plan === slug) this.steps.delete(id);
  }

  // --- reading ------------------------------------------------------------------------

  summary(slug) {
    return this.plans.get(slug)?.summary;
  }

  step(id) {
    return this.steps.get(id)?.step;
  }

  // The plan's steps the page lists: those its listing has reached that its filter keeps,
  // by number.
  listed(slug) {
    const listing = this.details.get(slug)?.listing;
    if (!listing) return [];
    const upto = reach(listing.next) - 1;
    const text = listing.text.toLowerCase();
    const found = [];
    for (const { step } of this.steps.values()) {
      if (step.plan !== slug || step.position > upto) continue;
      if (text && !step.title.toLowerCase().includes(text)) continue;
      if (shows(step, listing.show)) found.push(step);
    }
    return found.sort((a, b) => a.position - b.position);
  }

  // Claims that lapsed (lease expired, or the holder ended its session), by plan and number.
  loose() {
    const order = [...this.plans.keys()];
    return [...this.steps.values()].map(({ step }) => step)
      .filter((step) => step.claimable && step.lapsed_holder)
      .sort((a, b) => order.indexOf(a.plan) - order.indexOf(b.plan) || a.position - b.position);
  }

  // Sessions holding steps (oldest first), then the newest idle ones; and how many live
  // sessions are left out.
  shownSessions() {
    const all = [...this.sessions.values()].map(({ session }) => session);
    const started = (a, b) => a.started_at.localeCompare(b.started_at) || a.session_id.localeCompare(b.session_id);
    const busy = all.filter((s) => s.holds.length).sort(started);
    const idle = all.filter((s) => !s.holds.length).sort(started).reverse().slice(0, MAX_IDLE);
    const shown = [...busy, ...idle];
    return { shown, hidden: Math.max(0, this.live - shown.length) };
  }
}

export function finished(summary) {
  const p = summary.progress;
  return p.total > 0 && p.done + p.dropped >= p.total;
}

// How far a listing reached: the step number its next page starts at (all of them: none).
function reach(next) {
  return next === null || next === undefined ? Infinity : next;
}

export function shows(step, show) {
  const [kind] = stepState(step);
  switch (show) {
    case "all": return true;
    case "unfinished": return step.status !== "done" && step.status !== "dropped";
    case "claimable": return step.claimable;
    case "lapsed": return kind === "lapsed";
    case "held": return kind === "held";
    case "waiting": return kind === "waiting";
    default: return step.status === show;
  }
}
