--- The differential runner over the corpus of random DuckLake scenarios
-- (tests/fixtures/ducklake/corpus, its README gives the rules).
--
-- Per scenario, into a fresh catalog: the fixture's snapshot 0 (DuckLake's
-- fresh catalog: metadata, schema main) is imported; then each unit of
-- steps.ndjson in order:
-- - a unit DuckLake refused with an INTERNAL Error is skipped (a fault inside
--   DuckLake; it committed nothing);
-- - a unit of DDL runs through `db:exec` (moraine.sql); DuckLake refused it
--   iff moraine must refuse it;
-- - a unit of data statements only (INSERT, DELETE, UPDATE, CALL merge) that
--   DuckLake committed as snapshot S: the rows DuckLake wrote for S are
--   committed through the staged path (`db:commit(S)`): the snapshot and its
--   changes row, the data and delete file versions beginning at S with their
--   stats and partition values, the versions ending at S ended; the table
--   stats of the tables it touched are the fixture's (the fixture holds only
--   their last value); files_scheduled_for_deletion (no snapshot column) at
--   the scenario's last data unit;
-- - a block mixing DDL and data statements is not replayable yet (the data
--   rows would have to join the verbs' transaction): the replay stops there.
-- After each unit moraine's newest snapshot must be DuckLake's. Then every
-- catalog table is compared row for row (as multisets of rows) with
-- DuckLake's, leaving out snapshot_time, schedule_start and the uuid columns.
local moraine = require "moraine"
local sql = require "moraine.sql"
local pl_dir = require "pl.dir"
local pl_path = require "pl.path"

local R = {}

R.CORPUS = (os.getenv("MORAINE_ROOT") or ".") .. "/tests/fixtures/ducklake/corpus"

local IGNORED = { snapshot_time = true, schedule_start = true, table_uuid = true, schema_uuid = true,
                  view_uuid = true, macro_uuid = true }

local TEMPORAL_DATA = { "ducklake_data_file", "ducklake_delete_file" }
local CHILDREN = { ducklake_data_file = { "ducklake_file_column_stats", "ducklake_file_partition_value",
                                          "ducklake_file_variant_stats" } }
local STATS = { "ducklake_table_stats", "ducklake_table_column_stats" }

--- The scenarios of the corpus, sorted (directory names `seed_NNNN`).
-- @treturn {string,...}
function R.scenarios()
  local out = {}
  for _, d in ipairs(pl_dir.getdirectories(R.CORPUS)) do out[#out + 1] = pl_path.basename(d) end
  table.sort(out)
  return out
end

local function read_catalog(dir)
  local t = {}
  for _, f in ipairs(pl_dir.getfiles(dir, "*.ndjson")) do
    local name = pl_path.basename(f):match("^(.-)%.ndjson$")
    local rows, cols = moraine.read_ndjson(f)
    t[name] = { rows = rows, cols = cols }
  end
  return t
end

local function read_steps(path)
  local rows = moraine.read_ndjson(path)
  return rows
end

local function copy(row, changes)
  local r = {}
  for k, v in pairs(row) do r[k] = v end
  for k, v in pairs(changes or {}) do r[k] = v end
  return r
end

local function is(v, x) return v ~= moraine.null and v == x end

-- the column lists of every relation of a fresh catalog
local function relation_columns(tmp)
  local db = moraine.open(tmp .. "-cols", { no_sync = true })
  db:init()
  local cols = {}
  for _, rel in ipairs(db:relations()) do cols[rel.name] = rel.columns end
  db:close()
  pl_dir.rmtree(tmp .. "-cols")
  return cols
end

local function bootstrap(db, fx, relcols)
  local tables = {}
  for name, cols in pairs(relcols) do
    local t = fx[name]
    local c = (t and #t.cols > 0) and t.cols or cols
    local rows = {}
    for _, row in ipairs(t and t.rows or {}) do
      local keep
      if name == "ducklake_metadata" then keep = true
      elseif name == "ducklake_snapshot" or name == "ducklake_snapshot_changes" then keep = row.snapshot_id == 0
      elseif row.begin_snapshot ~= nil then keep = row.begin_snapshot == 0 end
      if keep then
        local r = {}
        for i, col in ipairs(c) do
          local v = row[col]
          if col == "end_snapshot" then v = moraine.null end
          r[i] = v
        end
        rows[#rows + 1] = r
      end
    end
    tables[#tables + 1] = { name = name, columns = c, rows = rows }
  end
  table.sort(tables, function(a, b) return a.name < b.name end)
  db:import_rows(tables)
end

local function ords(db, name)
  local out, n = {}, 0
  db:read(function(rd)
    for row, _, ord in rd:scan(name) do
      out[#out + 1] = { row = row, ord = ord }
      if ord >= n then n = ord + 1 end
    end
  end)
  return out, n
end

-- the rows DuckLake wrote for data snapshot S, committed through the staged path
-- (no_stats: without the table stats rows, which a merge_adjacent_files leaves)
local function commit_data(db, fx, S, last_data, no_stats)
  local touched = {}
  db:commit(S, function(tx)
    for _, name in ipairs(TEMPORAL_DATA) do
      local t = fx[name]
      if t and #t.rows > 0 then
        tx:define(name, t.cols)
        for _, row in ipairs(t.rows) do
          if is(row.end_snapshot, S) and row.begin_snapshot < S then
            tx:end_row(name, copy(row, { end_snapshot = moraine.null }))
            touched[row.table_id] = true
          end
        end
      end
    end
    local snap, ch = fx.ducklake_snapshot, fx.ducklake_snapshot_changes
    tx:define("ducklake_snapshot", snap.cols)
    for _, row in ipairs(snap.rows) do if row.snapshot_id == S then tx:insert("ducklake_snapshot", row) end end
    tx:define("ducklake_snapshot_changes", ch.cols)
    for _, row in ipairs(ch.rows) do if row.snapshot_id == S then tx:insert("ducklake_snapshot_changes", row) end end
    for _, name in ipairs(TEMPORAL_DATA) do
      local t = fx[name]
      if t and #t.rows > 0 then
        local began = {}
        for _, row in ipairs(t.rows) do
          if row.begin_snapshot == S then
            tx:insert(name, copy(row, { end_snapshot = moraine.null }))
            touched[row.table_id] = true
            if row.data_file_id ~= nil and name == "ducklake_data_file" then began[row.data_file_id] = true end
          end
        end
        for _, child in ipairs(CHILDREN[name] or {}) do
          local c = fx[child]
          if c and #c.rows > 0 then
            tx:define(child, c.cols)
            for _, row in ipairs(c.rows) do
              if began[row.data_file_id] then tx:insert(child, row) end
            end
          end
        end
      end
    end
    if not no_stats then R.write_stats(db, tx, fx, S, touched) end
    local fs = fx.ducklake_files_scheduled_for_deletion
    if last_data and fs and #fs.rows > 0 then
      tx:define("ducklake_files_scheduled_for_deletion", fs.cols)
      for i, row in ipairs(fs.rows) do tx:put_row("ducklake_files_scheduled_for_deletion", row, i - 1) end
    end
  end)
end

-- the last snapshot at which table T's data changed in DuckLake's catalog
local function last_data_change(fx, T)
  local last = -1
  for _, name in ipairs(TEMPORAL_DATA) do
    for _, row in ipairs(fx[name] and fx[name].rows or {}) do
      if row.table_id == T then
        if row.begin_snapshot > last then last = row.begin_snapshot end
        if row.end_snapshot ~= moraine.null and row.end_snapshot > last then last = row.end_snapshot end
      end
    end
  end
  return last
end

--- Writes the ducklake_table_stats / ducklake_table_column_stats rows of the
-- tables a data snapshot S touched. DuckLake's catalog holds only their last
-- value: table_column_stats get it at every data snapshot (no verb reads
-- them); table_stats get it at the table's last data change, and before that
-- are DuckLake's last value less what every file added after S added
-- (record_count, file_size_bytes and next_row_id each less the files'
-- record_count / file_size_bytes), since the data verbs of a later mixed
-- block add to them. Counting forward from the fixture's files instead would
-- miss the files a merge_adjacent_files deleted outright (seed_0024).
-- @param db the catalog
-- @param tx the staged commit of S
-- @tparam table fx the fixture's tables
-- @tparam integer S the snapshot
-- @tparam table touched table_id -> true
function R.write_stats(db, tx, fx, S, touched)
  for _, name in ipairs(STATS) do
    local t = fx[name]
    if t and #t.rows > 0 then
      tx:define(name, t.cols)
      local have, n = ords(db, name)
      local function put(row)
        for _, h in ipairs(have) do
          if h.row.table_id == row.table_id and (row.column_id == nil or h.row.column_id == row.column_id) then
            return tx:put_row(name, row, h.ord)
          end
        end
        tx:put_row(name, row, n)
        n = n + 1
      end
      for T in pairs(touched) do
        if last_data_change(fx, T) == S or name == "ducklake_table_column_stats" then
          for _, row in ipairs(t.rows) do if row.table_id == T then put(row) end end
        elseif name == "ducklake_table_stats" then
          -- DuckLake's last value less what the files added after S added
          -- (a merge_adjacent_files deletes the files it merged: a sum over
          -- the fixture's files before S would miss them)
          local final
          for _, row in ipairs(t.rows) do if row.table_id == T then final = row end end
          if final then
            local rc, nr, fs = final.record_count, final.next_row_id, final.file_size_bytes
            for _, f in ipairs(fx.ducklake_data_file.rows) do
              if f.table_id == T and f.begin_snapshot > S then
                rc, nr, fs = rc - f.record_count, nr - f.record_count, fs - f.file_size_bytes
              end
            end
            put({ table_id = T, record_count = rc, next_row_id = nr, file_size_bytes = fs })
          end
        end
      end
    end
  end
end

local function live_at(row, S)
  return row.begin_snapshot <= S and (row.end_snapshot == moraine.null or row.end_snapshot > S)
end

--- Registers through the data verbs, inside a verb transaction, the files
-- DuckLake wrote for snapshot S (a block mixing DDL and data commits one
-- snapshot: its data joins the verbs): data files beginning at S
-- (`tx:add_data_files`, with their partition values and column stats),
-- delete files beginning at S (`tx:add_delete_files`), data files ended at S
-- of tables still live (`tx:delete_files`), in the order of their ids (the
-- verbs take ids from next_file_id in call order, as DuckLake does).
-- @param tx the verb transaction
-- @tparam table fx the fixture's tables
-- @tparam integer S the snapshot
function R.register_data(tx, fx, S)
  local tables, schemas, colnames = {}, {}, {}
  for _, r in ipairs(fx.ducklake_schema.rows) do if live_at(r, S - 1) or r.begin_snapshot == S then schemas[r.schema_id] = r.schema_name end end
  for _, r in ipairs(fx.ducklake_table.rows) do
    if live_at(r, S) then tables[r.table_id] = { schema = schemas[r.schema_id], table = r.table_name } end
  end
  for _, r in ipairs(fx.ducklake_column.rows) do
    if live_at(r, S) then colnames[r.column_id .. "@" .. r.table_id] = r.column_name end
  end
  local items = {}
  for _, f in ipairs(fx.ducklake_data_file.rows) do
    if f.begin_snapshot == S then items[#items + 1] = { id = f.data_file_id, kind = "add", row = f }
    elseif f.end_snapshot == S and tables[f.table_id] then items[#items + 1] = { id = f.data_file_id, kind = "end", row = f, late = true } end
  end
  for _, d in ipairs(fx.ducklake_delete_file.rows) do
    if d.begin_snapshot == S then items[#items + 1] = { id = d.delete_file_id, kind = "del", row = d } end
  end
  table.sort(items, function(a, b)
    if (a.late or false) ~= (b.late or false) then return not a.late end
    return a.id < b.id
  end)
  local function nn(v) if v == moraine.null then return nil end return v end
  local i = 1
  while i <= #items do
    local kind, T = items[i].kind, items[i].row.table_id
    local group = {}
    while items[i] and items[i].kind == kind and items[i].row.table_id == T do
      group[#group + 1] = items[i].row
      i = i + 1
    end
    local ref = tables[T] or error("snapshot " .. S .. ": table " .. T .. " is not live in DuckLake's catalog")
    if kind == "add" then
      local files = {}
      for k, f in ipairs(group) do
        local pv, stats = nil, {}
        if f.partition_id ~= moraine.null then
          local vals = {}
          for _, v in ipairs(fx.ducklake_file_partition_value.rows) do
            if v.data_file_id == f.data_file_id then vals[#vals + 1] = v end
          end
          table.sort(vals, function(a, b) return a.partition_key_index < b.partition_key_index end)
          pv = {}
          for j, v in ipairs(vals) do pv[j] = v.partition_value end
        end
        for _, c in ipairs(fx.ducklake_file_column_stats.rows) do
          if c.data_file_id == f.data_file_id then
            stats[#stats + 1] = { column = colnames[c.column_id .. "@" .. T] or ("#" .. c.column_id),
              column_size_bytes = nn(c.column_size_bytes), value_count = nn(c.value_count),
              null_count = nn(c.null_count), min_value = nn(c.min_value), max_value = nn(c.max_value),
              contains_nan = nn(c.contains_nan) }
          end
        end
        files[k] = { path = f.path, path_is_absolute = not f.path_is_relative, file_format = nn(f.file_format),
                     record_count = f.record_count, file_size_bytes = f.file_size_bytes,
                     footer_size = nn(f.footer_size), partition_values = pv, stats = stats,
                     row_group_count = nn(f.row_group_count) }
      end
      tx:add_data_files(ref, files)
    elseif kind == "del" then
      local dels = {}
      for k, d in ipairs(group) do
        dels[k] = { data_file_id = d.data_file_id, path = d.path, format = nn(d.format), delete_count = d.delete_count,
                    file_size_bytes = d.file_size_bytes, footer_size = d.footer_size,
                    row_group_count = nn(d.row_group_count) }
      end
      tx:add_delete_files(ref, dels)
    else
      local ids = {}
      for k, f in ipairs(group) do ids[k] = f.data_file_id end
      tx:delete_files(ref, ids)
    end
  end
end

local function canon(row, cols)
  local r, order, uuids = {}, {}, {}
  for _, c in ipairs(cols) do
    if IGNORED[c] and c:find("uuid$") and type(row[c]) == "string" then uuids[#uuids + 1] = row[c] end
  end
  for _, c in ipairs(cols) do
    if not IGNORED[c] then
      local v = row[c]
      if v == nil then v = moraine.null end
      if type(v) == "string" then   -- a path made of the object's uuid
        for _, u in ipairs(uuids) do
          local a, b = v:find(u, 1, true)
          if a then v = v:sub(1, a - 1) .. "<uuid>" .. v:sub(b + 1) end
        end
      end
      r[c] = v
      order[#order + 1] = c
    end
  end
  return moraine.json_encode(r, order)
end

-- first difference between two catalogs (fixture dir vs ours), or nil
-- (skip: table name -> true, left out)
local function compare(fx, ours, skip)
  local names = {}
  for name in pairs(fx) do if not (skip and skip[name]) then names[#names + 1] = name end end
  table.sort(names)
  for _, name in ipairs(names) do
    local a, b = fx[name], ours[name] or { rows = {}, cols = {} }
    local cols = #a.cols > 0 and a.cols or b.cols
    local count = {}
    for _, row in ipairs(b.rows) do
      local k = canon(row, cols)
      count[k] = (count[k] or 0) + 1
    end
    for _, row in ipairs(a.rows) do
      local k = canon(row, cols)
      if (count[k] or 0) == 0 then
        -- moraine's rows with the same first two columns, to show what differs
        local near = {}
        for _, o in ipairs(b.rows) do
          if o[cols[1]] == row[cols[1]] and o[cols[2]] == row[cols[2]] then near[#near + 1] = canon(o, cols) end
        end
        return name .. ": DuckLake's row not in moraine's: " .. k
          .. (#near > 0 and ("\n    moraine has: " .. table.concat(near, "\n                 ")) or "")
      end
      count[k] = count[k] - 1
    end
    for _, row in ipairs(b.rows) do
      local k = canon(row, cols)
      if (count[k] or 0) > 0 then return name .. ": moraine's row not in DuckLake's: " .. k end
    end
  end
end

local function kind_of(stmts)
  local ddl, data = false, false
  for _, st in ipairs(stmts) do
    if st.kind == "data" then data = true elseif st.kind == "ddl" then ddl = true end
  end
  return ddl and data and "mixed" or data and "data" or "ddl"
end

--- Replays the steps of a scenario into a fresh catalog, up to step `upto`
-- (all when nil). The catalog stays open for the caller.
-- @tparam string name `seed_NNNN`
-- @tparam string tmp a fresh path for the catalog
-- @tparam[opt] integer upto the last step to replay
-- @tparam[opt] table opts `verbs = true`: a data unit's files go through the
--   data verbs (`R.register_data` in a verb transaction), which write the
--   table stats themselves; a `ducklake_merge_adjacent_files` unit (no verb
--   does it) is committed staged without table stats, which DuckLake's merge
--   does not write
-- @return db (open), the fixture's tables, and nil or the first replay problem
--   (a refusal that differs, a snapshot that differs, an error)
function R.replay(name, tmp, upto, opts)
  opts = opts or {}
  local dir = R.CORPUS .. "/" .. name
  local fx = read_catalog(dir .. "/catalog")
  local steps = read_steps(dir .. "/steps.ndjson")
  local relcols = relation_columns(tmp)
  local db = moraine.open(tmp, { no_sync = true })
  local ok, problem = pcall(function()
    bootstrap(db, fx, relcols)
    local last_data = 0
    for _, st in ipairs(steps) do
      if st.ok then
        local ok2, stmts = pcall(sql.parse, st.sql)
        if ok2 and kind_of(stmts) == "data" then last_data = st.step end
      end
    end
    for _, st in ipairs(steps) do
      if upto and st.step > upto then break end
      local err = st.error ~= moraine.null and st.error or nil
      if not (err and err:find("^INTERNAL Error")) then
        local okp, stmts = pcall(sql.parse, st.sql)
        local kind = okp and kind_of(stmts) or "ddl"
        local before = db:last_snapshot()
        if kind == "data" and st.ok then
          if st.snapshot ~= before then
            local merge = st.sql:find("merge_adjacent_files", 1, true) ~= nil
            local okc, e
            if opts.verbs and not merge then
              okc, e = pcall(db.transaction, db, function(tx) R.register_data(tx, fx, st.snapshot) end)
            else
              okc, e = pcall(commit_data, db, fx, st.snapshot, st.step == last_data, opts.verbs)
            end
            if not okc then return "step " .. st.step .. ": the data rows of snapshot " .. st.snapshot
              .. " do not commit: " .. tostring(e) end
          end
        elseif kind == "mixed" and st.ok then
          local ndata, seen = 0, 0
          for _, x in ipairs(stmts) do if x.kind == "data" then ndata = ndata + 1 end end
          local oke, e = pcall(db.exec, db, st.sql, { data = function(tx)
            seen = seen + 1
            if seen == ndata then R.register_data(tx, fx, st.snapshot) end
          end })
          if not oke then
            return "step " .. st.step .. ": a block of DDL and data DuckLake accepted, moraine refused: " .. tostring(e)
              .. "\n    " .. st.sql
          end
        else
          local oke, e = pcall(db.exec, db, st.sql)
          if st.ok and not oke then
            return "step " .. st.step .. ": DuckLake accepted, moraine refused: " .. tostring(e)
              .. "\n    " .. st.sql
          elseif not st.ok and oke then
            return "step " .. st.step .. ": DuckLake refused (" .. tostring(err) .. "), moraine accepted\n    " .. st.sql
          end
        end
        if db:last_snapshot() ~= st.snapshot then
          return "step " .. st.step .. ": newest snapshot " .. tostring(db:last_snapshot()) .. ", DuckLake's "
            .. tostring(st.snapshot) .. "\n    " .. st.sql
        end
      end
    end
  end)
  if not ok then problem = "replay failed: " .. tostring(problem) end
  return db, fx, problem
end

--- Replays one scenario and compares the catalogs.
-- @tparam string name `seed_NNNN`
-- @tparam string tmp a fresh path for the catalog (removed by the caller)
-- @treturn ?string nil when every table is identical, else the first difference
--   (a replay problem naming the step, or the first differing row)
function R.run(name, tmp)
  local db, fx, problem = R.replay(name, tmp)
  local staged
  if not problem then
    local ok, res = pcall(function()
      db:export_ndjson(tmp .. "-export")
      staged = read_catalog(tmp .. "-export")
      return compare(fx, staged, { ducklake_table_column_stats = true })
    end)
    if ok then problem = res else problem = "comparison failed: " .. tostring(res) end
  end
  db:close()
  if not problem then problem = R.column_stats(name, tmp, fx, staged) end
  return problem
end

--- Scenarios whose data units the verbs cannot replay, with the replay
-- problem each meets: a ducklake_merge_adjacent_files rewrote the history of
-- the files it merged (its outputs begin at the first input's snapshot and
-- carry stats of columns added after it, or replace files a later DELETE
-- names), so the files of the earlier snapshots are no longer in the fixture.
R.VERBS_UNREPLAYABLE = {
  seed_0024 = 'statistics name column "#4"',
  seed_0027 = "is not a live file",
}

--- Compares ducklake_table_column_stats with DuckLake's. They are written by
-- the data verbs from the files' stats (engine/verbs_colstats.c), so they
-- are compared on a replay with every data unit through the verbs
-- (`R.replay` with `verbs = true`): the staged path can only put DuckLake's
-- last rows at every data snapshot, a base the verbs of a later mixed block
-- would merge into wrongly. A scenario of R.VERBS_UNREPLAYABLE (its replay
-- must fail with exactly that problem) is compared on the staged replay.
-- @tparam string name `seed_NNNN`
-- @tparam string tmp the staged replay's path (the verbs' replay goes beside it)
-- @tparam table fx the fixture's tables
-- @tparam table staged the staged replay's tables
-- @treturn ?string nil when identical, else the difference or the replay problem
function R.column_stats(name, tmp, fx, staged)
  local only = { ducklake_table_column_stats = fx.ducklake_table_column_stats }
  local db, _, problem = R.replay(name, tmp .. "-verbs", nil, { verbs = true })
  local expected = R.VERBS_UNREPLAYABLE[name]
  if expected then
    db:close()
    if not (problem and problem:find(expected, 1, true)) then
      return "through the verbs: expected the replay problem '" .. expected .. "', got " .. tostring(problem)
    end
    return compare(only, staged)
  end
  if not problem then
    local ok, res = pcall(function()
      db:export_ndjson(tmp .. "-verbs-export")
      return compare(only, read_catalog(tmp .. "-verbs-export"))
    end)
    if ok then problem = res else problem = "comparison failed: " .. tostring(res) end
  end
  db:close()
  return problem and ("through the data verbs: " .. problem) or nil
end

--- The fixture's tables of a scenario (`catalog/<table>.ndjson`), each `{rows = {...}, cols = {...}}`.
-- @tparam string name `seed_NNNN`
-- @treturn table
function R.fixture(name)
  return read_catalog(R.CORPUS .. "/" .. name .. "/catalog")
end

--- The steps of a scenario (steps.ndjson rows: step, sql, ok, error, snapshot).
-- @tparam string name `seed_NNNN`
-- @treturn {table,...}
function R.steps(name)
  return read_steps(R.CORPUS .. "/" .. name .. "/steps.ndjson")
end

--- A row in canonical JSON (columns in `cols` order, snapshot_time and uuids left out).
-- @tparam table row
-- @tparam {string,...} cols
-- @treturn string
function R.canon(row, cols) return canon(row, cols) end

return R
