"""The list-parameter phase of the fuzz run: every combination, not a sample.

Usage: lists.py BASE_URL TOKEN

`groupBy` and `kind` are comma-separated lists of names. A repeated name once killed the service (a dictionary
built from duplicate keys), but only when the report had rows to group, which a random fuzzer on an empty ledger
never reaches. So this phase first records a few granted (and one refunded) orders, then sends:
- every sequence of 1 to 4 elements over the revenue dimensions and the empty name (day,,product; day,day; ...),
- every subset of the anomaly kinds, each also with a name repeated, every ordered pair and triple, empty elements,
- each of these parameters given twice (?groupBy=day&groupBy=day),
- limit / after / olderThan at and past the edges of Int32 and Int64, and in forms a lax parser would accept.
Every answer must be 200 or 400, and exactly the one the rule says: 400 `invalid_request` naming the parameter for a
repeated, empty or unknown name or a parameter given twice, 200 otherwise. Never a 5xx, never a dropped connection.
Prints the counts; exits 1 on any 5xx, crash (connection failure) or unexpected answer.
"""
import datetime
import itertools
import json
import sys
import urllib.error
import urllib.parse
import urllib.request
import uuid

BASE, TOKEN = sys.argv[1], sys.argv[2]
DIMENSIONS = ["day", "product", "currency", "provider"]
KINDS = ["lost_order", "not_finished", "finished_before_grant", "late_receipt", "refunded_before_grant",
         "stuck_payment", "refused_grant"]
NUMBERS = ["0", "1", "-1", "100", "500", "501", "1000", "1001", "2147483647", "2147483648", "-2147483649",
           "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
           "18446744073709551616", "99999999999999999999999999999999", "1e3", "0x10", "+5", " 5", "5 ", "05",
           "\u0663", "1_000", "NaN", "Infinity", "", "36600", "36601", "878400", "52704000", "3162240000"]
TODAY = datetime.date.today().isoformat()

counts = {"requests": 0, "2xx": 0, "4xx": 0, "5xx": 0, "unexpected": 0, "crashes": 0}
unexpected = []


def call(method, path, query=(), body=None):
    """(status, JSON answer); a connection failure counts as a crash and ends the phase."""
    url = BASE + path + ("?" + urllib.parse.urlencode(list(query), quote_via=urllib.parse.quote) if query else "")
    request = urllib.request.Request(url, method=method, data=None if body is None else json.dumps(body).encode())
    request.add_header("Authorization", "Bearer " + TOKEN)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    counts["requests"] += 1
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            status, text = answer.status, answer.read()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read()
    except Exception as error:  # refused, reset, cut off, timed out: the service is gone or hung
        counts["crashes"] += 1
        print(f"CRASH? {method} {url}: {error}", file=sys.stderr)
        report()
        sys.exit(1)
    counts[f"{status // 100}xx"] = counts.get(f"{status // 100}xx", 0) + 1
    try:
        return status, json.loads(text or b"null")
    except ValueError:
        return status, None


def expect(description, answer, status, field=None):
    """`status` is one status or a set of them; `field` is the details.field a 400 must name."""
    got, body = answer
    named = (body or {}).get("error", {}).get("details", {}).get("field") if isinstance(body, dict) else None
    allowed = status if isinstance(status, set) else {status}
    if got not in allowed or (got == 400 and field is not None and named != field):
        counts["unexpected"] += 1
        if len(unexpected) < 20:
            unexpected.append(f"{description}: {got} field={named}, expected {status} field={field}: {json.dumps(body)[:200]}")


def seed():
    """Granted orders in two currencies, products and providers, one refunded: the report has rows to group."""
    for n, (product, currency, provider, refund) in enumerate(
            [("gems.100", "USD", "app_store", False), ("gems.500", "CNY", "alipay", True), ("gems.100", "USD", "wechat_pay", False)]):
        order, account, transaction = f"lists-{n}-{uuid.uuid4().hex[:8]}", f"acct-{n}", f"lists-tx-{uuid.uuid4().hex[:12]}"
        data = [
            ("order.created", {"accountId": account, "productId": product, "amount": {"value": 499 + n, "currency": currency},
                               "provider": provider, "environment": "production"}),
            ("payment.queued", {"applicationUsername": account}),
            ("receipt.received", {"transactionId": transaction, "receipt": "opaque"}),
            ("receipt.verified", {"transactionId": transaction, "productId": product, "environment": "production",
                                  "purchasedAt": TODAY + "T00:00:00Z"}),
            ("order.granted", {"transactionId": transaction, "accountId": account}),
        ] + ([("order.refunded", {"transactionId": transaction})] if refund else [])
        events = [{"eventId": str(uuid.uuid4()), "type": kind, "data": fields} for kind, fields in data]
        expect(f"seed {order}", call("POST", f"/v1/orders/{order}/events", body={"events": events}), 201)


def lists(parameter, names, path, base_query, longest, extra):
    """Every sequence of 1..`longest` elements over `names` and "", then `extra` lists; the expected answer follows
    from the rule (a repeated or empty name is a 400 naming `parameter`)."""
    sequences = [list(s) for length in range(1, longest + 1) for s in itertools.product(names + [""], repeat=length)]
    for sequence in sequences + extra:
        good = "" not in sequence and len(set(sequence)) == len(sequence)
        query = base_query + [(parameter, ",".join(sequence))]
        if sequence == [""]:
            good = True  # an empty parameter is an absent one
        expect(f"{parameter}={','.join(sequence)}", call("GET", path, query), 200 if good else 400, None if good else parameter)
    for first, second in itertools.product(names, repeat=2):
        expect(f"{parameter} twice", call("GET", path, base_query + [(parameter, first), (parameter, second)]), 400, parameter)


def swift_int64(text):
    """What Swift's Int64(text) reads: an optional sign and ASCII digits, within Int64; else None."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits or not all("0" <= c <= "9" for c in digits):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


def numbers():
    most = 100 * 366 * 86400  # olderThan: at most 100 years
    for text in NUMBERS:
        number = swift_int64(text)
        for path, name, bounds in [("/v1/events", "limit", (1, 1000)), ("/v1/orders", "limit", (1, 500)),
                                   ("/v1/events", "after", (0, 2**63 - 1))]:
            valid = number is not None and bounds[0] <= number <= bounds[1]
            answer = call("GET", path, [(name, text)])
            if text == "":
                expect(f"{path} {name}=", answer, 200)
            elif name == "after" and valid and number > 0:
                # A position in range: 200 when an event has it, else 400 naming after.
                expect(f"{path} after={text}", answer, {200, 400}, "after")
            else:
                expect(f"{path} {name}={text!r}", answer, 200 if valid else 400, None if valid else name)
        for unit, seconds in [("s", 1), ("m", 60), ("h", 3600), ("d", 86400), ("", 0), ("w", 0)]:
            valid = seconds > 0 and number is not None and 0 <= number * seconds <= most
            answer = call("GET", "/v1/anomalies", [("olderThan", text + unit)])
            if text + unit == "":
                expect("olderThan=", answer, 200)
            else:
                expect(f"olderThan={text + unit!r}", answer, 200 if valid else 400, None if valid else "olderThan")
    for path, name in [("/v1/events", "limit"), ("/v1/events", "after"), ("/v1/orders", "limit"), ("/v1/anomalies", "olderThan")]:
        expect(f"{name} twice", call("GET", path, [(name, "1" if name != "olderThan" else "1s")] * 2), 400, name)


def report():
    print("lists phase: " + ", ".join(f"{key} {value}" for key, value in counts.items()))
    for line in unexpected:
        print("  UNEXPECTED " + line)


seed()
revenue = [("from", "2000-01-01"), ("to", "9999-12-31")]
lists("groupBy", DIMENSIONS, "/v1/reports/revenue", revenue, 4,
      [list(order[:n]) for order in itertools.permutations(DIMENSIONS) for n in range(1, 5)])
lists("kind", KINDS, "/v1/anomalies", [("olderThan", "0s")], 2,
      [[k for i, k in enumerate(KINDS) if mask >> i & 1] for mask in range(1, 128)]
      + [[k for i, k in enumerate(KINDS) if mask >> i & 1] + [KINDS[(mask & -mask).bit_length() - 1]] for mask in range(1, 128)]
      + [list(triple) for triple in itertools.permutations(KINDS, 3)])
numbers()
report()
sys.exit(1 if counts["5xx"] or counts["crashes"] or counts["unexpected"] else 0)
