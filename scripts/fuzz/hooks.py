"""Schemathesis hooks: lets it send text/csv bodies (POST /v1/reconciliations), which it cannot serialize itself."""
import schemathesis


def _text(value):
    return value if isinstance(value, (str, bytes)) else str(value)


@schemathesis.serializer("text/csv")
class CSVSerializer:
    def as_requests(self, context, value):
        return {"data": _text(value)}

    def as_werkzeug(self, context, value):
        return {"data": _text(value)}


# --- Query parameters that are lists, repeated, or numbers past Int64 -----------------------------------------------
# The document types `groupBy` and `kind` as plain strings and `limit`/`after` as bounded integers, so schemathesis
# alone almost never sends a list of real names with one repeated (`product,product`, which once killed the service),
# an empty element (`day,,product`), a parameter given twice (`?groupBy=day&groupBy=day`), or a number past Int64.
# This hook mixes such values into the generated query of every operation that has these parameters. A Python list
# as a value makes `requests` send the parameter once per element.
import datetime  # noqa: E402

from hypothesis import strategies as st  # noqa: E402

LIST_NAMES = {
    "groupBy": ["day", "product", "currency", "provider"],
    "kind": ["lost_order", "not_finished", "finished_before_grant", "late_receipt", "refunded_before_grant",
             "stuck_payment", "refused_grant"],
}
# Numbers at and past the edges of Int32, Int64 and the routes' ranges, in forms a lax parser might accept.
EDGE_NUMBERS = ["0", "1", "-1", "500", "501", "1000", "1001", "2147483647", "2147483648", "-2147483649",
                "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
                "18446744073709551616", "99999999999999999999999999999999", "1e3", "0x10", "+5", " 5", "5 ", "05",
                "\u0663", "1_000", "NaN", "Infinity", ""]


def _name_list(names):
    """Lists of known names, with repeats, empty or odd elements, and leading/trailing commas."""
    element = st.one_of(st.sampled_from(names), st.sampled_from(["", " ", names[0].upper(), names[0] + " "]))
    joined = st.lists(st.one_of(st.sampled_from(names), element), min_size=1, max_size=len(names) + 2).map(",".join)
    every_combination = st.permutations(names).flatmap(
        lambda order: st.integers(1, len(order)).map(lambda count: ",".join(order[:count])))
    return st.one_of(
        every_combination,
        joined,
        st.sampled_from(names).map(lambda name: name + "," + name),
        joined.map(lambda text: text + ","),
        joined.map(lambda text: "," + text),
        st.lists(st.one_of(every_combination, joined), min_size=2, max_size=3),  # the parameter given 2-3 times
    )


def _number():
    huge = st.integers(min_value=-(2**70), max_value=2**70).map(str)
    text = st.one_of(st.sampled_from(EDGE_NUMBERS), huge)
    return st.one_of(text, st.lists(text, min_size=2, max_size=2))


def _duration():
    count = st.one_of(st.sampled_from(EDGE_NUMBERS), st.integers(min_value=-(2**70), max_value=2**70).map(str))
    return st.tuples(count, st.sampled_from(["s", "m", "h", "d", "", "w", "S"])).map("".join)


def _day():
    today = datetime.date.today()
    days = [today.isoformat(), (today - datetime.timedelta(days=1)).isoformat(), "0001-01-01", "9999-12-31",
            "2026-02-29", "2028-02-29", "10000-01-01"]
    return st.sampled_from(days)


QUERY_STRATEGIES = {
    "groupBy": _name_list(LIST_NAMES["groupBy"]),
    "kind": _name_list(LIST_NAMES["kind"]),
    "limit": _number(),
    "after": _number(),
    "olderThan": _duration(),
    "from": _day(),
    "to": _day(),
    "timezone": st.sampled_from(["UTC", "Asia/Shanghai", "Pacific/Kiritimati", "Etc/GMT+12", "UTC'; DROP TABLE events;--"]),
}


@schemathesis.hook("before_generate_query")
def before_generate_query(context, strategy):
    operation = getattr(context, "operation", None)
    names = {parameter.name for parameter in getattr(operation, "query", [])} if operation is not None else set()
    overrides = {name: QUERY_STRATEGIES[name] for name in sorted(names) if name in QUERY_STRATEGIES}
    if not overrides:
        return strategy
    mixed = st.tuples(strategy, st.fixed_dictionaries({}, optional=overrides)).map(
        lambda pair: {**(pair[0] or {}), **pair[1]})
    return st.one_of(strategy, mixed)
