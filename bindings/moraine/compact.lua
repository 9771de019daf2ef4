--- moraine.compact — rewrites a catalog's store in key order (`moraine
-- compact`, `db:compact`): the smallest data.mdb LMDB can hold the same
-- entries in (every leaf page filled, no free page).
--
-- `M.compact_to` writes the compacted copy to a new directory and leaves the
-- catalog as it is. `M.compact` compacts a catalog in place, as
-- moraine.upgrade swaps a rebuilt catalog in: the copy is written to
-- `path .. ".compact-tmp"`, verified (`moraine.verify_path`: every keyspace
-- invariant, and the copy's entry count equal to the catalog's), renamed
-- `path .. ".compact-new"` once whole, then, while this process holds the
-- catalog's write lock (no writer can commit in between) and only when no
-- other process has the catalog open, the two names are exchanged in one
-- step (renameat2 RENAME_EXCHANGE; `.compact-new` then names the old catalog,
-- renamed `.compact-old` and removed). A kill at any point leaves the old
-- catalog or the compacted one at the path, whole: never a mix, never a lost
-- commit, never no catalog; what it leaves beside the path the next
-- `M.compact` (or `M.recover`, which `moraine import` runs too) removes.
-- Where the file system cannot exchange names, the catalog is renamed
-- `.compact-old` and the copy `path` (two renames: a kill between them
-- leaves both beside a missing path, and `M.recover` puts the copy in place).
-- @module moraine.compact

local moraine = require "moraine"

local M = {}
local function raise(code, fmt, ...) moraine.core.raise(code, string.format(fmt, ...)) end

local FOLLOW_STATE = "moraine-follow.json" -- moraine.follow_state's file in a catalog directory
local CATALOG_FILES = { "data.mdb", "lock.mdb", FOLLOW_STATE }
-- a follower's state being written (moraine.follow_state.write: `.moraine-follow.json.<digits>.tmp`, renamed over
-- FOLLOW_STATE once whole); one left in the directory is a follower killed mid-write: a running follower has the
-- catalog open, and compact refuses to go on then
local FOLLOW_TMP = "^%.moraine%-follow%.json%.%d+%.tmp$"

-- whether @name is a file moraine writes in a catalog directory
local function own_file(name)
  return name == "data.mdb" or name == "lock.mdb" or name == FOLLOW_STATE or name:match(FOLLOW_TMP) ~= nil
end

-- copies file @from to @to when @from exists (EIO when it cannot)
local function copy_file(from, to)
  local f = io.open(from, "rb")
  if not f then return end
  local data = f:read("a")
  f:close()
  local g, err = io.open(to, "wb")
  if not g then raise("EIO", "compact: cannot write %s: %s", to, tostring(err)) end
  local ok, werr = g:write(data)
  g:close()
  if not ok then raise("EIO", "compact: cannot write %s: %s", to, tostring(werr)) end
end

-- whether path `p` exists (renaming it onto itself fails only when it does not)
local function exists(p)
  local ok, _, code = os.rename(p, p)
  return ok ~= nil or code ~= 2
end

local function remove_dir(dir)
  for _, f in ipairs(CATALOG_FILES) do os.remove(dir .. "/" .. f) end
  local ok, names = pcall(moraine.core.dir_entries, dir)
  for _, f in ipairs(ok and names or {}) do
    if f:match(FOLLOW_TMP) then os.remove(dir .. "/" .. f) end
  end
  return os.remove(dir)
end

local function mv(a, b)
  local done, err = os.rename(a, b)
  if not done then raise("EIO", "compact: cannot rename %s to %s: %s", a, b, tostring(err)) end
end

local function key(v) return tostring(v):match("^(-?%d+)") or tostring(v) end

-- a catalog path without trailing slashes ("cat/" would put the copy inside it),
-- and, when it exists, with its symbolic links resolved: the swap renames the
-- directory itself, and a link swapped for the copy would leave the link's
-- target emptied (its old files removed through the link) and the copy where
-- the link was
local function clean(path)
  if type(path) ~= "string" or path == "" then raise("EINVAL", "compact: the catalog path must be a non-empty string") end
  local p = path:gsub("/+$", "")
  p = p == "" and "/" or p
  return moraine.core.realpath(p) or p
end

--- The names a compaction in place uses beside catalog `path`.
-- @tparam string path the catalog directory
-- @treturn table `{tmp = path .. ".compact-tmp", new = path .. ".compact-new",
--   old = path .. ".compact-old"}`
function M.names(path)
  path = clean(path)
  return { tmp = path .. ".compact-tmp", new = path .. ".compact-new", old = path .. ".compact-old" }
end

-- M.recover without the lock (compact_in_place holds it)
local function recover(path)
  local n = M.names(path)
  local notes = {}
  if exists(n.tmp) then remove_dir(n.tmp) end
  if exists(path) and exists(n.new) and exists(n.old) then
    -- a swap by two renames killed between them leaves no catalog at `path`;
    -- one there now was made since (init, import, an open that creates): which
    -- of the three to keep is the user's call, so nothing is removed
    raise("EEXIST", "compact: %s, %s and %s all exist: a compaction was interrupted between its two renames (%s is "
      .. "the catalog before it, %s its verified copy) and %s was created since; nothing was removed: keep the one "
      .. "you want at %s and remove the others, then run compact again", path, n.new, n.old, n.old, n.new, path, path)
  end
  if not exists(path) and exists(n.new) and exists(n.old) then
    mv(n.new, path)
    notes[#notes + 1] = "finished an interrupted compact: the compacted catalog is in place"
  elseif exists(path) and exists(n.new) then
    remove_dir(n.new)
  end
  if exists(path) and exists(n.old) then remove_dir(n.old) end
  return notes
end

-- the directory holding `path`
local function parent_of(path)
  local p = path:match("^(.*)/[^/]*$")
  if p == nil then return "." end
  return p == "" and "/" or p
end

-- runs fn(path, ...) holding the lock of the directory beside which a
-- compaction of `path` works (moraine.core.lock_dir): one compaction or
-- recovery there at a time, so none finishes or removes another's copies. A
-- lock held by another waits for it (polled, so Ctrl-C still stops the wait;
-- the lock goes with its process however that ends), as a commit waits for
-- another writer: two imports at once each end as they did before the lock.
local function locked(path, fn, ...)
  local dir = parent_of(path)
  local lk, why = moraine.core.lock_dir(dir)
  while not lk and why == "busy" do
    moraine.core.sleep(0.02)
    lk, why = moraine.core.lock_dir(dir)
  end
  if not lk then raise("EIO", "compact: cannot lock %s: %s", dir, tostring(why)) end
  local ok, res = pcall(fn, path, ...)
  lk:release()
  if not ok then error(res, 0) end
  return res
end

--- Finishes or undoes a compaction in place that a kill interrupted:
-- `.compact-tmp` (a copy never finished) is removed; when the catalog is
-- missing and both `.compact-new` (a whole, verified copy) and `.compact-old`
-- are there (killed between the two renames of a swap without
-- RENAME_EXCHANGE), the copy is put in place; a `.compact-new` beside the
-- catalog (killed before the swap: the copy; or right after an exchange: the
-- old catalog, the copy being in place) is removed; a `.compact-old` beside the
-- catalog (killed after the swap) is removed. Holds the lock of the
-- directory holding `path` (moraine.core.lock_dir) while it works; does
-- nothing when that directory does not exist.
-- @tparam string path the catalog directory
-- @treturn {string,...} notes on what was done (empty when nothing was left)
-- @raise EIO (a rename failed; the directory cannot be locked), EINVAL
--   (`path` not a string), EEXIST (the
--   catalog, `.compact-new` and `.compact-old` all exist: a catalog was created
--   after a swap was killed between its renames; nothing is removed)
function M.recover(path)
  path = clean(path)
  -- a directory holding the catalog that does not exist (or is not one) holds nothing a compaction left (and no
  -- lock to take): what runs next (an import creating the catalog) says what is wrong
  -- (renaming "dir/" onto itself fails with ENOENT when it is missing, ENOTDIR when it is a file; any other
  -- failure, e.g. no permission, is left to the lock to report)
  local ok, _, code = os.rename(parent_of(path) .. "/", parent_of(path) .. "/")
  if not ok and (code == 2 or code == 20) then return {} end
  return locked(path, recover)
end

-- the sum of the entries of every subspace of the catalog at `dir`
local function count_entries(dir)
  local db = moraine.open(dir, { read_only = true, create = false })
  local ok, res = pcall(function()
    local total = 0
    for _, s in ipairs(db:stats()) do total = total + tonumber(key(s.entries)) end
    return total, db:last_snapshot()
  end)
  db:close()
  if not ok then error(res, 0) end
  return res
end

-- checks the copy at `dir` against the catalog it was made from (`info`:
-- db:compact's result); removes it and raises when it fails
local function check_copy(dir, info, progress)
  local ok, err = pcall(function()
    -- its own phase: a meter counts the check from 0 under its own label, not backwards
    local verify_progress = progress and function(done, total) return progress(done, total, "verifying the copy") end
    local bad = moraine.verify_path(dir, { progress = verify_progress })
    if #bad > 0 then
      raise("ECORRUPT", "compact: the compacted copy fails verify (%d violations; first: %s: %s); the catalog is unchanged",
        #bad, bad[1].key, bad[1].problem)
    end
    local n = count_entries(dir)
    if n ~= tonumber(key(info.entries)) then
      raise("ECORRUPT", "compact: the compacted copy holds %d entries, the catalog %s; the catalog is unchanged", n,
        key(info.entries))
    end
  end)
  if not ok then
    remove_dir(dir)
    error(err, 0)
  end
end

local function check_opts(opts)
  opts = opts or {}
  if type(opts) ~= "table" then raise("EINVAL", "compact: opts must be a table") end
  for k, v in pairs(opts) do
    if k ~= "progress" then raise("EINVAL", "compact: unknown option '%s'", tostring(k)) end
    if type(v) ~= "function" then raise("EINVAL", "compact: option 'progress' must be a function") end
  end
  return opts
end

local function result(info, notes)
  return { entries = info.entries, before = info.src_bytes, after = info.dest_bytes, notes = notes or {} }
end

--- Writes the compacted copy of the catalog in directory `path` to the new
-- directory `dest` and verifies it (the catalog is left as it is; writers
-- may go on: the copy is the catalog as of the moment it began). A catalog
-- of store format 2, 3 or 4 (an older moraine's) is copied in format 5
-- (docs/codec.md, Versioning).
-- @tparam string path the catalog directory
-- @tparam string dest the new catalog directory (must not exist)
-- @tparam[opt] table opts `progress(done, total, phase)`: called as the copy
--   goes (entries copied, entries in all; phase nil), then as the copy is
--   verified (counted from 0 again, phase "verifying the copy": a progress
--   meter shows it as its own phase)
-- @treturn table `{entries = n, before = bytes of data.mdb, after = bytes of
--   the copy's data.mdb, notes = {}}`
-- @raise EIO (no catalog at `path`; `dest` cannot be created), EEXIST
--   (`dest` exists), ECORRUPT (the copy fails verify or its entry count
--   differs; a value of a format-2 catalog does not decode, named by its
--   key: nothing is left at `dest`), EINVAL (bad opts), ELMDB
function M.compact_to(path, dest, opts)
  opts = check_opts(opts)
  path = clean(path)
  if not exists(path) then raise("EIO", "compact: no catalog at %s", path) end
  if exists(dest) then raise("EEXIST", "compact: %s already exists: the copy goes to a new directory", dest) end
  local db = moraine.open(path, { read_only = true, create = false })
  local ok, info = pcall(db.compact, db, dest, { progress = opts.progress })
  db:close()
  if not ok then error(info, 0) end
  check_copy(dest, info, opts.progress)
  return result(info)
end

-- Puts the verified copy `n.new` in place of catalog `path`: in one step when
-- the system can exchange the two names (renameat2 RENAME_EXCHANGE; then
-- `n.new` names the old catalog, and the catalog path never goes missing), else
-- by two renames (the old one to `n.old`, then the copy to `path`). Returns
-- whether it exchanged.
local function swap(path, n)
  if moraine.core.rename_exchange(path, n.new) then return true end
  mv(path, n.old)
  local done, err = os.rename(n.new, path)
  if not done then
    os.rename(n.old, path) -- put the old catalog back
    raise("EIO", "compact: cannot rename %s to %s: %s", n.new, path, tostring(err))
  end
  return false
end

-- undoes `swap`: the old catalog back at `path`, the copy at `n.new`
local function unswap(path, n, exchanged)
  if exchanged then
    assert(moraine.core.rename_exchange(path, n.new))
  else
    mv(path, n.new)
    mv(n.old, path)
  end
end

-- M.compact's work, the directory's lock held
local function compact_in_place(path, opts)
  local notes = recover(path)
  if not exists(path) then raise("EIO", "compact: no catalog at %s", path) end
  local n = M.names(path)
  -- the swap moves the whole directory: refuse one that holds what moraine did not write there
  local others = {}
  for _, name in ipairs(moraine.core.dir_entries(path)) do
    if not own_file(name) then others[#others + 1] = name end
  end
  if #others > 0 then
    raise("EINVAL", "compact: the catalog directory %s also holds %s, which moraine did not write: compact swaps "
      .. "the whole directory, so move them elsewhere and run it again; nothing was changed", path,
      table.concat(others, ", "))
  end
  local db = moraine.open(path, { create = false })
  local function busy(pid, when)
    raise("EINVAL", "compact: process %s has the catalog %s open%s; close it (stop the server or the other "
      .. "command) and run compact again: nothing was changed", key(pid), path, when or "")
  end
  local info
  local ok, err = pcall(function()
    local pid = db:open_elsewhere()
    if pid then busy(pid) end
    info = db:compact(n.tmp, { progress = opts.progress })
    check_copy(n.tmp, info, opts.progress)
    copy_file(path .. "/" .. FOLLOW_STATE, n.tmp .. "/" .. FOLLOW_STATE) -- a follower's last state goes along
    mv(n.tmp, n.new)
    -- the swap, under the catalog's write lock: no writer commits in between
    -- (db:commit holds LMDB's write transaction while fn runs); nothing is
    -- committed to the old catalog: fn ends by raising DONE
    local DONE = {}
    local swapped = false
    local okc, ec = pcall(db.commit, db, nil, function()
      if key(db:last_txnid()) ~= key(info.txnid) then
        raise("EINVAL", "compact: another writer committed to %s while it was compacted: run compact again; nothing "
          .. "was changed", path)
      end
      pid = db:open_elsewhere()
      if pid then busy(pid, " (it opened it during the compaction)") end
      local exchanged = swap(path, n)
      -- a process that opened the old files between the check and the
      -- swap would go on with them: undo it (and when the question cannot
      -- be answered)
      local okp, other = pcall(db.open_elsewhere, db)
      if not okp or other then
        unswap(path, n, exchanged)
        if not okp then error(other, 0) end
        busy(other, " (it opened it during the swap)")
      end
      swapped = true
      error(DONE, 0)
    end)
    if not okc and ec ~= DONE then error(ec, 0) end
    assert(swapped)
    if exists(n.new) then mv(n.new, n.old) end -- exchanged: .compact-new is the old catalog
  end)
  db:close()
  if not ok then
    if exists(path) then pcall(remove_dir, n.new) end
    error(err, 0)
  end
  remove_dir(n.old)
  return result(info, notes)
end

--- Compacts the catalog in directory `path` in place (see the module doc):
-- the copy is made and verified beside it, then swapped in by renames under
-- the catalog's write lock. A run first finishes what a killed run left
-- (`M.recover`); one compaction beside the catalog at a time (the lock of
-- its directory, moraine.core.lock_dir: a second waits for the first). Refused, with the catalog unchanged, when another process
-- has the catalog open (`db:open_elsewhere`: a server, a reader, a writer:
-- they would go on with the old files), checked before the copy and again
-- under the write lock before and right after the swap (a process that
-- opened the old catalog meanwhile: the swap is undone), and when another
-- writer committed while the copy was made. A catalog of store format 2, 3 or 4
-- (an older moraine's) is rewritten in format 5 (docs/codec.md, Versioning).
-- @tparam string path the catalog directory
-- @tparam[opt] table opts `progress(done, total)` as for `M.compact_to`
-- @treturn table `{entries = n, before = bytes of data.mdb before, after =
--   bytes after, notes = {strings: what a killed run left and this one
--   finished}}`
-- @raise EIO (no catalog at `path`; a rename failed), EINVAL (another
--   process has the catalog open; another writer committed meanwhile: run
--   it again; the directory holds files other than the catalog's, a
--   follower's moraine-follow.json and the temporary state file a follower
--   killed while writing it leaves, which goes with the old catalog; bad
--   opts), ECORRUPT (the copy fails verify,
--   or a value of a format-2 catalog does not decode, named by its key: the
--   catalog is unchanged), ELMDB, EREADONLY (the catalog cannot be written)
function M.compact(path, opts)
  opts = check_opts(opts)
  return locked(clean(path), compact_in_place, opts)
end

return M
