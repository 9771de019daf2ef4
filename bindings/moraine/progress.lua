--- moraine.progress — one-line progress of long work, for a terminal.
--
--     local progress = require "moraine.progress"
--     local m = progress.meter({ label = "importing", unit = "rows" })
--     m:update(done, total)      -- as often as you like; redrawn at most every 0.1 s
--     m:finish(true)             -- "importing: 2400000 rows in 12.3s"
--
-- Time is wall-clock time from a monotonic clock (`moraine.clock`, not the
-- CPU time of `os.clock`), so work that waits (disk, a child process) is
-- counted. The first line is drawn at the first update, so progress shows
-- from the first second. The time left is shown only once enough work is
-- done to estimate it (at least `eta_after` seconds and `eta_fraction` of
-- the total, by default 2 s and 1 %): before that the line says
-- "estimating". A total of 0 means "not known yet": the line then shows the
-- count, the rate and the time elapsed, with no percentage and no estimate.
-- A phase (e.g. "checking" then "importing") restarts the rate and the
-- estimate; the elapsed time keeps counting from the start.
-- @module moraine.progress

local M = {}

local function thousands(n)
  local s = string.format("%d", n)
  local head, digits = s:match("^(-?)(%d+)$")
  if not digits then return s end
  local out = digits:reverse():gsub("(%d%d%d)", "%1,"):reverse()
  if out:sub(1, 1) == "," then out = out:sub(2) end
  return head .. out
end

--- A duration as text: "0:07", "1:05", "1:02:03" (h:mm:ss); "?" for NaN or infinity.
-- @tparam number s seconds (>= 0)
-- @treturn string
function M.duration(s)
  if s ~= s or s == math.huge or s == -math.huge then return "?" end
  s = math.floor(s + 0.5)
  if s < 0 then s = 0 end
  local h, m, sec = math.floor(s / 3600), math.floor(s / 60) % 60, s % 60
  if h > 0 then return string.format("%d:%02d:%02d", h, m, sec) end
  return string.format("%d:%02d", m, sec)
end

--- Default threshold before a time left is shown: seconds of the phase.
M.ETA_AFTER = 2
--- Default threshold before a time left is shown: fraction of the total done.
M.ETA_FRACTION = 0.01

--- The text of one progress line.
-- @tparam table p `{label = s, unit = s, done = n, total = n, elapsed = seconds
--   since the start, phase_elapsed = seconds since the phase began (default
--   elapsed), eta_after = s, eta_fraction = f}`; done and total are numbers (total 0:
--   unknown)
-- @treturn string e.g. "importing: 120,000/2,400,000 rows (5%)  40,000 rows/s  0:03 elapsed  0:57 left"
function M.format(p)
  local done, total = p.done or 0, p.total or 0
  local elapsed = p.elapsed or 0
  local ph_el = p.phase_elapsed or elapsed
  local rate = ph_el > 0 and done / ph_el or 0
  local parts = {}
  if total > 0 then
    local pct = math.floor(done * 100 / total)
    if pct > 100 then pct = 100 end
    parts[1] = string.format("%s: %s/%s %s (%d%%)", p.label, thousands(done), thousands(total), p.unit, pct)
  else
    parts[1] = string.format("%s: %s %s", p.label, thousands(done), p.unit)
  end
  if ph_el > 0 and done > 0 then parts[#parts + 1] = string.format("%s %s/s", thousands(math.floor(rate + 0.5)), p.unit) end
  parts[#parts + 1] = M.duration(elapsed) .. " elapsed"
  if total > 0 and done < total then
    local after = p.eta_after or M.ETA_AFTER
    local frac = p.eta_fraction or M.ETA_FRACTION
    if ph_el >= after and done >= total * frac and rate > 0 then
      parts[#parts + 1] = M.duration((total - done) / rate) .. " left"
    else
      parts[#parts + 1] = "estimating"
    end
  end
  return table.concat(parts, "  ")
end

local Meter = {}
Meter.__index = Meter

--- A progress meter.
-- @tparam table opts `label` (string, required), `unit` (string, default
--   "items"), `clock` (function returning seconds; default `moraine.clock`),
--   `write` (function(text); default writes to io.stderr and flushes),
--   `interval` (seconds between redraws, default 0.1), `eta_after`,
--   `eta_fraction` (see `format`)
-- @return a meter with `update(done, total, phase)` and `finish(ok)`
-- @raise a plain error for a missing label or a clock/write that is not a function
function M.meter(opts)
  if type(opts) ~= "table" or type(opts.label) ~= "string" then
    error("moraine.progress.meter: opts.label (a string) is required", 2)
  end
  local clock = opts.clock
  if clock == nil then clock = require("moraine").clock end
  if type(clock) ~= "function" then error("moraine.progress.meter: opts.clock must be a function", 2) end
  local write = opts.write or function(s) io.stderr:write(s) io.stderr:flush() end
  if type(write) ~= "function" then error("moraine.progress.meter: opts.write must be a function", 2) end
  local t0 = clock()
  return setmetatable({ label = opts.label, unit = opts.unit or "items", clock = clock, write = write,
    interval = opts.interval or 0.1, eta_after = opts.eta_after, eta_fraction = opts.eta_fraction, t0 = t0,
    phase = opts.label, phase_t0 = t0, last = nil, width = 0, shown = false, done = 0, total = 0 }, Meter)
end

local function tonum(v)
  if type(v) == "cdata" then return tonumber(v) end
  return tonumber(v) or 0
end

--- Records progress and redraws the line when `interval` has passed since
-- the last draw (always at the first update, at a new phase and when done
-- reaches total). Returns nothing (so it can serve as a progress callback
-- that never cancels).
-- @param done units done (number or int64 cdata)
-- @param total units in all (0: not known yet)
-- @tparam[opt] string phase the label of the current phase (default: the
--   meter's label); a new phase counts its units from 0 and its rate from
--   the previous update
function Meter:update(done, total, phase)
  done, total = tonum(done), tonum(total)
  local t = self.clock()
  phase = phase or self.phase
  local new_phase = phase ~= self.phase
  if new_phase then
    -- a new phase counts its units from 0, from the previous update on
    self.phase, self.phase_t0 = phase, self.prev_t or self.t0
  end
  self.done, self.total, self.prev_t = done, total, t
  if self.last == nil or new_phase or t - self.last >= self.interval or (total > 0 and done >= total) then
    self.last = t
    self:draw(t)
  end
end

--- The current line's text at time @t (for tests; draw writes it).
function Meter:line(t)
  return M.format({ label = self.phase, unit = self.unit, done = self.done, total = self.total, elapsed = t - self.t0,
    phase_elapsed = t - self.phase_t0, eta_after = self.eta_after,
    eta_fraction = self.eta_fraction })
end

function Meter:draw(t)
  local s = self:line(t or self.clock())
  local pad = self.width > #s and string.rep(" ", self.width - #s) or ""
  self.width = #s
  self.shown = true
  self.write("\r" .. s .. pad)
end

--- Ends the line: on success "LABEL: N UNIT in 1.2s" (when anything was
-- shown), else the line is cleared.
-- @tparam boolean ok whether the work succeeded
-- @tparam[opt] number done the count to report (default: the last update's)
function Meter:finish(ok, done)
  if not self.shown then return end
  if ok then
    local s = string.format("%s: %s %s in %.1fs", self.label, thousands(tonum(done or self.done)), self.unit,
      self.clock() - self.t0)
    local pad = self.width > #s and string.rep(" ", self.width - #s) or ""
    self.write("\r" .. s .. pad .. "\n")
  else
    self.write("\r" .. string.rep(" ", self.width) .. "\r")
  end
  self.shown = false
end

return M
