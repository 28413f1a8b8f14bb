// The REST API the clients use, as the console calls it: Gravitino's error answers kept whole, and the
// credentials the header form holds (simple: a user name sent as HTTP Basic; OAuth: a bearer token).

const AUTH_KEY = "gravimeta.console.auth";

/** Gravitino's error answer, kept whole so the page can show code, type and message. */
export class ApiError extends Error {
  constructor(status, body, method, path) {
    super(body?.message || `HTTP ${status}`);
    this.status = status;
    this.code = body?.code ?? status;
    this.type = body?.type || "HttpError";
    this.method = method;
    this.path = path;
  }
}

/** {mode: "simple"|"oauth", value}: what the header form holds, kept in localStorage. */
export function credentials() {
  try { return JSON.parse(localStorage.getItem(AUTH_KEY)) || { mode: "simple", value: "" }; } catch {
    return { mode: "simple", value: "" };
  }
}

export function setCredentials(mode, value) {
  if (value) localStorage.setItem(AUTH_KEY, JSON.stringify({ mode, value }));
  else localStorage.removeItem(AUTH_KEY);
}

function authHeader() {
  const { mode, value } = credentials();
  if (!value) return {};
  if (mode === "oauth") return { Authorization: `Bearer ${value}` };
  const bytes = new TextEncoder().encode(`${value}:console`);
  return { Authorization: "Basic " + btoa(String.fromCharCode(...bytes)) };
}

export async function api(method, path, body) {
  const headers = { Accept: "application/vnd.gravitino.v1+json", ...authHeader() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (exc) {
    throw new ApiError(0, { code: "-", type: "NetworkError", message: `the server did not answer: ${exc.message}` },
                       method, path);
  }
  let data = null;
  try { data = await response.json(); } catch { /* not JSON: shown as HTTP status */ }
  if (!response.ok || (data && data.code)) throw new ApiError(response.status, data, method, path);
  return data;
}

export const enc = encodeURIComponent;
export const lakePath = (m) => `/api/metalakes/${enc(m)}`;
export const catPath = (m, c) => `${lakePath(m)}/catalogs/${enc(c)}`;
export const schemaPath = (m, c, s) => `${catPath(m, c)}/schemas/${enc(s)}`;
export const tablePath = (m, c, s, t) => `${schemaPath(m, c, s)}/tables/${enc(t)}`;
export const names = (answer) => (answer.identifiers || []).map((x) => x.name);

/** The console's own address of an object: #/m/<metalake>/c/<catalog>/s/<schema>/t/<table>. */
export function href(...parts) {
  const keys = ["m", "c", "s", "t"];
  return "#/" + parts.map((p, i) => `${keys[i]}/${enc(p)}`).join("/");
}
