// Now: a card per live session with what it holds; Loose ends: lapsed claims.

import { h, hue, icon, shortId, who } from "./dom.js";
import { countdown, since } from "./lease.js";

export function renderNow(view, ctx) {
  if (!view.sessions.length) {
    return [h("p", { class: "empty" }, "No live sessions. Agents appear here when they start one.")];
  }
  const cards = view.sessions.map((s) => sessionCard(s, ctx));
  if (view.idle_hidden) {
    cards.push(h("p", { class: "quiet more" }, `and ${view.idle_hidden} more idle session${view.idle_hidden === 1 ? "" : "s"}`));
  }
  return cards;
}

function sessionCard(session, ctx) {
  const idle = session.holds.length === 0;
  const id = session.session_id;
  return h("article", {
    class: `card session${idle ? " idle" : ""}`, dataset: { hue: hue(id), session: id },
    "aria-label": `${ctx.label(id)}: ${idle ? "idle" : `holding ${session.holds.length}`}`,
  },
  h("header", { class: "card-head" },
    who(id, ctx.label, "strong"),
    idle ? h("span", { class: "badge idle" }, "idle")
      : h("span", { class: "badge busy" }, `holding ${session.holds.length}`)),
  h("p", { class: "card-meta" }, h("code", { title: id }, shortId(id)), " · started ", since(session.started_at)),
  idle ? null : h("ul", { class: "holds" }, session.holds.map((held) => holdRow(held, ctx))));
}

function holdRow(held, ctx) {
  const number = ctx.stepNumber(held.step_id);
  return h("li", {},
    h("button", {
      class: "hold", type: "button", dataset: { key: `hold-${held.step_id}`, step: held.step_id },
      onclick: (e) => ctx.openStep(held.step_id, e.currentTarget),
    },
    h("span", { class: "hold-ref" }, held.plan, number ? ` · #${number}` : ""),
    h("span", { class: "hold-title" }, held.title),
    held.paths?.length ? h("span", { class: "hold-paths", title: "paths this claim holds reserved" },
      held.paths.map((p) => p.pattern + (p.mode === "shared" ? " (shared)" : "")).join(", ")) : null,
    h("span", { class: "hold-lease" },
      countdown(held.expires_at, held.lease_seconds ?? ctx.leaseOf(held.step_id), true),
      h("span", { class: "fence", title: "fence: grows with every grant of this step" }, `fence ${held.fence}`))));
}

// Steps claimable only because their holder's lease lapsed (expired, or session ended).
export function renderLoose(view, ctx) {
  if (!view.loose.length) return [h("p", { class: "empty" }, "None: every claim is live or closed.")];
  const rows = [h("ul", { class: "loose" }, view.loose.map((step) => {
    const ended = view.names[step.lapsed_holder]?.ended;
    return h("li", {},
      h("button", {
        class: "loose-row", type: "button", dataset: { key: `loose-${step.step_id}`, step: step.step_id },
        onclick: (e) => ctx.openStep(step.step_id, e.currentTarget),
      },
      icon("refused", "warn"),
      h("span", { class: "loose-step" },
        h("span", { class: "hold-ref" }, `${step.plan} · #${step.position + 1}`),
        h("span", { class: "hold-title" }, step.title)),
      h("span", { class: "loose-why" },
        h("span", { class: "pill ready" }, "claimable"), " ",
        who(step.lapsed_holder, ctx.label),
        ended ? " ended its session" : "’s lease expired",
        h("span", { class: "fence" }, ` · fence ${step.fence}`))));
  }))];
  if (view.looseHidden) rows.push(h("p", { class: "quiet more" }, `and ${view.looseHidden} more`));
  return rows;
}
