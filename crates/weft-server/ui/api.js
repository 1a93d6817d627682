// The JSON API as the viewer calls it: the bearer token (kept in this tab's
// sessionStorage) on every request, and problems (RFC 9457) as ApiError.

const TOKEN_KEY = "weft.token";

/** The token the user pasted, or "". */
export function token() {
  return globalThis.sessionStorage?.getItem(TOKEN_KEY) ?? "";
}

/** Keeps `value` as the token for this tab; an empty value forgets it. */
export function setToken(value) {
  const t = String(value ?? "").trim();
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** `headers` with the token's Authorization header, when there is a token. */
export function withAuth(headers = {}) {
  const t = token();
  return t ? { ...headers, Authorization: `Bearer ${t}` } : headers;
}

/** A failed API call: its status and problem document. */
export class ApiError extends Error {
  constructor(status, problem) {
    const fields = (problem?.errors ?? []).map((e) => `${e.field}: ${e.message}`);
    const detail = problem?.detail || problem?.title || `HTTP ${status}`;
    super(fields.length ? `${detail} (${fields.join("; ")})` : detail);
    this.status = status;
    this.problem = problem;
  }
}

/** The ApiError of a non-2xx response. */
export async function problemOf(response) {
  let problem = null;
  try {
    problem = await response.json();
  } catch {
    problem = null;
  }
  return new ApiError(response.status, problem);
}

/** Calls the API; resolves with the JSON answer. */
export async function api(path, { method = "GET", body, signal } = {}) {
  const headers = withAuth({ Accept: "application/json" });
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    signal,
    cache: "no-store",
  });
  if (!response.ok) throw await problemOf(response);
  return response.json();
}

/** `/v1/runs/<id><rest>` with the id escaped. */
export function runPath(runId, rest = "") {
  return `/v1/runs/${encodeURIComponent(runId)}${rest}`;
}
