--- The past a sync round compares and rewrites (moraine.sync, docs/sync.md
-- "How sync replays the past"): which tables a round with new snapshots must
-- compare (from their change lists), and the rewrites of history the source
-- made at or below the catalog's last snapshot: versions deleted outright,
-- inserted with an earlier begin, snapshots removed by expiry.
-- @module moraine.sync_rewrite
local moraine = require "moraine"
local sync_source = require "moraine.sync_source"

local NULL = moraine.null
local CHILD = sync_source.CHILD
local vform, ilt, inum = sync_source.vform, sync_source.ilt, sync_source.inum
local same_int = sync_source.same_int

local M = {}

-- What the source changed at or below the catalog's last snapshot @from, found
-- by comparing the two sides' versions table by table (see "How sync replays
-- the past"). A version's form is its row (a source row's end_snapshot above
-- @from read as NULL: the catalog learns of that end when it replays the
-- snapshot) followed by the forms of its children, sorted.

-- the child tables of each parent table, by parent name
local CHILDREN_OF = {}
for child, c in pairs(CHILD) do
  CHILDREN_OF[c.parent] = CHILDREN_OF[c.parent] or {}
  table.insert(CHILDREN_OF[c.parent], child)
end
for _, l in pairs(CHILDREN_OF) do table.sort(l) end

local function children_form(kids, tables)
  if not kids or #kids == 0 then return "" end
  local forms = {}
  for i, k in ipairs(kids) do
    local t = tables[k.name]
    forms[i] = k.name .. "\2" .. sync_source.row_form(k.row, t and t.columns or {})
  end
  table.sort(forms)
  return "\1" .. table.concat(forms, "\1")
end

-- The version's key in its parent's terms: the values of @cols, joined.
local function key_form(row, cols)
  local k = {}
  for i, c in ipairs(cols) do k[i] = vform(row[c]) end
  return table.concat(k, "\0")
end

-- The rewrites of one table @t: deletes (catalog versions the source lacks)
-- appended to @out.deletes, inserts (source versions the catalog lacks, with
-- their children) to @out.inserts.
-- The catalog's rows of @name (every version), restricted to the table ids
-- @ids (an array; nil: all): fn(row, children, ord) for each.
local function scan_catalog(rd, name, ids, fn)
  if not ids then
    for row, children, ord in rd:scan(name, { at = moraine.ALL }) do fn(row, children, ord) end
    return
  end
  for _, id in ipairs(ids) do
    local ok, it, st, ctl = pcall(rd.scan, rd, name, { at = moraine.ALL, table_id = id })
    if ok then
      for row, children, ord in it, st, ctl do fn(row, children, ord) end
    else -- a relation not keyed by table_id first (EINVAL): every row, filtered
      if not (moraine.is_error(it) and it.code == "EINVAL") then error(it, 0) end
      for row, children, ord in rd:scan(name, { at = moraine.ALL }) do
        if row.table_id ~= nil and row.table_id ~= NULL and same_int(row.table_id, id) then fn(row, children, ord) end
      end
    end
  end
end

-- @ids: nil (every row of @t) or an array of table ids (the rows of those
-- tables only, on both sides: @t has a table_id column)
local function table_rewrites(db, src, tables, t, from, out, ids)
  local name, cols = t.name, t.columns
  local snapshot = t.placement == "snapshot"
  local bcol = snapshot and "snapshot_id" or "begin_snapshot"
  local kids_of = {}
  for _, child in ipairs(CHILDREN_OF[name] or {}) do
    local ct = tables[child]
    if ct then kids_of[#kids_of + 1] = ct end
  end
  -- the catalog's versions, by form
  local have, nhave = {}, 0
  if db:relation(name) then
    db:read(function(rd)
      scan_catalog(rd, name, ids, function(row, children, ord)
        local kids = {}
        for _, ct in ipairs(kids_of) do
          for _, k in ipairs(children and children[ct.name] or {}) do kids[#kids + 1] = { name = ct.name, row = k } end
        end
        local f = sync_source.row_form(row, cols) .. children_form(kids, tables)
        local l = have[f]
        if not l then
          l = {}
          have[f] = l
        end
        l[#l + 1] = { row = row, ord = ord }
        nhave = nhave + 1
      end)
    end)
  end
  -- the source's children of versions at or below from, by parent key and begin
  local kids = {}
  for _, ct in ipairs(kids_of) do
    local c = CHILD[ct.name]
    for row, pos, pb in src:select(ct, { kind = "child", parent = name, keys = c.keys, parent_column = bcol,
      lo = -1, hi = from, table_ids = ids }) do
      local pk = key_form(row, c.keys) .. "\0" .. vform(pb)
      local l = kids[pk]
      if not l then
        l = {}
        kids[pk] = l
      end
      l[#l + 1] = { name = ct.name, row = row, ord = pos }
    end
  end
  local pkeys = #kids_of > 0 and CHILD[kids_of[1].name].keys or nil
  for row, pos in src:select(t, { kind = "id", column = bcol, lo = -1, hi = from, table_ids = ids }) do
    local r = row
    if not snapshot and row.end_snapshot ~= NULL and ilt(from, row.end_snapshot) then
      r = {}
      for k, v in pairs(row) do r[k] = v end
      r.end_snapshot = NULL
    end
    local mine = pkeys and kids[key_form(r, pkeys) .. "\0" .. vform(r[bcol])] or nil
    local f = sync_source.row_form(r, cols) .. children_form(mine, tables)
    local l = have[f]
    if l and #l > 0 then
      l[#l] = nil
    else
      local ch = {}
      for i, k in ipairs(mine or {}) do ch[i] = { name = k.name, row = k.row, ord = k.ord } end
      out.inserts[#out.inserts + 1] = { name = name, row = r, ord = pos, children = ch }
    end
  end
  if nhave > 0 then
    for _, l in pairs(have) do
      for _, e in ipairs(l) do out.deletes[#out.deletes + 1] = { name = name, row = e.row, ord = e.ord } end
    end
  end
end

-- ---- which tables a round compares --------------------------------------------------
-- DuckLake changes the past only (a) when it expires snapshots (the source's
-- snapshot ids at or below L are then fewer than the catalog's), (b) inside a
-- new snapshot whose ducklake_snapshot_changes names the table by id
-- (merge_adjacent / compacted_table, a DELETE replacing a delete file:
-- deleted_from_table, flushed_inlined, ...; an INSERT, ALTER or DROP only
-- begins and ends versions at the new snapshot), (c) in the non-versioned
-- ducklake_files_scheduled_for_deletion (made equal every round anyway).

-- the change kinds whose value is a table id and with which a rewrite of
-- that table's past may come (a DELETE replacing a delete file, a flush of
-- inlined data, a compaction or merge)
local ID_KINDS = {}
for _, k in ipairs({ "deleted_from_table", "tables_deleted_from", "inlined_delete", "flushed_inlined",
  "compacted_table", "merge_adjacent" }) do ID_KINDS[k] = true end
-- the change kinds whose value is a table id and which only begin or end
-- versions at the new snapshot (an INSERT adds files that begin there; an
-- ALTER or DROP ends and begins rows there): the ordinary replay brings
-- them, nothing of the past is compared (a plain append stays cheap)
local APPEND_KINDS = {}
for _, k in ipairs({ "inserted_into_table", "tables_inserted_into", "inlined_insert", "altered_table",
  "dropped_table" }) do APPEND_KINDS[k] = true end
-- the change kinds that name no table and rewrite no past version (a
-- schema, view or macro created, altered or dropped: rows begun or ended at
-- the new snapshot, which the ordinary replay brings)
local NAME_KINDS = {}
for _, k in ipairs({ "created_schema", "created_table", "created_view", "created_scalar_macro",
  "created_table_macro", "dropped_schema", "dropped_view", "altered_view", "dropped_scalar_macro",
  "dropped_table_macro" }) do NAME_KINDS[k] = true end

--- The tokens of a changes_made value: comma-separated outside double quotes
-- (DuckLake quotes names, doubling a quote inside).
-- @tparam string s the value
-- @treturn ?{string,...} the tokens, or nil when a quote is left open
function M.change_tokens(s)
  local out, cur, quoted, i = {}, {}, false, 1
  while i <= #s do
    local ch = s:sub(i, i)
    if quoted then
      if ch == '"' and s:sub(i + 1, i + 1) == '"' then
        cur[#cur + 1] = '""'
        i = i + 1
      elseif ch == '"' then
        quoted = false
        cur[#cur + 1] = ch
      else
        cur[#cur + 1] = ch
      end
    elseif ch == '"' then
      quoted = true
      cur[#cur + 1] = ch
    elseif ch == "," then
      out[#out + 1] = table.concat(cur)
      cur = {}
    else
      cur[#cur + 1] = ch
    end
    i = i + 1
  end
  if quoted then return nil end
  out[#out + 1] = table.concat(cur)
  return out
end

--- The scope of the comparison when the round has new snapshots and no
-- expiry: the table ids their changes name, or "all" and why when the new
-- snapshots do not tell (a snapshot id missing in (from, newest]: one expired
-- above the catalog's last; a commit id without its snapshot; a snapshot
-- without changes; a change kind not known to name its table).
-- @param src the source (moraine.sync_source)
-- @tparam table tables the source's tables by name
-- @param from the catalog's last snapshot id
-- @param newest the source's newest snapshot id
-- @tparam table ids the round's commit ids
-- @treturn table|string a set inum -> table id, or "all"
-- @treturn ?string why "all"
function M.scope_of_new(src, tables, from, newest, ids)
  local st, ct = tables.ducklake_snapshot, tables.ducklake_snapshot_changes
  if not st or not ct or newest == nil then return "all", "the source has no snapshot changes" end
  local seen, n = {}, 0
  for row in src:select(st, { kind = "id", column = "snapshot_id", lo = from, hi = newest }) do
    seen[inum(row.snapshot_id)] = true
    n = n + 1
  end
  -- every changes row read first (an iterator left early keeps its cursor)
  local changes = {}
  for row in src:select(ct, { kind = "id", column = "snapshot_id", lo = from, hi = newest }) do
    changes[#changes + 1] = row
  end
  if tonumber(moraine.int64(newest) - from) ~= n then
    return "all", "a snapshot above the catalog's last was expired at the source"
  end
  for _, id in ipairs(ids) do
    if not seen[inum(id)] then return "all", "commit id " .. inum(id) .. " has no snapshot" end
  end
  local set, told = {}, {}
  for _, row in ipairs(changes) do
    local made = row.changes_made
    if type(made) ~= "string" then return "all", "snapshot " .. inum(row.snapshot_id) .. " lists no changes" end
    local toks = M.change_tokens(made)
    if not toks then return "all", "snapshot " .. inum(row.snapshot_id) .. ": unreadable changes" end
    for _, tok in ipairs(toks) do
      local kind, val = tok:match("^([%a_]+):(.*)$")
      if kind and ID_KINDS[kind] and val:match("^%d+$") and #val <= 18 then
        local id = sync_source.parse_int(val)
        set[inum(id)] = id
      elseif not (kind and (NAME_KINDS[kind] or (APPEND_KINDS[kind] and val:match("^%d+$")))) then
        return "all", "snapshot " .. inum(row.snapshot_id) .. ": change '" .. tok .. "' names no table"
      end
    end
    told[inum(row.snapshot_id)] = true
  end
  for k in pairs(seen) do
    if not told[k] then return "all", "snapshot " .. k .. " has no ducklake_snapshot_changes row" end
  end
  return set
end

-- the table id of an inlined-data table of DuckLake
-- (ducklake_inlined_data_<table_id>_<schema_version>), or nil
local function inlined_table_id(name)
  local id = name:match("^ducklake_inlined_%a+_(%d+)")
  return id and #id <= 18 and sync_source.parse_int(id) or nil
end

--- Every rewrite of the round, deletes first in table order.
-- @param db the catalog
-- @param src the source (moraine.sync_source)
-- @tparam table tables the source's tables by name
-- @param from the catalog's last snapshot id
-- @param scope nil (no comparison), "all" (every versioned table and
--   ducklake_snapshot, whole) or a set of table ids (the versioned tables with
--   a table_id column, their rows of those tables; the inlined-data tables of
--   those tables, whole)
-- @treturn {table,...} the rewrites, for `apply_rewrites`
-- @raise the catalog's and the source's read errors
function M.plan_rewrites(db, src, tables, from, scope)
  local out = { deletes = {}, inserts = {} }
  if from == nil or scope == nil then return out end
  local ids
  if scope ~= "all" then
    ids = {}
    for _, id in pairs(scope) do ids[#ids + 1] = id end
    table.sort(ids, ilt)
    if #ids == 0 then return out end
  end
  for _, t in ipairs(tables) do
    if t.placement == "temporal" or t.placement == "snapshot" then
      if not ids then
        table_rewrites(db, src, tables, t, from, out)
      elseif t.placement == "temporal" then
        local has_tid = false
        for _, c in ipairs(t.columns) do if c == "table_id" then has_tid = true end end
        local inl = inlined_table_id(t.name)
        if has_tid then
          table_rewrites(db, src, tables, t, from, out, ids)
        elseif inl and scope[inum(inl)] then
          table_rewrites(db, src, tables, t, from, out)
        end
      end
    end
  end
  return out
end

--- Applies the rewrites inside a write transaction, before any staged row.
-- @param tx the write transaction (`db:commit`'s)
-- @tparam {table,...} plan `plan_rewrites`' result
-- @raise the staged path's errors (a version that is not the stored one: the commit fails)
function M.apply_rewrites(tx, plan)
  for _, d in ipairs(plan.deletes) do tx:delete_version(d.name, d.row, d.ord) end
  for _, e in ipairs(plan.inserts) do tx:insert_version(e.name, e.row, e.ord, e.children) end
end

return M
