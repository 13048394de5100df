// Plans: progress bar, rollup line, constraints, and every step with status, holder and
// what it waits on. Finished plans fold into one line each until chosen.

import { h, icon, who } from "./dom.js";
import { countdown } from "./lease.js";

export function renderPlans(snap, ctx) {
  if (!snap.plans.length) {
    return [h("p", { class: "empty" }, "No plans yet. Create one with ", h("code", {}, "POST /api/plans"),
      " or ", h("code", {}, "planledger plan create"), ".")];
  }
  const details = new Map(snap.details.map((p) => [p.slug, p]));
  const open = snap.plans.filter((p) => details.has(p.slug)).map((p) => planCard(details.get(p.slug), ctx));
  const finished = snap.plans.filter((p) => !details.has(p.slug));
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

function planCard(plan, ctx) {
  const numbers = new Map(plan.steps.map((s) => [s.step_id, s.position + 1]));
  const status = new Map(plan.steps.map((s) => [s.step_id, s.status]));
  const constraints = Object.entries(plan.constraints);
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
    h("div", { class: "steps", role: "table", "aria-label": `steps of ${plan.slug}` },
      h("div", { class: "step-row head", role: "row" },
        ["#", "step", "status", "holder", "waits on"].map((t) => h("span", { role: "columnheader" }, t))),
      plan.steps.map((step) => stepRow(step, numbers, status, ctx))));
}

export function stepState(step) {
  if (step.status === "done") return ["done", "done"];
  if (step.status === "dropped") return ["dropped", "dropped"];
  if (step.holder) return ["held", "in progress"];
  if (step.claimable) return step.lapsed_holder ? ["lapsed", "lapsed"] : ["ready", "claimable"];
  return ["waiting", "waiting"];
}

function stepRow(step, numbers, status, ctx) {
  const [kind, words] = stepState(step);
  return h("div", { class: `step-row ${kind}`, role: "row", dataset: { step: step.step_id } },
    h("span", { class: "num", role: "cell" }, `${step.position + 1}`),
    h("span", { class: "title", role: "cell" },
      h("button", {
        class: "step-link", type: "button", dataset: { key: `step-${step.step_id}` },
        onclick: (e) => ctx.openStep(step.step_id, e.currentTarget),
      }, step.title)),
    h("span", { role: "cell" }, h("span", { class: `pill ${kind}` }, words)),
    h("span", { class: "holder", role: "cell" }, holderCell(step, ctx)),
    h("span", { class: "deps", role: "cell" }, depsCell(step, numbers, status)));
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

function depsCell(step, numbers, status) {
  if (!step.depends_on.length) return h("span", { class: "quiet" }, "—");
  const blocking = new Set(step.blockers.map((b) => b.step_id));
  return step.depends_on.map((id) => {
    const open = blocking.has(id);
    const state = status.get(id) || "open";
    return h("span", {
      class: `dep ${open ? "open" : "met"}`,
      title: `${open ? "waits on" : "after"} step ${numbers.get(id) ?? id} (${state.replace("_", " ")})`,
    }, open ? null : icon("completed"), `#${numbers.get(id) ?? "?"}`);
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
