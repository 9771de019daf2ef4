--- moraine.push_rebase — moving moraine's unpushed snapshots onto a target
-- that moved on, as DuckLake retries a commit: new snapshot ids, catalog and
-- file ids from the new head's counters, and the conflict rule that refuses
-- (naming table and snapshots) what cannot move. moraine.push uses it;
-- docs/push.md, "Rebase".
-- @module moraine.push_rebase

local moraine = require "moraine"
local pt = require "moraine.push_target"

local NULL = moraine.null

local M = {}

local raise, is_int, int_text, vkey, rowkey = pt.raise, pt.is_int, pt.int_text, pt.vkey, pt.rowkey
local sid, sid_less, parse_changes, same_snapshot = pt.sid, pt.sid_less, pt.parse_changes, pt.same_snapshot
local target_snapshots, target_changes = pt.target_snapshots, pt.target_changes

-- ---- rebasing moraine's unpushed snapshots onto the target's new head ------------
--
-- DuckLake retries a commit whose snapshot id was taken by another writer: it
-- reads the new head, checks the other writers' changes against its own
-- (DuckLakeTransaction::CheckForConflicts, src/storage/ducklake_transaction.cpp)
-- and, when they do not conflict, writes its snapshot again above the new head
-- with the ids re-assigned from the head's counters (next_catalog_id for
-- schema, table, view, partition, sort and macro ids; next_file_id for data,
-- delete file and mapping ids). moraine keeps rows, not the statements that
-- made them, so a rebase renumbers the rows: a renumbering is a list of
-- anchors {m = moraine's snapshot row, t = the target's snapshot row it lands
-- on}; an id moraine allocated after anchor m moves by the difference of the
-- two rows' counters (snapshot ids above m by t.snapshot_id - m.snapshot_id,
-- catalog ids from m.next_catalog_id by the next_catalog_id difference, file
-- ids likewise, schema versions of the snapshots above m by the schema_version
-- difference). Ids below every anchor (the objects both sides share) stay.

local SNAP_ID_COLS = { snapshot_id = true, begin_snapshot = true, end_snapshot = true }
local CATALOG_ID_COLS = { schema_id = true, table_id = true, view_id = true, partition_id = true, sort_id = true,
  macro_id = true, object_id = true }
local FILE_ID_COLS = { data_file_id = true, delete_file_id = true, mapping_id = true }
-- the tables a rebase knows how to renumber (DuckLake 0.3/0.4's catalog); a
-- catalog with rows in any other (inlined data tables) is not rebased
local KNOWN = {}
for _, n in ipairs({ "ducklake_metadata", "ducklake_snapshot", "ducklake_snapshot_changes", "ducklake_schema",
  "ducklake_table", "ducklake_view", "ducklake_column", "ducklake_macro", "ducklake_macro_impl",
  "ducklake_macro_parameters", "ducklake_data_file", "ducklake_delete_file", "ducklake_files_scheduled_for_deletion",
  "ducklake_inlined_data_tables", "ducklake_column_mapping", "ducklake_name_mapping", "ducklake_table_stats",
  "ducklake_table_column_stats", "ducklake_file_column_stats", "ducklake_file_variant_stats",
  "ducklake_partition_info", "ducklake_partition_column", "ducklake_file_partition_value", "ducklake_sort_info",
  "ducklake_sort_expression", "ducklake_tag", "ducklake_column_tag", "ducklake_schema_versions",
  "ducklake_view_column_tag" }) do KNOWN[n] = true end
-- whether the rows of relation @rel (a table without history) each belong to
-- one table: a table_id column (the stats, the column mappings, the inlined
-- data tables), or a name mapping, whose table is its column mapping's. Such
-- tables are kept per table: moraine's rows for the tables its snapshots
-- still to write change, the target's for the others
local function per_table(rel)
  if rel.name == "ducklake_name_mapping" then return true end
  for _, c in ipairs(rel.columns) do if c == "table_id" then return true end end
  return false
end

local MAX_ATTEMPTS = 10

-- column mappings as mapping_id (sid) -> table_id: of moraine's rows (a list of {row =}) when @t is nil, else
-- of target @t's ducklake_column_mapping (none when @ttabs has no such table)
local function column_maps(entries, t, ttabs)
  local maps = {}
  if t then
    if ttabs.ducklake_column_mapping then
      for _, r in ipairs(t.select("ducklake_column_mapping", { "mapping_id", "table_id" })) do
        if r[1] ~= nil and r[1] ~= NULL then maps[sid(r[1])] = r[2] end
      end
    end
  else
    for _, en in ipairs(entries or {}) do
      if en.row.mapping_id ~= nil and en.row.mapping_id ~= NULL then maps[sid(en.row.mapping_id)] = en.row.table_id end
    end
  end
  return maps
end

-- the table (sid) a row of per_table relation @rel_name belongs to: its table_id, or a name mapping's column
-- mapping's (@maps, column_maps); nil when it has none
local function owner_of(rel_name, row, maps)
  local tid = row.table_id
  if rel_name == "ducklake_name_mapping" then
    tid = row.mapping_id ~= nil and row.mapping_id ~= NULL and maps[sid(row.mapping_id)] or nil
  end
  if tid == nil or tid == NULL then return nil end
  return sid(tid)
end

local function is_val(v) return v ~= nil and v ~= NULL end

-- an integer from a snapshot-id key or an id's text, exact on both runtimes
local function int_of(text) return moraine.json_decode(text) end

-- ---- snapshot times ----------------------------------------------------------------
--
-- DuckLake writes NOW() into a snapshot's snapshot_time on every commit attempt,
-- a retry included (its InsertSnapshot), and resolves AT (TIMESTAMP => ts) to the
-- newest snapshot whose time is at most ts. A rebased snapshot keeping its own
-- earlier time would sit below the head it lands on, and a read by time would
-- skip it. So each rebased snapshot takes the later of its own time and the time
-- of the snapshot just below it in the target plus one microsecond, in id order
-- (the first above the head, each next one above the one before): the order of
-- times follows the order of ids, and no time moves further than it must. The rule
-- depends only on the target's snapshot below (an anchor's) and moraine's own
-- times, so a re-run finds what an earlier push wrote (walk_target).

local floor = math.floor
local typed = require "moraine.typed"
local DAY_US = 86400 * 1000000

-- microseconds since 1970-01-01 UTC of a snapshot_time as DuckLake's catalogs
-- write it ("2026-11-30 15:51:47.058359+00"; moraine.typed's timestamp with
-- time zone), or nil for any other text
local function time_us(v)
  local t = typed.parse("timestamptz", v)
  return t and t.days * DAY_US + t.us or nil
end

-- a time in microseconds since 1970-01-01 UTC as DuckLake writes it ("... .058359+00")
local function time_text(us)
  local days = floor(us / DAY_US)
  local rest = us - days * DAY_US
  local secs = floor(rest / 1000000)
  local y, m, d = typed.civil_from_days(days)
  return string.format("%04d-%02d-%02d %02d:%02d:%02d.%06d+00", y, m, d, floor(secs / 3600), floor(secs % 3600 / 60),
    secs % 60, rest - secs * 1000000)
end

-- moraine's snapshots as {id =, us =} (us: the time in microseconds, nil when
-- it is not a time DuckLake writes), in id order: what R.time walks
local function snapshot_times(cat)
  local out = {}
  for _, s in ipairs(cat.order) do
    local row = cat.snaps[s].row
    out[#out + 1] = { id = row.snapshot_id, us = time_us(row.snapshot_time) }
  end
  table.sort(out, function(a, b) return a.id < b.id end)
  return out
end

local function renumbering(anchors, times)
  local R = {}
  local function last(test)
    for i = #anchors, 1, -1 do if test(anchors[i]) then return anchors[i] end end
  end
  function R.snap(v)
    if not is_int(v) then return v end
    local a = last(function(x) return v > x.m.snapshot_id end)
    if not a then return v end
    return v + (a.t.snapshot_id - a.m.snapshot_id)
  end
  function R.cat(v)
    if not is_int(v) then return v end
    local a = last(function(x) return v >= x.m.next_catalog_id end)
    if not a then return v end
    return v + (a.t.next_catalog_id - a.m.next_catalog_id)
  end
  function R.file(v)
    if not is_int(v) then return v end
    local a = last(function(x) return v >= x.m.next_file_id end)
    if not a then return v end
    return v + (a.t.next_file_id - a.m.next_file_id)
  end
  -- the schema version @v of moraine's snapshot @s
  function R.version(v, s)
    if not is_int(v) or not is_int(s) then return v end
    local a = last(function(x) return s > x.m.snapshot_id end)
    if not a then return v end
    return v + (a.t.schema_version - a.m.schema_version)
  end
  -- the snapshot_time @v of moraine's snapshot @s: walking moraine's snapshots above its anchor's up to @s in
  -- id order, each at the later of its own time and the one before plus 1 µs, the first after the anchor's
  -- target snapshot (unchanged when no time moves, or a time is not one DuckLake writes)
  function R.time(v, s)
    if not is_int(s) or not times then return v end
    local a = last(function(x) return s > x.m.snapshot_id end)
    if not a then return v end
    local cur = time_us(a.t.snapshot_time)
    if not cur then return v end
    -- the first of moraine's snapshots above the anchor's (binary search: times is in id order), then up to @s
    local lo, hi = 1, #times + 1
    while lo < hi do
      local mid = floor((lo + hi) / 2)
      if times[mid].id > a.m.snapshot_id then hi = mid else lo = mid + 1 end
    end
    for k = lo, #times do
      local q = times[k]
      if q.id > s then break end
      if not q.us then return v end
      cur = q.us > cur and q.us or cur + 1
    end
    if cur == time_us(v) then return v end
    return time_text(cur)
  end
  -- "altered_table:12,created_table:\"main\".\"t\"" with its ids renumbered
  function R.changes(text)
    if type(text) ~= "string" then return text end
    local out, changed = {}, false
    for _, c in ipairs(parse_changes(text)) do
      local v = c.value
      if v:match("^%d+$") then
        local n = tostring(int_text(R.cat(int_of(v))))
        if n ~= v then changed = true end
        v = n
      end
      out[#out + 1] = c.kind .. ":" .. v
    end
    if not changed then return text end
    return table.concat(out, ",")
  end
  function R.row(name, row)
    local out = {}
    for k, v in pairs(row) do
      if is_val(v) then
        if SNAP_ID_COLS[k] then v = R.snap(v)
        elseif CATALOG_ID_COLS[k] then v = R.cat(v)
        elseif FILE_ID_COLS[k] then v = R.file(v) end
      end
      out[k] = v
    end
    if name == "ducklake_snapshot" then
      out.snapshot_time = R.time(row.snapshot_time, row.snapshot_id)
      out.schema_version = R.version(row.schema_version, row.snapshot_id)
      out.next_catalog_id = R.cat(row.next_catalog_id)
      out.next_file_id = R.file(row.next_file_id)
    elseif name == "ducklake_schema_versions" then
      out.schema_version = R.version(row.schema_version, row.begin_snapshot)
    elseif name == "ducklake_snapshot_changes" then
      out.changes_made = R.changes(row.changes_made)
    end
    return out
  end
  return R
end

-- Where moraine's pending snapshots already are in the target: the target's
-- snapshots above C are walked in order; one equal to moraine's next pending
-- snapshot renumbered onto the snapshot before it (same snapshot row, time to
-- the microsecond, and same changes_made) is moraine's, written by an earlier
-- push that was killed or stopped before it fixed the catalog; the others are
-- foreign. Returns the anchors (the last one lands the rest on the head), the
-- index of the first pending snapshot still to write, the foreign snapshots.
local function walk_target(t, cat, C, pending)
  local targets = target_snapshots(t, nil)
  local crow_t
  local after = {}
  for _, r in ipairs(targets) do
    if sid(r.snapshot_id) == sid(C) then crow_t = r end
    if sid_less(sid(C), sid(r.snapshot_id)) then after[#after + 1] = r end
  end
  local anchors = {}
  local times = snapshot_times(cat)
  local prev_m, prev_t = cat.snaps[sid(C)].row, crow_t
  local i = 1
  local foreign = {}
  for _, X in ipairs(after) do
    local hit = false
    if i <= #pending then
      local trial = {}
      for k, a in ipairs(anchors) do trial[k] = a end
      trial[#trial + 1] = { m = prev_m, t = prev_t }
      local R = renumbering(trial, times)
      local P = cat.snaps[pending[i]]
      if same_snapshot(R.row("ducklake_snapshot", P.row), X)
        and vkey(R.changes(P.changes)) == vkey(target_changes(t, X.snapshot_id)) then
        anchors = trial
        prev_m = P.row
        i = i + 1
        hit = true
      end
    end
    if not hit then foreign[#foreign + 1] = X end
    prev_t = X
  end
  anchors[#anchors + 1] = { m = prev_m, t = prev_t }
  return anchors, i, foreign, prev_t
end

-- what one side's snapshot changes: ids (catalog ids, any kind), schemas it
-- dropped, schemas it created entries in, names it created or renamed to
local function new_side()
  return { ids = {}, dropped = {}, used = {}, names = {} }
end

local function note_changes(side, text)
  for _, c in ipairs(parse_changes(text)) do
    if c.value:match("^%d+$") then
      side.ids[c.value] = c.kind .. ":" .. c.value
      if c.kind == "dropped_schema" then side.dropped[c.value] = c.kind .. ":" .. c.value end
    end
  end
end

local OBJECT_TABLES = {
  ducklake_schema = { id = "schema_id", name = "schema_name" },
  ducklake_table = { id = "table_id", name = "table_name", schema = "schema_id" },
  ducklake_view = { id = "view_id", name = "view_name", schema = "schema_id" },
  ducklake_macro = { id = "macro_id", name = "macro_name", schema = "schema_id" },
}

-- a row of ducklake_schema/table/view/macro that begins in a snapshot of the side
local function note_object(side, name, row)
  local o = OBJECT_TABLES[name]
  local nm = row[o.name]
  if type(nm) ~= "string" then return end
  local label = name:gsub("^ducklake_", "") .. " " .. nm
  if o.schema then
    local s = sid(row[o.schema])
    side.used[s] = label
    local space = name == "ducklake_macro" and "m" or "n" -- tables and views share a name space
    side.names[space .. s .. "\0" .. nm:lower()] = label
  else
    side.names["S" .. nm:lower()] = label
  end
end

-- The conflict rule: DuckLake's CheckForConflicts refuses a commit when both
-- sides dropped the same table, view, schema or macro, created one of the same
-- name, created an entry in a schema the other dropped, or when one side
-- inserts into / deletes from / alters a table the other altered, dropped or
-- deleted from (inserts by both sides into one table pass there, as do
-- compactions of different kinds). moraine is stricter: any object (table,
-- view, schema, macro id) changed by both sides conflicts, two inserts into
-- one table included (DuckLake's retry re-assigns the rows' row_id_start from
-- the table's next_row_id; moraine does not re-run the insert), and a table
-- or view renamed to a name the other side created conflicts too.
local function check_conflicts(t, ttabs, cat, C, remaining, foreign, label_of)
  if #foreign == 0 then return end
  local theirs = {}
  for _, X in ipairs(foreign) do
    local side = new_side()
    side.changes = target_changes(t, X.snapshot_id)
    note_changes(side, side.changes)
    theirs[sid(X.snapshot_id)] = side
  end
  for name, o in pairs(OBJECT_TABLES) do
    local ti = ttabs[name]
    if ti then
      local cols = { "begin_snapshot", o.id, o.name }
      if o.schema then cols[#cols + 1] = o.schema end
      for _, r in ipairs(t.select(name, cols, "begin_snapshot > " .. int_text(C))) do
        local side = theirs[sid(r[1])]
        if side then
          local row = {}
          for k, c in ipairs(cols) do row[c] = r[k] end
          note_object(side, name, row)
        end
      end
    end
  end
  -- moraine's side, from its change lists and its rows (ids in the target's numbering)
  local mine = {}
  local is_mine = {}
  for _, s in ipairs(remaining) do
    local side = new_side()
    side.changes = cat.snaps[s].changes
    note_changes(side, side.changes)
    mine[s] = side
    is_mine[s] = side
  end
  for _, rel in ipairs(cat.rels) do
    local o = OBJECT_TABLES[rel.name]
    for _, en in ipairs(cat.rows[rel.name] or {}) do
      local row = en.row
      local b = is_val(row.begin_snapshot) and is_mine[sid(row.begin_snapshot)]
      local e = is_val(row.end_snapshot) and is_mine[sid(row.end_snapshot)]
      for _, side in ipairs({ b or false, e or false }) do
        if side then
          if is_val(row.table_id) then side.ids[sid(row.table_id)] = side.ids[sid(row.table_id)]
            or (rel.name .. " row of table_id " .. sid(row.table_id)) end
          if o and is_val(row[o.id]) then side.ids[sid(row[o.id])] = side.ids[sid(row[o.id])]
            or (rel.name .. " row " .. sid(row[o.id])) end
        end
      end
      if o and b then note_object(b, rel.name, row) end
    end
  end
  for _, X in ipairs(foreign) do
    local th = theirs[sid(X.snapshot_id)]
    for _, s in ipairs(remaining) do
      local my = mine[s]
      local what
      for id, w in pairs(my.ids) do
        if th.ids[id] then what = label_of(id) .. " (moraine: " .. w .. ", the target: " .. th.ids[id] .. ")" break end
      end
      if not what then
        for k, w in pairs(my.names) do
          if th.names[k] then what = "the name of " .. w .. " (created or renamed to by both)" break end
        end
      end
      if not what then
        for id, w in pairs(my.used) do
          if th.dropped[id] then what = label_of(id) .. ", dropped there, where moraine's " .. w .. " is" break end
        end
      end
      if not what then
        for id, w in pairs(th.used) do
          if my.dropped[id] then what = label_of(id) .. ", dropped by moraine, where the target's " .. w .. " is" break end
        end
      end
      if what then
        raise("ECONFLICT", "push: %s moved on: its snapshot %s (%s) changed %s, which moraine's unpushed snapshot "
          .. "%s (%s) also changes; moraine rebases its snapshots only onto snapshots that change other tables "
          .. "(DuckLake's conflict rule, made stricter: docs/push.md); nothing written", t.path,
          int_text(X.snapshot_id), tostring(th.changes == NULL and "" or th.changes), what,
          cat.snaps[s].orig or s, tostring(my.changes == NULL and "" or my.changes))
      end
    end
  end
end

-- The rebase plan: moraine's catalog with every row renumbered onto the
-- target (a table like read_catalog's), the pending snapshots still to write
-- (in the target's numbering), the head they go on. Raises ECONFLICT (a
-- conflict, or a table without history both sides changed) or EINVAL (rows
-- in a table the rebase does not know) before anything is written.
local function rebase_plan(t, ttabs, cat, C, pending)
  for _, rel in ipairs(cat.rels) do
    if not KNOWN[rel.name] and #(cat.rows[rel.name] or {}) > 0 then
      raise("EINVAL", "push: %s moved on and the catalog has rows in %s, which a rebase does not renumber "
        .. "(inlined data); nothing written (bring the target's snapshots into a new catalog and run the "
        .. "migration there)", t.path, rel.name)
    end
  end
  local anchors, first, foreign, head = walk_target(t, cat, C, pending)
  local R = renumbering(anchors, snapshot_times(cat))
  local c2 = { snaps = {}, order = {}, rels = cat.rels, rows = {}, names_by_id = {} }
  for _, s in ipairs(cat.order) do
    local sn = cat.snaps[s]
    local row = R.row("ducklake_snapshot", sn.row)
    local k = sid(row.snapshot_id)
    local ch = {}
    for j, r in ipairs(sn.change_rows or {}) do ch[j] = R.row("ducklake_snapshot_changes", r) end
    c2.snaps[k] = { row = row, changes = ch[1] and ch[1].changes_made or NULL, change_rows = ch, orig = s }
    c2.order[#c2.order + 1] = k
  end
  for name, entries in pairs(cat.rows) do
    local list = {}
    for j, en in ipairs(entries) do
      local kids = {}
      for cn, crows in pairs(en.children or {}) do
        local l = {}
        for x, cr in ipairs(crows) do l[x] = R.row(cn, cr) end
        kids[cn] = l
      end
      list[j] = { row = R.row(name, en.row), children = kids, ord = en.ord }
    end
    c2.rows[name] = list
  end
  for id, nm in pairs(cat.names_by_id) do c2.names_by_id[sid(R.cat(int_of(id)))] = nm end
  local remaining = {}
  for j = first, #pending do
    remaining[#remaining + 1] = sid(R.snap(int_of(pending[j])))
  end
  local function label_of(id)
    local nm = c2.names_by_id[id]
    return nm and ("table " .. nm .. " (table_id " .. id .. ")") or ("the object of catalog id " .. id)
  end
  check_conflicts(t, ttabs, c2, C, remaining, foreign, label_of)
  -- the tables without history: per table for the stats, equal for the rest. Moraine's stats for the tables
  -- its snapshots still to write change; the target's for the others, those its written snapshots changed
  -- included (each of their transactions wrote moraine's stats of the tables it changed, and a writer that
  -- committed after one of them since updated the target's: push.lua's step 5)
  local ours = {}
  for j = first, #pending do ours[sid(R.snap(int_of(pending[j])))] = true end
  local mine_tables = {}
  for _, rel in ipairs(cat.rels) do
    for _, en in ipairs(c2.rows[rel.name] or {}) do
      local row = en.row
      if is_val(row.table_id) and ((is_val(row.begin_snapshot) and ours[sid(row.begin_snapshot)])
        or (is_val(row.end_snapshot) and ours[sid(row.end_snapshot)])) then
        mine_tables[sid(row.table_id)] = true
      end
    end
  end
  for _, rel in ipairs(cat.rels) do
    local has = {}
    for _, c in ipairs(rel.columns) do has[c] = true end
    local ti = ttabs[rel.name]
    if rel.placement == "rows" and not has.begin_snapshot and ti and #ti.columns > 0 then
      local cols = {}
      for _, c in ipairs(ti.columns) do if has[c] then cols[#cols + 1] = c end end
      local theirs = {}
      for _, r in ipairs(t.select(rel.name, cols)) do
        local row = {}
        for k, c in ipairs(cols) do row[c] = r[k] end
        theirs[#theirs + 1] = row
      end
      if per_table(rel) then
        -- each side's rows by their own table (a name mapping's: its side's column mapping's)
        local named = rel.name == "ducklake_name_mapping"
        local my_maps = named and column_maps(c2.rows.ducklake_column_mapping) or {}
        local their_maps = named and column_maps(nil, t, ttabs) or {}
        local list = {}
        for _, en in ipairs(c2.rows[rel.name] or {}) do
          local o = owner_of(rel.name, en.row, my_maps)
          if o and mine_tables[o] then list[#list + 1] = en end
        end
        for _, row in ipairs(theirs) do
          local o = owner_of(rel.name, row, their_maps)
          if not (o and mine_tables[o]) then list[#list + 1] = { row = row, children = {} } end
        end
        c2.rows[rel.name] = list
      else
        local count = {}
        local function key(row)
          local vals = {}
          for k, c in ipairs(cols) do vals[k] = row[c] end
          return rowkey(vals, #cols)
        end
        for _, row in ipairs(theirs) do local k = key(row) count[k] = (count[k] or 0) + 1 end
        local same = #theirs == #(c2.rows[rel.name] or {})
        for _, en in ipairs(c2.rows[rel.name] or {}) do
          local k = key(en.row)
          if not count[k] or count[k] == 0 then same = false break end
          count[k] = count[k] - 1
        end
        if not same then
          raise("ECONFLICT", "push: %s moved on and its %s differs from the catalog's; that table keeps no "
            .. "history, so moraine cannot tell which side changed it and does not rebase; nothing written",
            t.path, rel.name)
        end
      end
    end
  end
  return c2, remaining, head.snapshot_id, first - 1
end

--- `rebase_plan(t, ttabs, cat, C, pending)`: moraine's pending snapshots renumbered onto the target's head, or ECONFLICT naming table and snapshots.
M.rebase_plan = rebase_plan
--- `per_table(rel)`: whether the rows of table without history `rel` each belong to one table (kept per table).
M.per_table = per_table
--- `column_maps(entries)` / `column_maps(nil, t, ttabs)`: mapping_id (text) -> table_id of moraine's column
-- mapping rows (a list of `{row =}`) or of target `t`'s.
M.column_maps = column_maps
--- `owner_of(rel_name, row, maps)`: the table_id (text) a row of a per-table relation belongs to, or nil.
M.owner_of = owner_of
--- How many times a push starts again on a new head when a writer commits during it.
M.MAX_ATTEMPTS = MAX_ATTEMPTS

return M
