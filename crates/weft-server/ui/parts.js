// Content parts of a tool result: text as it is; a resource as a link, as
// its embedded text, or as its blob's name, MIME type and size with a
// download link (a data URL, for blobs up to MAX_DOWNLOAD characters); a
// blob left out over the payload budget says so. Images and audio are
// named by their media type.

import { h, safeUrl } from "./dom.js";

/** The largest base64 blob offered as a download, in characters. */
export const MAX_DOWNLOAD = 8 * 1024 * 1024;

/** One part of a tool result. */
export function partView(p) {
  switch (p?.type) {
    case "text":
      return h("div", { class: "part" }, p.text);
    case "resource":
      return resourceView(p);
    case "image":
    case "audio":
      return h("div", { class: "part muted" }, `[${p.type} ${p.media_type ?? ""}]`);
    default:
      return h("div", { class: "part muted" }, `[${p?.type}]`);
  }
}

/** A resource part. */
function resourceView(r) {
  const body = r.body ?? {};
  const href = safeUrl(r.uri);
  const uri = href
    ? h("a", { href, target: "_blank", rel: "noopener noreferrer" }, r.uri)
    : h("code", {}, r.uri ?? "");
  const mime = r.mime_type ? ` (${r.mime_type})` : "";
  switch (body.kind) {
    case "link":
      return h("div", { class: "part resource" }, "link: ", body.title ?? body.name ?? "", " ", uri, mime,
        sizeText(body.size), body.description ? ` — ${body.description}` : "");
    case "text":
      return h("div", { class: "part resource" }, h("div", { class: "muted" }, "resource ", uri, mime),
        h("pre", { class: "resource-text" }, body.text ?? ""));
    case "blob": {
      const data = String(body.data ?? "");
      const bytes = Math.floor(data.replace(/[=\s]/g, "").length * 3 / 4);
      return h("div", { class: "part resource" }, "blob: ", fileName(r.uri), " ", uri, mime, sizeText(bytes), " ",
        download(r, data));
    }
    case "omitted":
      return h("div", { class: "part resource muted" }, "blob: ", fileName(r.uri), " ", uri, mime,
        sizeText(body.size), " — omitted: over the payload budget");
    default:
      return h("div", { class: "part muted" }, `[resource ${r.uri ?? ""}]`);
  }
}

/** A download link for a blob, when it is small and well-formed enough. */
function download(r, data) {
  if (data.length > MAX_DOWNLOAD || !/^[A-Za-z0-9+/=\s]*$/.test(data)) return null;
  const mime = /^[\w.+-]+\/[\w.+-]+$/.test(r.mime_type ?? "") ? r.mime_type : "application/octet-stream";
  return h("a", { href: `data:${mime};base64,${data.replace(/\s/g, "")}`, download: fileName(r.uri) }, "download");
}

/** The last segment of a URI's path, for a file name. */
function fileName(uri) {
  const s = String(uri ?? "").split(/[?#]/)[0].split("/").filter(Boolean);
  return s.length ? s[s.length - 1] : "resource";
}

function sizeText(size) {
  return typeof size === "number" ? `, ${size} bytes` : "";
}
