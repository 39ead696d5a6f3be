-- wrk script for the read-pressure phase (scripts/bench/pressure.py): GET /v1/orders/<prefix><k>/history with a
-- 1000-event page and an asOf never asked before, so that no answer comes from the rendered-page cache: every read
-- folds and renders a whole page. Arguments: the token, the order prefix, the number of orders.
local prefix, orders, counter
local thread_count = 0

-- Each thread its own number (wrkload.loadgen_threads runs as many as pgbench's), in the hour of every asOf it asks:
-- two threads never ask the same instant.
function setup(thread)
  thread_count = thread_count + 1
  thread:set("thread_number", thread_count)
end

function init(args)
  wrk.headers["Authorization"] = "Bearer " .. args[1]
  prefix, orders, counter = args[2], tonumber(args[3]), 0
end

function request()
  counter = counter + 1
  -- A distinct instant each time (microseconds into the thread's hour of 2099-01-01): after every event, so every
  -- page is full.
  local asOf = string.format("2099-01-01T%02d:%02d:%02d.%06dZ", thread_number % 24, math.floor(counter / 60000000) % 60,
                             math.floor(counter / 1000000) % 60,
                             counter % 1000000)
  return wrk.format("GET", "/v1/orders/" .. prefix .. (counter % orders + 1) .. "/history?limit=1000&asOf=" .. asOf)
end
