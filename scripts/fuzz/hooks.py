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
