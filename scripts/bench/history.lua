-- wrk script for the history phase (scripts/bench/wrkload.py): GET /v1/orders/h-<random 1..horders>/history, each
-- connection one client waiting for its answer (closed loop). The token and horders come as arguments; a third
-- argument, a path with %d for the random number, reads something else the same way (the entitlement look-ups of
-- scripts/bench/subscriptions.py). Every request is formatted once, up front: wrk.format per request cost as much
-- CPU as the Python load generator.
local requests = {}
local thread_count = 0

-- Each thread its own number: as many threads as pgbench's on the baselines' side (wrkload.loadgen_threads), each
-- seeded apart, so that they do not read the same orders in the same order.
function setup(thread)
  thread_count = thread_count + 1
  thread:set("thread_number", thread_count)
end

function init(args)
  wrk.headers["Authorization"] = "Bearer " .. args[1]
  local path = args[3] or "/v1/orders/h-%d/history"
  for k = 1, tonumber(args[2]) do
    requests[k] = wrk.format("GET", string.format(path, k))
  end
  math.randomseed(os.time() * 1000 + thread_number)
end

function request()
  return requests[math.random(#requests)]
end
