--- db:release_pages (moraine_release_pages): a bulk writer's resident set
-- does not grow with the store, and dropping the map's pages loses nothing,
-- not even under an open read.
local moraine = require "moraine"
local support = require "support"

-- this process's RssFile (file pages it has mapped), in KiB, from /proc
local function rss_file_kib()
  local f = assert(io.open("/proc/self/status"))
  local s = f:read("a")
  f:close()
  return tonumber(s:match("RssFile:%s*(%d+) kB"))
end

local ROWS, WIDTH = 3000, 2048 -- about 6 MiB of values

-- a catalog with one non-versioned relation of ROWS rows of WIDTH bytes each
-- (every byte value, so a page read back wrong could not pass)
local function big_catalog()
  local dir = support.tmpdir("release")
  local db = moraine.open(dir, { no_sync = true })
  db:commit(nil, function(tx)
    tx:define("blob", { "k", "v" })
    for i = 1, ROWS do
      local b = {}
      for j = 1, WIDTH do b[j] = string.char((i * 31 + j) % 256) end
      tx:put_row("blob", { k = i, v = table.concat(b) }, i)
    end
  end)
  db:close()
  return dir
end

local function all_rows(rd)
  local out = {}
  for row in rd:scan("blob") do out[#out + 1] = row.k .. ":" .. row.v end
  return out
end

describe("db:release_pages", function()
  after_each(support.cleanup)

  it("drops the pages a read mapped, and the rows read back the same", function()
    local dir = big_catalog()
    local db = moraine.open(dir)
    local first
    db:read(function(rd) first = all_rows(rd) end)
    assert.equal(ROWS, #first)
    local mapped = rss_file_kib()
    assert.is_true(db:release_pages())
    local after = rss_file_kib()
    -- the store's ~6 MiB were mapped by the read; at least 4 MiB are gone
    assert.is_true(mapped - after >= 4096, ("RssFile %d kB before, %d kB after"):format(mapped, after))
    local again
    db:read(function(rd) again = all_rows(rd) end)
    assert.same(first, again)
    db:close()
  end)

  it("does not disturb an open read: its rows read back the same after the release", function()
    local dir = big_catalog()
    local db = moraine.open(dir)
    db:read(function(rd)
      local before = all_rows(rd)
      db:release_pages()
      assert.same(before, all_rows(rd))
    end)
    db:close()
  end)

  it("leaves a write in progress and its commit whole", function()
    local dir = big_catalog()
    local db = moraine.open(dir, { no_sync = true })
    db:read(function(rd) all_rows(rd) end)
    db:commit(nil, function(tx)
      tx:put_row("blob", { k = ROWS + 1, v = "new" }, ROWS + 1)
      db:release_pages()
      tx:put_row("blob", { k = ROWS + 2, v = "newer" }, ROWS + 2)
    end)
    db:close()
    db = moraine.open(dir)
    local rows
    db:read(function(rd) rows = all_rows(rd) end)
    assert.equal(ROWS + 2, #rows)
    assert.equal((ROWS + 2) .. ":newer", rows[#rows])
    db:close()
  end)

  it("lets a compaction copy a store without keeping its pages mapped", function()
    local dir = big_catalog()
    local db = moraine.open(dir)
    local before = rss_file_kib() -- nothing of the store read yet
    db:compact(dir .. "-copy")
    local after = rss_file_kib()
    -- the copy walked every value (~6 MiB) and unmapped them after its batch
    assert.is_true(after - before < 2048, ("RssFile %d kB before, %d kB after"):format(before, after))
    db:close()
    local copy = moraine.open(dir .. "-copy")
    local a, b
    copy:read(function(rd) a = all_rows(rd) end)
    copy:close()
    db = moraine.open(dir)
    db:read(function(rd) b = all_rows(rd) end)
    db:close()
    assert.equal(ROWS, #a)
    assert.same(b, a)
    support.remove(dir .. "-copy")
  end)

  it("is refused on a closed catalog", function()
    local dir = big_catalog()
    local db = moraine.open(dir)
    db:close()
    assert.has_error(function() db:release_pages() end)
  end)
end)
