-- Shared by the bench's wrk scripts (loaded with dofile from each): the arguments, per-request timing
-- by kind, and done(), which prints one line "WRK_JSON {...}" that bench/wrklib.py reads.
--
-- Each wrk thread drives exactly one connection (bench/wrklib.py runs `-t N -c N`), so a thread's
-- Lua state is its connection's state: its id names its schema and tables, and the time between
-- request() and response() is that request's latency. wrk's own histogram gives the percentiles
-- over all requests; the per-kind samples (create, rename, drop, get) are timed here with the
-- monotonic clock and written to the file named by the `samples` argument, for per-kind figures
-- and for merging runs against several replicas.

local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } gm_timespec;
int clock_gettime(int clk_id, gm_timespec *tp);
]]
local timespec = ffi.new("gm_timespec")

local M = {}

function M.now_us()
  ffi.C.clock_gettime(1, timespec) -- CLOCK_MONOTONIC
  return tonumber(timespec.tv_sec) * 1000000 + tonumber(timespec.tv_nsec) / 1000
end

-- "key=value" arguments after `--` on wrk's command line
function M.parse_args(args)
  local out = {}
  for _, a in ipairs(args) do
    local k, v = a:match("^([%w_]+)=(.*)$")
    if k == nil then error("bad argument (want key=value): " .. a) end
    out[k] = v
  end
  return out
end

local threads = {}

-- wrk calls setup() in the main state once per thread, in order: number them from 0
function M.setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

-- Per-thread state, in globals so that done() can read them with thread:get. Only flat tables: wrk
-- 4.1 crashes copying a table that holds tables. kinds_seen: "create,drop"; lat_<kind>: latencies in
-- microseconds; status_counts: "<kind> <status>" -> count; errors_seen: a few "kind status body".
kinds_seen = ""
status_counts = {}
errors_seen = {}
local pending_kind, started

function M.sent(kind)
  pending_kind, started = kind, M.now_us()
end

function M.received(status, body)
  local kind = pending_kind or "unknown"
  local name = "lat_" .. kind
  local list = _G[name]
  if list == nil then
    list = {}
    _G[name] = list
    kinds_seen = kinds_seen == "" and kind or (kinds_seen .. "," .. kind)
  end
  list[#list + 1] = M.now_us() - started
  local key = kind .. " " .. status
  status_counts[key] = (status_counts[key] or 0) + 1
  if status ~= 200 and #errors_seen < 5 then
    errors_seen[#errors_seen + 1] = kind .. " " .. status .. " " .. string.sub(body or "", 1, 300)
  end
end

local function encode(value)
  local t = type(value)
  if t == "number" then
    if value ~= value or value == math.huge or value == -math.huge then return "null" end
    return string.format("%.10g", value)
  elseif t == "string" then
    return '"' .. value:gsub('[%c"\\]', function(c) return string.format("\\u%04x", c:byte()) end) .. '"'
  elseif t == "boolean" then
    return tostring(value)
  elseif t == "table" then
    if #value > 0 or next(value) == nil then
      local parts = {}
      for i = 1, #value do parts[i] = encode(value[i]) end
      return "[" .. table.concat(parts, ",") .. "]"
    end
    local parts = {}
    for k, v in pairs(value) do parts[#parts + 1] = encode(tostring(k)) .. ":" .. encode(v) end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  return "null"
end
M.encode = encode

function M.done(summary, latency, requests)
  local kinds, statuses, error_samples, path = {}, {}, {}, nil
  for _, thread in ipairs(threads) do
    path = path or thread:get("samples_path")
    for kind in (thread:get("kinds_seen") or ""):gmatch("[^,]+") do
      local all = kinds[kind] or {}
      for _, v in ipairs(thread:get("lat_" .. kind) or {}) do all[#all + 1] = v end
      kinds[kind] = all
    end
    for key, n in pairs(thread:get("status_counts") or {}) do
      local kind, status = key:match("^(%S+) (%d+)$")
      local by_status = statuses[kind] or {}
      by_status[status] = (by_status[status] or 0) + n
      statuses[kind] = by_status
    end
    for _, e in ipairs(thread:get("errors_seen") or {}) do error_samples[#error_samples + 1] = e end
  end
  if path ~= nil and path ~= "" then
    local f = assert(io.open(path, "w"))
    f:write(encode(kinds))
    f:close()
  end
  local report = {
    requests = summary.requests,
    duration_us = summary.duration,
    errors = summary.errors,
    latency_us = {
      p50 = latency:percentile(50), p90 = latency:percentile(90), p99 = latency:percentile(99),
      max = latency.max, mean = latency.mean,
    },
    statuses = statuses,
    error_samples = error_samples,
  }
  io.write("WRK_JSON " .. encode(report) .. "\n")
end

return M
