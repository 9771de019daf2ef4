--- moraine.follow_state — what a follower (moraine sync in its follow mode)
-- tells other processes about its rounds: a small JSON file beside the
-- catalog, `DIR/moraine-follow.json`, written after every round (and every
-- second or so during a long one) to a temporary file in the same directory
-- and renamed over the old one, so a reader sees one whole state or the one
-- before. The HTTP workers (moraine.http) read it for `X-Moraine-Lag` and
-- `/health`. Its fields (JSON, one object; `version` 1, `source_kind`,
-- `interval` the seconds between rounds):
--
-- - `last_snapshot`: the catalog's last snapshot when the state was written;
-- - `source_newest`: the source's newest snapshot as the last round read it;
-- - `as_of`: wall-clock time (seconds since the epoch) at which the last
--   successful round began its read of the source: the catalog then held
--   everything the source had at that time, so `now - as_of` bounds how old
--   the catalog's view of the source is (the lag in seconds);
-- - `last_success`, `last_round`: when the last successful round, and the last
--   round, ended; `failing`: whether the last round failed (its `error`).
--
-- The source spec is not written (a PostgreSQL conninfo may hold a password).
-- @module moraine.follow_state

local moraine = require "moraine"

local M = {}

-- the state file's name inside the catalog directory
local NAME = "moraine-follow.json"

local base_wall, base_clock, calibrated_at

local FIELDS = { "version", "source_kind", "last_snapshot", "source_newest", "as_of", "last_success", "last_round",
  "failing", "error", "interval" }


--- Wall-clock seconds since the epoch, with sub-second precision: `date
-- +%s.%N` read once a minute, advanced by the monotonic `moraine.clock` in
-- between (`os.time` when `date` cannot be run).
-- @treturn number
function M.now()
  local c = moraine.clock()
  if not base_wall or c - calibrated_at > 60 then
    local w
    local p = io.popen("date +%s.%N 2>/dev/null")
    if p then
      w = tonumber((p:read("l") or ""):match("^%d+%.%d+$") or "")
      p:close()
    end
    base_wall, base_clock, calibrated_at = w or os.time(), moraine.clock(), c
  end
  return base_wall + (moraine.clock() - base_clock)
end

--- The path of the state file of catalog directory `dir`.
-- @tparam string dir the catalog directory
-- @treturn string
function M.file(dir)
  return dir .. "/" .. NAME
end

--- Writes the state of catalog directory `dir` atomically: a temporary file
-- in `dir`, flushed, closed and synced, then renamed over `moraine-follow.json`.
-- @tparam string dir the catalog directory
-- @tparam table state the fields above (absent ones are written as null)
-- @treturn boolean true
-- @raise EIO (the temporary file cannot be written, or the rename fails;
--   the old state file is then left as it was)
function M.write(dir, state)
  local s = {}
  for _, k in ipairs(FIELDS) do
    local v = state[k]
    if v == nil then v = moraine.null end
    s[k] = v
  end
  s.version = 1
  local text = moraine.json_encode(s, FIELDS) .. "\n"
  local tmp = string.format("%s/.%s.%d%06d.tmp", dir, NAME, os.time(), math.random(0, 999999))
  local f, err = io.open(tmp, "wb")
  if not f then moraine.core.raise("EIO", "follow state: cannot write " .. tmp .. ": " .. tostring(err)) end
  local ok, werr = f:write(text)
  if ok then ok, werr = f:flush() end
  f:close()
  -- on the disk before the rename: a crash never leaves an empty or partial state file under the name
  if ok then ok, werr = pcall(moraine.sync_path, tmp) end
  if ok then ok, werr = os.rename(tmp, M.file(dir)) end
  if not ok then
    os.remove(tmp)
    moraine.core.raise("EIO", "follow state: cannot write " .. M.file(dir) .. ": " .. tostring(werr))
  end
  return true
end

--- Reads the state of catalog directory `dir`.
-- @tparam string dir the catalog directory
-- @return the state table (the fields above; JSON null read as nil), or nil
--   and a message when there is no state file (no follower ever ran); a file
--   there that cannot be read or parsed reads as a failing state whose
--   `error` says so (`failing = true`, the lag unknown): a follower ran, and
--   whether it keeps the catalog current is not known
function M.read(dir)
  local f = io.open(M.file(dir), "rb")
  if not f then return nil, "no follower state (" .. M.file(dir) .. ")" end
  local text, rerr = f:read("a")
  f:close()
  local ok, doc = false, rerr
  if text then ok, doc = pcall(moraine.json_decode, text) end
  if not ok or type(doc) ~= "table" or doc.version == nil then -- (`write` gives every state its version)
    local why = not ok and (moraine.is_error(doc) and doc.message or tostring(doc)) or "not a follower state"
    return { failing = true, error = "follower state unreadable (" .. M.file(dir) .. "): " .. why }
  end
  for k, v in pairs(doc) do
    if v == moraine.null then doc[k] = nil end
  end
  return doc
end

--- The lag of a catalog behind its source by a state.
-- @tparam table state a state (`read`)
-- @param last the catalog's last snapshot as the caller reads it (nil: the
--   state's `last_snapshot`)
-- @tparam number now wall-clock seconds since the epoch
-- @return snapshots behind (the source's newest as of the last round minus
--   `last`, at least 0; nil when unknown), seconds behind (`now - as_of`, at
--   least 0; nil before a first successful round)
function M.lag(state, last, now)
  last = last or state.last_snapshot
  local snaps
  if state.source_newest ~= nil and last ~= nil then
    snaps = tonumber(state.source_newest) - tonumber(last)
    if snaps < 0 then snaps = 0 end
  end
  local secs
  if state.as_of ~= nil then
    secs = now - state.as_of
    if secs < 0 then secs = 0 end
  end
  return snaps, secs
end

return M
