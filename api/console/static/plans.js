// Plans: progress bar, rollup line, constraints, and the steps listed so far with status,
// holder and what they wait on; more on demand, or only a kind, or only a title. Finished
// plans fold into one line each until chosen.

import { h, icon, who } from "./dom.js";
import { countdown } from "./lease.js";

// `view` is what the page shows: plan summaries oldest first, which of them are open as
// cards (unfinished, or chosen), and for each card its listed steps and listing.
export function renderPlans(view, ctx) {
  if (!view.plans.length) {
    return [h("p", { class: "empty" }, "No plans yet. Create one with ", h("code", {}, "POST /api/plans"),
      " or ", h("code", {}, "planledger plan create"), ".")];
  }
  const open = view.plans.filter((p) => view.cards.has(p.slug)).map((p) => planCard(p, view.cards.get(p.slug), ctx));
  const finished = view.plans.filter((p) => !view.cards.has(p.slug));
  if (finished.length) open.push(h("ul", { class: "finished" }, finished.map((p) => finishedRow(p, ctx))));
  return open;
}

function rollup(plan) {
  return `${plan.slug}: ${plan.progress.line}`;
}

function progressBar(progress) {
  const parts = [["done", progress.done], ["held", progress.in_flight], ["ready", progress.claimable],
    ["waiting", progress.blocked], ["dropped", progress.dropped]];
  const total = Math.max(progress.total, 1);
  return h("div", {
    class: "progress", role: "progressbar", "aria-label": "steps done",
    "aria-valuemin": 0, "aria-valuemax": progress.total, "aria-valuenow": progress.done,
  }, parts.filter(([, n]) => n > 0).map(([kind, n]) =>
    h("span", { class: `seg ${kind}`, style: { width: `${(n / total) * 100}%` }, title: `${n} ${kind}` })));
}

// The card's rollup line and bar, redrawn in place when a change moves the plan's counts.
export function updatePlanHead(card, plan) {
  card.querySelector(".rollup").textContent = rollup(plan);
  card.querySelector(".progress").replaceWith(progressBar(plan.progress));
}

const SHOW_WORDS = {
  all: "every step", unfinished: "unfinished", held: "in progress", claimable: "claimable",
  lapsed: "lapsed", waiting: "waiting", done: "done", dropped: "dropped",
};

function planCard(plan, card, ctx) {
  const constraints = Object.entries(card.constraints);
  return h("article", { class: "card plan", dataset: { plan: plan.slug } },
    h("header", { class: "plan-head" },
      h("div", {},
        h("h3", {}, plan.title),
        h("p", { class: "rollup", dataset: { rollup: plan.slug } }, rollup(plan))),
      h("button", {
        class: "link", type: "button", dataset: { key: `timeline-${plan.slug}` },
        onclick: () => ctx.selectPlan(plan.slug, true),
      }, "timeline ↓")),
    progressBar(plan.progress),
    constraints.length ? h("dl", { class: "constraints", "aria-label": "constraints" },
      constraints.map(([name, text]) => h("div", { class: "constraint" }, h("dt", {}, name), h("dd", {}, text)))) : null,
    filters(plan, card.listing, ctx),
    h("div", { class: "steps", role: "table", "aria-label": `steps of ${plan.slug}` },
      h("div", { class: "step-row head", role: "row" },
        ["#", "step", "status", "holder", "waits on"].map((t) => h("span", { role: "columnheader" }, t))),
      h("div", { class: "step-rows", role: "rowgroup", dataset: { rows: plan.slug } },
        card.steps.map((step) => stepRow(step, ctx)))),
    moreRow(plan, card, ctx));
}

// Which steps the card lists: a kind, and a part of the title.
function filters(plan, listing, ctx) {
  const select = h("select", {
    class: "show", "aria-label": `show steps of ${plan.slug}`, dataset: { key: `show-${plan.slug}` },
    onchange: (e) => ctx.filterPlan(plan.slug, { show: e.currentTarget.value }),
  }, Object.entries(SHOW_WORDS).map(([value, words]) =>
    h("option", { value, selected: value === listing.show }, words)));
  let typing = null;
  const search = h("input", {
    class: "find", type: "search", placeholder: "find a step", value: listing.text, maxlength: 100,
    "aria-label": `find a step of ${plan.slug} by title`, dataset: { key: `find-${plan.slug}` },
    oninput: (e) => {
      const text = e.currentTarget.value.trim();
      clearTimeout(typing);
      typing = setTimeout(() => ctx.filterPlan(plan.slug, { text }), 250);
    },
  });
  return h("div", { class: "step-filters" }, select, search);
}

// How much of the plan the card lists, and the button that lists more.
export function moreRow(plan, card, ctx) {
  const { listing, steps } = card;
  const all = listing.show === "all" && !listing.text;
  const count = all ? `${steps.length} of ${plan.progress.total} steps` : `${steps.length} shown`;
  return h("div", { class: "steps-more", dataset: { more: plan.slug } },
    h("span", { class: "quiet", dataset: { count: plan.slug } }, count),
    listing.next === null ? null : h("button", {
      class: "link", type: "button", dataset: { key: `more-${plan.slug}` },
      disabled: card.loading, onclick: () => ctx.morePlan(plan.slug),
    }, card.loading ? "loading…" : "show more"));
}

export function stepState(step) {
  if (step.status === "done") return ["done", "done"];
  if (step.status === "dropped") return ["dropped", "dropped"];
  if (step.status === "in_review") return ["review", step.reviewer ? "in review (taken)" : "in review"];
  if (step.holder) return ["held", "in progress"];
  if (step.claimable) return step.lapsed_holder ? ["lapsed", "lapsed"] : ["ready", "claimable"];
  return ["waiting", "waiting"];
}

export function stepRow(step, ctx) {
  const [kind, words] = stepState(step);
  return h("div", { class: `step-row ${kind}`, role: "row", dataset: { step: step.step_id } },
    h("span", { class: "num", role: "cell", title: step.ref || "" }, `${step.position + 1}`),
    h("span", { class: "title", role: "cell" },
      h("button", {
        class: "step-link", type: "button", dataset: { key: `step-${step.step_id}` },
        onclick: (e) => ctx.openStep(step.step_id, e.currentTarget),
      }, step.title)),
    h("span", { role: "cell" }, h("span", { class: `pill ${kind}` }, words)),
    h("span", { class: "holder", role: "cell" }, holderCell(step, ctx)),
    h("span", { class: "deps", role: "cell" }, depsCell(step, ctx)));
}

function holderCell(step, ctx) {
  if (step.holder) {
    return [who(step.holder, ctx.label),
      countdown(step.expires_at, ctx.leaseOf(step.step_id)),
      h("span", { class: "fence" }, `fence ${step.fence}`)];
  }
  if (step.lapsed_holder) return [who(step.lapsed_holder, ctx.label, "gone"), h("span", { class: "quiet" }, " lapsed")];
  return h("span", { class: "quiet" }, "—");
}

// A dependency the page has not read is named by its id; one that blocks carries its
// status with the step, one that does not is done or dropped.
function depsCell(step, ctx) {
  if (!step.depends_on.length) return h("span", { class: "quiet" }, "—");
  const blocking = new Map(step.blockers.map((b) => [b.step_id, b]));
  return step.depends_on.map((id) => {
    const blocker = blocking.get(id);
    const number = ctx.stepNumber(id);
    const state = blocker ? blocker.status : ctx.stepStatus(id) || "done or dropped";
    return h("span", {
      class: `dep ${blocker ? "open" : "met"}`,
      title: `${blocker ? "waits on" : "after"} step ${number ?? id} (${state.replace("_", " ")})`,
    }, blocker ? null : icon("completed"), `#${number ?? "?"}`);
  });
}

function finishedRow(plan, ctx) {
  return h("li", {},
    h("button", {
      class: "finished-row", type: "button", dataset: { key: `plan-${plan.slug}` },
      onclick: () => ctx.selectPlan(plan.slug, false),
    },
    icon("completed", "ok"), h("strong", {}, plan.title), h("span", { class: "rollup" }, rollup(plan))));
}
