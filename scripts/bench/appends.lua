-- wrk script for the append phases (scripts/bench/wrkload.py): run with as many threads as connections, so that each
-- thread's Lua state is one connection's client, waiting for each answer before it sends the next (closed loop).
-- That keeps an order's lifecycle in order: the next event of an order is sent only once the one before was answered.
--   single  the 6-event lifecycle posted event by event, one new order after another
--   batch   each lifecycle as one batch {"expectedVersion":0,"events":[…6…]}, a new order per request
-- Arguments: kind, token, order prefix, event-id prefix (8-4-4 hex digits), then the six events' JSON as
-- string.format templates from workload.py (%s: the event id, then the order id). Every answer's status is counted by
-- wrk: any non-2xx marks the run failed.

local thread_count = 0

function setup(thread)
  thread_count = thread_count + 1
  thread:set("client", thread_count)
end

local kind, head, order_prefix, id_prefix
local templates = {}
local serial, step, sent = 0, 0, 0
-- wrk calls the first thread's request() once before the run, to check the script (script_verify_request): that
-- request is never sent, so it must not move the client's lifecycle on.
local verifying = false

function init(args)
  kind, order_prefix, id_prefix = args[1], args[3] .. client .. "-", args[4]
  head = "Host: bench\r\nAuthorization: Bearer " .. args[2] .. "\r\nContent-Type: application/json\r\nContent-Length: "
  for k = 1, 6 do
    templates[k] = args[4 + k]
  end
  verifying = client == 1
end

local function event(k, order_id)
  sent = sent + 1
  return string.format(templates[k], string.format("%s-%04x-%012x", id_prefix, client, sent), order_id)
end

local function post(order_id, body)
  return "POST /v1/orders/" .. order_id .. "/events HTTP/1.1\r\n" .. head .. #body .. "\r\n\r\n" .. body
end

function request()
  if verifying then
    verifying = false
    return post("verify", "{}")
  end
  if kind == "batch" then
    serial = serial + 1
    local order_id = order_prefix .. serial
    local events = {}
    for k = 1, 6 do
      events[k] = event(k, order_id)
    end
    return post(order_id, '{"expectedVersion":0,"events":[' .. table.concat(events, ",") .. "]}")
  end
  if step == 6 then
    step = 0
  end
  if step == 0 then
    serial = serial + 1
  end
  step = step + 1
  local order_id = order_prefix .. serial
  return post(order_id, event(step, order_id))
end
