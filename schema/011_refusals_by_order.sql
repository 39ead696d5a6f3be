-- The console shows an order's refusals beside its story (GET /v1/orders/{orderId}/refusals).
CREATE INDEX refusals_by_order ON refusals (order_id, id);
