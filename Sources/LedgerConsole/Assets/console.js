// OrderLedger console. Uses only the public API (/v1, documented in /openapi.yaml), with the token kept in this
// tab's sessionStorage and sent as a bearer header, never in a URL. Every value reaches the page as text
// (textContent, never innerHTML): order ids and provider data are hostile input.
"use strict";

const TOKEN_KEY = "orderledger.token";
const main = document.getElementById("main");

// ---- DOM helpers -------------------------------------------------------------------------------------------------

/** An element with attributes (on* never) and children: strings become text nodes. */
function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function show(...nodes) {
  main.replaceChildren(...nodes.flat().filter((node) => node !== null && node !== undefined && node !== false));
  main.focus({ preventScroll: true });
}

/** A time as the CLI prints it, on every page alike: 24-hour, to the millisecond (events of one order are often
 *  recorded within one second), the zone named; the full RFC 3339 time on hover. */
function time(iso) {
  if (!iso) return el("span", { class: "muted" }, "—");
  const shown = new Date(iso).toISOString().replace("T", " ").replace("Z", " UTC");
  return el("time", { datetime: iso, title: iso }, shown);
}

/** Money as people read it, as the CLI prints it: minor units placed by the currency's ISO 4217 exponent (the
 *  browser's own ISO data), thousands grouped: 4.99 USD, 1,200 JPY, 1.000 KWD. The API keeps integer minor units. */
function money(value) {
  if (!value || typeof value !== "object") return "—";
  return amount(value.value, value.currency) + " " + value.currency;
}

function amount(minorUnits, currency) {
  let digits = 2;
  try { digits = new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions().maximumFractionDigits; } catch { /* not ISO: 2 */ }
  return new Intl.NumberFormat("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits })
    .format(minorUnits / 10 ** digits);
}

function table(headers, rows, options = {}) {
  const head = el("tr", {}, headers.map((h) => el("th", { scope: "col", class: options.numeric?.includes(h) ? "num" : null }, h)));
  const body = rows.map((cells) => el("tr", {}, cells.map((cell, i) =>
    el("td", { class: options.numeric?.includes(headers[i]) ? "num" : null }, cell))));
  return el("div", { class: "scroll" }, el("table", { id: options.id }, el("thead", {}, head), el("tbody", {}, body)));
}

/** A button that copies `text` (a digest, a hash) whole, whatever the page shows of it. */
function copyButton(text, attributes = {}) {
  const button = el("button", { type: "button", ...attributes }, "Copy");
  button.addEventListener("click", async () => {
    try { await navigator.clipboard.writeText(text); button.textContent = "Copied"; } catch (_) { button.textContent = "Select and copy"; }
  });
  return button;
}

function link(hash, text) { return el("a", { href: hash }, text); }
const orderLink = (id) => link("#/order/" + encodeURIComponent(id), id);
const accountLink = (id) => link("#/account/" + encodeURIComponent(id), id);

function download(name, type, text) {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const anchor = el("a", { href: url, download: name });
  document.body.append(anchor);
  anchor.click();
  anchor.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// ---- The API -----------------------------------------------------------------------------------------------------

class Problem extends Error {
  constructor(status, code, message, field) { super(message); this.status = status; this.code = code; this.field = field; }
}

/** Calls the API with the tab's token; JSON answers parsed, errors as Problem with the API's code and message. */
async function api(path, { method = "GET", body, contentType, accept = "application/json" } = {}) {
  const headers = { Accept: accept };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = "Bearer " + token;
  if (contentType) headers["Content-Type"] = contentType;
  let response;
  try {
    response = await fetch(path, { method, headers, body, cache: "no-store", credentials: "omit" });
  } catch (error) {
    throw new Problem(0, "network", "The ledger could not be reached: " + error.message);
  }
  const text = await response.text();
  if (!response.ok) {
    let code = "http_" + response.status, message = text, field;
    try {
      const parsed = JSON.parse(text).error;
      code = parsed.code; message = parsed.message; field = parsed.details && parsed.details.field;
    } catch (_) { /* not JSON */ }
    throw new Problem(response.status, code, message, field);
  }
  if (accept !== "application/json") return text;
  return { json: text ? JSON.parse(text) : null, text };
}

/** What went wrong, said on the page: a 401 asks to sign in again, a 403 names the scope the view needs. */
function explain(error, scope) {
  if (error.status === 401) {
    return el("div", { class: "notice", role: "alert", id: "problem" },
      el("strong", {}, "Not signed in. "), "The ledger did not accept the token (", error.message, "). ",
      link("#/signin", "Sign in again"), ".");
  }
  if (error.status === 403) {
    return el("div", { class: "notice", role: "alert", id: "problem" },
      el("strong", {}, "Not allowed. "), `This view needs a token with the ${scope} scope; yours does not have it. `,
      "Ask an operator for one (ledger tokens create --scopes " + scope + ").");
  }
  return el("div", { class: "notice", role: "alert", id: "problem" },
    el("strong", {}, error.status ? `${error.code} (${error.status}). ` : "Error. "), error.message);
}

/** Counts navigations (`route`, a search): a page whose answers arrive after a later navigation began must neither
 *  replace the page asked for since (a slow order's story shown over the next one's, or over the same order as of a
 *  moment) nor move the browser on. */
let navigation = 0;

/** Runs a page's `render`, handing it the `show` to use (pages name it `show`, over the one that always shows) and
 *  `current()`: both say no once a later navigation has begun. */
async function attempt(scope, render) {
  const begun = navigation;
  const current = () => begun === navigation;
  const showIfCurrent = (...nodes) => { if (current()) show(...nodes); };
  try { await render(showIfCurrent, current); } catch (error) {
    // Every failure is said on the page: one left to the browser's console looks like a page that never answered.
    if (!(error instanceof Problem)) console.error(error);
    showIfCurrent(explain(error, scope));
  }
}

// ---- Views -------------------------------------------------------------------------------------------------------

function signIn() {
  const input = el("input", { id: "token", type: "password", autocomplete: "off", required: true, "aria-label": "API token" });
  const form = el("form", { id: "signin", class: "panel" },
    el("h1", {}, "Sign in"),
    el("p", {}, "Paste an API token (", el("code", {}, "ledger tokens create"), "). It is kept for this tab only and sent to the ledger as a bearer header."),
    el("div", { class: "controls" }, el("label", {}, "Token", input), el("button", { type: "submit" }, "Sign in")));
  const refusal = el("p", { id: "signin-error", class: "field-error", role: "alert" });
  form.append(refusal);
  // The token is tried at once: a wrong one is said here, not at the first search. A 403 is a valid token without
  // the scope this probe needs: the views say which scope they want.
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    refusal.textContent = "";
    try {
      await api("/v1/ledger/digest");
    } catch (error) {
      if (error instanceof Problem && error.status === 401) {
        sessionStorage.removeItem(TOKEN_KEY);
        refusal.textContent = "The ledger does not know this token, or it was revoked. Check it, or ask an operator for one.";
        input.focus();
        return;
      }
    }
    location.hash = "#/";
  });
  show(form);
  input.focus();
}

function home() {
  show(el("div", { class: "panel" },
    el("h1", {}, "Find an order"),
    el("p", {}, "Type an order id, an account id or a provider transaction id in the search box above. ",
      "Or open ", link("#/anomalies", "the anomalies"), ", ", link("#/revenue", "revenue"), ", ",
      link("#/reconcile", "a reconciliation"), " or ", link("#/digest", "the ledger digest"), ".")));
}

/** Every page of an order's history (as of `asOf` when given). */
async function wholeHistory(orderId, asOf) {
  const pages = [];
  let after = 0;
  for (;;) {
    const query = new URLSearchParams({ limit: "1000", after: String(after) });
    if (asOf) query.set("asOf", asOf);
    const page = (await api(`/v1/orders/${encodeURIComponent(orderId)}/history?${query}`)).json;
    pages.push(page);
    if (page.next === null || page.next === undefined) break;
    after = page.next;
  }
  return { orderId, asOf: pages[0].asOf, order: pages[pages.length - 1].order, events: pages.flatMap((p) => p.events), pages };
}

/** The data worth a glance, on one line; the whole of it is in the JSON. */
function keyData(event) {
  const data = event.data || {};
  const skip = new Set(["evidence", "signedTransaction"]);
  return Object.keys(data).sort().filter((k) => !skip.has(k)).map((key) => {
    const value = data[key];
    const text = value && typeof value === "object" && "value" in value && "currency" in value ? money(value)
      : typeof value === "object" ? JSON.stringify(value) : String(value);
    return `${key}=${text.length > 60 ? text.slice(0, 57) + "…" : text}`;
  }).join(" ");
}

async function orderStory(orderId, asOf) {
  await attempt("events:read", async (show) => {
    const [history, chain, refusals, anomalies, now] = await Promise.all([
      wholeHistory(orderId, asOf),
      api(`/v1/orders/${encodeURIComponent(orderId)}/chain`).then((r) => r.json),
      api(`/v1/orders/${encodeURIComponent(orderId)}/refusals`).then((r) => r.json),
      orderAnomalies(orderId),
      api(`/v1/orders/${encodeURIComponent(orderId)}`).then((r) => r.json),
    ]);
    const links = new Map(chain.events.map((link) => [link.version, link]));
    const order = history.order;

    const asOfInput = el("input", { id: "asof", type: "datetime-local", step: "0.001", "aria-label": "As of" });
    if (asOf) asOfInput.value = toLocalInput(new Date(asOf));
    const asOfForm = el("form", { class: "controls", id: "asof-form" },
      el("label", {}, "Show the order as it was at (your time zone)", asOfInput),
      el("button", { type: "submit" }, "Show"),
      asOf ? link("#/order/" + encodeURIComponent(orderId), "Now") : null);
    asOfForm.addEventListener("submit", (event) => {
      event.preventDefault();
      if (!asOfInput.value) return;
      const at = new Date(asOfInput.value).toISOString();
      location.hash = "#/order/" + encodeURIComponent(orderId) + "?asOf=" + encodeURIComponent(at);
    });

    const facts = order ? el("dl", { class: "facts", id: "order-facts" },
      el("dt", {}, "State"), el("dd", {}, el("span", { class: "state", id: "order-state" }, order.state)),
      el("dt", {}, "Account"), el("dd", {}, accountLink(order.accountId)),
      el("dt", {}, "Product"), el("dd", {}, order.productId, " × ", String(order.quantity)),
      el("dt", {}, "Amount"), el("dd", {}, money(order.amount)),
      el("dt", {}, "Provider"), el("dd", {}, order.provider, " (", order.environment, ")"),
      el("dt", {}, "Transaction"), el("dd", {}, order.transactionId ? link("#/transaction/" + encodeURIComponent(order.transactionId), order.transactionId) : "—"),
      el("dt", {}, "Flags"), el("dd", {}, order.flags.length ? order.flags.join(", ") : "—"),
      el("dt", {}, "Refunded"), el("dd", {}, order.refundedAmount ? money(order.refundedAmount) : "—"),
    ) : el("p", { id: "order-facts" }, "The order did not exist yet at that time.");

    const rows = history.events.map((event) => {
      const link = links.get(event.version);
      // The hash shortened (the column fits a laptop's width), the whole of it on hover and copied by its button.
      const seal = !link ? el("span", { class: "muted" }, "—")
        : el("span", { class: "seal" },
          el("span", { class: link.verifiedUpToHere ? "ok" : "bad", title: link.problem || "the chain verifies up to this event" },
            link.verifiedUpToHere ? "✓" : "✗"), " ",
          link.hash ? [el("code", { title: link.hash }, link.hash.slice(0, 8) + "…"), " ", copyButton(link.hash, { class: "small secondary", "aria-label": "Copy the hash of event " + event.version })]
            : el("code", {}, "unsealed"));
      return [String(event.version), time(event.recordedAt), time(event.occurredAt), event.type, event.actor || "—",
        el("span", { class: "data" }, keyData(event)), event.stateAfter || "—", seal];
    });

    const evidence = history.events.filter((e) => e.type === "provider.notified" || e.data?.signedTransaction)
      .map((event) => el("details", { class: "evidence" },
        el("summary", {}, `version ${event.version}: ${event.data.provider || "app_store"} ${event.data.notificationType || "signed transaction"}`),
        el("pre", {}, JSON.stringify(event.data.evidence || { signedTransaction: event.data.signedTransaction }, null, 2))));

    show(
      el("h1", {}, "Order ", el("span", { id: "order-id" }, orderId)),
      orderBanner(anomalies, refusals.refusals),
      el("div", { class: "panel" }, asOfForm, asOf ? el("p", { class: "muted", id: "asof-note" }, "As of ", time(asOf)) : null),
      el("div", { class: "panel" }, facts),
      el("h2", {}, "Recovery: asking the provider"),
      recoveryPanel(orderId, now),
      el("h2", {}, "Story"),
      el("p", { class: chain.verified ? "ok" : "bad", id: "chain-status" },
        chain.verified ? "The hash chain of every event verifies." : "The hash chain does not verify: see the ✗ rows."),
      table(["#", "Recorded", "Occurred", "Type", "Actor", "Data", "State after", "Hash"], rows, { id: "story" }),
      el("h2", {}, "Refusals"),
      refusals.refusals.length
        ? table(["Recorded", "Actor", "Event", "Transaction", "Code", "Details"], refusals.refusals.map((r) =>
          [time(r.recordedAt), r.actor, r.eventType, r.transactionId || "—", r.code, JSON.stringify(r.details)]), { id: "refusals" })
        : el("p", { class: "muted", id: "refusals" }, "None recorded."),
      el("h2", {}, "Provider evidence"),
      evidence.length ? evidence : el("p", { class: "muted" }, "No provider message on this order."),
      el("details", {}, el("summary", {}, "JSON (the API's answer)"), el("pre", { id: "json" }, JSON.stringify(history.pages.length === 1 ? history.pages[0] : history.pages, null, 2))),
    );
  });
}

/** The order's place on the recovery schedule (what the ledger asked its provider, and when it asks next), and a
 *  button for support to ask now (`POST …/recover`, scope orders:recover); the page is read again with the answer.
 *  Where this service cannot ask the order's provider (`providerAskable`), no button and no "asked again at": it says
 *  why instead. */
function recoveryPanel(orderId, order) {
  const recovery = order.recovery, askable = order.providerAskable === true;
  const result = el("p", { id: "recover-result", role: "status" });
  const button = el("button", { type: "button", id: "recover-now" }, "Ask the provider now");
  button.addEventListener("click", async () => {
    button.disabled = true;
    result.textContent = "Asking…";
    try {
      const answer = (await api(`/v1/orders/${encodeURIComponent(orderId)}/recover`, { method: "POST" })).json;
      await orderStory(orderId);
      const said = document.getElementById("recover-result");
      if (said) said.textContent = `${answer.outcome}: ${answer.said}`;
    } catch (error) {
      if (!(error instanceof Problem)) throw error;
      button.disabled = false;
      result.textContent = error.status === 403
        ? "Asking the provider needs a token with the orders:recover scope; yours does not have it."
        : error.status === 409 ? "Another node is asking the provider about this order right now; read the page again in a moment."
        : error.status === 501 ? "The ledger is not configured to ask providers (serve --providers-config with a query section)."
        : `${error.code}: ${error.message}`;
    }
  });
  const status = !recovery ? el("p", { class: "muted", id: "recovery-status" }, "Never asked: the order has not looked lost.")
    : el("p", { id: "recovery-status" }, el("span", { class: "kind" }, recovery.status),
      ` (${recovery.reason}, ${recovery.attemptCount} attempt${recovery.attemptCount === 1 ? "" : "s"} since `, time(recovery.enteredAt), ")",
      recovery.nextAttemptAt && askable ? [". Asked again at ", time(recovery.nextAttemptAt), " unless answered first."] : ".");
  const attempts = recovery && recovery.attempts.length
    ? table(["#", "Asked", "By", "Outcome", "What was said", "Took"], recovery.attempts.map((a) =>
      [String(a.attempt), time(a.askedAt), a.askedBy, el("span", { class: "kind" }, a.outcome),
        el("span", { class: "data", title: a.providerWords || "" }, a.said), `${a.durationMs} ms`]), { id: "recovery-attempts" })
    : null;
  const ask = askable ? [el("div", { class: "controls" }, button), result]
    : [el("p", { class: "muted", id: "recovery-unaskable" }, `This service cannot ask ${order.provider} about its orders: `
        + "its queries are not configured (serve --providers-config, docs/providers.md).")];
  return el("div", { class: "panel", id: "recovery" }, status, attempts, ...ask);
}

/** The order's anomalies as finance lists them now (the anomalies page's thresholds), or null when the token lacks
 *  finance:read: the order's page is an events:read page and still shows, with what that scope may read. */
async function orderAnomalies(orderId) {
  try {
    return (await api("/v1/anomalies?" + new URLSearchParams({ orderId, limit: "100" }))).json;
  } catch (error) {
    if (error instanceof Problem && error.status === 403) return null;
    throw error;
  }
}

/** At the top of an order's page, what finance lists about it (its anomalies) and what the ledger refused on it:
 *  a lost order or a refused grant is seen before the story is read, not only in its flags or at the page's foot.
 *  Nothing when there is nothing to say. */
function orderBanner(anomalies, refusals) {
  const listed = anomalies ? anomalies.anomalies : [];
  const scopeNote = anomalies ? null
    : el("p", { id: "banner-scope" }, "Anomalies need a token with the finance:read scope; yours does not have it, so only refusals are listed here.");
  if (!listed.length && !refusals.length && !scopeNote) return null;
  return el("div", { class: listed.length || refusals.length ? "notice banner" : "panel banner", id: "order-banner", role: "status" },
    listed.length ? [el("strong", {}, "Finance lists this order now"),
      el("ul", { id: "banner-anomalies" }, listed.map((a) =>
        el("li", {}, el("span", { class: "kind" }, a.kind), " since ", time(a.since), ": ", a.detail))),
      anomalies.nextCursor ? el("p", { class: "muted" }, "More are listed than shown here: see the anomalies page.") : null] : null,
    refusals.length ? [el("strong", {}, `Refused on this order (${refusals.length})`),
      el("ul", { id: "banner-refusals" }, refusals.map((r) =>
        el("li", {}, el("span", { class: "kind" }, r.code), " ", r.eventType, " at ", time(r.recordedAt), " by ", r.actor,
          r.transactionId ? ` (transaction ${r.transactionId})` : "")))] : null,
    scopeNote);
}

// To the millisecond: events of one order are often recorded within the same second.
function toLocalInput(date) {
  const pad = (n, width = 2) => String(n).padStart(width, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}`;
}

const subscriptionLink = (id) => link("#/subscription/" + encodeURIComponent(id), id);

/** An account: what it is entitled to now (and the signed transaction that proves each), its subscriptions, its
 *  orders. */
async function account(accountId, cursor) {
  await attempt("events:read", async (show) => {
    const query = new URLSearchParams({ accountId, limit: "50" });
    if (cursor) query.set("cursor", cursor);
    const [page, owned] = await Promise.all([
      api("/v1/orders?" + query).then((answer) => answer.json),
      api("/v1/accounts/" + encodeURIComponent(accountId) + "/entitlements").then((answer) => answer.json)]);
    const next = page.nextCursor
      ? link("#/account/" + encodeURIComponent(accountId) + "?cursor=" + encodeURIComponent(page.nextCursor), "Next page")
      : null;
    const entitled = new Set(owned.entitlements.map((e) => e.subscriptionId));
    show(
      el("h1", {}, "Account ", el("span", { id: "account-id" }, accountId)),
      el("h2", {}, "Entitled now"),
      owned.entitlements.length
        ? table(["Product", "State", "Until", "Subscription", "Proved by transaction"], owned.entitlements.map((e) =>
          [e.productId, el("span", { class: "state" }, e.state), time(e.until), subscriptionLink(e.subscriptionId),
           e.transaction.transactionId]), { id: "entitlements" })
        : el("p", { id: "entitlements" }, "Nothing: no subscription entitles this account now."),
      owned.subscriptions.some((s) => !entitled.has(s.subscriptionId))
        ? el("p", { id: "lapsed" }, "Also owns: ", owned.subscriptions.filter((s) => !entitled.has(s.subscriptionId))
          .flatMap((s, i) => [i ? ", " : "", subscriptionLink(s.subscriptionId), " (" + s.state + ")"]))
        : null,
      el("h2", {}, "Orders"),
      page.orders.length
        ? table(["Order", "State", "Product", "Amount", "Provider", "Updated"], page.orders.map((o) =>
          [orderLink(o.orderId), el("span", { class: "state" }, o.state), o.productId, money(o.amount), o.provider, time(o.updatedAt)]),
        { id: "orders", numeric: ["Amount"] })
        : el("p", {}, "No orders for this account."),
      next);
  });
}

/** A subscription: who owns it, whether it entitles now, what renews, and each period as Apple signed it. */
async function subscription(subscriptionId) {
  await attempt("events:read", async (show) => {
    const sub = (await api("/v1/subscriptions/" + encodeURIComponent(subscriptionId))).json;
    const entitlement = sub.entitlement, renewal = sub.renewal;
    const revoked = (r) => r ? r.kind.replaceAll("_", " ") + (r.percentage !== null ? " " + r.percentage / 1000 + " %" : "") + " at " : "";
    show(
      el("h1", {}, "Subscription ", el("span", { id: "subscription-id" }, subscriptionId)),
      el("dl", { id: "subscription-facts", class: "facts" },
        el("dt", {}, "Account"), el("dd", {}, sub.accountId ? accountLink(sub.accountId) : "nobody yet"),
        el("dt", {}, "First order"), el("dd", {}, sub.orderId ? orderLink(sub.orderId) : "—"),
        el("dt", {}, "Now"), el("dd", {}, el("span", { class: "state", id: "subscription-state" }, entitlement.state),
          entitlement.until ? [" until ", time(entitlement.until)] : null),
        el("dt", {}, "Renewal"), el("dd", {}, renewal
          ? [renewal.autoRenew ? "renews" : "does not renew", renewal.renewsTo ? " to " + renewal.renewsTo : "",
             renewal.inBillingRetry ? "; billing is being retried" : "",
             renewal.gracePeriodExpiresAt ? ["; grace period until ", time(renewal.gracePeriodExpiresAt)] : null]
          : "—")),
      el("h2", {}, "Periods"),
      table(["Transaction", "Product", "From", "Until", "Price", "Taken back"], sub.transactions.map((t) =>
        [t.transactionId + (t.familyShared ? " (family)" : ""), t.productId, time(t.purchasedAt), time(t.expiresAt),
         t.price ? t.price.text : "—", t.revocation ? [revoked(t.revocation), time(t.revocation.at)] : "—"]),
        { id: "periods", numeric: ["Price"] }));
  });
}

async function transaction(transactionId) {
  await attempt("events:read", async (show, current) => {
    const status = (await api("/v1/transactions/" + encodeURIComponent(transactionId))).json;
    if (current()) location.replace("#/order/" + encodeURIComponent(status.orderId));
  });
}

/** Recognises the id: an order first, then a transaction, then an account with orders. */
async function find(q, kind) {
  if (kind === "order") return (location.hash = "#/order/" + encodeURIComponent(q));
  if (kind === "account") return (location.hash = "#/account/" + encodeURIComponent(q));
  if (kind === "transaction") return (location.hash = "#/transaction/" + encodeURIComponent(q));
  navigation += 1;
  await attempt("events:read", async (show, current) => {
    const go = (hash) => { if (current()) location.hash = hash; };
    const known = async (path) => {
      try { return (await api(path)).json; } catch (error) {
        // 400: not even a possible id (the ledger's id rule), so certainly not one it holds.
        if (error instanceof Problem && (error.status === 404 || error.status === 400)) return null;
        throw error;
      }
    };
    if (await known("/v1/orders/" + encodeURIComponent(q))) return go("#/order/" + encodeURIComponent(q));
    const tx = await known("/v1/transactions/" + encodeURIComponent(q));
    if (tx) return go("#/order/" + encodeURIComponent(tx.orderId));
    if (await known("/v1/subscriptions/" + encodeURIComponent(q))) return go("#/subscription/" + encodeURIComponent(q));
    const orders = await known("/v1/orders?" + new URLSearchParams({ accountId: q, limit: "1" }));
    if (orders && orders.orders.length) return go("#/account/" + encodeURIComponent(q));
    show(el("div", { class: "notice", id: "problem" }, "Nothing in the ledger is called ", el("code", {}, q), "."));
  });
}

const ANOMALY_KINDS = ["lost_order", "paid_not_granted", "not_finished", "stuck_payment", "finished_before_grant", "late_receipt",
  "refunded_before_grant", "refused_grant", "refunded_at_provider", "amount_mismatch", "unknown_provider_transaction",
  "consumption_request", "refused_provider_message", "unrecoverable", "unclaimed_purchase", "refused_claim",
  "renewal_not_credited", "access_after_expiry"];

async function anomalies(params) {
  await attempt("finance:read", async (show) => {
    const filter = new URLSearchParams();
    for (const key of ["kind", "olderThan"]) if (params.get(key)) filter.set(key, params.get(key));
    // Several kinds at once, as the API takes them (kind=a,b): a box each; none ticked is every kind.
    const chosen = new Set((params.get("kind") || "").split(",").filter(Boolean));
    const kindBoxes = ANOMALY_KINDS.map((k) => el("input", { type: "checkbox", name: "kind", value: k, checked: chosen.has(k) }));
    const kinds = el("fieldset", { class: "kinds", id: "anomaly-kinds" }, el("legend", {}, "Kinds (none ticked: every kind)"),
      kindBoxes.map((box) => el("label", {}, box, box.value)));
    const olderThan = el("input", { id: "older-than", value: params.get("olderThan") || "", placeholder: "e.g. 10m, 24h", "aria-label": "Older than", size: 8 });
    const olderThanError = el("span", { id: "older-than-error", class: "field-error", role: "alert" });
    const form = el("form", { class: "controls panel", id: "anomalies-form" }, kinds,
      el("label", {}, "Older than", olderThan, olderThanError), el("button", { type: "submit" }, "Filter"));
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const next = new URLSearchParams();
      const ticked = kindBoxes.filter((box) => box.checked).map((box) => box.value);
      if (ticked.length) next.set("kind", ticked.join(","));
      if (olderThan.value.trim()) next.set("olderThan", olderThan.value.trim());
      location.hash = "#/anomalies?" + next;
    });
    let page;
    try {
      const query = new URLSearchParams(filter);
      query.set("limit", "100");
      if (params.get("cursor")) query.set("cursor", params.get("cursor"));
      page = (await api("/v1/anomalies?" + query)).json;
    } catch (error) {
      // A filter the ledger cannot read is said beside its field, in this page's words; the form stays.
      if (!(error instanceof Problem) || error.status !== 400 || error.field !== "olderThan") throw error;
      olderThanError.textContent = "Write a number and a unit: 90s, 10m, 24h or 7d.";
      return show(el("h1", {}, "Anomalies"), form);
    }
    const save = el("button", { type: "button", class: "secondary", id: "anomalies-csv" }, "Download every row (CSV)");
    save.addEventListener("click", () => attempt("finance:read", async () => download("anomalies.csv", "text/csv", await allAnomaliesCSV(filter))));
    const more = new URLSearchParams(params);
    if (page.nextCursor) more.set("cursor", page.nextCursor);
    show(
      el("h1", {}, "Anomalies"), form,
      page.anomalies.length
        ? table(["Kind", "Order", "Account", "State", "Since", "Age", "Detail"], page.anomalies.map((a) =>
          [a.kind, a.orderId ? orderLink(a.orderId) : "—", a.accountId ? accountLink(a.accountId) : "—", a.state, time(a.since),
            age(a.ageSeconds), a.detail]), { id: "anomalies" })
        : el("p", { id: "anomalies" }, "No anomaly matches."),
      page.nextCursor ? link("#/anomalies?" + more, "Next page") : null,
      page.anomalies.length ? save : null);
  });
}

/** Every anomaly the filter lists, page by page, as CSV (RFC 4180: fields quoted, quotes doubled). */
async function allAnomaliesCSV(filter) {
  const field = (value) => '"' + String(value ?? "").replaceAll('"', '""') + '"';
  const lines = ["kind,order_id,account_id,state,since,age_seconds,detail"];
  let cursor = null;
  do {
    const query = new URLSearchParams(filter);
    query.set("limit", "1000");
    if (cursor) query.set("cursor", cursor);
    const page = (await api("/v1/anomalies?" + query)).json;
    for (const a of page.anomalies) lines.push([a.kind, a.orderId, a.accountId, a.state, a.since, a.ageSeconds, a.detail].map(field).join(","));
    cursor = page.nextCursor;
  } while (cursor);
  return lines.join("\r\n") + "\r\n";
}

function age(seconds) {
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172800) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86400)} d`;
}

function isoDay(date) { return date.toISOString().slice(0, 10); }

async function revenue(params) {
  await attempt("finance:read", async (show) => {
    const today = new Date();
    const from = params.get("from") || isoDay(new Date(today.getTime() - 29 * 86400000));
    const to = params.get("to") || isoDay(today);
    const zone = params.get("timezone") || Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
    const inputs = {
      from: el("input", { id: "from", type: "date", value: from, "aria-label": "From" }),
      to: el("input", { id: "to", type: "date", value: to, "aria-label": "To" }),
      timezone: el("input", { id: "timezone", value: zone, "aria-label": "Time zone", size: 16 }),
      currency: el("select", { id: "currency", "aria-label": "Currency" }),
    };
    const periodError = el("span", { class: "field-error", id: "revenue-error", role: "alert" });
    const form = el("form", { class: "controls panel" },
      el("label", {}, "From", inputs.from), el("label", {}, "To", inputs.to), el("label", {}, "Time zone", inputs.timezone),
      el("label", {}, "Currency", inputs.currency), el("button", { type: "submit" }, "Show"), periodError);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const next = new URLSearchParams({ from: inputs.from.value, to: inputs.to.value, timezone: inputs.timezone.value, currency: inputs.currency.value });
      location.hash = "#/revenue?" + next;
    });
    let report;
    try {
      report = (await api("/v1/reports/revenue?" + new URLSearchParams({ from, to, groupBy: "day,currency", timezone: zone }))).json;
    } catch (error) {
      // A period or time zone the ledger cannot read is said under the form, in the API's words; the form stays.
      if (!(error instanceof Problem) || error.status !== 400 || !["from", "to", "timezone"].includes(error.field)) throw error;
      periodError.textContent = error.message;
      return show(el("h1", {}, "Revenue"), form);
    }
    // The page opens on the currency with the most sales in the period (ties: alphabetical), not the first by name.
    const sales = new Map();
    for (const r of report.rows) sales.set(r.currency, (sales.get(r.currency) || 0) + r.granted.count);
    const currencies = [...sales.keys()].sort((a, b) => sales.get(b) - sales.get(a) || a.localeCompare(b));
    const currency = params.get("currency") && currencies.includes(params.get("currency")) ? params.get("currency") : currencies[0];
    const rows = report.rows.filter((r) => r.currency === currency).sort((a, b) => a.day.localeCompare(b.day));
    inputs.currency.append(...currencies.map((c) => el("option", { value: c, selected: c === currency }, c)));
    const totals = rows.reduce((t, r) => ({ granted: t.granted + r.granted.amount, refunded: t.refunded + r.refunded.amount, net: t.net + r.net }),
      { granted: 0, refunded: 0, net: 0 });
    // The same columns as `ledger report revenue --csv` (integer minor units in the *_minor columns).
    const csv = ["day,currency,granted,granted_amount_minor,refunded,refunded_amount_minor,net_minor"]
      .concat(rows.map((r) => [r.day, r.currency, r.granted.count, r.granted.amount, r.refunded.count, r.refunded.amount, r.net].join(",")))
      .join("\n") + "\n";
    const save = el("button", { type: "button", class: "secondary", id: "revenue-csv" }, "Download CSV");
    save.addEventListener("click", () => download(`revenue-${from}-${to}-${currency || "none"}.csv`, "text/csv", csv));
    show(
      el("h1", {}, "Revenue"), form,
      rows.length ? chart(daysOf(report.from || from, report.to || to), rows, currency) : el("p", {}, "Nothing granted or refunded in this period."),
      el("p", { id: "revenue-totals" }, currency
        ? `Total in ${currency}: granted ${amount(totals.granted, currency)}, refunded ${amount(totals.refunded, currency)}, net ${amount(totals.net, currency)} ${currency}`
        : "Total: —"),
      table(["Day", "Granted", "Granted amount", "Refunded", "Refunded amount", "Net"], rows.map((r) =>
        [r.day, String(r.granted.count), money({ value: r.granted.amount, currency: r.currency }), String(r.refunded.count),
         money({ value: r.refunded.amount, currency: r.currency }), money({ value: r.net, currency: r.currency })]),
      { id: "revenue", numeric: ["Granted", "Granted amount", "Refunded", "Refunded amount", "Net"] }),
      save);
  });
}

/** Every day from `from` to `to` (YYYY-MM-DD, inclusive): the chart's axis holds the days nothing happened too. */
function daysOf(from, to) {
  const days = [];
  const last = Date.parse(to + "T00:00:00Z");
  // Bounded: a period the API answered is never longer, and a typo never loops for long.
  for (let t = Date.parse(from + "T00:00:00Z"); t <= last && days.length < 3700; t += 86400000) days.push(isoDay(new Date(t)));
  return days;
}

/** A round step for a money axis, in minor units: 1, 2 or 5 times a power of ten, at least one minor unit. */
function niceStep(rough) {
  if (!(rough > 1)) return 1;
  const power = 10 ** Math.floor(Math.log10(rough));
  const scaled = rough / power;
  return (scaled <= 1 ? 1 : scaled <= 2 ? 2 : scaled <= 5 ? 5 : 10) * power;
}

/** Net and refunded per day of the period, in one currency (never a sum of currencies), plain SVG: every day on
 *  the axis, empty ones too; a money axis by the currency's exponent; each day's numbers on hover (its <title>). */
function chart(days, rows, currency) {
  const ns = "http://www.w3.org/2000/svg";
  const svg = (tag, attributes, text) => {
    const node = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, String(v));
    if (text !== undefined) node.textContent = text;
    return node;
  };
  const byDay = new Map(rows.map((r) => [r.day, r]));
  const zero = { granted: { count: 0, amount: 0 }, refunded: { count: 0, amount: 0 }, net: 0 };
  const data = days.map((day) => ({ day, ...(byDay.get(day) || zero) }));
  const cash = (minor) => `${amount(minor, currency)} ${currency}`;

  // The money axis: round steps from the lowest net (a day of refunds can be below zero) to the highest bar.
  const high = Math.max(0, ...data.map((d) => Math.max(d.net, d.refunded.amount)));
  const low = Math.min(0, ...data.map((d) => d.net));
  const step = niceStep((high - low) / 4);
  const bottomValue = Math.floor(low / step) * step, topValue = Math.max(step, Math.ceil(high / step) * step);

  const left = 100, right = 12, top = 30, plot = 200, width = 980;
  const slot = (width - left - right) / days.length;
  const y = (value) => top + plot * (topValue - value) / (topValue - bottomValue);
  const height = top + plot + 40;
  const root = svg("svg", { class: "chart", id: "revenue-chart", viewBox: `0 0 ${width} ${height}`, role: "img",
    "aria-label": `Net and refunded amounts in ${currency} per day` });

  for (let value = bottomValue; value <= topValue; value += step) {
    root.append(svg("line", { class: value === 0 ? "zero" : "grid", x1: left, x2: width - right, y1: y(value), y2: y(value) }),
      svg("text", { class: "money-tick", x: left - 6, y: y(value) + 3, "text-anchor": "end" }, cash(value)));
  }
  root.append(
    svg("rect", { class: "net legend-net", x: left, y: 8, width: 10, height: 10 }), svg("text", { x: left + 14, y: 17 }, "Net (granted less refunded)"),
    svg("rect", { class: "refunded legend-refunded", x: left + 180, y: 8, width: 10, height: 10 }), svg("text", { x: left + 194, y: 17 }, "Refunded"));

  // A label per day while they fit (a digit pair needs ~14 units), else every few days, and none once that is more
  // than a week (the months say where a day is); a tick for every day. A month's name where it starts, unless the
  // last one is less than a name's width (~56 units) before it: over a year or two, every other month or so.
  const labelEvery = Math.ceil(14 / slot);
  let lastMonthLabel = -Infinity;
  data.forEach((d, i) => {
    const x = left + i * slot, bar = Math.min(18, slot * 0.38);
    const group = svg("g", { class: "day", "data-day": d.day });
    group.append(svg("title", {}, `${d.day}\nnet ${cash(d.net)}\ngranted ${cash(d.granted.amount)} (${d.granted.count})`
      + `\nrefunded ${cash(d.refunded.amount)} (${d.refunded.count})`));
    // The whole day's column answers the pointer, so an empty day shows its zeros too.
    group.append(svg("rect", { class: "hit", x, y: top, width: slot, height: plot }));
    const middle = x + slot / 2;
    group.append(svg("rect", { class: "net", x: middle - bar, y: Math.min(y(d.net), y(0)), width: bar, height: Math.abs(y(d.net) - y(0)) }),
      svg("rect", { class: "refunded", x: middle, y: y(d.refunded.amount), width: bar, height: y(0) - y(d.refunded.amount) }),
      svg("line", { class: "day-tick", x1: middle, x2: middle, y1: top + plot, y2: top + plot + 4 }));
    if (labelEvery <= 7 && i % labelEvery === 0) {
      group.append(svg("text", { class: "day-label", x: middle, y: top + plot + 16, "text-anchor": "middle" }, d.day.slice(8)));
    }
    if ((i === 0 || d.day.endsWith("-01")) && x - lastMonthLabel >= 56) {
      group.append(svg("text", { class: "month-label", x, y: top + plot + 32 }, d.day.slice(0, 7)));
      lastMonthLabel = x;
    }
    root.append(group);
  });
  return el("div", { class: "scroll" }, root);
}

function reconcile() {
  const file = el("input", { id: "provider-file", type: "file", accept: ".csv,text/csv", required: true, "aria-label": "Provider CSV" });
  const provider = el("select", { id: "provider", "aria-label": "Provider" },
    ["app_store", "alipay", "wechat_pay", "other"].map((p) => el("option", { value: p }, p)));
  const today = isoDay(new Date());
  const from = el("input", { id: "rec-from", type: "date", value: today.slice(0, 8) + "01", "aria-label": "From" });
  const to = el("input", { id: "rec-to", type: "date", value: today, "aria-label": "To" });
  const result = el("div", { id: "reconciliation" });
  const form = el("form", { class: "controls panel", id: "reconcile-form" },
    el("label", {}, "Provider file (CSV)", file), el("label", {}, "Provider", provider),
    el("label", {}, "From", from), el("label", {}, "To", to), el("button", { type: "submit" }, "Reconcile"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const chosen = file.files[0];
    if (!chosen) return;
    const path = "/v1/reconciliations?" + new URLSearchParams({ provider: provider.value, from: from.value, to: to.value });
    result.replaceChildren(el("p", {}, "Reconciling…"));
    attemptInto(result, "finance:read", async () => {
      const answer = (await api(path, { method: "POST", body: chosen, contentType: "text/csv" })).json;
      const summary = Object.entries(answer.summary).filter(([, v]) => v.count > 0)
        .map(([k, v]) => [k, String(v.count), Object.entries(v.amounts).map(([c, a]) => money({ value: a, currency: c })).join(", ")]);
      const save = el("button", { type: "button", class: "secondary", id: "reconciliation-csv" }, "Download every row (CSV)");
      save.addEventListener("click", () => attemptInto(result, "finance:read", async () =>
        download("reconciliation.csv", "text/csv", await api(path, { method: "POST", body: chosen, contentType: "text/csv", accept: "text/csv" }))));
      result.replaceChildren(
        el("h2", {}, "Summary"), table(["Result", "Rows", "Amounts"], summary, { id: "reconciliation-summary" }),
        el("h2", {}, "Rows that differ"),
        answer.rows.length ? table(["Line", "Result", "Transaction", "Order", "Ledger", "Provider", "Problem"], answer.rows.map((r) => [
          r.line === null ? "—" : String(r.line), r.result, r.transactionId || "—", r.orderId ? orderLink(r.orderId) : "—",
          reconciledSide(r.ledger?.state, r.ledger?.amount, r.ledger?.productId),
          reconciledSide(r.provider?.status, r.provider?.amount, r.provider?.productId),
          r.problem || ""]), { id: "reconciliation-rows" }) : el("p", {}, "Every row matched."),
        ...(answer.truncated ? [el("p", { class: "muted" }, `${answer.rowsOmitted} more rows not listed: download them all.`)] : []),
        save);
    });
  });
  show(el("h1", {}, "Reconciliation"), form, result);
}

/** One side of a reconciled transaction: its state or status, amount and product, as far as they are known (a
 *  malformed line's side holds only what could be read); "—" for a side that has none. */
function reconciledSide(status, amount, productId) {
  const parts = [status, amount ? money(amount) : null, productId].filter((part) => part);
  return parts.length ? parts.join(" · ") : "—";
}

async function attemptInto(container, scope, work) {
  try { await work(); } catch (error) {
    if (!(error instanceof Problem)) throw error;
    container.replaceChildren(explain(error, scope));
  }
}

async function digest() {
  await attempt("events:read", async (show) => {
    let checkpoint;
    try { checkpoint = (await api("/v1/ledger/digest")).json; } catch (error) {
      if (error instanceof Problem && error.status === 404) return show(el("h1", {}, "Ledger digest"), el("p", {}, "No digest has been sealed yet."));
      throw error;
    }
    const command = `ledger verify --digest ${checkpoint.pinned}`;
    const copy = copyButton(checkpoint.pinned, { id: "copy-digest" });
    show(
      el("h1", {}, "Ledger digest"),
      el("div", { class: "panel" }, el("dl", { class: "facts" },
        el("dt", {}, "Digest"), el("dd", {}, el("code", { id: "digest" }, checkpoint.pinned), " ", copy),
        el("dt", {}, "Covers"), el("dd", {}, `the first ${checkpoint.eventCount} events, up to position ${checkpoint.position}`),
        el("dt", {}, "Sealed"), el("dd", {}, time(checkpoint.recordedAt)))),
      el("p", {}, "Save the digest. Later, anyone proves that no event up to it was altered by running:"),
      el("pre", { id: "verify-command" }, command));
  });
}

async function webhooks() {
  await attempt("webhooks:manage", async (show) => {
    const { webhooks } = (await api("/v1/webhooks")).json;
    if (!webhooks.length) {
      return show(el("h1", {}, "Webhooks"),
        el("p", {}, "No endpoint yet: ledger webhooks add --name NAME --url URL --events 'order.*'"));
    }
    show(
      el("h1", {}, "Webhooks"),
      table(["Endpoint", "Health", "URL", "Events", "Waiting", "Oldest waiting since", "Last delivered"],
        webhooks.map((w) => [
          link("#/webhook/" + encodeURIComponent(w.name), w.name),
          el("span", { class: "health-" + w.health, "data-health": w.health },
            w.health + (w.disabledReason ? ` (${w.disabledReason})` : "") + (w.failingSince ? ` since ${time(w.failingSince)}` : "")),
          w.url, w.events.join(", "), String(w.pending), w.oldestPendingSince ? time(w.oldestPendingSince) : "–",
          w.lastDeliveredAt ? time(w.lastDeliveredAt) : "–",
        ]), { id: "webhooks", numeric: ["Waiting"] }));
  });
}

async function webhook(name) {
  await attempt("webhooks:manage", async (show) => {
    const endpoint = (await api("/v1/webhooks/" + encodeURIComponent(name))).json;
    const { deliveries } = (await api("/v1/webhooks/" + encodeURIComponent(name) + "/deliveries?limit=50")).json;
    show(
      el("h1", {}, "Webhook ", el("code", {}, endpoint.name)),
      el("div", { class: "panel" }, el("dl", { class: "facts" },
        el("dt", {}, "Health"), el("dd", { id: "webhook-health" }, endpoint.health + (endpoint.disabledReason ? ` (${endpoint.disabledReason})` : "")),
        el("dt", {}, "URL"), el("dd", {}, endpoint.url),
        el("dt", {}, "Events"), el("dd", {}, endpoint.events.join(", ")),
        el("dt", {}, "Waiting"), el("dd", {}, `${endpoint.pending}` + (endpoint.oldestPendingSince ? `, the oldest since ${time(endpoint.oldestPendingSince)}` : "")),
        el("dt", {}, "Sending"), el("dd", {}, endpoint.deliveringNode || "no node now"))),
      el("h2", {}, "Recent deliveries"),
      table(["Position", "Stream", "Event", "State", "Attempts", "Last attempt", "Outcome", "Status", "Took", "Answer"],
        deliveries.map((d) => {
          const last = d.lastAttempt;
          return [String(d.position), d.kind === "order" ? link("#/order/" + encodeURIComponent(d.streamId), d.streamId) : `${d.kind} ${d.streamId}`,
            d.type, d.state, String(d.attempts), last ? time(last.at) : "–", last ? last.outcome : "–",
            last && last.status !== null ? String(last.status) : "–", last ? `${last.latencyMs} ms` : "–",
            last ? el("code", {}, last.response.slice(0, 80)) : "–"];
        }), { id: "deliveries", numeric: ["Position", "Attempts", "Status"] }));
  });
}

// ---- Routing -----------------------------------------------------------------------------------------------------

async function route() {
  navigation += 1;
  const [path, queryText] = location.hash.replace(/^#/, "").split("?");
  const params = new URLSearchParams(queryText || "");
  const parts = (path || "/").split("/").filter(Boolean).map(decodeURIComponent);
  if (!sessionStorage.getItem(TOKEN_KEY) || parts[0] === "signin") return signIn();
  switch (parts[0]) {
    case "order": return orderStory(parts[1], params.get("asOf"));
    case "account": return account(parts[1], params.get("cursor"));
    case "subscription": return subscription(parts[1]);
    case "transaction": return transaction(parts[1]);
    case "anomalies": return anomalies(params);
    case "revenue": return revenue(params);
    case "reconcile": return reconcile();
    case "digest": return digest();
    case "webhooks": return webhooks();
    case "webhook": return webhook(parts[1]);
    default: return home();
  }
}

document.getElementById("search").addEventListener("submit", (event) => {
  event.preventDefault();
  const q = document.getElementById("q").value.trim();
  if (q) find(q, document.getElementById("kind").value);
});
document.getElementById("signout").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  location.hash = "#/signin";
});
window.addEventListener("hashchange", route);
route();
