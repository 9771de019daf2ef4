-- scenario.lua — what the scenario scripts beside it share: the tables a script states its data
-- files in, turned into moraine's verb arguments, and the frame that opens a new catalog, runs
-- each statement as one transaction, logs it, and either builds into a directory given on the
-- command line or returns build(dir, log) to a program that loads the script with dofile.
local moraine = require "moraine"
local N = moraine.null

local M = { N = N }

-- The row_group_count of every data and delete file DuckLake wrote in these
-- scenarios (tests/fixtures/ducklake/*/catalog: each file is one Parquet row group).
local ROW_GROUPS = 1

--- {path, record_count, file_size_bytes, footer_size, {partition values}, {{column,
-- column_size_bytes, value_count, null_count, min_value, max_value, contains_nan}, ...}
-- [, row_group_count]} -> moraine data files (`tx:add_data_files`'s list); moraine.null
-- leaves a field out; row_group_count left out is 1, what DuckLake wrote.
function M.files(list)
  local out = {}
  for i, f in ipairs(list) do
    local stats = {}
    for j, s in ipairs(f[6]) do
      local st = { column = s[1], column_size_bytes = s[2], value_count = s[3], null_count = s[4] }
      if s[5] ~= N then st.min_value = s[5] end
      if s[6] ~= N then st.max_value = s[6] end
      if s[7] ~= N then st.contains_nan = s[7] end
      stats[j] = st
    end
    out[i] = { path = f[1], record_count = f[2], file_size_bytes = f[3], partition_values = f[5], stats = stats,
      row_group_count = f[7] or ROW_GROUPS }
    if f[4] ~= N then out[i].footer_size = f[4] end
  end
  return out
end

--- {data_file_id, path, delete_count, file_size_bytes, footer_size[, row_group_count]} ->
-- moraine delete files (`tx:add_delete_files`'s list); row_group_count left out is 1.
function M.deletes(list)
  local out = {}
  for i, d in ipairs(list) do
    out[i] = { data_file_id = d[1], path = d[2], delete_count = d[3], file_size_bytes = d[4], footer_size = d[5],
      row_group_count = d[6] or ROW_GROUPS }
  end
  return out
end

--- The scenario @name (its file is NAME.lua): @body(run, db) states it, calling
-- run(sql, fn, opts) for each statement (fn(tx) writes it as verbs in one transaction; a refusal
-- is logged and returned as nil, err). Run as a script, builds into the directory given and prints
-- where (none given: into a new directory under $TMPDIR, removed at the end); loaded with dofile, returns build(dir, log), which builds into
-- the new directory dir, logs each statement through log (default print) and returns the open db.
function M.main(name, body)
  local function build(dir, logger)
    local log = logger or print
    local db = moraine.open(dir, { no_sync = true })
    db:init("data/") -- refuses a directory that already holds a catalog
    local function run(sql, fn, opts)
      local ok, snap = pcall(db.transaction, db, fn, opts)
      if not ok then
        log(("%-70s refused: %s"):format(sql, tostring(snap)))
        return nil, snap
      end
      log(("%-70s %s"):format(sql, snap and ("snapshot " .. snap) or "no snapshot (nothing changed)"))
      return snap
    end
    body(run, db)
    return db
  end
  if arg and arg[0] and arg[0]:match(name .. "%.lua$") then
    local dir = arg[1]
    if dir then
      -- the directory given: the catalog stays there
      os.remove(dir)
      build(dir):close()
      print("catalog written to " .. dir)
    else
      -- none given: a fresh directory under $TMPDIR (else /tmp), removed at the end
      local p = assert(io.popen('mktemp -d "${TMPDIR:-/tmp}/moraine-' .. name .. '.XXXXXX"'))
      local work = assert(p:read("l"), "mktemp failed")
      p:close()
      local ok, err = pcall(function()
        local db = build(work .. "/catalog.moraine")
        print(("catalog built (last snapshot %s) in %s/catalog.moraine, removed as this example ends: give a "
          .. "directory to keep it"):format(tostring(db:last_snapshot()), work))
        db:close()
      end)
      os.execute("rm -rf '" .. work:gsub("'", "'\\''") .. "'")
      if not ok then error(err, 0) end
    end
  end
  return build
end

return M
