-- GET one path over and over (e.g. /api/version, or one table's load), timed like the structural
-- script so that runs of both read alike.
--
--   wrk -t N -c N -d S -s bench/wrk/get.lua URL -- path=/api/version kind=version samples=/tmp/file.json

local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local report = dofile(dir .. "report.lua")

setup = report.setup
done = report.done

local path, kind

function init(args)
  local a = report.parse_args(args)
  samples_path = a.samples
  path = a.path or "/api/version"
  kind = a.kind or "get"
end

function request()
  report.sent(kind)
  return wrk.format("GET", path)
end

function response(status, headers, body)
  report.received(status, body)
end
