-- Finance: the refusal log (evidence of refused grants and every other refusal), and an index for reconciliation.

-- A refused event writes nothing to its order, but a wrong-account or double-credit attempt must stay visible to
-- finance: each refusal is logged here, after the refused append has rolled back.
CREATE TABLE refusals (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    recorded_at    timestamptz NOT NULL DEFAULT now(),
    actor          text NOT NULL,
    order_id       text NOT NULL,
    event_type     text NOT NULL,
    transaction_id text,
    code           text NOT NULL,
    details        jsonb NOT NULL DEFAULT '{}'
);

CREATE INDEX refusals_by_code ON refusals (code, recorded_at);
