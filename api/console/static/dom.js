// Helpers every section shares: elements built from data (never from HTML strings, so a
// step title can hold any text), icons, time formats, session labels and colours.

export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key === "style") for (const [p, v] of Object.entries(value)) el.style.setProperty(p, v);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

const PATHS = {
  claimed: "M2.5 8h8M7.5 4.5 11 8l-3.5 3.5M13.5 3v10",
  renewed: "M1.5 8.5h3l1.8-4 3.2 8 1.8-4h3.2",
  bounced: "M13 3.5v4.5H4.5M7.5 5 4.5 8l3 3",
  released: "M13.5 8h-9M7.5 5 4.5 8l3 3M2.5 3v10",
  completed: "M3 8.5l3.2 3.2L13 4.8",
  dropped: "M4.5 4.5l7 7M11.5 4.5l-7 7",
  reopened: "M12.8 8.6a4.8 4.8 0 1 1-1.5-4.1M12.6 2.4v3h-3",
  refused: "M8 3.2v6M8 12.2v.6",
  ready_listed: "M3 4.5h10M3 8h10M3 11.5h6",
  added: "M8 3.5v9M3.5 8h9",
  noted: "M3.5 3.5h9v6.5l-3 3h-6zM9.5 13v-3h3M5.5 6.5h5M5.5 8.5h3",
  session: "M8 5.2a2.8 2.8 0 1 0 0 5.6 2.8 2.8 0 0 0 0-5.6z",
  ended: "M5 5h6v6H5z",
  close: "M4 4l8 8M12 4l-8 8",
  lock: "M4.5 7.5h7v5.5h-7zM6 7.5V5.6a2 2 0 0 1 4 0v1.9",
  unlock: "M4.5 7.5h7v5.5h-7zM6 7.5V5.6a2 2 0 0 1 3.9-.6",
};

export function icon(name, extra = "") {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 16 16");
  svg.setAttribute("class", `icon ${extra}`.trim());
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("d", PATHS[name] || PATHS.session);
  svg.append(path);
  return svg;
}

// --- time ----------------------------------------------------------------------------

const two = (n) => String(n).padStart(2, "0");

export function clock(iso, millis = false) {
  const d = new Date(iso);
  const base = `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  return millis ? `${base}.${String(d.getMilliseconds()).padStart(3, "0")}` : base;
}

export function duration(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  const hours = Math.floor(s / 3600), minutes = Math.floor((s % 3600) / 60);
  return hours ? `${hours}:${two(minutes)}:${two(s % 60)}` : `${minutes}:${two(s % 60)}`;
}

export function ago(seconds) {
  if (seconds < 45) return "just now";
  if (seconds < 90) return "a minute ago";
  if (seconds < 3600) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86400)} d ago`;
}

// --- sessions ------------------------------------------------------------------------

const HUES = 8;
const colours = new Map();  // kept for the page's life: a session keeps its colour

export function hue(sessionId) {
  if (!sessionId) return "ledger";
  if (!colours.has(sessionId)) colours.set(sessionId, colours.size % HUES);
  return String(colours.get(sessionId));
}

export function shortId(id) {
  return id && id.length > 12 ? `${id.slice(0, 6)}…${id.slice(-4)}` : id || "";
}

// A person's name for a session: its name, told apart from a namesake by its id's end.
export function labeller(names) {
  const counts = new Map();
  for (const who of Object.values(names)) if (who.name) counts.set(who.name, (counts.get(who.name) || 0) + 1);
  return (id) => {
    if (!id) return "ledger";
    const name = names[id]?.name;
    if (!name) return shortId(id);
    return counts.get(name) > 1 ? `${name} …${id.slice(-4)}` : name;
  };
}

export function who(id, label, extra = "") {
  return h("span", { class: `who ${extra}`.trim(), dataset: { hue: hue(id) }, title: id },
    h("span", { class: "dot", "aria-hidden": "true" }), label(id));
}
