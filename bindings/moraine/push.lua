--- moraine.push — write moraine's own snapshots into a live SQL DuckLake
-- catalog, as DuckLake itself would have written them.
--
--     local moraine = require "moraine"
--     local push = require "moraine.push"
--     local db = moraine.open("/srv/lake.moraine")   -- imported or synced from the target
--     db:transaction(function(tx) tx:set_partitioning("events", { "hour(ts)" }) end)
--     local r = push.push(db, "/srv/lake.sqlite")
--     print(r.from, r.to, r.snapshots)               -- 20 21 1
--
-- ## What a push writes
--
-- The target is a SQLite DuckLake catalog file (the file DuckLake ATTACHes as
-- `ducklake:sqlite:FILE`) or a PostgreSQL DuckLake catalog (`postgres:CONNINFO`
-- with libpq's `host=... dbname=...` string, or a `postgres://` /
-- `postgresql://` URI; LuaSQL's driver, Debian `lua-sql-postgres`). Where
-- the target and the catalog part is the end of the longest run of the
-- target's snapshots, from its oldest up, that the catalog holds alike (the
-- same `ducklake_snapshot` row: snapshot_time, schema_version,
-- next_catalog_id, next_file_id, under the same id; the same changes_made
-- where the target has one; snapshots one side expired are passed over).
-- When that is the target's newest snapshot H (the target was imported into
-- moraine, or exported from it, or synced, or pushed to before), every
-- snapshot S moraine committed after H is written in increasing order,
-- each in ONE SQL transaction (SQLite `BEGIN IMMEDIATE`; PostgreSQL `BEGIN`
-- then `LOCK TABLE ducklake_snapshot IN SHARE ROW EXCLUSIVE MODE`, so no other
-- writer inserts a snapshot until COMMIT):
--
-- 1. the check: the target's newest snapshot is still the one before S
--    (H, then each S pushed); else the transaction is rolled back and the
--    push refused (see Concurrency);
-- 2. DuckLake's `UPDATE ... SET end_snapshot = S` for every versioned row
--    moraine ended at S that began before it (the row is found by all its
--    other columns; exactly one live row must match, else ECONFLICT);
-- 3. the `ducklake_snapshot` row of S and its `ducklake_snapshot_changes` row;
-- 4. every row that begins at S (`end_snapshot` NULL, or S when moraine ended
--    it in the same snapshot), each followed by its child rows
--    (`ducklake_partition_column`, `ducklake_sort_expression`,
--    `ducklake_file_column_stats`, `ducklake_file_partition_value`, ...); the
--    `ducklake_schema_versions` rows of S; which rows these are and their
--    values are moraine's, i.e. what its verbs wrote (docs/verbs.md);
-- 5. the tables that keep no history made equal to moraine's (rows the
--    target has and moraine does not are deleted by rowid or PostgreSQL's
--    ctid, moraine's missing rows are inserted; equal tables are not
--    touched): those whose rows each belong to one table (a table_id column:
--    `ducklake_table_stats`, `ducklake_table_column_stats`,
--    `ducklake_column_mapping`, ...; `ducklake_name_mapping` through its
--    column mapping) in every snapshot's transaction, for the tables it and
--    the pending snapshots before it changed (moraine keeps only their
--    current rows: a table a later snapshot changes again carries the later
--    counts, a `next_row_id` ahead, so no row id is given out twice; the
--    mapping a written file names is there with it; a table a later snapshot
--    creates gets none yet); in the last transaction, every table without
--    history (`ducklake_metadata`, the files scheduled for deletion, ...),
--    whole. A push that starts again, or runs again after a kill, then finds
--    the rows of the tables its written snapshots changed already moraine's
--    (or a later writer's update of them), and keeps them.
--
-- Values are written as SQL literals: integers exact over int64, NULL distinct
-- from the empty string, booleans TRUE/FALSE. SQLite: `moraine.sqlite.literal`,
-- the same code as `export_sql`, which keeps any bytes of a string (a NUL byte
-- or invalid UTF-8 as `CAST(X'..' AS VARCHAR)`). PostgreSQL: `'...'` typed by
-- the column (session in UTC, standard_conforming_strings on); a NUL byte or
-- invalid UTF-8, which PostgreSQL text cannot hold, is refused (EINVAL naming
-- table, column and snapshot; that snapshot's transaction is rolled back).
-- Values are read back from PostgreSQL as text made exact by column type. Columns are named in every
-- INSERT; a column moraine has and the target lacks is refused (EINVAL,
-- before anything is written) unless every value of it is NULL.
--
-- ## Kills and re-runs
--
-- Each snapshot is one SQL transaction, so a push killed at any point
-- leaves the target with whole snapshots only (SQLite rolls back a
-- half-written transaction when the file is next opened; PostgreSQL aborts
-- the transaction of a connection that went away). Running push
-- again starts from the target's newest snapshot, which is then one of
-- moraine's (or finds the rebased snapshots written before, see below), and
-- finishes the job; a push with nothing left to write changes nothing.
--
-- ## Concurrency: the rebase
--
-- DuckLake's writers append snapshots to the same catalog. If the target's
-- newest snapshot is not one of moraine's (a DuckLake writer committed since
-- moraine last read the target), push finds C, the end of that run below H,
-- and rebases moraine's snapshots after C onto the target's head H as
-- DuckLake retries a commit (DuckLake: DuckLakeTransaction::FlushChanges,
-- DuckLakeTransactionState::CheckForConflicts): snapshot ids move by H - C,
-- the catalog ids moraine took (schema, table, view, partition, sort, macro)
-- go on from H's next_catalog_id, its file ids (data, delete file, mapping)
-- from H's next_file_id, its schema versions from H's; table stats are kept
-- per table (moraine's for the tables it changed). It refuses (ECONFLICT,
-- before anything is written, naming the target's snapshot, the table and
-- moraine's snapshot) when both sides changed one table, view, schema or
-- macro (two inserts into one table included, which DuckLake lets commit),
-- created or renamed to one name, or changed a table without history. After
-- writing, the catalog takes the target's snapshots and ids (@{realign}, one
-- LMDB commit). A writer committing between two of the push's transactions
-- makes the push start again on the new head (up to 10 times). A re-run after
-- a kill finds the snapshots an earlier push already wrote (same snapshot
-- row, to the microsecond, and change list, renumbered) and writes only the
-- rest: never a snapshot twice. docs/push.md has the whole rule.
--
-- @module moraine.push

local moraine = require "moraine"
local sqlite = require "moraine.sqlite"

local NULL = moraine.null

local M = {}

local pt = require "moraine.push_target"
local push_rebase = require "moraine.push_rebase"

local raise, int_text, vkey, rowkey = pt.raise, pt.int_text, pt.vkey, pt.rowkey
local sid, sid_less, same_snapshot = pt.sid, pt.sid_less, pt.same_snapshot
local open_target, target_tables, target_snapshots, target_head = pt.open_target, pt.target_tables,
  pt.target_snapshots, pt.target_head
local rebase_plan, MAX_ATTEMPTS = push_rebase.rebase_plan, push_rebase.MAX_ATTEMPTS

-- ---- moraine's side -----------------------------------------------------------



-- Everything push needs from the catalog, in one read: snapshots (id text ->
-- {row =, changes =}), ordered ids, relations, rows of every relation.
local function read_catalog(db)
  local cat = { snaps = {}, order = {}, rels = {}, rows = {}, names_by_id = {} }
  db:read(function(rd)
    for row, children in rd:scan("ducklake_snapshot", { at = moraine.ALL }) do
      local list = children.ducklake_snapshot_changes or {}
      local ch = list[1]
      cat.snaps[sid(row.snapshot_id)] = { row = row, changes = ch and ch.changes_made or NULL, change_rows = list }
      cat.order[#cat.order + 1] = sid(row.snapshot_id)
    end
    for _, rel in ipairs(db:relations()) do
      cat.rels[#cat.rels + 1] = rel
      if rel.placement ~= "child" then
        local entries = {}
        for row, children, ord in rd:scan(rel.name, { at = moraine.ALL }) do
          entries[#entries + 1] = { row = row, children = children, ord = ord }
        end
        cat.rows[rel.name] = entries
      end
    end
    -- a table's name: its newest version's (a renamed table goes by its last name)
    local newest = {}
    for row in rd:scan("ducklake_table", { at = moraine.ALL }) do
      local k = sid(row.table_id)
      if not newest[k] or not sid_less(sid(row.begin_snapshot), sid(newest[k].begin_snapshot)) then
        newest[k] = row
      end
    end
    for k, row in pairs(newest) do
      local sch
      for srow in rd:scan("ducklake_schema", { at = moraine.ALL }) do
        if vkey(srow.schema_id) == vkey(row.schema_id) then sch = srow.schema_name end
      end
      cat.names_by_id[k] = '"' .. tostring(sch or "main") .. '"."' .. tostring(row.table_name) .. '"'
    end
  end)
  table.sort(cat.order, sid_less)
  return cat
end

-- ---- writing one snapshot -----------------------------------------------------

local function columns_for(t, tinfo, name, cols, rows_of)
  -- moraine's columns the target has; a moraine column the target lacks is
  -- allowed only when no row written has a value in it
  local out = {}
  for _, c in ipairs(cols) do
    if tinfo.has[c] then
      out[#out + 1] = c
    else
      for _, row in ipairs(rows_of) do
        local v = row[c]
        if v ~= nil and v ~= NULL then
          raise("EINVAL", "push: %s: table %s has no column %s, which moraine's rows use; nothing written",
            t.path, name, c)
        end
      end
    end
  end
  return out
end

local function insert_sql(t, name, cols, types, row, snap)
  local lits = {}
  for i, c in ipairs(cols) do
    local v = row[c]
    if v == nil then v = NULL end
    lits[i] = t.literal(v, types[c] or "", name .. "." .. c .. " of a row of snapshot " .. snap)
  end
  local idents = {}
  for i, c in ipairs(cols) do idents[i] = sqlite.ident(c) end
  return "INSERT INTO " .. sqlite.ident(name) .. " (" .. table.concat(idents, ", ") .. ") VALUES ("
    .. table.concat(lits, ", ") .. ")"
end

local function where_sql(t, cols, types, row, skip, what)
  local parts = {}
  for _, c in ipairs(cols) do
    if c ~= skip then
      local v = row[c]
      if v == nil then v = NULL end
      parts[#parts + 1] = t.eq(sqlite.ident(c), t.literal(v, types[c] or "", what .. "." .. c))
    end
  end
  return table.concat(parts, " AND ")
end

-- ---- making the catalog equal the target after a rebase ------------------------

-- The catalog's snapshots above @C replaced by the target's snapshots (C, head]
-- in ONE LMDB write transaction (db:commit(head, fn, {rewind = true}),
-- moraine_txn_rewind): the versions that began above C are deleted, the ones
-- ended above C live again, the snapshot rows above C go; then the target's
-- versions and snapshot rows of (C, head) are inserted as history, the ones of
-- head staged as its commit, and the tables without history made the
-- target's. A kill leaves the catalog before (its own snapshots) or after
-- (equal to the target). Values are read through moraine.sync_source, as a
-- sync reads them, in one consistent read of the target.

--- Makes the catalog equal the target above their common snapshot C: the
-- catalog's own snapshots above C (pushed to the target under new ids by a
-- rebase, or written there by nobody) are replaced by the target's snapshots
-- (C, head], in one LMDB write transaction (`db:commit(head, fn, {rewind =
-- true})`); a kill leaves the catalog as it was or equal to the target.
-- DuckLake: a retried commit takes the new head's ids, so the catalog must
-- take them too (docs/push.md, "Rebase").
-- @param db a catalog handle whose snapshots up to C are the target's
-- @tparam string spec the target, as for @{push}
-- @param C the common snapshot id (integer)
-- @param head the target's newest snapshot id (integer), above the
--   catalog's last
-- @return nil
-- @raise ECONFLICT (the target ended a row the catalog does not hold live,
--   or has no snapshot `head`), EINVAL (the target has a table the catalog
--   lacks), the errors of `moraine.sync_source.open` and of `db:commit` and
--   its history rewrites (ESNAPSHOT, ENOTFOUND, EEXIST); nothing changes then
function M.realign(db, spec, C, head)
  local sync_source = require "moraine.sync_source"
  local CHILD, vform, inum = sync_source.CHILD, sync_source.vform, sync_source.inum
  local src = sync_source.open(spec)
  local function gt(a, b) return sync_source.ilt(b, a) end
  local function row_form(row, cols)
    local parts = {}
    for i, c in ipairs(cols) do parts[i] = c .. "=" .. vform(row[c]) end
    return table.concat(parts, "\0")
  end
  local ok, err = pcall(function()
    src:begin()
    local ok2, e2 = pcall(function()
      local tables = src:tables()
      local versions, snaps, rowtabs = {}, {}, {}
      local kids = {} -- parent name -> key form .. begin -> {{name =, row =}, ...}
      for _, tt in ipairs(tables) do
        if tt.placement == "temporal" then
          for row, pos in src:select(tt, { kind = "versions", lo = C, hi = head }) do
            versions[#versions + 1] = { t = tt, row = row, pos = pos }
          end
        elseif tt.placement == "snapshot" then
          for row, pos in src:select(tt, { kind = "id", column = "snapshot_id", lo = C, hi = head }) do
            snaps[#snaps + 1] = { t = tt, row = row, pos = pos }
          end
        elseif tt.placement == "rows" then
          rowtabs[#rowtabs + 1] = tt
        end
      end
      for _, tt in ipairs(tables) do
        local c = CHILD[tt.name]
        if c and tables[c.parent] then
          local pcol = c.parent == "ducklake_snapshot" and "snapshot_id" or "begin_snapshot"
          for row, _, pb in src:select(tt, { kind = "child", parent = c.parent, keys = c.keys, parent_column = pcol,
            lo = C, hi = head }) do
            local parts = {}
            for i, k in ipairs(c.keys) do parts[i] = vform(row[k]) end
            local k = c.parent .. "\0" .. table.concat(parts, "\0") .. "\0" .. inum(pb)
            kids[k] = kids[k] or {}
            table.insert(kids[k], { name = tt.name, row = row })
          end
        end
      end
      local function children_of(name, row, begin)
        local out = {}
        for child, c in pairs(CHILD) do
          if c.parent == name then
            local parts = {}
            for i, k in ipairs(c.keys) do parts[i] = vform(row[k]) end
            local k = name .. "\0" .. table.concat(parts, "\0") .. "\0" .. inum(begin)
            for _, kr in ipairs(kids[k] or {}) do if kr.name == child then out[#out + 1] = kr end end
          end
        end
        return out
      end
      local rows_now = {}
      for _, tt in ipairs(rowtabs) do
        local list = {}
        for row in src:select(tt, nil) do list[#list + 1] = row end
        rows_now[tt.name] = list
      end
      -- the catalog's side: versions above C, and the live versions of rows begun at or below C
      local mine = db:read(function(rd)
        local out = { drop = {}, revive = {}, snaps = {}, live = {}, rows = {} }
        for _, rel in ipairs(db:relations()) do
          if rel.placement == "temporal" then
            local cols = {}
            for _, c in ipairs(rel.columns) do if c ~= "end_snapshot" then cols[#cols + 1] = c end end
            for row, children, ord in rd:scan(rel.name, { at = moraine.ALL }) do
              local b, e = row.begin_snapshot, row.end_snapshot
              local kl = {}
              for cn, list in pairs(children or {}) do
                for _, cr in ipairs(list) do kl[#kl + 1] = { name = cn, row = cr } end
              end
              local form = rel.name .. "\1" .. row_form(row, cols)
              if gt(b, C) then
                out.drop[#out.drop + 1] = { name = rel.name, row = row, ord = ord }
              elseif e ~= NULL and gt(e, C) then
                out.drop[#out.drop + 1] = { name = rel.name, row = row, ord = ord }
                local live = {}
                for k, v in pairs(row) do live[k] = v end
                live.end_snapshot = NULL
                out.revive[#out.revive + 1] = { name = rel.name, row = live, ord = ord, children = kl }
                out.live[form] = out.revive[#out.revive]
              elseif e == NULL then
                out.live[form] = { name = rel.name, row = row, ord = ord, children = kl }
              end
            end
          elseif rel.placement == "snapshot" then
            for row in rd:scan(rel.name, { at = moraine.ALL }) do
              if gt(row.snapshot_id, C) then out.snaps[#out.snaps + 1] = row.snapshot_id end
            end
          elseif rel.placement == "rows" then
            local list = {}
            for _, _, ord in rd:scan(rel.name, { at = moraine.ALL }) do list[#list + 1] = ord end
            out.rows[rel.name] = list
          end
        end
        return out
      end)
      for _, tt in ipairs(rowtabs) do
        if not db:relation(tt.name) and #rows_now[tt.name] > 0 then
          raise("EINVAL", "push: %s has table %s, which the catalog lacks; the catalog was not changed", src.label,
            tt.name)
        end
      end
      local ends, inserts, head_snap = {}, {}, nil
      db:commit(head, function(tx)
        for _, d in ipairs(mine.drop) do tx:delete_version(d.name, d.row, d.ord) end
        for _, id in ipairs(mine.snaps) do tx:delete_snapshot(id) end
        for _, r in ipairs(mine.revive) do tx:insert_version(r.name, r.row, r.ord, r.children) end
        for _, sn in ipairs(snaps) do
          local ch = children_of("ducklake_snapshot", sn.row, sn.row.snapshot_id)
          if inum(sn.row.snapshot_id) == inum(head) then
            head_snap = { row = sn.row, pos = sn.pos, children = ch }
          else
            tx:insert_version("ducklake_snapshot", sn.row, -1, ch)
          end
        end
        for _, v in ipairs(versions) do
          local name, row = v.t.name, v.row
          if row.end_snapshot ~= NULL and gt(row.end_snapshot, head) then
            -- ended by a snapshot above head (another writer's, committed after the push's last): live at head,
            -- as the catalog holds it until a sync reads that snapshot
            local live = {}
            for k, x in pairs(row) do live[k] = x end
            live.end_snapshot = NULL
            row = live
          end
          local b, e = row.begin_snapshot, row.end_snapshot
          local ends_at_head = e ~= NULL and inum(e) == inum(head)
          if not gt(b, C) then -- began at or below C: the catalog holds it live
            local cols = {}
            for _, c in ipairs(v.t.columns) do if c ~= "end_snapshot" then cols[#cols + 1] = c end end
            local l = mine.live[name .. "\1" .. row_form(row, cols)]
            if not l then
              raise("ECONFLICT", "push: %s ended a %s row the catalog does not hold live; the catalog was not changed",
                src.label, name)
            end
            if ends_at_head then
              ends[#ends + 1] = { name = name, row = row }
            else
              tx:delete_version(name, l.row, l.ord)
              tx:insert_version(name, row, l.ord, l.children)
            end
          elseif inum(b) == inum(head) then
            inserts[#inserts + 1] = { name = name, row = row, pos = v.pos,
              children = children_of(name, row, b) }
          else
            local ins = row
            if ends_at_head then
              ins = {}
              for k, x in pairs(row) do ins[k] = x end
              ins.end_snapshot = NULL
              ends[#ends + 1] = { name = name, row = row }
            end
            tx:insert_version(name, ins, -1, children_of(name, row, b))
          end
        end
        for _, en in ipairs(ends) do tx:end_row(en.name, en.row) end
        if not head_snap then
          raise("ECONFLICT", "push: %s has no snapshot %s; the catalog was not changed", src.label, inum(head))
        end
        tx:insert("ducklake_snapshot", head_snap.row)
        for _, c in ipairs(head_snap.children) do tx:insert(c.name, c.row) end
        for _, it in ipairs(inserts) do
          tx:insert(it.name, it.row)
          for _, c in ipairs(it.children) do tx:insert(c.name, c.row) end
        end
        for _, tt in ipairs(rowtabs) do
          if db:relation(tt.name) then
            for _, ord in ipairs(mine.rows[tt.name] or {}) do tx:delete_row(tt.name, ord) end
            for i, row in ipairs(rows_now[tt.name]) do tx:put_row(tt.name, row, i - 1) end
          end
        end
      end, { rewind = true })
    end)
    pcall(src.finish, src)
    if not ok2 then error(e2, 0) end
  end)
  src:close()
  if not ok then error(err, 0) end
end

--- Pushes moraine's snapshots after the target's newest one into the target
-- DuckLake catalog (SQLite or PostgreSQL), one SQL transaction per snapshot,
-- rebased onto the target's head when it moved on (see the module's doc for
-- what is written, the rebase and its conflict rule).
-- DuckLake: the rows are those its statements write; a rebase renumbers them
-- as its retried commit does (FlushChanges, CheckForConflicts).
-- @param db a catalog handle (`moraine.open`) holding the target's snapshots
--   up to some snapshot and moraine's own after them; writable when the
--   target moved on (the rebase makes the catalog take the target's ids)
-- @tparam string target a SQLite DuckLake catalog file (DuckLake's
--   `ATTACH 'ducklake:sqlite:FILE'`), or `postgres:CONNINFO`, or a
--   `postgres://` / `postgresql://` URI
-- @tparam[opt] table opts `progress(done, total, snapshot_id)`: called after
--   each snapshot is committed in the target (`done` of `total` snapshots,
--   `snapshot_id` an integer); returning `true` stops the push there
--   (EINVAL "push cancelled"; the snapshots pushed so far stay, whole); an
--   error it raises stops it too and is re-raised unchanged
-- @return `{from = H, to = last, snapshots = n, rebased = bool}`: the
--   target's newest snapshot before (H) and after, how many were written (0:
--   the target was up to date, nothing written), and whether they were
--   rebased (the catalog then holds the target's snapshots and ids up to `to`)
-- @raise EINVAL (target not a SQLite file, not a DuckLake catalog, without
--   snapshots, a moraine column the target lacks, a value PostgreSQL text
--   cannot hold, an unknown option, cancelled), EIO (the file cannot be
--   opened, the server cannot be reached, or the database refused a
--   statement: its words), ECONFLICT (the target moved on and a snapshot of
--   it changed a table moraine's also change: the target's snapshot, the
--   table and moraine's snapshot named, nothing written; a table without
--   history differs on both sides; the target shares no snapshot with the
--   catalog or is ahead of it; a row to end is not live there; writers kept
--   committing during 10 attempts), EINVAL also for rows in a table a rebase
--   does not renumber (inlined data), the errors of `db:read` and of
--   @{realign} (EREADONLY for a read-only handle after a rebase: the target
--   is written, run push again with a writable one); a
--   plain string error for arguments of the wrong type or when LuaSQL's
--   SQLite or PostgreSQL driver is not installed
function M.push(db, target, opts)
  if type(db) ~= "userdata" then
    error("bad argument #1 to 'push' (moraine catalog expected, got " .. type(db) .. ")", 2)
  end
  if type(target) ~= "string" then
    error("bad argument #2 to 'push' (string expected, got " .. type(target) .. ")", 2)
  end
  if opts ~= nil and type(opts) ~= "table" then
    error("bad argument #3 to 'push' (table or nil expected, got " .. type(opts) .. ")", 2)
  end
  local progress
  for k, v in pairs(opts or {}) do
    if k ~= "progress" then raise("EINVAL", "push: unknown option '%s'", tostring(k)) end
    if type(v) ~= "function" then raise("EINVAL", "push: progress must be a function, got %s", type(v)) end
    progress = v
  end
  local written, from = 0, nil
  local function attempt(t)
    local ttabs = target_tables(t)
    local head = target_head(t)
    if head == nil then
      raise("EINVAL", "push: %s has no snapshot; write a whole catalog with moraine export --format sqlite", t.path)
    end
    local cat = read_catalog(db)
    local expect = head
    local base -- the common snapshot when the pending snapshots are rebased
    -- the target's newest snapshot must be moraine's (else the rebase below)
    local hrow = target_snapshots(t, nil)
    local hk = sid(head)
    local pending = {}
    for _, s in ipairs(cat.order) do
      if sid_less(hk, s) then pending[#pending + 1] = s end
    end
    -- where the two part: the end of the longest run of the target's snapshots, from its oldest up, that the
    -- catalog holds alike (the same row, and the same changes_made where the target has one; the snapshots
    -- one side expired and the other still has are passed over). Not any snapshot alike: a rebased
    -- snapshot of moraine's that kept its own time can equal, row for row and even in its changes, moraine's
    -- next snapshot under the same id, which would then be taken as written and never pushed
    local tchanges = {}
    for _, r in ipairs(t.select("ducklake_snapshot_changes", { "snapshot_id", "changes_made" })) do
      tchanges[sid(r[1])] = r[2]
    end
    local function alike(m, r)
      if m == nil or r == nil or not same_snapshot(m.row, r) then return false end
      local tc = tchanges[sid(r.snapshot_id)]
      return tc == nil or tc == NULL or vkey(m.changes) == vkey(tc)
    end
    local common
    for _, r in ipairs(hrow) do
      local m = cat.snaps[sid(r.snapshot_id)]
      -- (a snapshot of the target's that the catalog does not have, below the catalog's newest: expired in the
      -- catalog, synced from a source that expired it; passed over too)
      if m ~= nil or not sid_less(sid(r.snapshot_id), cat.order[#cat.order]) then
        if not alike(m, r) then break end
        common = r.snapshot_id
      end
    end
    if common == nil or sid(common) ~= hk then
      if common == nil then
        raise("ECONFLICT", "push: %s and the catalog share no snapshot (the target's newest is %s): the catalog was "
          .. "not imported or synced from it; nothing written", t.path, int_text(head))
      end
      pending = {}
      for _, s in ipairs(cat.order) do
        if sid_less(sid(common), s) then pending[#pending + 1] = s end
      end
      if #pending == 0 then
        raise("ECONFLICT", "push: %s is ahead of the catalog (its newest snapshot %s, the catalog's %s); nothing "
          .. "to push and nothing written (sync the catalog from it)", t.path, int_text(head), cat.order[#cat.order])
      end
      base = common
      cat, pending, expect = rebase_plan(t, ttabs, cat, common, pending)
    end
    if #pending == 0 then return { from = head, to = expect, snapshots = 0, rebase = base } end

    -- plan: rows that begin / end at each pending snapshot
    local is_pending = {}
    for _, s in ipairs(pending) do is_pending[s] = true end
    local begins, ends, rows_tables = {}, {}, {}
    local children_of = {}
    for _, rel in ipairs(cat.rels) do
      if rel.placement == "child" and rel.parent then
        children_of[rel.parent] = children_of[rel.parent] or {}
        table.insert(children_of[rel.parent], rel)
      end
    end
    for _, rel in ipairs(cat.rels) do
      local name = rel.name
      if rel.placement ~= "child" then
        local has = {}
        for _, c in ipairs(rel.columns) do has[c] = true end
        local entries = cat.rows[name] or {}
        -- ducklake_snapshot (placement "snapshot") is written from cat.snaps
        if rel.placement ~= "snapshot" and has.begin_snapshot then
          for _, en in ipairs(entries) do
            local b = en.row.begin_snapshot
            local bk = b ~= NULL and sid(b) or nil
            if bk and is_pending[bk] then
              begins[bk] = begins[bk] or {}
              table.insert(begins[bk], { rel = rel, entry = en })
            end
            local e = en.row.end_snapshot
            if e ~= nil and e ~= NULL and is_pending[sid(e)] and bk ~= sid(e) then
              local ek = sid(e)
              ends[ek] = ends[ek] or {}
              table.insert(ends[ek], { rel = rel, entry = en })
            end
          end
        elseif rel.placement ~= "snapshot" then
          rows_tables[#rows_tables + 1] = rel
        end
      end
    end
    -- within a snapshot, each table's rows go in the order moraine holds them
    -- (`ord`, the order DuckLake wrote them), not key order: a reader of the
    -- target that reads in insertion order (an import, DuckLake's own scans by
    -- rowid) then sees them as moraine's export does
    local rel_pos = {}
    for i, rel in ipairs(cat.rels) do rel_pos[rel] = i end
    for _, list in pairs(begins) do
      for i, it in ipairs(list) do it.seq = i end
      table.sort(list, function(a, b)
        if a.rel ~= b.rel then return rel_pos[a.rel] < rel_pos[b.rel] end
        local oa, ob = a.entry.ord, b.entry.ord
        if oa ~= nil and ob ~= nil and oa ~= ob then return oa < ob end
        return a.seq < b.seq
      end)
    end
    -- every table written must exist in the target; columns checked before anything is written
    local cols_of = {}
    local function check(rel, rows_of)
      local ti = ttabs[rel.name]
      if not ti then
        if #rows_of == 0 then return nil end
        raise("EINVAL", "push: %s has no table %s, which moraine has rows of; nothing written", t.path, rel.name)
      end
      local prev = cols_of[rel.name]
      local cols = columns_for(t, ti, rel.name, rel.columns, rows_of)
      if prev and #prev ~= #cols then cols = prev end
      cols_of[rel.name] = cols
      return cols
    end
    local by_rel = {}
    for _, list in pairs(begins) do
      for _, it in ipairs(list) do
        by_rel[it.rel] = by_rel[it.rel] or {}
        table.insert(by_rel[it.rel], it.entry.row)
        for _, crel in ipairs(children_of[it.rel.name] or {}) do
          by_rel[crel] = by_rel[crel] or {}
          for _, crow in ipairs(it.entry.children[crel.name] or {}) do table.insert(by_rel[crel], crow) end
        end
      end
    end
    for _, list in pairs(ends) do
      for _, it in ipairs(list) do
        by_rel[it.rel] = by_rel[it.rel] or {}
        table.insert(by_rel[it.rel], it.entry.row)
      end
    end
    for _, rel in ipairs(rows_tables) do
      by_rel[rel] = by_rel[rel] or {}
      for _, en in ipairs(cat.rows[rel.name] or {}) do table.insert(by_rel[rel], en.row) end
    end
    for rel, rows_of in pairs(by_rel) do check(rel, rows_of) end
    local snap_rel, changes_rel
    for _, rel in ipairs(cat.rels) do
      if rel.name == "ducklake_snapshot" then snap_rel = rel end
      if rel.name == "ducklake_snapshot_changes" then changes_rel = rel end
    end
    local snap_rows = {}
    for _, s in ipairs(pending) do snap_rows[#snap_rows + 1] = cat.snaps[s].row end
    check(snap_rel, snap_rows)
    local change_entries = {}
    for _, s in ipairs(pending) do change_entries[s] = cat.snaps[s].change_rows or {} end
    if changes_rel then
      local all = {}
      for _, list in pairs(change_entries) do for _, r in ipairs(list) do all[#all + 1] = r end end
      check(changes_rel, all)
    end

    -- the table of each of moraine's column mappings: a name mapping's owner
    local moraine_maps = push_rebase.column_maps(cat.rows.ducklake_column_mapping)
    -- the first pending snapshot (its place in `pending`) that changes each table: the table id of a row it
    -- begins or ends, or an inlined data table's (its rows carry no table_id: its name does,
    -- ducklake_inlined_data_<table_id>_<version>)
    local first_change = {}
    for n, s in ipairs(pending) do
      for _, list in ipairs({ begins[s] or {}, ends[s] or {} }) do
        for _, it in ipairs(list) do
          local tid = it.entry.row.table_id
          tid = (tid ~= nil and tid ~= NULL) and sid(tid) or it.rel.name:match("^ducklake_inlined_data_(%d+)_%d+$")
          if tid and not first_change[tid] then first_change[tid] = n end
        end
      end
    end

    -- write, one transaction per snapshot
    local done = 0
    for i, s in ipairs(pending) do
      local srow = cat.snaps[s].row
      t.begin()
      local moved = false
      local wok, werr = pcall(function()
        local now = target_head(t)
        if vkey(now) ~= vkey(expect) then
          moved = true -- another writer committed: this attempt stops, the next one rebases
          return
        end
        local S = srow.snapshot_id
        local Stext = int_text(S)
        for _, it in ipairs(ends[s] or {}) do
          local name = it.rel.name
          local cols = cols_of[name]
          local types = ttabs[name].types
          local n = t.exec("UPDATE " .. sqlite.ident(name) .. " SET end_snapshot = " .. Stext .. " WHERE "
            .. where_sql(t, cols, types, it.entry.row, "end_snapshot", name) .. " AND end_snapshot IS NULL")
          if n ~= 1 then
            -- the row named by its first columns (ids and begin_snapshot), never by a secret column
            local ids = {}
            for k = 1, math.min(3, #cols) do ids[k] = cols[k] .. " = " .. vkey(it.entry.row[cols[k]]):sub(2) end
            raise("ECONFLICT", "push: %s: %s has %d live rows like the one moraine ended at snapshot %s (%s); "
              .. "expected 1; nothing of snapshot %s written", t.path, name, n, Stext, table.concat(ids, ", "), Stext)
          end
        end
        t.exec(insert_sql(t, "ducklake_snapshot", cols_of.ducklake_snapshot, ttabs.ducklake_snapshot.types, srow, Stext))
        for _, crow in ipairs(change_entries[s] or {}) do
          t.exec(insert_sql(t, "ducklake_snapshot_changes", cols_of.ducklake_snapshot_changes,
            ttabs.ducklake_snapshot_changes.types, crow, Stext))
        end
        for _, it in ipairs(begins[s] or {}) do
          local name = it.rel.name
          local row = it.entry.row
          local e = row.end_snapshot
          if e ~= nil and e ~= NULL and sid(e) ~= s then -- ended by a later snapshot: live for now
            local copy = {}
            for k, v in pairs(row) do copy[k] = v end
            copy.end_snapshot = NULL
            row = copy
          end
          t.exec(insert_sql(t, name, cols_of[name], ttabs[name].types, row, Stext))
          for _, crel in ipairs(children_of[name] or {}) do
            for _, crow in ipairs(it.entry.children[crel.name] or {}) do
              t.exec(insert_sql(t, crel.name, cols_of[crel.name], ttabs[crel.name].types, crow, Stext))
            end
          end
        end
        -- the tables without history, made moraine's. Those whose rows each belong to one table (a table_id
        -- column, or a name mapping through its column mapping: push_rebase.owner_of) in every snapshot's
        -- transaction, for the tables this snapshot and the pending ones before it changed: a push that starts
        -- again (a writer committed between two of its transactions) or runs again after a kill keeps the
        -- target's rows for the tables its remaining snapshots do not change, which must then already be
        -- moraine's; the files a written snapshot's rows name (their mapping_id) have their mapping; a table a
        -- later snapshot creates gets none yet (its ids are not the target's to give out). In the last
        -- transaction, every table without history, whole (ducklake_metadata, the files scheduled for deletion)
        local last_one = i == #pending
        local target_maps -- the target's column mappings, read when a name mapping row needs them
        local function owner_in_scope(rel_name, row, from_target)
          if last_one then return true end
          local tid = push_rebase.owner_of(rel_name, row, moraine_maps)
          if tid == nil and from_target and rel_name == "ducklake_name_mapping" then
            target_maps = target_maps or push_rebase.column_maps(nil, t, ttabs)
            tid = push_rebase.owner_of(rel_name, row, target_maps)
          end
          return tid ~= nil and first_change[tid] ~= nil and first_change[tid] <= i
        end
        for _, rel in ipairs(rows_tables) do
          local cols = cols_of[rel.name]
          local per_table = push_rebase.per_table(rel)
          if cols and (last_one or per_table) then
            local types = ttabs[rel.name].types
            local want = {}
            for _, en in ipairs(cat.rows[rel.name] or {}) do
              if owner_in_scope(rel.name, en.row, false) then
                local vals = {}
                for c, col in ipairs(cols) do vals[c] = en.row[col] end
                local k = rowkey(vals, #cols)
                want[k] = want[k] or {}
                table.insert(want[k], en.row)
              end
            end
            local sel = { t.rowid }
            for _, c in ipairs(cols) do sel[#sel + 1] = c end
            local have = t.select(rel.name, sel)
            local extra = {}
            for _, r in ipairs(have) do
              local row = {}
              for c, col in ipairs(cols) do row[col] = r[c + 1] end
              if owner_in_scope(rel.name, row, true) then
                local vals = {}
                for c = 1, #cols do vals[c] = r[c + 1] end
                local k = rowkey(vals, #cols)
                if want[k] and #want[k] > 0 then
                  table.remove(want[k])
                else
                  extra[#extra + 1] = r[1]
                end
              end
            end
            for _, rid in ipairs(extra) do
              t.delete_row(rel.name, rid)
            end
            for _, en in ipairs(cat.rows[rel.name] or {}) do
              if owner_in_scope(rel.name, en.row, false) then
                local vals = {}
                for c, col in ipairs(cols) do vals[c] = en.row[col] end
                local list = want[rowkey(vals, #cols)]
                if list and #list > 0 then
                  table.remove(list)
                  t.exec(insert_sql(t, rel.name, cols, types, en.row, Stext))
                end
              end
            end
          end
        end
      end)
      if not wok or moved then
        pcall(t.exec, "ROLLBACK")
        if moved then return { from = head, to = expect, snapshots = done, retry = true } end
        error(werr, 0)
      end
      t.exec("COMMIT")
      expect = srow.snapshot_id
      done = done + 1
      if progress and progress(written + done, written + #pending, srow.snapshot_id) == true then
        raise("EINVAL", "push: push cancelled after snapshot %s (%d of %d pushed; they stay, whole)",
          int_text(srow.snapshot_id), written + done, written + #pending)
      end
    end
    return { from = head, to = expect, snapshots = done, rebase = base }
  end
  -- a writer that commits between two of the push's transactions makes the
  -- push start again from the target's new head (the snapshots written stay;
  -- the next attempt finds them and rebases the rest), as DuckLake retries
  for _ = 1, MAX_ATTEMPTS do
    local t = open_target(target)
    local ok, res = pcall(attempt, t)
    t.close()
    if not ok then error(res, 0) end
    from = from or res.from
    written = written + res.snapshots
    if not res.retry then
      -- the rebased snapshots are the target's now: the catalog takes them (and their ids)
      if res.rebase ~= nil then M.realign(db, target, res.rebase, res.to) end
      return { from = from, to = res.to, snapshots = written, rebased = res.rebase ~= nil }
    end
  end
  raise("ECONFLICT", "push: %s kept moving: other writers committed during each of %d attempts; the %d snapshots "
    .. "written stay, each whole; run push again", target, MAX_ATTEMPTS, written)
end

return M
