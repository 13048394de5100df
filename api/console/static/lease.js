// Lease countdowns and relative times, kept current by one ticker for the whole page.
// Times are read on the server's clock: `serverNow()` corrects for the browser's offset.

import { ago, duration, h } from "./dom.js";

let offsetMs = 0;

export function setServerTime(serverIso, sentAt, receivedAt) {
  offsetMs = Date.parse(serverIso) - (sentAt + receivedAt) / 2;
}

export function serverNow() {
  return Date.now() + offsetMs;
}

// Amber when the lease is in its last fifth (at least its last half minute); a lease of
// unknown length turns amber in its last minute.
function nearExpiry(left, lease) {
  return left <= (lease ? Math.max(30, lease * 0.2) : 60);
}

export function countdown(expiresAt, leaseSeconds, withBar = false) {
  const node = h("span", {
    class: "countdown", role: "timer",
    dataset: { expires: expiresAt, lease: leaseSeconds || "" },
  }, h("span", { class: "left" }));
  if (withBar) node.append(h("span", { class: "bar", "aria-hidden": "true" }, h("span")));
  paint(node, serverNow());
  node.classList.remove("lapsed");  // so the next tick reports it, and the page asks again
  return node;
}

function paint(node, now) {
  const left = (Date.parse(node.dataset.expires) - now) / 1000;
  const lease = Number(node.dataset.lease) || null;
  const lapsed = left <= 0;
  node.classList.toggle("warn", !lapsed && nearExpiry(left, lease));
  node.classList.toggle("lapsed", lapsed);
  node.querySelector(".left").textContent = lapsed ? "lapsed" : duration(Math.ceil(left));
  node.setAttribute("aria-label", lapsed ? "lease lapsed" : `lease: ${duration(left)} left`);
  const fill = node.querySelector(".bar > span");
  if (fill && lease) fill.style.setProperty("width", `${Math.max(0, Math.min(1, left / lease)) * 100}%`);
  return lapsed;
}

export function since(iso) {
  return h("span", { class: "since", dataset: { since: iso } }, ago((serverNow() - Date.parse(iso)) / 1000));
}

// Repaints every countdown and relative time; true when a lease lapsed since last time
// (nothing is written when a lease lapses, so the page must ask again by itself).
export function tick() {
  const now = serverNow();
  let newlyLapsed = false;
  for (const node of document.querySelectorAll(".countdown[data-expires]")) {
    const was = node.classList.contains("lapsed");
    if (paint(node, now) && !was) newlyLapsed = true;
  }
  for (const node of document.querySelectorAll(".since[data-since]")) {
    node.textContent = ago((now - Date.parse(node.dataset.since)) / 1000);
  }
  return newlyLapsed;
}

// Whether any countdown on the page reads "lapsed": until the server's view agrees (the step
// no longer held), the page keeps asking.
export function anyLapsed() {
  return document.querySelector(".countdown.lapsed[data-expires]") !== null;
}
