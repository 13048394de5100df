// The side panel: a step's full history (GET /api/steps/{id}), or one timeline entry with
// the event it was folded from (GET /api/log). Operators can force-release from here.

import { clock, h, icon, who } from "./dom.js";
import { countdown } from "./lease.js";
import { stepState } from "./plans.js";

const WORDS = {
  StepAdded: "added to the plan", StepRevised: "revised", DependenciesDeclared: "dependencies declared",
  StepOpened: "opened", StepClaimed: "claimed", LeaseRenewed: "heartbeat", StepReleased: "released",
  StepCompleted: "completed", StepDropped: "dropped", StepReopened: "reopened",
  ClaimBounced: "claim bounced", ClaimRefused: "claim refused", StaleFenceRejected: "stale fence refused",
  PathsDeclared: "paths declared", PathsReserved: "paths reserved", PathsBounced: "claim bounced off paths",
  StepSubmitted: "completed, for review", ReviewClaimed: "taken to review", StepReviewed: "reviewed",
  ReviewRefused: "review refused", StepNoted: "note",
};
const KINDS = {
  StepClaimed: "claimed", LeaseRenewed: "renewed", StepReleased: "released", StepCompleted: "completed",
  StepDropped: "dropped", StepReopened: "reopened", ClaimBounced: "bounced", ClaimRefused: "refused",
  StaleFenceRejected: "stale_fence", PathsReserved: "claimed", PathsBounced: "bounced",
  StepSubmitted: "completed", ReviewClaimed: "claimed", StepReviewed: "completed", ReviewRefused: "refused",
  StepNoted: "noted",
};

// A step's paths as one line: `internal/auth/**, docs/** (shared)`.
function patterns(paths) {
  return paths.map((p) => p.pattern + (p.mode === "shared" ? " (shared)" : "")).join(", ");
}

// A completion's evidence: its commits (shortened, the whole sha on hover), the branch,
// the change request as a link (the ledger keeps only http(s) URLs; checked again here,
// so a log from elsewhere cannot make a `javascript:` link), and each check.
function evidence(e) {
  const lines = [];
  if (e.commits?.length) {
    lines.push(h("li", {}, `${e.commits.length} commit${e.commits.length === 1 ? "" : "s"}`,
      e.branch ? ` on ${e.branch}` : "", ": ",
      e.commits.map((sha, i) => [i ? ", " : "", h("code", { title: sha }, sha.slice(0, 7))])));
  } else if (e.branch) {
    lines.push(h("li", {}, `branch ${e.branch}`));
  }
  if (e.pr) {
    const safe = /^https?:\/\//i.test(e.pr);
    lines.push(h("li", {}, "change request: ", safe
      ? h("a", { href: e.pr, rel: "noopener noreferrer", target: "_blank" }, e.pr) : e.pr));
  }
  for (const c of e.checks || []) {
    lines.push(h("li", { class: `check ${c.result === "pass" ? "pass" : "fail"}` },
      h("strong", {}, c.name), ` ${c.result}`, c.command ? h("code", {}, ` ${c.command}`) : null,
      c.summary ? ` — ${c.summary}` : ""));
  }
  return h("ul", { class: "evidence" }, lines);
}

function summary(event, label) {
  const d = event.data;
  switch (event.type) {
    case "StepClaimed": case "LeaseRenewed":
      return `fence ${d.fence} · lease ${d.lease_seconds} s, until ${clock(d.expires_at)}`;
    case "StepReleased": return `fence ${d.fence} · ${d.reason.replace("_", " ")}${d.reason === "forced" ? ` (held by ${label(d.holder)})` : ""}`;
    case "StepCompleted": case "StepSubmitted":
      return d.evidence ? [`fence ${d.fence}`, evidence(d.evidence)] : `fence ${d.fence}`;
    case "ReviewClaimed": return `fence ${d.fence} · review lease ${d.lease_seconds} s, until ${clock(d.expires_at)}`;
    case "StepReviewed": return `${d.verdict === "approve" ? "approved" : "rejected"} the work of ${label(d.author)}`;
    case "ReviewRefused": return d.detail;
    case "ClaimBounced": return `task already claimed: held by ${label(d.holder)} (fence ${d.holder_fence})`;
    case "ClaimRefused": return d.detail;
    case "StaleFenceRejected": return `${d.action} with fence ${d.fence}; the step is at fence ${d.current_fence}`;
    case "StepNoted": return h("span", { class: "note-text" }, d.after ? `(with the ${d.after}) ` : "", d.text);
    case "StepAdded": return d.title;
    case "PathsDeclared": return patterns(d.paths) || "none";
    case "PathsReserved": return `${patterns(d.paths)} · fence ${d.fence}`;
    case "PathsBounced": return d.conflicts.map((c) =>
      `${c.patterns.map((p) => `"${p}"`).join(", ")} held by ${label(c.holder)}`).join("; ");
    default: return "";
  }
}

// Who made the write: the event's actor (a session, the admin, or the local operator of
// the embedded store), with the session it concerned when that is someone else. Events
// from before actors were recorded name only their session.
function author(event, label) {
  const actor = event.actor ?? event.data?.actor ?? null;
  const concerned = event.session_id;
  if (!actor) {
    return concerned ? who(concerned, label)
      : h("span", { class: "quiet" }, event.data?.reason === "forced" ? "operator" : "no session");
  }
  const by = actor === "admin" ? h("span", { class: "actor" }, "admin")
    : actor.startsWith("local:") ? h("span", { class: "actor" }, `${actor.slice("local:".length)} (local)`)
      : who(actor, label);
  const node = h("span", { class: "by", dataset: { actor } }, "by ", by);
  if (concerned && concerned !== actor) node.append(h("span", { class: "quiet" }, " for "), who(concerned, label));
  return node;
}

export class Drawer {
  constructor(root, ctx) {
    this.root = root;
    this.ctx = ctx;
    this.body = root.querySelector(".drawer-body");
    this.current = null;
    this.opener = null;
    this.armed = false;
    root.querySelector(".drawer-close").addEventListener("click", () => this.close());
  }

  get open() { return this.current !== null; }

  // The step the panel shows (null for a timeline entry, or when closed).
  get stepId() { return this.current?.type === "step" ? this.current.stepId : null; }

  async openStep(stepId, opener) {
    this.show({ type: "step", stepId }, opener);
    await this.refresh();
  }

  async openEntry(entry, opener) {
    this.show({ type: "entry", entry }, opener);
    await this.refresh();
  }

  show(current, opener) {
    this.current = current;
    this.opener = opener?.dataset?.key || null;
    this.armed = false;
    this.root.hidden = false;
    this.root.querySelector(".drawer-close").focus({ preventScroll: true });
  }

  close() {
    if (!this.open) return;
    this.current = null;
    this.root.hidden = true;
    this.ctx.refocus(this.opener && document.querySelector(`[data-key="${CSS.escape(this.opener)}"]`));
  }

  async refresh() {
    const current = this.current;
    if (!current) return;
    const nodes = current.type === "step" ? await this.stepView(current.stepId) : await this.entryView(current.entry);
    if (this.current !== current) return;
    const focused = this.body.contains(document.activeElement) ? document.activeElement.dataset.key : null;
    this.body.replaceChildren(...nodes.filter(Boolean));
    if (focused) this.ctx.refocus(this.body.querySelector(`[data-key="${CSS.escape(focused)}"]`));
  }

  async stepView(stepId) {
    const step = await this.ctx.getJSON(`/api/steps/${encodeURIComponent(stepId)}`);
    const [kind, words] = stepState(step);
    const label = this.ctx.label;
    return [
      h("p", { class: "hold-ref" }, `${step.plan} · step #${step.position + 1}`),
      // The reference people type into the next command (`planledger claim plan#5`).
      h("p", { class: "step-ref" }, h("code", {}, step.ref || step.step_id),
        step.key ? [" · ", h("code", {}, `${step.plan}/${step.key}`)] : null),
      h("h3", { id: "detail-title" }, step.title),
      step.body ? h("p", { class: "step-body" }, step.body) : null,
      h("dl", { class: "facts" },
        h("dt", {}, "status"), h("dd", {}, h("span", { class: `pill ${kind}` }, words)),
        h("dt", {}, "holder"), h("dd", {}, step.holder
          ? [who(step.holder, label), " ", countdown(step.expires_at, this.ctx.leaseOf(step.step_id))]
          : step.lapsed_holder ? [who(step.lapsed_holder, label, "gone"), " (lapsed)"] : "nobody"),
        step.author ? [h("dt", {}, "author"), h("dd", {}, who(step.author, label)),
          h("dt", {}, "reviewer"), h("dd", {}, step.reviewer ? who(step.reviewer, label) : "nobody yet")] : null,
        h("dt", {}, "fence"), h("dd", {}, String(step.fence)),
        h("dt", {}, "waits on"), h("dd", {}, this.deps(step)),
        ...this.relations(step),
        h("dt", {}, "paths"), h("dd", {}, this.paths(step)),
        h("dt", {}, "id"), h("dd", {}, h("code", {}, step.step_id))),
      this.actions(step),
      h("h4", {}, "History"),
      h("ol", { class: "history" }, step.history.map((e) => h("li", { class: `ev ${KINDS[e.type] || "plain"}` },
        h("time", { datetime: e.at }, clock(e.at, true)),
        h("span", { class: "ev-what" }, h("strong", {}, WORDS[e.type] || e.type), " ", author(e, label)),
        h("span", { class: "ev-detail" }, summary(e, label))))),
    ];
  }

  // Its epic and children, the step it was found while working on, labels and links:
  // each fact only when the step has it.
  relations(step) {
    const facts = [];
    const fact = (name, value) => facts.push(h("dt", {}, name), h("dd", {}, value));
    if (step.parent) fact("parent", h("code", {}, step.parent_ref || step.parent));
    if (step.children) fact("children", step.children);
    if (step.discovered_from) {
      fact("discovered from", h("code", {}, step.discovered_from_ref || step.discovered_from));
    }
    if (step.labels?.length) fact("labels", step.labels.join(", "));
    if (step.links?.length) fact("links", step.links.map((l) => `${l.kind} ${l.target}`).join(", "));
    return facts;
  }

  // What the step declares it touches; what its live claim holds reserved; and, when it
  // is claimable, whose live reservations a claim would bounce off.
  paths(step) {
    const lines = [h("span", { class: "path-list" }, patterns(step.paths) || "none declared")];
    if (step.reserved.length) {
      lines.push(h("span", { class: "path-list held" }, "reserved: ", patterns(step.reserved)));
    }
    for (const c of step.collides_with) {
      lines.push(h("span", { class: "path-list clash" }, `${c.patterns.join(", ")} held by `,
        who(c.holder, this.ctx.label), ` (#${this.ctx.stepNumber(c.step_id) ?? "?"} ${c.title})`));
    }
    return lines;
  }

  deps(step) {
    if (!step.depends_on.length) return "nothing";
    const blocking = new Map(step.blockers.map((b) => [b.step_id, b]));
    return h("ul", { class: "dep-list" }, step.depends_on.map((id) => {
      const b = blocking.get(id);
      return h("li", { class: b ? "open" : "met" }, b ? null : icon("completed"),
        `#${this.ctx.stepNumber(id) ?? "?"} ${b ? b.title : this.ctx.stepTitle(id) ?? id}`,
        b ? h("span", { class: "quiet" }, ` (${b.status.replace("_", " ")})`) : null);
    }));
  }

  actions(step) {
    if (!this.ctx.operator() || step.status !== "in_progress") return null;
    const button = h("button", {
      class: `danger${this.armed ? " armed" : ""}`, type: "button", dataset: { key: "force-release" },
      onclick: () => this.forceRelease(step),
    }, this.armed ? "Confirm: force-release this claim" : "Force-release…");
    return h("div", { class: "actions" }, button, h("p", { class: "quiet", id: "action-note" },
      "Ends the holder's claim now; its next call with this fence is refused."));
  }

  async forceRelease(step) {
    if (!this.armed) {
      this.armed = true;
      await this.refresh();
      document.querySelector('[data-key="force-release"]')?.focus();
      return;
    }
    this.armed = false;
    const answer = await this.ctx.forceRelease(step.step_id);
    await this.refresh();
    const note = document.getElementById("action-note");
    if (note && answer) note.textContent = answer;
  }

  async entryView(entry) {
    const page = await this.ctx.getJSON(`/api/log?after=${entry.position - 1}&limit=1`);
    const event = page.events[0];
    const rows = event ? Object.entries({ type: event.type, stream: event.stream, version: event.version,
      at: event.at, session: event.session_id, ...event.data }) : [];
    return [
      h("p", { class: "hold-ref" }, `log #${entry.position} · ${clock(entry.at, true)}`),
      h("h3", { id: "detail-title" }, entry.session_id ? who(entry.session_id, this.ctx.label) : "ledger"),
      h("p", { class: `entry-text ${entry.kind}` }, entry.text),
      entry.step_id ? h("button", {
        class: "link", type: "button", dataset: { key: `open-${entry.step_id}` },
        onclick: (e) => this.openStep(entry.step_id, e.currentTarget),
      }, `Open step #${entry.step_number} “${entry.step_title}” →`) : null,
      h("h4", {}, "The event"),
      h("dl", { class: "facts raw" }, rows.flatMap(([k, v]) => [h("dt", {}, k),
        h("dd", {}, h("code", {}, typeof v === "string" ? v : JSON.stringify(v)))])),
    ];
  }
}
