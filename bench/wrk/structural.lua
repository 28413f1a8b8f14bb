-- Structural load for wrk: each connection (one per wrk thread) cycles table operations.
--
--   wrk -t N -c N -d S -s bench/wrk/structural.lua URL -- schemas=/api/metalakes/m/catalogs/c/schemas
--       schema=per-thread|NAME cycle=create,drop tag=r1 columns=3 samples=/tmp/file.json
--
-- first=K numbers this wrk's connections from K (several wrk processes, one per replica, in one run).
-- schema=per-thread: connection i works in schema s<i> (its claims never conflict with another's);
-- schema=NAME: every connection works in that one schema (the hot parent). cycle: the operations a
-- connection repeats on one table, in order: create (POST), rename (PUT, to <name>r), drop (DELETE);
-- `create` alone only creates. Table names are t<tag>_<i>_<n>: unique per run when the tag is.

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local report = dofile(dir .. "report.lua")

setup = report.setup
done = report.done

local base, cycle, tag, columns_json, conn
-- the cycle's state moves on in response(), never in request(): wrk calls request() once before the
-- run to check what it returns, and that request is never sent
local step, n, current, op, next_name = 1, 0, nil, nil, nil

function init(args)
  local a = report.parse_args(args)
  samples_path = a.samples
  conn = id + tonumber(a.first or "0") -- this connection's number across all wrk processes of the run
  local schema = a.schema or "per-thread"
  if schema == "per-thread" then schema = "s" .. conn end
  base = a.schemas .. "/" .. schema .. "/tables"
  cycle = {}
  for op in (a.cycle or "create,drop"):gmatch("[^,]+") do cycle[#cycle + 1] = op end
  tag = a.tag or "0"
  local cols = {}
  for i = 0, tonumber(a.columns or "3") - 1 do
    cols[#cols + 1] = string.format('{"name":"c%d","type":"integer","comment":"","nullable":true}', i)
  end
  columns_json = "[" .. table.concat(cols, ",") .. "]"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  op = cycle[step]
  local req
  if op == "create" then
    next_name = string.format("t%s_%d_%d", tag, conn, n)
    req = wrk.format("POST", base, nil,
      string.format('{"name":"%s","comment":"","properties":{},"columns":%s}', next_name, columns_json))
  elseif op == "rename" then
    next_name = current .. "r"
    req = wrk.format("PUT", base .. "/" .. current, nil,
      string.format('{"updates":[{"@type":"rename","newName":"%s"}]}', next_name))
  elseif op == "drop" then
    next_name = nil
    req = wrk.format("DELETE", base .. "/" .. current)
  else
    error("unknown operation in cycle: " .. op)
  end
  report.sent(op)
  return req
end

-- whatever the answer, the cycle goes on (a failed create is followed by a rename or drop that fails
-- or finds nothing: each counted under its own kind and status)
function response(status, headers, body)
  if op == "create" then n = n + 1 end
  current = next_name or current
  step = step % #cycle + 1
  report.received(status, body)
end
