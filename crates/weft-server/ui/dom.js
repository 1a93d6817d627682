// Building the page without parsing HTML: every piece of text, from the
// server or the user, goes in as a text node or an attribute value, never
// through innerHTML.

/** An element with properties and children (strings become text nodes). */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

/** Appends children: nodes as they are, anything else as text. */
export function append(el, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** A timestamp (milliseconds since the epoch) for people. */
export function when(ms) {
  return typeof ms === "number" ? new Date(ms).toLocaleString() : "";
}

/** A duration in milliseconds for people: "12 ms", "1.23 s", "2 min 05 s",
 * "1 h 02 min". */
export function duration(ms) {
  if (typeof ms !== "number" || !Number.isFinite(ms)) return "";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)} s`;
  const s = Math.floor(ms / 1000);
  const pad = (n) => String(n).padStart(2, "0");
  if (s < 3600) return `${Math.floor(s / 60)} min ${pad(s % 60)} s`;
  return `${Math.floor(s / 3600)} h ${pad(Math.floor(s / 60) % 60)} min`;
}

/** JSON for people: indented, in a <pre>. */
export function pre(value, cls = "json") {
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  return h("pre", { class: cls }, text ?? "");
}

/** `url` when it is an http(s) URL, else null: only those become links. */
export function safeUrl(url) {
  try {
    const u = new URL(String(url));
    return u.protocol === "https:" || u.protocol === "http:" ? u.href : null;
  } catch {
    return null;
  }
}

/** A status badge. */
export function badge(status) {
  return h("span", { class: `badge status-${String(status).replace(/[^a-z_]/g, "")}` }, status);
}

/** The text of a message's text parts. */
export function messageText(message) {
  const parts = Array.isArray(message?.parts) ? message.parts : [];
  return parts.filter((p) => p.type === "text").map((p) => p.text).join("");
}
