--- moraine.layout_http — the layout pictures over HTTP, for moraine.http:
-- `GET /tables/NAME/history.svg?at=S` (the spec timeline and the rows under
-- each spec, as `moraine history --svg`) and
-- `GET /tables/NAME/clustering.svg?at=S&columns=a,b&share=0.01` (files as
-- boxes in rank space, as `moraine clustering --svg`). Each picture is one
-- report, read in one read transaction (moraine.layout, moraine.clustering)
-- and drawn by moraine.svg; the answer is `image/svg+xml` with the
-- `ETag` and `X-Moraine-Snapshot` of the snapshot it shows.
-- @module moraine.layout_http

local moraine = require "moraine"
local layout = require "moraine.layout"
local clustering = require "moraine.clustering"
local svg = require "moraine.svg"

local ngx = ngx

local M = {}

--- The picture kinds served: `history` and `clustering`.
M.KINDS = { history = true, clustering = true }

-- the report's table argument: "schema.table" or "table"
local function draw(db, kind, name, args)
  local at
  if args.at ~= nil and args.at ~= true then
    if type(args.at) ~= "string" or not args.at:match("^%d+$") or #args.at > 15 then
      return nil, 400, "parameter 'at' must be a snapshot id (a non-negative integer)"
    end
    at = tonumber(args.at)
  end
  local ok, res = pcall(function()
    if kind == "history" then
      local h = layout.history(db, { table = name, at = at })
      return { snapshot = h.last, body = svg.history(h) }
    end
    local cols
    if type(args.columns) == "string" and args.columns ~= "" then
      cols = {}
      for c in args.columns:gmatch("[^,]+") do cols[#cols + 1] = c end
    end
    local share = args.share ~= nil and tonumber(args.share) or nil
    if args.share ~= nil and not share then error({ http = 400, message = "parameter 'share' must be a number in (0, 1]" }) end
    local rep = clustering.run(db, { table = name, at = at, columns = cols, share = share })
    return { snapshot = rep.snapshot, body = svg.clustering(rep) }
  end)
  if ok then return res end
  if type(res) == "table" and res.http then return nil, res.http, res.message end
  if moraine.is_error(res) then
    if res.code == "ENOTFOUND" then return nil, 404, res.message end
    if res.code == "EINVAL" then return nil, 400, res.message end
  end
  error(res, 0)
end

--- Serves one picture request (called by moraine.http's serve).
-- @param db the worker's catalog
-- @tparam string kind "history" or "clustering"
-- @tparam string name the table (NAME of the path, unescaped)
-- @tparam table args the query arguments (`at`; for clustering `columns`, `share`)
-- @tparam string|nil inm the request's If-None-Match
-- @tparam function fail moraine.http's `fail(status, message)` (a JSON error)
-- @return what ngx.exit / fail return
-- @raise nothing: an unknown table is 404, a bad parameter 400, any other
--   error is logged and 500
function M.serve(db, kind, name, args, inm, fail)
  local ok, res, status, msg = pcall(draw, db, kind, name, args)
  if not ok then
    ngx.log(ngx.ERR, "moraine.layout_http: ", tostring(res))
    return fail(500, "internal error: " .. tostring(res))
  end
  if not res then return fail(status, msg) end
  local etag = '"' .. tostring(res.snapshot) .. '"'
  ngx.header["X-Moraine-Snapshot"] = tostring(res.snapshot)
  ngx.header["ETag"] = etag
  if inm == etag then
    ngx.status = 304
    return ngx.exit(304)
  end
  ngx.status = 200
  ngx.header["Content-Type"] = "image/svg+xml"
  ngx.print(res.body)
  return ngx.exit(200)
end

return M
