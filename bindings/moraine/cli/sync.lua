--- moraine.cli.sync — `moraine import`, `moraine sync` and `moraine compare`:
-- a DuckLake catalog (PostgreSQL, SQLite or NDJSON) replayed into the catalog
-- and compared with it (moraine.sync). import is sync into an empty catalog.
-- @module moraine.cli.sync

local moraine = require "moraine"
local sync = require "moraine.sync"
local errors = require "moraine.cli.errors"
local util = require "moraine.cli.util"
local output = require "moraine.cli.output"
local catalog = require "moraine.cli.catalog"
local follow_state = require "moraine.follow_state"

local M = {}

local function core_raise(code, message) moraine.core.raise(code, message) end

local HINT = "SOURCE is postgres:CONNINFO (or a postgres:// URI), a directory of <table>.ndjson files or a SQLite "
  .. "DuckLake catalog; see 'moraine sync --help'"

-- a row as one JSON object, its columns in the table's order
local function row_json(row, columns)
  local enc = moraine.json_encode
  local parts = {}
  for i, c in ipairs(columns) do
    local v = row[c]
    if v == nil then v = moraine.null end
    local ok, text = pcall(function() return enc({ v }):sub(2, -2) end)
    parts[i] = enc({ c }):sub(2, -2) .. ":" .. (ok and text or enc({ tostring(v) }):sub(2, -2))
  end
  return "{" .. table.concat(parts, ",") .. "}"
end

-- the catalog to write (create: made when missing) or to read
local function open_catalog(ctx, create)
  if not create then return catalog.open_read(ctx.dir) end
  if util.exists(ctx.dir) and not util.is_dir(ctx.dir) then
    errors.fail(ctx.dir .. " is not a catalog directory (it is a file)", catalog.NO_CATALOG_HINT)
  end
  if util.is_dir(ctx.dir) then catalog.refuse_unfinished_import(ctx.dir) end
  return errors.with_hint(catalog.NO_CATALOG_HINT, moraine.open, ctx.dir, { create = true })
end

-- The entries of directory @dir (nil when it does not exist), as a set
local function entries(dir)
  if not util.is_dir(dir) then return nil end
  local p = io.popen("ls -A '" .. dir:gsub("'", "'\\''") .. "' 2>/dev/null")
  local set = {}
  if p then
    for line in p:lines() do set[line] = true end
    p:close()
  end
  return set
end

-- Removes what a failed import created for the catalog @dir: the directory
-- itself when it did not exist (@had nil), else the entries it did not have
-- (the directory the user had stays). Returns a sentence saying what was
-- removed, or nil.
local function undo_created(dir, had)
  local q = "'" .. dir:gsub("'", "'\\''") .. "'"
  if had == nil then
    if util.sh_ok("rm -rf " .. q) then return "the catalog directory " .. dir .. " it created was removed" end
    return nil
  end
  local now = entries(dir) or {}
  local gone = 0
  for name in pairs(now) do
    if not had[name] then
      util.sh_ok("rm -rf " .. q .. "/'" .. name:gsub("'", "'\\''") .. "'")
      gone = gone + 1
    end
  end
  if gone > 0 then return "the files it created in " .. dir .. " were removed" end
  return nil
end

-- Watches catalog @db for commits that are not this command's: `mine()`
-- after each of the command's own commits (sync's progress callback runs
-- after each), `foreign()` whether anything was committed since the last of
-- them (or since the watch began) by another writer: LMDB's last transaction
-- id moved on. A failed first sync or import removes the catalog it created
-- only when nothing is foreign: another writer's commits, finished while this
-- command ran (that writer gone by the time it fails), stay.
local function commit_watch(db)
  local last = tostring(db:last_txnid())
  local watch = {}
  function watch.mine() last = tostring(db:last_txnid()) end
  function watch.foreign()
    local ok, now = pcall(db.last_txnid, db)
    return not ok or tostring(now) ~= last
  end
  -- @progress (nil: none) with watch.mine() run first
  function watch.progress(progress)
    return function(...)
      watch.mine()
      if progress then return progress(...) end
    end
  end
  return watch
end

-- Whether @err is Ctrl-C ("interrupted!", raised by the lua and luajit
-- commands on SIGINT) stopping a first sync or import before its first commit
-- (@before and @last: the catalog's last snapshot before it and now, nil;
-- @had: the directory's entries before, without a data.mdb; no other writer,
-- @others false): what it created then goes, as after a refusal.
local function interrupted_fresh(err, before, last, had, others)
  return type(err) == "string" and err:match("interrupted!$") ~= nil and before == nil and last == nil
    and not (had and had["data.mdb"]) and not others
end

-- errors a run of the same command may not meet again (the source or the
-- disk could not be read or written, another writer)
local RETRYABLE = { EIO = true, ELMDB = true, EMAPFULL = true, ENOMEM = true }

-- the temporary directory of a fresh SQLite import, inside the catalog
-- directory (moraine.sync.import_sqlite; removed when it ends)
local FAST_TMP = catalog.FAST_IMPORT_TMP

local run = {}

-- a line on stderr when the source expired snapshots the catalog still holds
local function note_expired(r)
  local gone = r.expired_at_source or {}
  if #gone == 0 then return end
  local ids = {}
  for i = 1, math.min(#gone, 10) do ids[i] = util.istr(gone[i]) end
  io.stderr:write(string.format("moraine: note: the source no longer has %d snapshot%s this catalog holds (%s%s): "
    .. "expired there; sync deletes them and the rows only they saw, as DuckLake did\n", #gone,
    #gone == 1 and "" or "s", table.concat(ids, ", "), #gone > 10 and ", ..." or ""))
end

-- "N snapshots, S s" (or "unknown")
local function lag_text(snaps, secs)
  return string.format("%s snapshot%s, %s", snaps and tostring(snaps) or "unknown", snaps == 1 and "" or "s",
    secs and string.format("%.3f s", secs) or "unknown s")
end

-- whether a failed round of `sync --follow` is tried again: a source that cannot be read (EIO), or not
-- read whole for a moment (a file half written: EJSON; one being replaced or a table missing: the EINVALs
-- below), or a catalog another writer committed to during the round (ESNAPSHOT); every other error (a
-- conflict, the source's rows or columns refused, the catalog refusing the round) ends the follower
local TRANSIENT_EINVAL = { "is neither a directory of NDJSON files nor a SQLite database", "the catalog has no ducklake_",
  "holds no ducklake_", "is not a DuckLake catalog", "is not a SQLite database" }
local function follow_retries(e)
  if not moraine.is_error(e) then return false end
  if e.code == "EIO" or e.code == "EJSON" or e.code == "ESNAPSHOT" then return true end
  if e.code ~= "EINVAL" then return false end
  for _, t in ipairs(TRANSIENT_EINVAL) do
    if e.message:find(t, 1, true) then return true end
  end
  return false
end

local function follow(ctx, source)
  local text = ctx.opts.interval or "1"
  local n, unit = text:match("^(%d*%.?%d+)(m?s?)$")
  local secs = tonumber(n)
  if secs and unit == "ms" then secs = secs / 1000 end
  if not secs or secs <= 0 or (unit ~= "" and unit ~= "s" and unit ~= "ms") then
    errors.usage_fail("--interval expects a positive number of seconds (2, 0.5, 500ms, 1s), got '" .. text .. "'", "sync")
  end
  local db = open_catalog(ctx, true)
  local last_expired = 0
  -- what the HTTP workers read (moraine.follow_state): written after every
  -- round, and about once a second during a long one
  local state = { source_kind = source:match("^postgres") and "postgres" or util.is_dir(source) and "ndjson" or "sqlite",
    interval = secs, failing = false, last_snapshot = db:last_snapshot() }
  local function save()
    local ok, e = pcall(follow_state.write, ctx.dir, state)
    if not ok then io.stderr:write("moraine: ", moraine.is_error(e) and e.message or tostring(e), "\n") end
  end
  while true do
    local t0 = moraine.clock()
    local began = follow_state.now()
    local saved = t0
    local ok, r = pcall(sync.sync, db, source, { progress = function(_, _, id, newest)
      if moraine.clock() - saved >= 1 then
        state.last_snapshot, state.source_newest, saved = id, newest, moraine.clock()
        save()
      end
    end })
    local now = follow_state.now()
    state.last_round = now
    if ok then
      state.last_snapshot, state.source_newest = r.to, r.source_newest
      state.as_of, state.last_success, state.failing, state.error = began, now, false, nil
      save()
      if #r.expired_at_source ~= last_expired then
        last_expired = #r.expired_at_source
        note_expired(r)
      end
      if r.snapshots > 0 or r.rows_changed > 0 then
        io.stdout:write(string.format("synced %s, last snapshot %s, %s of non-versioned tables "
          .. "changed, in %.3f s; behind the source: %s\n", util.count(r.snapshots, "snapshot"), r.to and util.istr(r.to) or "none",
          util.count(r.rows_changed, "row"), moraine.clock() - t0, lag_text(follow_state.lag(state, nil, follow_state.now()))))
        io.stdout:flush()
      end
    else
      state.last_snapshot, state.failing = db:last_snapshot(), true
      state.error = moraine.is_error(r) and (r.code .. ": " .. r.message) or tostring(r)
      save()
      -- what waiting cannot mend ends the follower: a conflict (the catalog no longer follows the source), or
      -- the catalog itself refusing (damaged, read-only, of another format, LMDB failing); a source that cannot
      -- be read or read whole (a file being rewritten, a table missing for a moment, a server away) is retried
      if not follow_retries(r) then
        db:close()
        if not moraine.is_error(r) then error(r, 0) end
        errors.fail(r.code .. ": " .. r.message, r.code == "ECONFLICT"
          and "the catalog keeps every snapshot it had; nothing of another writer was removed"
          or "the catalog keeps every snapshot it had")
      end
      io.stderr:write("moraine: ", state.error, " (trying again in ", text, "; behind the source: ",
        lag_text(follow_state.lag(state, nil, now)), ")\n")
    end
    moraine.sleep(secs) -- in the process, so Ctrl-C stops the follower (a sleep child would take the signal alone)
  end
end

function run.sync(ctx, source)
  if ctx.opts.follow then return follow(ctx, source) end
  if ctx.opts.interval then errors.usage_fail("--interval applies to --follow only", "sync") end
  -- the source opened (connected, or its file checked) before the catalog is created
  local sok, src = pcall(sync.source, source)
  if not sok then
    if moraine.is_error(src) then errors.fail(src.code .. ": " .. src.message, HINT) end
    error(src, 0)
  end
  local had = entries(ctx.dir)
  local db = open_catalog(ctx, true)
  local watch = commit_watch(db)
  local before = db:last_snapshot()
  local meter, finish = output.progress_meter("syncing", "snapshots")
  local progress = meter and function(done, total) meter(done, total, "syncing") end
  local ok, r = pcall(sync.sync, db, src, { progress = watch.progress(progress) })
  src:close()
  finish(ok)
  if not ok then
    local last = db:last_snapshot()
    local others = catalog.others_there(db, r) or watch.foreign()
    db:close()
    if moraine.is_error(r) then
      local retry = RETRYABLE[r.code]
      local hint = "the catalog keeps every snapshot it had (last snapshot " .. (last and util.istr(last) or "none")
        .. "); " .. (retry and "run the same command again to continue"
          or "running it again fails the same way until the source is fixed")
      if last == before then hint = "nothing was changed" end
      if before == nil and not (had and had["data.mdb"]) and not others then
        -- a first sync into a catalog it created: what it created goes
        local removed = undo_created(ctx.dir, had)
        hint = "nothing was synced" .. (removed and (" (" .. removed .. ")") or "")
      end
      if r.code == "ECONFLICT" or others then
        hint = "another writer committed to the catalog, or has it open; nothing of it was removed"
      end
      if r.code == "EIO" then hint = hint .. "; " .. HINT end
      errors.fail(r.code .. ": " .. r.message, hint)
    end
    if interrupted_fresh(r, before, last, had, others) then undo_created(ctx.dir, had) end
    error(r, 0)
  end
  db:close()
  note_expired(r)
  io.stdout:write(string.format("synced %s into %s: %s replayed, last snapshot %s (was %s), "
    .. "%s of non-versioned tables changed; DuckLake catalog version %s\n", r.source, ctx.dir, util.count(r.snapshots, "snapshot"),
    r.to and util.istr(r.to) or "none", r.from and util.istr(r.from) or "none", util.count(r.rows_changed, "row"), r.version or "unknown"))
end

-- moraine import: sync into an empty catalog (or one an earlier,
-- interrupted import of the same source filled in part)
function run.import(ctx, source)
  local IMPORT_HINT = "SOURCE is a directory of <table>.ndjson files or a SQLite DuckLake catalog; "
    .. "see 'moraine import --help'"
  if not util.exists(source) then errors.fail("no such file or directory: " .. source, IMPORT_HINT) end
  local kind
  if util.is_dir(source) then
    if not util.exists(source .. "/ducklake_snapshot.ndjson") then
      errors.fail(source .. " is not a DuckLake catalog export: it holds no ducklake_snapshot.ndjson", IMPORT_HINT)
    end
    kind = "ndjson"
  else
    local f = io.open(source, "rb")
    if not f then errors.fail("cannot read " .. source, IMPORT_HINT) end
    local head = f:read(16)
    f:close()
    if head ~= "SQLite format 3\0" then
      errors.fail(source .. " is neither a directory of <table>.ndjson files nor a SQLite database", IMPORT_HINT)
    end
    kind = "sqlite"
  end
  if util.exists(ctx.dir) and not util.is_dir(ctx.dir) then
    errors.fail(ctx.dir .. " is not a catalog directory (it is a file)", catalog.NO_CATALOG_HINT)
  end
  local meter, finish = output.progress_meter("importing", "snapshots")
  local src
  local ok, e = pcall(function()
    src = sync.source(source)
    if kind == "sqlite" then
      src:begin()
      local tables = src:tables()
      if not (tables.ducklake_snapshot and tables.ducklake_metadata) then
        core_raise("EINVAL", "sync: " .. source .. " is not a DuckLake catalog: it has no "
          .. (tables.ducklake_snapshot and "ducklake_metadata" or "ducklake_snapshot") .. " table")
      end
      src:finish()
    end
  end)
  if not ok then
    finish(false)
    if src then src:close() end
    if moraine.is_error(e) then errors.fail(e.code .. ": " .. e.message, "nothing was imported; fix " .. source .. " and retry") end
    error(e, 0)
  end
  local tmp = ctx.dir .. "/" .. FAST_TMP
  local fast_state = util.is_dir(ctx.dir) and catalog.fast_import_state(ctx.dir)
  if fast_state == "running" then
    finish(false)
    src:close()
    catalog.refuse_unfinished_import(ctx.dir)
  elseif fast_state == "interrupted" then
    -- a fresh import of a SQLite file that did not end: its commits were
    -- synced only at its end, so after a crash the store may lack some or
    -- hold them torn. It ran into an empty catalog, so the store held
    -- nothing else: it goes, the mark last, and this import starts afresh
    for _, f in ipairs({ "data.mdb", "lock.mdb" }) do
      local path = ctx.dir .. "/" .. f
      if util.exists(path) and not os.remove(path) then
        finish(false)
        src:close()
        errors.fail("cannot remove " .. path .. ", left by an import that did not end", "remove it, then run the import again")
      end
    end
    util.sh_ok("rm -rf '" .. tmp:gsub("'", "'\\''") .. "'")
    io.stderr:write("moraine: note: an earlier import of a SQLite file into ", ctx.dir, " did not end; what it wrote was ",
      "removed and this import starts afresh\n")
  end
  -- what the catalog directory held before (nil: it did not exist), so that
  -- a failed import removes what it created and nothing else
  local had = entries(ctx.dir)
  require("moraine.compact").recover(ctx.dir) -- what a kill left of the compaction a fresh import ends with
  local db = open_catalog(ctx, true)
  local watch = commit_watch(db)
  local before = db:last_snapshot()
  local progress = meter and function(done, total) meter(done, total, "importing") end
  local r, interrupted
  if kind == "sqlite" and before == nil then
    -- a fresh import of a SQLite file: read in C into a temporary NDJSON
    -- directory inside the catalog directory and imported by the engine
    -- (moraine.sync.import_sqlite); what it does not take, or refuses, goes
    -- the staged way below, which reads the file again and gives the same
    -- result, or the same refusal in its own words
    local fmeter, ffinish = output.progress_meter("importing", "rows")
    -- a callback even without a meter: Ctrl-C is taken in Lua code, and this is the Lua code the C import runs
    -- (every 4096 rows), so it stops the import, which then undoes itself
    local fprogress = function(done, total)
      if fmeter then fmeter(done, total, total ~= 0 and "importing" or "reading and checking") end
    end
    local fok, fr = pcall(sync.import_sqlite, db, src, tmp, { progress = fprogress })
    -- what it committed, or its undo of that when it refused (the engine's), is the command's own only when
    -- it left the catalog empty: it may run for seconds, and another writer's commit meanwhile leaves a
    -- snapshot or a table (then foreign() stays true and a failure below removes nothing)
    if not (fok and fr) and db:last_snapshot() == nil and #db:relations() == 0 then watch.mine() end
    ffinish(fok and fr ~= nil)
    if fok and fr then r = fr end
    -- Ctrl-C stops the import: not a refusal for the staged way to read the
    -- file again (it ran to the end, exit 0, where the user asked to stop);
    -- it ends as any failure below (what a fresh import created goes when
    -- nothing was committed; else the next import starts afresh)
    if not fok and type(fr) == "string" and fr:match("interrupted!$") then interrupted = fr end
  end
  if r then
    ok = true
  elseif interrupted then
    ok, r = false, interrupted
  else
    -- the whole source is checked in the round before anything is written
    -- (moraine.sync.check), also when continuing an interrupted import
    ok, r = pcall(sync.sync, db, src, { progress = watch.progress(progress), check = true })
  end
  finish(ok)
  src:close()
  if not ok then
    local last = db:last_snapshot()
    local others = catalog.others_there(db, r) or watch.foreign()
    db:close()
    if moraine.is_error(r) then
      if r.code == "ECONFLICT" and r.message:find("no longer follows", 1, true) then
        errors.fail("EEXIST: the catalog is not empty and is not an earlier import of " .. source .. " (catalog " .. ctx.dir
          .. ": " .. r.message .. ")", "nothing was changed; import into a new catalog with -c NEWDIR")
      end
      local retry = RETRYABLE[r.code]
      local fix = retry and "run the same import again" or ("fix " .. source .. " and retry (running it again as it is "
        .. "fails the same way)")
      if r.code == "ECONFLICT" or r.code == "ESNAPSHOT" then
        -- another writer (another import, a verb) committed while it ran: the source is not at fault
        fix = "run the same import again: it continues when the catalog holds only this source's snapshots, "
          .. "and refuses, changing nothing, when another writer's are there"
      end
      if r.code == "EEXIST" then
        -- (robust) a duplicate live key in the source: the message names the table and the row
        fix = source .. " holds two rows with the same key (the message names the table and the row): fix the source "
          .. "and retry"
      end
      if others then
        -- another writer's commits may be in it: they stay, and so does what
        -- this import committed (running it again continues or refuses)
        errors.fail(r.code .. ": " .. r.message, "another writer committed to the catalog, or has it open: nothing "
          .. "was removed (last snapshot " .. (last and util.istr(last) or "none") .. "); " .. fix)
      end
      if before == nil and not (had and had["data.mdb"]) then
        -- a fresh import into a catalog it created: what it created goes (a
        -- catalog holding part of a source that fails is of no use, and a
        -- retry starts afresh)
        local removed = undo_created(ctx.dir, had)
        errors.fail(r.code .. ": " .. r.message, "nothing was imported" .. (removed and (" (" .. removed .. ")") or "")
          .. "; " .. fix)
      end
      if last == before then errors.fail(r.code .. ": " .. r.message, "nothing was changed; " .. fix) end
      errors.fail(r.code .. ": " .. r.message, "snapshots up to " .. util.istr(last) .. " were imported and stay; "
        .. (retry and "run the same import again to continue" or fix))
    end
    if interrupted_fresh(r, before, last, had, others) then undo_created(ctx.dir, had) end
    error(r, 0)
  end
  local ntables, nsnaps = #db:relations(), 0
  db:read(function(rd)
    for _ in rd:scan("ducklake_snapshot", { at = moraine.ALL }) do nsnaps = nsnaps + 1 end
  end)
  db:close()
  if before == nil and r.snapshots > 0 then
    -- a fresh import wrote one commit per snapshot, which scatters keys over
    -- half-empty pages: rewrite the store in key order (moraine.compact;
    -- about 1% of the import's time, a quarter less disk)
    local cmeter, cfinish = output.progress_meter("compacting", "entries")
    local cok, ce = pcall(require("moraine.compact").compact, ctx.dir, { progress = cmeter or function() end })
    cfinish(cok)
    if not cok and type(ce) == "string" and ce:match("interrupted!$") then
      -- Ctrl-C while compacting: the import is done and whole; the command stops as asked (exit 130)
      io.stderr:write("moraine: note: interrupted while compacting the imported catalog (", source, ", last snapshot ",
        r.to and util.istr(r.to) or "none", "): it is whole as it is, and 'moraine compact' can do it later\n")
      error(ce, 0)
    elseif not cok then
      io.stderr:write("moraine: note: the imported catalog was not compacted (", tostring(moraine.is_error(ce) and ce.message
        or ce), "); it is whole as it is, and 'moraine compact' can do it later\n")
    end
  end
  io.stdout:write(string.format("imported %s (%s, DuckLake catalog version %s) into %s: %s, %s, "
    .. "last snapshot %s%s\n", source, kind, r.version or "unknown", ctx.dir, util.count(ntables, "table"),
    util.count(nsnaps, "snapshot"), r.to and util.istr(r.to) or "none",
    r.from == nil and "" or r.snapshots == 0 and " (it was complete: nothing to do)"
      or (" (continued after snapshot " .. util.istr(r.from) .. ")")))
end

-- the keys of a difference in compare's --json: a row's (or a table's, row
-- null), a column's
local ROW_KEYS, COLUMN_KEYS = { "table", "side", "count", "row" }, { "table", "side", "column", "count", "row" }

function run.compare(ctx, source)
  local db = open_catalog(ctx, false)
  local ok, d = pcall(sync.compare, db, source)
  -- shown rows: encryption keys redacted (docs/security.md); a table only the
  -- source has is redacted by DuckLake's secret column name
  local rels = {}
  if ok then
    for _, x in ipairs(d) do
      if x.row and rels[x.table] == nil then
        rels[x.table] = db:relation(x.table) or { secret_columns = { "encryption_key" } }
      end
    end
  end
  db:close()
  if not ok then
    if moraine.is_error(d) then errors.fail(d.code .. ": " .. d.message, HINT) end
    error(d, 0)
  end
  for _, x in ipairs(d) do
    if x.row then x.row = moraine.redact(rels[x.table], x.row) end
  end
  if ctx.json then
    local list = {}
    for i, x in ipairs(d) do
      list[i] = output.obj(x.missing_column and COLUMN_KEYS or ROW_KEYS, { table = x.table, side = x.side,
        column = x.column, count = x.count or 1, row = x.row and output.obj(x.columns, x.row) or moraine.null })
    end
    output.print_json(output.obj({ "differences", "truncated" }, { differences = list, truncated = d.truncated == true }))
  else
    for _, x in ipairs(d) do
      if x.missing_table then
        io.stdout:write(x.table, "\t", x.side, "\t(the other side has no such table)\n")
      elseif x.missing_column then
        io.stdout:write(x.table, "\t", x.side, "\t(the other side has no column ", moraine.json_encode({ x.column }):sub(2, -2),
          ")\n")
      else
        io.stdout:write(x.table, "\t", x.side, "\t", tostring(x.count), "\t", row_json(x.row, x.columns), "\n")
      end
    end
    if #d == 0 then io.stdout:write("no differences\n") end
    if d.truncated then io.stdout:write("(more differences not shown)\n") end
  end
  return #d == 0 and 0 or 1
end


local HELP = {
  import = {
    synopsis = "moraine [-c DIR] import SOURCE",
    summary = "import a DuckLake catalog (NDJSON directory or SQLite file)",
    text = [[
Imports a whole DuckLake catalog into an empty moraine catalog (created if
missing): 'moraine sync' into an empty catalog. SOURCE is either a
directory of <table>.ndjson files (one JSON object per line, as DuckDB
exports a table; it must hold ducklake_snapshot.ndjson), or a SQLite
DuckLake catalog file (recognised by its header "SQLite format 3"). The
whole source is read and checked before anything is written, with the
checks of db:import_ndjson (docs/import-export.md): a malformed source (a
value of the wrong kind, a column missing, a begin or end snapshot that
does not fit, a child row without its parent, an id naming no row, a
table left out, text that is not UTF-8 in a column DuckLake defines) is
refused, naming file or table, row and column, and a catalog directory
the import created is removed (one you had stays, as it was). Each snapshot is then one transaction; if the import is killed,
the snapshots before stay and running the same import again continues
where it stopped. A SQLite file imported into a new catalog is read in C
and imported by the engine (the same catalog, several times faster, through
a temporary directory inside the catalog directory that is removed at the
end); a failure then leaves nothing. A catalog that holds anything other than an earlier
import of SOURCE is refused (EEXIST) and left unchanged; nothing another
writer committed is ever removed. An import into an empty catalog ends
by rewriting the store in key order, as 'moraine compact' does (a kill
then leaves the imported catalog, compacted or not; Ctrl-C then stops the
command, exit 130, the catalog whole). Progress goes to
stderr on a terminal (or with --progress): snapshots imported, with the
wall-clock time elapsed and, once it can be estimated, the time left.]],
    options = {},
    progress = true,
    example = "moraine -c lake.moraine import exported-catalog/",
    flags = {},
    nargs = { 1, 1 },
    args = { "SOURCE" },
  },
  sync = {
    synopsis = "moraine [-c DIR] sync SOURCE [--follow [--interval SECONDS]]",
    summary = "bring the catalog up to date with a DuckLake catalog (PostgreSQL, SQLite, NDJSON)",
    text = [[
Replays every snapshot of SOURCE newer than the catalog's last one, each
as one transaction, reading SOURCE in one consistent snapshot (PostgreSQL:
REPEATABLE READ; SQLite: one read transaction). SOURCE is postgres:CONNINFO
(libpq's "host=... port=... dbname=... user=..."), a postgres:// or
postgresql:// URI, a directory of <table>.ndjson files, or a SQLite DuckLake
catalog. The catalog (created if missing) must be empty or hold what an
earlier sync of the same SOURCE wrote: a catalog whose last snapshot is not
SOURCE's is refused (ECONFLICT), and so is a round during which another
writer commits; every snapshot already replayed stays, nothing another
writer committed is removed. Text that is not UTF-8 in a column DuckLake
defines is refused in every round, as import refuses it, naming table,
row and column, before the commit of the snapshot that holds it (the
snapshots committed before stay). Interrupted at any
point, running the same command again finishes the job. Rows SOURCE deleted or changed at or below
the catalog's last snapshot (expiry, merge of adjacent files, a replaced
delete file, cleanup) are replayed too (docs/sync.md). With --follow, sync runs again
every --interval (default 1 second) until it is stopped, printing one line
per round that replayed something, with how far the catalog is behind the
source (snapshots, and seconds since the start of the last round that
caught up); a source that cannot be read, or not read whole (a file being
rewritten, a table missing for a moment, a server away), is reported and
tried again next round; a conflict, a source whose rows or columns are
refused, or a catalog that refuses the round, ends it (exit 1). After every
round it writes
DIR/moraine-follow.json (written whole, then renamed into place): the
catalog's last snapshot, the source's newest, when the last round
succeeded, whether it is failing; moraine.http answers it as
X-Moraine-Lag and /health.]],
    options = {
      { "--follow", "keep syncing, one round every --interval" },
      { "--interval SECONDS", "time between two rounds of --follow: 2, 0.5, 500ms, 1s (default 1s)" },
    },
    progress = true,
    example = "moraine -c replica.moraine sync 'postgres:host=db1 dbname=lake user=reader' --follow --interval 2s",
    flags = { ["--interval"] = "interval" },
    switches = { ["--follow"] = "follow" },
    nargs = { 1, 1 },
    args = { "SOURCE" },
  },
  compare = {
    synopsis = "moraine [-c DIR] compare SOURCE [--json]",
    summary = "the rows that differ between the catalog and a DuckLake catalog",
    text = [[
Compares every table of the catalog with SOURCE (as for sync), every
version of every row, exactly, and prints each row one side has and the
other lacks: table, side ("catalog" or "source"), how many copies, the row
as JSON. Row order is not compared. A table one side lacks prints as "(the
other side has no such table)"; a column of a table that one side has and
the other lacks (a source sync refuses) as "(the other side has no column
"NAME")", side the one that has it, and the table's rows are compared on
the columns both have. Exit status 0 when there is no difference ("no
differences"), 1 when there are.]],
    options = { { "--json", "one JSON object {differences = [{table, side, [column,] count, row}], truncated}" } },
    json = true,
    example = "moraine -c replica.moraine compare 'postgres:host=db1 dbname=lake user=reader'",
    flags = {},
    nargs = { 1, 1 },
    args = { "SOURCE" },
  },
}

--- The help of `moraine import`, `moraine sync` and `moraine compare`
-- (moraine.cli.help prints it; moraine.cli.main parses the command line by it).
-- @table help
M.help = HELP

--- The commands: name -> function(ctx, SOURCE) (ctx: `dir`, `json`, `opts`
-- with `follow`, `interval`), returning the exit status (compare: 1 when
-- the two differ).
-- @table run
M.run = { import = run.import, sync = run.sync, compare = run.compare }

return M
