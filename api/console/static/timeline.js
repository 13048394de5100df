// Timeline: a plan's merged timeline (GET /api/timeline), one clock down the side and a
// lane per session, as the seed tells the race. Runs of heartbeats fold into one entry.

import { clock, h, hue, icon, shortId } from "./dom.js";

const ICONS = {
  claimed: "claimed", renewed: "renewed", bounced: "bounced", refused: "refused",
  stale_fence: "refused", released: "released", completed: "completed", dropped: "dropped",
  reopened: "reopened", ready_listed: "ready_listed", session_started: "session",
  session_ended: "ended", plan_created: "added", step_added: "added", step_revised: "added",
  dependencies_declared: "added", paths_declared: "added", reserved: "claimed",
  paths_bounced: "bounced", noted: "noted",
};

const MAX_ROWS = 400;  // the newest; a long-lived plan's whole history would slow the page

export function renderTabs(snap, selected, ctx) {
  return snap.plans.map((p) => h("button", {
    class: "tab", type: "button", role: "tab", "aria-selected": p.slug === selected ? "true" : "false",
    dataset: { key: `tab-${p.slug}` }, onclick: () => ctx.selectPlan(p.slug, false),
  }, p.slug));
}

// Consecutive heartbeats of one session on one step read as one entry with a count.
function folded(entries) {
  const out = [];
  for (const e of entries) {
    const last = out[out.length - 1];
    if (last && e.kind === "renewed" && last.entry.kind === "renewed"
        && last.entry.session_id === e.session_id && last.entry.step_id === e.step_id) {
      last.count += 1;
      last.entry = e;
    } else {
      out.push({ entry: e, count: 1 });
    }
  }
  return out;
}

function numbersOf(timeline) {
  const numbers = new Map();
  for (const e of timeline.entries) if (e.step_id && e.step_number) numbers.set(e.step_id, e.step_number);
  return numbers;
}

function headline(e, count, label, numbers) {
  const ref = e.step_number ? `#${e.step_number}` : "";
  switch (e.kind) {
    case "claimed": return e.holder ? `took ${ref} over from ${label(e.holder)}` : `claimed ${ref}`;
    case "renewed": return count > 1 ? `${count} heartbeats ${ref}` : `heartbeat ${ref}`;
    case "bounced": return `bounced off ${label(e.holder)}`;
    case "refused": return `claim refused ${ref}`;
    case "stale_fence": return `stale fence ${ref}`;
    case "released":
      if (e.text.includes("force-released")) return `force-released ${ref}`;
      return e.text.includes("session ended") ? `released ${ref} (session ended)` : `released ${ref}`;
    case "completed": return `completed ${ref}`;
    case "dropped": return `dropped ${ref}`;
    case "reopened": return `reopened ${ref}`;
    case "noted": return `note on ${ref}`;
    case "ready_listed": {
      const listed = e.step_ids.map((s) => `#${numbers.get(s) ?? "?"}`).join(", ");
      return `listed ready: ${listed || "none"}`;
    }
    case "session_started": return "session started";
    case "session_ended": return "session ended";
    case "plan_created": return "created the plan";
    case "step_added": return `added ${ref}`;
    case "step_revised": return `revised ${ref}`;
    case "paths_declared": return `paths of ${ref}`;
    case "reserved": return `reserved paths for ${ref}`;
    case "paths_bounced": return `${ref} bounced off ${label(e.holder)}'s paths`;
    default: return e.text;
  }
}

function chip(item, laneLabel, ctx, numbers) {
  const { entry: e, count } = item;
  const sub = e.kind === "bounced" ? `#${e.step_number} ${e.step_title}` : e.step_title;
  const tip = () => [
    h("strong", {}, headline(e, count, ctx.label, numbers)),
    h("span", { class: "tip-meta" }, `${clock(e.at, true)} · ${laneLabel} · log #${e.position}`),
    h("span", { class: "tip-text" }, e.text)];
  return h("button", {
    class: `chip ${e.kind}`, type: "button", dataset: { key: `entry-${e.position}`, kind: e.kind, position: e.position },
    "aria-label": `${laneLabel}: ${e.text}`,
    onclick: (ev) => ctx.openEntry(e, ev.currentTarget),
    onmouseenter: (ev) => ctx.tip.show(ev.currentTarget, tip()),
    onfocus: (ev) => ctx.tip.show(ev.currentTarget, tip()),
    onmouseleave: () => ctx.tip.hide(), onblur: () => ctx.tip.hide(),
  },
  h("span", { class: "chip-lane" }, laneLabel),
  h("span", { class: "chip-head" }, icon(ICONS[e.kind] || "session"), headline(e, count, ctx.label, numbers)),
  sub ? h("span", { class: "chip-sub" }, sub) : null,
  ["bounced", "stale_fence", "paths_bounced", "noted"].includes(e.kind) ? h("span", { class: "chip-text" }, e.text) : null);
}

export function renderTimeline(timeline, ctx) {
  if (!timeline || !timeline.entries.length) return h("p", { class: "empty" }, "Nothing has happened in this plan yet.");
  const lanes = timeline.lanes;
  const column = new Map(lanes.map((lane, i) => [lane.session_id, i]));
  const numbers = numbersOf(timeline);
  const labels = lanes.map((lane) => (lane.session_id ? ctx.label(lane.session_id) : "ledger"));
  const head = h("div", { class: "tl-row tl-head", role: "row" },
    h("span", { class: "tl-time", role: "columnheader" }, "time"),
    lanes.map((lane, i) => h("span", {
      class: "tl-lane-head", role: "columnheader", dataset: { hue: hue(lane.session_id) }, title: lane.session_id || "set-up without a session",
    }, h("span", { class: "dot", "aria-hidden": "true" }), h("span", { class: "lane-name" }, labels[i]),
    lane.session_id ? h("code", {}, shortId(lane.session_id)) : null)));
  const items = folded(timeline.entries);
  const hidden = Math.max(0, items.length - MAX_ROWS);
  const rows = items.slice(hidden).map((item) => {
    const at = column.get(item.entry.session_id) ?? 0;
    return h("div", { class: `tl-row ${item.entry.kind}`, role: "row" },
      h("time", { class: "tl-time", datetime: item.entry.at, role: "cell" },
        clock(item.entry.at), h("small", {}, `.${clock(item.entry.at, true).slice(-3)}`)),
      lanes.map((lane, i) => h("span", { class: "tl-cell", role: "cell", dataset: { hue: hue(lane.session_id) } },
        i === at ? chip(item, labels[i], ctx, numbers) : null)));
  });
  // The set-up lane (no session) is narrower: it only ever holds short plan entries.
  const columns = lanes.map((lane) => (lane.session_id ? "minmax(13rem, 1fr)" : "minmax(9rem, .55fr)"));
  return h("div", {
    class: "tl-grid", role: "table", "aria-label": "timeline",
    style: { "--columns": columns.join(" "), "--lanes": String(lanes.length) },
  }, head, hidden ? h("p", { class: "tl-more" }, `${hidden} earlier entries are not shown here; `,
    h("code", {}, `planledger timeline --plan ${timeline.progress[0]?.plan ?? ""}`), " lists them all.") : null, rows);
}
