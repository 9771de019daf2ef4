--- moraine.sync — bring a catalog up to date with a DuckLake catalog kept
-- elsewhere: a directory of NDJSON files (DuckDB's export), a SQLite DuckLake
-- catalog, or a PostgreSQL DuckLake catalog (the shared source of truth of a
-- lake with many writers).
--
--     local moraine = require "moraine"
--     local sync = require "moraine.sync"
--     local db = moraine.open("/srv/lake.moraine")
--     local r = sync.sync(db, "postgres:host=10.0.0.5 dbname=lake user=reader")
--     print(r.from, r.to, r.snapshots)           -- nil 20 21 on an empty catalog
--     for _, d in ipairs(sync.compare(db, "postgres:...")) do print(d.table, d.side) end
--
-- ## Sources
--
-- `sync.source(spec)` opens one (moraine.sync_source: PostgreSQL, SQLite,
-- NDJSON; one interface, one consistent read per round; exact values).
--
-- ## How sync replays
--
-- A *commit id* is a snapshot id of the source above the catalog's last
-- snapshot: a `ducklake_snapshot` row's id, or a `begin_snapshot` or
-- `end_snapshot` of a versioned row (a snapshot expired at the source leaves
-- its rows' numbers behind). Commit ids are replayed in increasing order, in
-- batches of `batch` ids (default 64): for each batch one query per source
-- table fetches the rows that begin or end in the batch (children: whose
-- parent begins in it), so memory holds one batch, never the whole catalog
-- (NDJSON aside). A SQLite source is read instead through one sorted query
-- per table and kind (snapshot rows; versions by begin; versions by end;
-- children by their parent's begin) kept open for the round and read as
-- the commit ids advance: each table is read once per round whatever the
-- number of ids (a batch's query reads the whole table, SQLite's DuckLake
-- tables having no index on the snapshot columns), and memory holds one
-- commit id's rows. Each commit id is one staged commit (`db:commit`, one LMDB
-- write transaction; one whose snapshot DuckLake expired, so that it has no
-- ducklake_snapshot row, is committed with `{partial = true}`, allowed for
-- every commit of a round but its last), in the order `moraine_import_ndjson` uses
-- (docs/import-export.md): the rows that end at it, its ducklake_snapshot row,
-- the rows that begin at it (with `end_snapshot` NULL unless it ends at the
-- same snapshot), their children, and in the round's first commit and again
-- in its last the non-versioned tables (ducklake_metadata,
-- ducklake_table_stats, ...) made equal to the source's (which holds only
-- their present rows: every snapshot the round commits serves them as the
-- source does, and so does what a kill leaves): rows the source no longer has are deleted, rows it
-- has that the catalog lacks are added, rows present on both sides stay.
--
-- Inside each write transaction, before it writes anything, the commit checks
-- that the catalog's last snapshot is the one sync expects (the catalog's
-- last before the round, then each commit id it replayed); if another writer
-- (a verb, another sync) committed in between, the commit raises ECONFLICT
-- naming both snapshots and nothing of that commit is written. What was
-- committed before stays: every commit is a whole source snapshot. Running
-- sync again continues from the catalog's last snapshot.
--
-- ## Text that is not UTF-8
--
-- A round into an empty catalog checks the whole source first (`check`),
-- which refuses a string that is not valid UTF-8 in a column moraine types
-- VARCHAR (the text columns DuckLake defines; the catalog's exports could not
-- write it). Every later round refuses it too, as it reads the rows it
-- writes (the source is read once): a commit id's rows (its snapshot row,
-- the versions that begin at it, their children) before that commit id's
-- commit, the versions it inserts into the past before its first commit,
-- the non-versioned tables' rows in the commits that make them equal to the
-- source's (the round's first and last; in a round without a new snapshot, the
-- comparison that decides whether to commit reads and checks them first).
-- EINVAL names the table, the row and the column, as a first round does,
-- and the refused commit is not written, nor any after it: the catalog stays
-- at the round's last commit before it (every commit being a whole source
-- snapshot, as above), and a round run on a mended source continues from
-- there. Columns moraine does not know (an inlined data table's) keep their
-- bytes in every round.
--
-- ## How sync replays the past
--
-- DuckLake also changes rows at or below a catalog's last snapshot:
-- `ducklake_expire_snapshots` deletes snapshot rows and the versions no
-- remaining snapshot sees (an ended version with no snapshot in
-- [begin_snapshot, end_snapshot)), with their children;
-- `ducklake_merge_adjacent_files` deletes the merged files outright and
-- inserts the new one with the first source's `begin_snapshot`; a DELETE that
-- replaces a delete file inserts the new one with the old one's begin;
-- `ducklake_cleanup_old_files` deletes rows of the non-versioned
-- `ducklake_files_scheduled_for_deletion`. Each round finds these by
-- comparing, for every versioned table and `ducklake_snapshot`, the
-- catalog's versions with the source's versions whose `begin_snapshot`
-- (`snapshot_id`) is at or below the catalog's last snapshot L: a version is
-- its row (a source end above L read as NULL, as the catalog holds it until
-- it replays that end) with its children. What the catalog has and the source
-- lacks is deleted (`tx:delete_version`, which checks the stored version
-- equals it), what the source has and the catalog lacks is inserted with its
-- children (`tx:insert_version`), all in the round's first write transaction
-- (the first commit id's, or one snapshot-less commit when there is none),
-- before its staged rows and after its check of the catalog's last snapshot.
-- Non-versioned tables are made equal in the round's first commit and again in its last (docs/sync.md, step 7).
--
-- What is compared: DuckLake rewrites the past only (a) by expiring
-- snapshots, (b) inside a new snapshot whose `ducklake_snapshot_changes` names
-- the table by id (`merge_adjacent:T`, `compacted_table:T`, a DELETE
-- replacing a delete file: `deleted_from_table:T`, `flushed_inlined:T`), or
-- (c) in the non-versioned `ducklake_files_scheduled_for_deletion`. So a
-- round first reads one row (`snapshot_stats`: the source's newest snapshot,
-- the count and sum of its ids at or below L). Ids at or below L that differ
-- from the catalog's (an expiry) compare everything. Else no newer snapshot
-- compares nothing (and reads no versioned row). Else the new snapshots'
-- changes decide: the versioned tables with a `table_id` column are compared
-- on their rows of the tables named (both sides filtered by table_id), and
-- the inlined-data tables of those tables whole; everything is compared when
-- the new snapshots do not tell (a gap in their ids: one expired above L; a
-- commit id without a snapshot; a snapshot without changes; a change kind
-- that is not known to name its table). The round's result says which
-- (`history_compared`).
-- Memory: the comparison holds one table (its versions' forms and its
-- children) of each side at a time, as `compare` does; the rewrites found are
-- held until the commit. Assumed of DuckLake: the parents that have children
-- (data files, partition and sort specs, snapshots) have one version per key.
--
-- ## What it does not replay (yet)
--
-- A table DuckLake drops from its catalog (the inlined-data tables of a
-- table an expiry removed): `compare` shows it, the catalog keeps it. Loose
-- child rows (whose parent is absent) are not compared by the rewrite step.
--
-- @module moraine.sync

local moraine = require "moraine"
local sqlite = require "moraine.sqlite"
local sync_source = require "moraine.sync_source"
local rewrite = require "moraine.sync_rewrite"
local cv = require "moraine.catalog_version"

local core = moraine.core
local NULL = moraine.null

local M = {}

local CHILD = sync_source.CHILD
local ilt, inum = sync_source.ilt, sync_source.inum

--- Opens a source: `moraine.sync_source.open` (see its module).
M.source = sync_source.open

local function raise(code, fmt, ...)
  core.raise(code, string.format(fmt, ...))
end

--- The canonical form of a row (@{moraine.sync_source.row_form}).
M.row_form = sync_source.row_form
M._change_tokens = rewrite.change_tokens -- (tests)

-- ---- checking a whole source ----------------------------------------------------------

-- rows handed to the engine's check per call (bounds the Lua arrays built)
local CHECK_CHUNK = 4096
-- a round unmaps the store's pages after every RELEASE_EVERY commits
local RELEASE_EVERY = 256

--- Checks a whole source as an import into an empty catalog would, before
-- anything is written: the engine's checks of `moraine_import_ndjson` (an
-- NDJSON directory: the very same reading and checks, messages naming
-- `file:line` and the column) or of `moraine_import_rows` (SQLite,
-- PostgreSQL: every row of every table given to `moraine_import_check_*`,
-- messages naming table, row (1-based, in the source's row order) and
-- column): values of the right kind for the columns moraine knows, exact
-- integers, snapshot columns that are non-negative integers, end_snapshot
-- not below begin_snapshot, no begin or end after the last ducklake_snapshot
-- row, child rows whose parent row exists, ids that name rows (a data file's
-- or delete file's table_id, a delete file's data file, a column's table, a
-- table's schema), a column for every table (docs/import-export.md, "Check
-- everything first"). Call it between the source's `begin` and `finish`
-- (sync does, in the round it replays).
-- @param src a source object (`source`), its round begun
-- @tparam[opt] table tables `src:tables()`
-- @return true
-- @raise EINVAL, EJSON, EIO (the engine's, naming table or file, row and
--   column); the errors of the source's queries
function M.check(src, tables)
  if src.kind == "ndjson" then return core.import_ndjson_check(src.label) end
  tables = tables or src:tables()
  local checker = core.import_check()
  for _, t in ipairs(tables) do
    local name, cols = t.name, t.columns
    local chunk, k = {}, 0
    checker:add(name, cols, chunk) -- the table, even without rows
    for row in src:select(t, nil) do
      k = k + 1
      chunk[k] = row
      if k == CHECK_CHUNK then
        checker:add(name, cols, chunk)
        chunk, k = {}, 0
      end
    end
    if k > 0 then checker:add(name, cols, chunk) end
  end
  return checker:finish()
end

-- ---- text that is not UTF-8, in a later round -------------------------------------------

-- The columns of table @name among @cols that moraine types VARCHAR
-- (`core.column_type`, engine/tables.c: DuckLake's text columns), in order.
local function text_columns(name, cols)
  local out = {}
  for _, c in ipairs(cols) do
    if core.column_type(name, c) == "varchar" then out[#out + 1] = c end
  end
  return out
end

-- The bytes of @s as the engine shows them in its refusal (engine/ndjson.c,
-- add_values): the first 40, printable ASCII but '\' as is, any other byte as
-- \xNN, "..." after a longer string.
local function shown(s)
  local head = s:sub(1, 40):gsub(".", function(ch)
    local b = ch:byte()
    if b >= 0x20 and b < 0x7F and b ~= 0x5C then return ch end
    return string.format("\\x%02x", b)
  end)
  return head .. (#s > 40 and "..." or "")
end

-- The check a round after the first makes of the text it writes, as it reads
-- it (see "Text that is not UTF-8"): what a first round's `check` (the
-- engine's `moraine_import_check_*`, engine/ndjson.c add_values) refuses in
-- the whole source. A column is checked when moraine types it VARCHAR
-- (`core.column_type`: the text columns DuckLake defines); the columns it
-- does not know (an inlined data table's, say) keep their bytes, as in a
-- first import.
-- @tparam table tables `src:tables()`
-- @return `check(name, row, pos, id, stays)`: returns nothing when every
--   VARCHAR column of @row (a row of table @name, at position @pos of the
--   source, nil or negative when it has none) holds nil, NULL or valid
--   UTF-8; @id is the commit id whose commit would write the row (nil: the
--   round's commit without a snapshot), @stays the catalog's last snapshot
--   (the round's last commit, or the catalog's last before the round)
-- @raise (from `check`) EINVAL "sync: <table> row <n>: column '<c>' holds
--   '<bytes>', bytes that are not valid UTF-8, ...; source snapshot <id> is
--   refused, not written, nor any after it (the catalog stays at snapshot
--   <stays>)" (without a commit id: "...; the round writes nothing (the
--   catalog stays at snapshot <stays>)"); n: the row's position in the
--   source plus one (a SQLite row's rowid, its 1-based place in a table
--   without gaps, as `check` numbers rows); a source without positions,
--   PostgreSQL, names the row by its first three integer columns that are
--   ids or its begin_snapshot: "row (data_file_id=39, table_id=1,
--   begin_snapshot=14)"; the bytes shown as the engine shows them (`shown`)
local function text_check(tables)
  local valid = sqlite.valid_utf8
  local cols_of = {}
  return function(name, row, pos, id, stays)
    local cols = cols_of[name]
    if not cols then
      cols = text_columns(name, tables[name] and tables[name].columns or {})
      cols_of[name] = cols
    end
    for _, c in ipairs(cols) do
      local v = row[c]
      if type(v) == "string" and not valid(v) then
        local which
        if pos ~= nil and not ilt(pos, 0) then
          which = "row " .. inum(pos + 1)
        else
          local l = {}
          for _, k in ipairs(tables[name] and tables[name].columns or {}) do
            local x = row[k]
            if #l < 3 and x ~= nil and x ~= NULL and (k:find("_id$") or k == "begin_snapshot")
              and core.column_type(name, k) == "bigint" then
              l[#l + 1] = k .. "=" .. inum(x)
            end
          end
          which = "row (" .. table.concat(l, ", ") .. ")"
        end
        local refused = id == nil and "the round writes nothing"
          or string.format("source snapshot %s is refused, not written, nor any after it", inum(id))
        raise("EINVAL", "sync: %s %s: column '%s' holds '%s', bytes that are not valid UTF-8, which the catalog's "
          .. "exports (NDJSON, SQL, JSON) need (an NDJSON import refuses them too); %s (the catalog stays at "
          .. "snapshot %s)", name, which, c, shown(v), refused, stays == nil and "none" or inum(stays))
      end
    end
  end
end

-- ---- sync -----------------------------------------------------------------------------

local function catalog_last(db)
  return db:read(function(rd) return rd:last_snapshot() end)
end

local same_int = sync_source.same_int

-- the rows of a non-versioned table in the catalog: form -> {ord, ...}, max ord
local function catalog_rows(rd, name, cols)
  local by, maxord = {}, -1
  for row, _, ord in rd:scan(name, { at = moraine.ALL }) do
    local k = M.row_form(row, cols)
    local l = by[k]
    if not l then
      l = {}
      by[k] = l
    end
    l[#l + 1] = ord
    if ilt(maxord, ord) then maxord = ord end
  end
  return by, maxord
end

-- Makes the non-versioned tables of the catalog equal the source's (inside
-- commit tx). @existed: the relations the catalog had before this commit
-- (the others have no rows yet). @check (nil: none) is called with (table
-- name, row, position) for each source row read, before anything is put or
-- deleted in its table (it raises to refuse the row: the commit is not
-- written). Returns the number of rows put and deleted.
local function reconcile_rows(db, tx, src, tables, existed, check)
  local changed = 0
  local plans = db:read(function(rd)
    local out = {}
    for _, t in ipairs(tables) do
      if t.placement == "rows" then
        local have, maxord = {}, -1
        if existed[t.name] then have, maxord = catalog_rows(rd, t.name, t.columns) end
        out[#out + 1] = { t = t, have = have, maxord = maxord }
      end
    end
    return out
  end)
  for _, p in ipairs(plans) do
    local t, have = p.t, p.have
    local used = {}
    for _, ords in pairs(have) do
      for _, o in ipairs(ords) do used[inum(o)] = true end
    end
    local nextord = p.maxord
    local adds = {}
    for row, pos in src:select(t, nil) do
      if check then check(t.name, row, pos) end
      local k = M.row_form(row, t.columns)
      local l = have[k]
      if l and #l > 0 then
        l[#l] = nil
      else
        adds[#adds + 1] = { row = row, pos = pos }
      end
    end
    for _, ords in pairs(have) do
      for _, o in ipairs(ords) do
        tx:delete_row(t.name, o)
        used[inum(o)] = nil
        changed = changed + 1
      end
    end
    for _, a in ipairs(adds) do
      local ord = a.pos
      if ord == nil or (type(ord) == "number" and ord < 0) or used[inum(ord)] then
        repeat
          nextord = nextord + 1
        until not used[inum(nextord)]
        ord = nextord
      end
      used[inum(ord)] = true
      tx:put_row(t.name, a.row, ord)
      changed = changed + 1
    end
  end
  return changed
end

-- Whether the non-versioned tables differ (to decide on a snapshot-less
-- commit); @check (nil: none) is called with (table name, row, position) for
-- each source row read (it raises to refuse the row)
local function rows_differ(db, src, tables, check)
  return db:read(function(rd)
    for _, t in ipairs(tables) do
      if t.placement == "rows" then
        if not db:relation(t.name) then return true end
        local have = catalog_rows(rd, t.name, t.columns)
        for row, pos in src:select(t, nil) do
          if check then check(t.name, row, pos) end
          local k = M.row_form(row, t.columns)
          local l = have[k]
          if not l or #l == 0 then return true end
          l[#l] = nil
        end
        for _, l in pairs(have) do
          if #l > 0 then return true end
        end
      end
    end
    return false
  end)
end

-- The plan of one batch of commit ids (lo, hi]: per commit id, its ends,
-- snapshot rows, inserts and children.
local function plan_batch(src, tables, lo, hi)
  local plan = {}
  local function at(id)
    local k = inum(id)
    local p = plan[k]
    if not p then
      p = { ends = {}, snaps = {}, inserts = {}, children = {} }
      plan[k] = p
    end
    return p
  end
  for _, t in ipairs(tables) do
    if t.placement == "snapshot" then
      for row, pos in src:select(t, { kind = "id", column = "snapshot_id", lo = lo, hi = hi }) do
        local p = at(row.snapshot_id).snaps
        p[#p + 1] = { t = t, row = row, pos = pos }
      end
    elseif t.placement == "temporal" then
      for row, pos in src:select(t, { kind = "versions", lo = lo, hi = hi }) do
        local b, e = row.begin_snapshot, row.end_snapshot
        local bin = b ~= NULL and ilt(lo, b) and not ilt(hi, b)
        local ein = e ~= NULL and ilt(lo, e) and not ilt(hi, e)
        if bin then
          local ins = {}
          for k, v in pairs(row) do ins[k] = v end
          if e ~= NULL and not same_int(e, b) then ins.end_snapshot = NULL end
          local p = at(b).inserts
          p[#p + 1] = { t = t, row = ins, pos = pos }
        end
        if ein and not (bin and same_int(e, b)) then
          local p = at(e).ends
          p[#p + 1] = { t = t, row = row }
        end
      end
    end
  end
  for _, t in ipairs(tables) do
    local c = CHILD[t.name]
    if c and tables[c.parent] then
      local pcol = c.parent == "ducklake_snapshot" and "snapshot_id" or "begin_snapshot"
      for row, pos, pb in src:select(t, { kind = "child", parent = c.parent, keys = c.keys, parent_column = pcol,
        lo = lo, hi = hi }) do
        local p = at(pb).children
        p[#p + 1] = { t = t, row = row, pos = pos }
      end
    end
  end
  return plan
end

-- The plans of every commit id above @from (nil: all), in increasing order,
-- from sorted selects kept open for the round (a source with `streams`): one
-- per snapshot table (by snapshot_id), two per versioned table (the versions
-- that begin above @from, by begin_snapshot; those that end above it at
-- another snapshot, by end_snapshot) and one per child table (by its
-- parent's begin). Returns `next(id)`, the plan of commit id @id (the same
-- one plan_batch builds), to be called for each commit id in increasing
-- order; a row whose id is below @id was not part of any plan, which cannot
-- happen when the ids are the source's commit ids: it raises EINVAL.
local function plan_streams(src, tables, from)
  local ends, snaps, inserts, children = {}, {}, {}, {}
  local function open(list, t, f, key)
    local s = { t = t, it = src:select(t, f), key = key }
    s.row, s.pos, s.extra = s.it()
    list[#list + 1] = s
  end
  local function begin_of(s) return s.row.begin_snapshot end
  for _, t in ipairs(tables) do
    if t.placement == "snapshot" then
      open(snaps, t, { kind = "id", column = "snapshot_id", lo = from, sorted = true },
        function(s) return s.row.snapshot_id end)
    elseif t.placement == "temporal" then
      open(inserts, t, { kind = "id", column = "begin_snapshot", lo = from, sorted = true }, begin_of)
      open(ends, t, { kind = "ends", lo = from, sorted = true }, function(s) return s.row.end_snapshot end)
    end
  end
  for _, t in ipairs(tables) do
    local c = CHILD[t.name]
    if c and tables[c.parent] then
      local pcol = c.parent == "ducklake_snapshot" and "snapshot_id" or "begin_snapshot"
      open(children, t, { kind = "child", parent = c.parent, keys = c.keys, parent_column = pcol, lo = from,
        sorted = true }, function(s) return s.extra end)
    end
  end
  local function take(list, id, out, fix)
    for _, s in ipairs(list) do
      while s.row ~= nil do
        local k = s.key(s)
        if not same_int(k, id) then
          if ilt(k, id) then
            raise("EINVAL", "sync: %s row at position %s has snapshot %s, below commit id %s: not in any commit",
              s.t.name, inum(s.pos), inum(k), inum(id))
          end
          break
        end
        local row = s.row
        if fix then fix(row) end
        out[#out + 1] = { t = s.t, row = row, pos = s.pos }
        s.row, s.pos, s.extra = s.it()
      end
    end
    return out
  end
  -- a version that begins at @id is inserted live unless it also ends there
  -- (its end is replayed at its own commit id)
  local function live(row)
    local e = row.end_snapshot
    if e ~= NULL and not same_int(e, row.begin_snapshot) then row.end_snapshot = NULL end
  end
  return function(id)
    return { ends = take(ends, id, {}), snaps = take(snaps, id, {}), inserts = take(inserts, id, {}, live),
      children = take(children, id, {}) }
  end
end

-- The source's DuckLake catalog version: the value of its ducklake_metadata
-- row with key 'version' (and no scope), or nil.
local function catalog_version(src, tables)
  local t = tables.ducklake_metadata
  if not t then return nil end
  local v
  for row in src:select(t, nil) do
    if row.key == "version" and (row.scope == nil or row.scope == NULL) then v = row.value end
  end
  return v
end

-- Every table of the source's DuckLake version is there (`core.required_tables`): a
-- table missing from a later round's source (dropped from the file, left out
-- of an export) would read as holding nothing. The first round's `check` refuses it too.
local function check_tables(src, tables)
  cv.require_tables(catalog_version(src, tables), function(n) return tables[n] ~= nil end, src.kind == "ndjson")
end

local function check_columns(db, tables)
  for _, t in ipairs(tables) do
    local rel = db:relation(t.name)
    if rel and #rel.columns > 0 and #t.columns > 0 then
      local a, b = table.concat(rel.columns, ","), table.concat(t.columns, ",")
      if a ~= b then
        raise("EINVAL", "sync: table %s has columns (%s) in the catalog but (%s) at the source", t.name, a, b)
      end
    end
  end
end

-- The catalog's last snapshot must be the source's snapshot of that id (its
-- ducklake_snapshot row the same, value for value): else another writer
-- committed it (a verb, a sync of another source) and the catalog no longer
-- follows the source. DuckLake never expires a catalog's newest snapshot, so a
-- source that lacks the row has diverged too.
local function check_follows(db, src, tables, from)
  local t = tables.ducklake_snapshot
  if from == nil or not t then return end
  local mine = db:read(function(rd)
    for row in rd:scan("ducklake_snapshot", { at = moraine.ALL }) do
      if same_int(row.snapshot_id, from) then return row end
    end
  end)
  if not mine then return end -- a catalog written before snapshot rows were required
  local theirs
  for row in src:select(t, { kind = "id", column = "snapshot_id", lo = moraine.int64(from) - 1, hi = from }) do
    theirs = row
  end
  if not theirs or M.row_form(theirs, t.columns) ~= M.row_form(mine, t.columns) then
    raise("ECONFLICT", "sync: the catalog's last snapshot %s is not snapshot %s of %s (%s): another writer committed it, "
      .. "or the catalog holds another lake; the catalog no longer follows this source", inum(from), inum(from), src.label,
      theirs and "the source's differs" or "the source has no such snapshot")
  end
end

-- The snapshot ids at or below @from that the catalog has and the source no
-- longer has (DuckLake's ducklake_expire_snapshots deleted them), sorted.
local function expired_at_source(db, src, tables, from)
  local t = tables.ducklake_snapshot
  if from == nil or not t then return {} end
  local theirs = {}
  for row in src:select(t, { kind = "id", column = "snapshot_id", lo = moraine.int64(-1) - 1, hi = from }) do
    theirs[inum(row.snapshot_id)] = true
  end
  local gone = {}
  db:read(function(rd)
    for row in rd:scan("ducklake_snapshot", { at = moraine.ALL }) do
      if not theirs[inum(row.snapshot_id)] then gone[#gone + 1] = row.snapshot_id end
    end
  end)
  table.sort(gone, ilt)
  return gone
end


--- Brings the catalog up to date with a source (see "How sync replays").
-- @param db a catalog handle (`moraine.open`), empty or holding what an
--   earlier sync (or import) of the same source wrote
-- @param source a source spec (string, see `source`) or a source object
-- @tparam[opt] table opts `batch` (commit ids per source query, default 64),
--   `progress(done, total, id, newest)` called after each commit (commit
--   ids done and in all, the id just committed, the source's newest
--   snapshot; returning `true` cancels with
--   EINVAL "sync cancelled"; what was committed stays), `before_commit(id)`
--   (tests: called before each commit), `check` (true: check the whole
--   source first, as a round into an empty catalog always does; see `check`)
-- @return a table `{from = catalog's last snapshot before (nil: none), to =
--   its last after, snapshots = commit ids replayed, rows_changed =
--   non-versioned rows put or deleted, source = source label,
--   expired_at_source = the snapshot ids the catalog held and the source no
--   longer has (expired there; this round deleted them), sorted, empty when
--   none; history_deleted, history_inserted = versions (and snapshot rows)
--   at or below the catalog's last snapshot this round deleted and inserted
--   as the source did (see "How sync replays the past"); history_compared =
--   what the round compared for them: `{}` (nothing), an array of table ids
--   (the rows of those tables), or "all" (with `history_why`, a sentence);
--   source_newest = the source's newest snapshot id as the round read it
--   (nil: it has none); version = the source's DuckLake catalog version,
--   its ducklake_metadata 'version' value, e.g. "0.1" or "1.1-dev1", or nil)`.
--   Any catalog version is copied row for row as stored (an old catalog is
--   not migrated: v0.1's ducklake_partition_column.column_id stays a position)
-- @raise the errors of `check` (a round into an empty catalog, or with
--   `check`: a malformed source is refused before anything is written),
--   EINVAL from a later round, before the commit that would write the row:
--   "sync: <table> row <n>: column '<c>' holds '<bytes>', bytes that are not
--   valid UTF-8, ...; source snapshot <id> is refused, not written, nor any
--   after it (the catalog stays at snapshot <s>)" (or "...; the round writes
--   nothing (...)" in a round without a new snapshot: text that is not UTF-8
--   in a row the round would write, in a column moraine types VARCHAR, as
--   `check` refuses it in a first round; the commits before stay, <s> the
--   last of them; see "Text that is not UTF-8"),
--   ECONFLICT (another writer committed to the catalog during the round:
--   "sync: the catalog's last snapshot is X, expected Y ... source snapshot Z
--   not written"; or before it: the catalog's last snapshot is not the
--   source's snapshot of that id, its ducklake_snapshot row differs or the
--   source has none: "... another writer committed it, or the catalog holds another lake"), EINVAL (a table's columns differ between catalog and
--   source; cancelled; unknown option), the errors of `source`, of the source's
--   queries (EIO naming the query), of `db:commit` and the staged path
--   (ESNAPSHOT, EEXIST, ENOTLIVE naming table and row), of the history
--   rewrites (`staged:delete_version` ENOTFOUND / EINVAL when the catalog's
--   version is not the one the round read, `staged:insert_version` EEXIST;
--   nothing of that commit is written)
function M.sync(db, source, opts)
  opts = opts or {}
  for k in pairs(opts) do
    if k ~= "batch" and k ~= "progress" and k ~= "before_commit" and k ~= "check" then
      raise("EINVAL", "sync: unknown option '%s'", tostring(k))
    end
  end
  local batch = opts.batch or 64
  local src = type(source) == "string" and M.source(source) or source
  local own = type(source) == "string"
  local ok, res = pcall(function()
    src:begin()
    local ok2, r = pcall(function()
      local tables = src:tables()
      local from = catalog_last(db)
      -- a first round (or opts.check) checks the whole source before it writes
      check_tables(src, tables)
      if from == nil or opts.check then M.check(src, tables) end
      check_follows(db, src, tables, from)
      check_columns(db, tables)
      -- the source's newest snapshot, and the count and sum of its ids at or
      -- below L (one row): no newer snapshot means no commit id (DuckLake
      -- writes a snapshot with every row it begins or ends, and never expires
      -- the newest); ids at or below L equal to the catalog's means no expiry
      -- (DuckLake never adds a snapshot below its newest)
      local newest, n_src, sum_src = src:snapshot_stats(from)
      if from == nil and newest == nil then
        -- a DuckLake catalog has a snapshot from its creation on: without one
        -- the catalog made would have no snapshot to build on (every command
        -- would find it empty), and nothing would be imported
        raise("EINVAL", "sync: %s holds no ducklake_snapshot row: a DuckLake catalog has at least one snapshot; "
          .. "nothing to import", src.label)
      end
      local ids
      if from ~= nil and newest ~= nil and same_int(newest, from) then ids = {} else ids = src:commit_ids(from) end
      local expected = from
      local result = { from = from, snapshots = 0, rows_changed = 0, source = src.label, expired_at_source = {},
        version = catalog_version(src, tables), source_newest = newest }
      local scope, why
      if from ~= nil then
        local n_cat, sum_cat = 0, 0
        if db:relation("ducklake_snapshot") then
          db:read(function(rd)
            for row in rd:scan("ducklake_snapshot", { at = moraine.ALL }) do
              n_cat = n_cat + 1
              sum_cat = sum_cat + row.snapshot_id
            end
          end)
        end
        if tostring(n_cat) ~= n_src or inum(sum_cat) ~= sum_src then
          result.expired_at_source = expired_at_source(db, src, tables, from)
          scope, why = "all", "snapshots expired at the source"
        elseif #ids > 0 then
          scope, why = rewrite.scope_of_new(src, tables, from, newest, ids)
        end
      end
      if scope == nil then
        result.history_compared = {}
      elseif scope == "all" then
        result.history_compared, result.history_why = "all", why
      else
        local l = {}
        for _, id in pairs(scope) do l[#l + 1] = id end
        table.sort(l, ilt)
        result.history_compared = l
      end
      local rewrites = rewrite.plan_rewrites(db, src, tables, from, scope)
      -- a later round refuses text that is not UTF-8 in what it writes, as it
      -- reads it, before the commit that would write it (a first round's
      -- check, or opts.check's, has checked the whole source)
      local text = from ~= nil and not opts.check and text_check(tables) or nil
      if text then
        -- the versions inserted into the past go in with the first commit
        for _, e in ipairs(rewrites.inserts) do
          text(e.name, e.row, e.ord, ids[1], from)
          for _, k in ipairs(e.children or {}) do text(k.name, k.row, k.ord, ids[1], from) end
        end
      end
      result.history_deleted, result.history_inserted = #rewrites.deletes, #rewrites.inserts
      local rewrites_pending = #rewrites.deletes + #rewrites.inserts > 0
      -- defines the source's tables the catalog lacks; returns the set of
      -- those it had before
      local function define_all(tx)
        local existed = {}
        for _, t in ipairs(tables) do
          local rel = db:relation(t.name)
          if rel then existed[t.name] = true end
          if not rel or (#rel.columns == 0 and #t.columns > 0) then tx:define(t.name, t.columns) end
        end
        return existed
      end
      local function check_expected(id)
        local got = catalog_last(db)
        if not same_int(got, expected) then
          raise("ECONFLICT", "sync: the catalog's last snapshot is %s, expected %s (another writer committed "
            .. "snapshot %s during the sync); source snapshot %s not written: run sync again",
            got == nil and "none" or inum(got), expected == nil and "none" or inum(expected),
            got == nil and "none" or inum(got), id == nil and "(no snapshot)" or inum(id))
        end
      end
      -- db:commit, with its refusal of a snapshot id not above the catalog's
      -- last (checked by moraine_txn_begin inside the write transaction)
      -- reported as the conflict it is when another writer moved the catalog
      local function commit(id, fn, opts_commit)
        local okc, e = pcall(db.commit, db, id, fn, opts_commit)
        if okc then return end
        if moraine.is_error(e) and e.code == "ESNAPSHOT" then check_expected(id) end
        error(e, 0)
      end
      local stream = #ids > 0 and src.streams and plan_streams(src, tables, from)
      local i = 1
      while i <= #ids do
        local lo = ids[i]
        local j = stream and #ids or math.min(#ids, i + batch - 1)
        local hi = ids[j]
        -- (lo - 1, hi]: lo itself included
        local plan = not stream and plan_batch(src, tables, moraine.int64(lo) - 1, hi)
        for n = i, j do
          local id = ids[n]
          local p = stream and stream(id) or plan[inum(id)] or { ends = {}, snaps = {}, inserts = {}, children = {} }
          if text then
            -- the rows this commit writes (those it ends are the catalog's)
            for _, l in ipairs({ p.snaps, p.inserts, p.children }) do
              for _, e in ipairs(l) do text(e.t.name, e.row, e.pos, id, expected) end
            end
          end
          local text_rows = text and function(name, row, pos) text(name, row, pos, id, expected) end
          if opts.before_commit then opts.before_commit(id) end
          -- a commit id whose snapshot DuckLake expired has no ducklake_snapshot
          -- row: allowed for every commit of the round but its last
          local partial = #p.snaps == 0 and n < #ids
          commit(id, function(tx)
            check_expected(id)
            local existed = define_all(tx)
            if rewrites_pending then rewrite.apply_rewrites(tx, rewrites) end
            for _, e in ipairs(p.ends) do tx:end_row(e.t.name, e.row) end
            for _, e in ipairs(p.snaps) do tx:insert(e.t.name, e.row, e.pos) end
            for _, e in ipairs(p.inserts) do tx:insert(e.t.name, e.row, e.pos) end
            for _, e in ipairs(p.children) do tx:insert(e.t.name, e.row, e.pos) end
            -- the non-versioned tables (no snapshot columns: the source holds only their present rows) become
            -- the source's in the round's first commit, so every snapshot the round commits, and what a kill
            -- leaves, serves them as the source does (ducklake_metadata's data_path above all: without it every
            -- file path is wrong), and again in its last (a row the source changed while the round ran)
            if n == 1 or n == #ids then
              result.rows_changed = result.rows_changed + reconcile_rows(db, tx, src, tables, existed, text_rows)
            end
          end, partial and { partial = true } or nil)
          rewrites_pending = false
          expected = id
          result.snapshots = result.snapshots + 1
          -- a long round (a first import) touches the whole store: unmap its
          -- pages now and then so the process's RSS does not grow with the
          -- store (db:release_pages; a failure costs memory only)
          if result.snapshots % RELEASE_EVERY == 0 then pcall(db.release_pages, db) end
          if opts.progress and opts.progress(n, #ids, id, newest) == true then
            raise("EINVAL", "sync: sync cancelled after source snapshot %s", inum(id))
          end
        end
        i = j + 1
      end
      if #ids == 0 then
        local need_define = false
        for _, t in ipairs(tables) do
          if not db:relation(t.name) then need_define = true end
        end
        local check = text and function(name, row, pos) text(name, row, pos, nil, from) end
        if need_define or rewrites_pending or rows_differ(db, src, tables, check) then
          commit(nil, function(tx)
            check_expected(nil)
            local existed = define_all(tx)
            if rewrites_pending then rewrite.apply_rewrites(tx, rewrites) end
            result.rows_changed = reconcile_rows(db, tx, src, tables, existed, check)
          end)
        end
      end
      result.to = catalog_last(db)
      return result
    end)
    pcall(src.finish, src)
    if not ok2 then error(r, 0) end
    return r
  end)
  if own then src:close() end
  if not ok then error(res, 0) end
  return res
end

-- ---- a fresh import of a SQLite source, in C -------------------------------------------

--- Imports a SQLite source into an empty catalog as `sync` would (the same
-- rows, row positions and relations: the result `sync` would give), through
-- the engine's import (`db:import_sqlite`, `moraine_import_sqlite`: the file
-- read in C into `<table>.ndjson` files in @tmpdir, then
-- `moraine_import_ndjson`'s checks and replay) instead of the staged path
-- fed from Lua: about ten times faster, in the NDJSON import's memory (about
-- 12 bytes a row). The table list and column kinds are the source's
-- (`src:tables()`); values are read as the source reads them (its bool
-- columns' 0 and 1 as false and true; under LuaJIT an integral REAL as an
-- integer, as there a number is stored). Differences from `sync`: the
-- non-versioned tables' rows go in with the first (ducklake_metadata) or
-- last commit, as `import_ndjson` puts them, and a failed or cancelled import
-- leaves the catalog empty (nothing of it stays).
-- @param db a catalog handle, empty (no snapshot, no relation)
-- @param src a SQLite source object (`source`), not begun
-- @tparam string tmpdir a directory to create and remove (must not exist; on
--   the catalog's disk: it holds the catalog's rows as JSON meanwhile)
-- @tparam[opt] table opts `progress(done, total)`: (rows read and checked,
--   0) every 4096 rows and at the end, then (replay steps done, steps in
--   all), as `db:import_sqlite` calls it; returning `true` cancels (EINVAL
--   "import cancelled"; the catalog stays empty, tmpdir is removed)
-- @return nil when this path does not take the import (not a SQLite source,
--   a catalog that is not empty, a file the C reader cannot carry: a string
--   that is not UTF-8, an infinite REAL, a SQLite error, tables that changed
--   since they were listed): nothing was written, import through `sync`;
--   else the result table of `sync` (`from` nil, `to`, `snapshots` = commit
--   ids, `rows_changed` = rows of the non-versioned tables, `source`,
--   `version`, `source_newest` = `to`, `expired_at_source` = {},
--   `history_compared` = {}, `history_deleted` = `history_inserted` = 0)
-- @raise the errors of `moraine_import_ndjson` (messages name
--   `<table>.ndjson:line`), EINVAL "import cancelled", EIO (tmpdir cannot be
--   made or written); nothing of the import remains in the catalog
function M.import_sqlite(db, src, tmpdir, opts)
  opts = opts or {}
  if src.kind ~= "sqlite" or not db.import_sqlite then return nil end
  if catalog_last(db) ~= nil or #db:relations() > 0 then return nil end
  local okb = pcall(src.begin, src)
  if not okb then return nil end
  local ok, tables = pcall(src.tables, src)
  -- a source without a snapshot row, or without a table of its version
  -- (check_tables), goes the staged way, which refuses it before anything is written
  if ok and not pcall(check_tables, src, tables) then ok = false end
  local okn, newest = true, nil
  if ok then okn, newest = pcall(src.snapshot_stats, src, nil) end
  pcall(src.finish, src)
  if not ok or not okn or newest == nil then return nil end
  local commits = db:import_sqlite(src.label, tmpdir, tables, { progress = opts.progress, int_reals = math.type == nil })
  if not commits then return nil end
  local to = catalog_last(db)
  local result = { from = nil, to = to, snapshots = to == nil and 0 or tonumber(commits), rows_changed = 0,
    source = src.label, expired_at_source = {}, history_compared = {}, history_deleted = 0, history_inserted = 0,
    source_newest = to }
  db:read(function(rd)
    for _, t in ipairs(tables) do
      if t.placement == "rows" then
        for row in rd:scan(t.name, { at = moraine.ALL }) do
          result.rows_changed = result.rows_changed + 1
          if t.name == "ducklake_metadata" and row.key == "version" and (row.scope == nil or row.scope == NULL) then
            result.version = row.value
          end
        end
      end
    end
  end)
  return result
end

-- ---- compare ------------------------------------------------------------------------

-- The columns of table @name both the catalog (@mine) and the source
-- (@theirs) have, in the source's order; each column one side has and the
-- other lacks is passed to @add first (the catalog's in its order, then the
-- source's), as `sync` refuses such a source (`check_columns`).
local function shared_columns(name, mine, theirs, add)
  local in_mine, in_theirs = {}, {}
  for _, c in ipairs(mine) do in_mine[c] = true end
  for _, c in ipairs(theirs) do in_theirs[c] = true end
  for _, c in ipairs(mine) do
    if not in_theirs[c] then add({ table = name, side = "catalog", column = c, missing_column = true }) end
  end
  local both = {}
  for _, c in ipairs(theirs) do
    if in_mine[c] then
      both[#both + 1] = c
    else
      add({ table = name, side = "source", column = c, missing_column = true })
    end
  end
  return both
end

--- The differences between the catalog and a source, table by table, row by
-- row: every version of every row (live and ended, children and loose rows
-- included) of each table the source or the catalog has, compared as
-- multisets of rows (`row_form`: exact values, column by column; row order
-- is not compared) on the columns both sides have: a column one side has and
-- the other lacks (a source `sync` refuses, EINVAL) is a difference of its
-- own. Reads the source in one round (one read transaction) and
-- the catalog in one read transaction; holds one table of each side in memory
-- at a time.
-- @param db a catalog handle
-- @param source a source spec or object (as `sync`)
-- @tparam[opt] table opts `limit` (differences to return at most, default
--   1000; `truncated` is set when more were found)
-- @return an array of `{table = name, side = "source"|"catalog", row = row,
--   count = n, columns = {...}}` (`side` says which side has the row and the
--   other lacks; `count` how many copies more; `columns` the table's columns
--   in order, the source's, those both sides have) in table name order, then
--   rows' forms; an empty array when the two are equal. A table present on
--   one side only gives `{table = name, side = ..., missing_table = true}`
--   first. A column of a table both sides have that one side has and the
--   other lacks gives `{table = name, side = ..., column = name,
--   missing_column = true}` (`side` has it) before the table's rows: the
--   catalog's such columns in its order, then the source's in theirs. The
--   columns are not compared when one side knows none (an empty NDJSON file
--   of a table moraine does not know).
-- @raise the errors of `source` and of the source's queries; `db:scan`'s
function M.compare(db, source, opts)
  opts = opts or {}
  local limit = opts.limit or 1000
  local src = type(source) == "string" and M.source(source) or source
  local own = type(source) == "string"
  local ok, res = pcall(function()
    src:begin()
    local ok2, r = pcall(function()
      local out = {}
      local function add(d)
        if #out >= limit then
          out.truncated = true
          return
        end
        out[#out + 1] = d
      end
      local tables = src:tables()
      local names, seen = {}, {}
      for _, t in ipairs(tables) do
        names[#names + 1] = t.name
        seen[t.name] = true
      end
      for _, rel in ipairs(db:relations()) do
        if not seen[rel.name] then
          names[#names + 1] = rel.name
          seen[rel.name] = true
        end
      end
      table.sort(names)
      db:read(function(rd)
        for _, name in ipairs(names) do
          local t = tables[name]
          local rel = db:relation(name)
          if not t then
            add({ table = name, side = "catalog", missing_table = true })
          elseif not rel then
            add({ table = name, side = "source", missing_table = true })
          end
          local cols = (t and t.columns) or rel.columns
          if t and rel and #t.columns > 0 and #rel.columns > 0 then
            cols = shared_columns(name, rel.columns, t.columns, add)
          end
          local counts, rows = {}, {}
          if rel then
            for row in rd:scan(name, { at = moraine.ALL }) do
              local k = M.row_form(row, cols)
              counts[k] = (counts[k] or 0) + 1
              rows[k] = rows[k] or row
            end
          end
          if t then
            for row in src:select(t, nil) do
              local k = M.row_form(row, cols)
              counts[k] = (counts[k] or 0) - 1
              rows[k] = rows[k] or row
            end
          end
          local keys = {}
          for k, n in pairs(counts) do
            if n ~= 0 then keys[#keys + 1] = k end
          end
          table.sort(keys)
          for _, k in ipairs(keys) do
            local n = counts[k]
            add({ table = name, side = n > 0 and "catalog" or "source", row = rows[k], count = math.abs(n),
              columns = cols })
          end
        end
      end)
      return out
    end)
    pcall(src.finish, src)
    if not ok2 then error(r, 0) end
    return r
  end)
  if own then src:close() end
  if not ok then error(res, 0) end
  return res
end

return M
