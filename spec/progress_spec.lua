-- moraine.progress: the progress line of long work, driven by a fake clock
-- (every time and rate below follows from the clock values given).
local moraine = require "moraine"
local progress = require "moraine.progress"

-- A clock that returns what the test sets, and a writer that keeps the text.
local function fake()
  local f = { t = 100.0, text = {} }
  f.clock = function() return f.t end
  f.write = function(s) f.text[#f.text + 1] = s end
  f.last = function() return (f.text[#f.text]:gsub("^\r", ""):gsub("%s+$", "")) end
  return f
end

describe("moraine.progress", function()
  it("moraine.clock is monotonic wall-clock time, not CPU time", function()
    local a = moraine.clock()
    assert.are.equal("number", type(a))
    local c0 = os.clock()
    os.execute("sleep 0.2") -- waiting uses no CPU: os.clock barely moves, the wall clock does
    local b = moraine.clock()
    assert.is_true(b - a >= 0.19, "wall clock moved " .. (b - a))
    assert.is_true(os.clock() - c0 < 0.1)
    assert.is_true(moraine.clock() >= b)
  end)

  it("formats durations as m:ss and h:mm:ss", function()
    assert.are.equal("0:00", progress.duration(0))
    assert.are.equal("0:07", progress.duration(7.4))
    assert.are.equal("1:05", progress.duration(65))
    assert.are.equal("1:02:03", progress.duration(3723))
    assert.are.equal("?", progress.duration(0 / 0))
    assert.are.equal("?", progress.duration(math.huge))
  end)

  it("shows progress from the first update, with no time left until enough is done to estimate", function()
    local f = fake()
    local m = progress.meter({ label = "importing", unit = "rows", clock = f.clock, write = f.write })
    m:update(0, 2400000)
    assert.are.equal("importing: 0/2,400,000 rows (0%)  0:00 elapsed  estimating", f.last())
    -- 1 s in, 12,000 rows (0.5%): too early for an estimate (the default needs 2 s and 1%)
    f.t = 101.0
    m:update(12000, 2400000)
    assert.are.equal("importing: 12,000/2,400,000 rows (0%)  12,000 rows/s  0:01 elapsed  estimating", f.last())
    -- 3 s in, 24,000 rows: 1% done but the rate is 8,000 rows/s: 297 s left
    f.t = 103.0
    m:update(24000, 2400000)
    assert.are.equal("importing: 24,000/2,400,000 rows (1%)  8,000 rows/s  0:03 elapsed  4:57 left", f.last())
    -- halfway at 150 s: 2,400,000 - 1,200,000 rows at 8,000 rows/s = 150 s left
    f.t = 250.0
    m:update(1200000, 2400000)
    assert.are.equal("importing: 1,200,000/2,400,000 rows (50%)  8,000 rows/s  2:30 elapsed  2:30 left", f.last())
    f.t = 400.0
    m:update(2400000, 2400000)
    assert.are.equal("importing: 2,400,000/2,400,000 rows (100%)  8,000 rows/s  5:00 elapsed", f.last())
    m:finish(true)
    assert.are.equal("\rimporting: 2,400,000 rows in 300.0s", (f.text[#f.text]:gsub(" +\n$", "")))
    assert.truthy(f.text[#f.text]:match("\n$"))
  end)

  it("redraws at most every interval, but always at a new phase and at the end", function()
    local f = fake()
    local m = progress.meter({ label = "x", unit = "rows", clock = f.clock, write = f.write, interval = 0.5 })
    m:update(1, 10)
    f.t = f.t + 0.1
    m:update(2, 10)
    assert.are.equal(1, #f.text)
    f.t = f.t + 0.5
    m:update(3, 10)
    assert.are.equal(2, #f.text)
    m:update(10, 10)
    assert.are.equal(3, #f.text)
  end)

  it("an unknown total (0) shows count, rate and elapsed time only; a new phase restarts the rate", function()
    local f = fake()
    local m = progress.meter({ label = "importing", unit = "rows", clock = f.clock, write = f.write })
    f.t = 104.0
    m:update(400000, 0, "checking")
    assert.are.equal("checking: 400,000 rows  100,000 rows/s  0:04 elapsed", f.last())
    -- the import phase begins after the last check update (at 104 s): its rate counts from there
    f.t = 106.0
    m:update(10000, 400000, "importing")
    assert.are.equal("importing: 10,000/400,000 rows (2%)  5,000 rows/s  0:06 elapsed  1:18 left", f.last())
    m:finish(false)
    assert.truthy(f.text[#f.text]:match("^\r +\r$"))
  end)

  it("the estimate thresholds can be set; bad options are refused", function()
    local f = fake()
    local m = progress.meter({ label = "d", unit = "rows", clock = f.clock, write = f.write, eta_after = 0,
      eta_fraction = 0 })
    f.t = 101
    m:update(1, 11)
    assert.are.equal("d: 1/11 rows (9%)  1 rows/s  0:01 elapsed  0:10 left", f.last())
    assert.has_error(function() progress.meter({}) end)
    assert.has_error(function() progress.meter({ label = "x", clock = 5 }) end)
    -- nothing shown: finish writes nothing
    local g = fake()
    progress.meter({ label = "y", clock = g.clock, write = g.write }):finish(true)
    assert.are.equal(0, #g.text)
  end)
end)
