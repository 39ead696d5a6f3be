-- wrk script for the history phase (scripts/bench/wrkload.py): GET /v1/orders/h-<random 1..horders>/history, each
-- connection one client waiting for its answer (closed loop). The token and horders come as arguments. Every
-- request is formatted once, up front: wrk.format per request cost as much CPU as the Python load generator.
local requests = {}

function init(args)
  wrk.headers["Authorization"] = "Bearer " .. args[1]
  for k = 1, tonumber(args[2]) do
    requests[k] = wrk.format("GET", "/v1/orders/h-" .. k .. "/history")
  end
  math.randomseed(os.time())
end

function request()
  return requests[math.random(#requests)]
end
