--- moraine.policy — who may read what from moraine.http: bearer tokens,
-- stored as SHA-256 hashes, each with scopes (schema and table name
-- patterns) and a `keys` permission for the secret columns (the encryption
-- keys of an encrypted lake's files, docs/security.md). Pure Lua (Lua 5.4
-- and LuaJIT); the hashing is the caller's (moraine.http uses nginx's
-- `ngx.sha256_bin`, OpenSSL's SHA-256 underneath; `moraine token-hash` and
-- `sha256sum` give the same hex digest).
--
-- A policy is a Lua table, or the path of a JSON file holding the same:
--
--     { "tokens": [
--         { "name": "planner", "sha256": "<64 hex digits>",
--           "scopes": [ { "schema": "main", "table": "*" } ] },
--         { "name": "etl", "sha256": "...", "keys": true,
--           "scopes": [ { "schema": "*", "table": "*" } ] },
--         { "name": "one-table", "sha256": "...",
--           "scopes": [ { "schema": "sales", "table": "orders", "keys": true } ] } ],
--       "realm": "lake" }
--
-- - `name` (string, required, unique) names the token in 403 bodies; it is
--   not secret. `sha256` (required, unique) is the hex SHA-256 of the token
--   (upper or lower case); the token itself is stored nowhere.
-- - `scopes` (array, at least one): `schema` and `table` are name patterns
--   (`*` any run of characters, `?` one character, anything else itself,
--   case-sensitive); a table is visible to the token when one scope matches
--   both its schema name and its table name. `keys = true` on a scope lets
--   the token read that scope's tables' secret columns unredacted.
-- - `keys = true` on the token: as if every one of its scopes had it.
-- - `realm` (optional string): the realm of WWW-Authenticate (default "moraine").
-- @module moraine.policy

local moraine = require "moraine"

local M = {}

local function bad(fmt, ...)
  moraine.core.raise("EINVAL", "access policy: " .. fmt:format(...))
end

-- a glob (`*`, `?`) as an anchored Lua pattern
local function glob_pattern(g)
  local out = { "^" }
  for i = 1, #g do
    local c = g:sub(i, i)
    if c == "*" then out[#out + 1] = ".*"
    elseif c == "?" then out[#out + 1] = "."
    elseif c:match("%w") then out[#out + 1] = c
    else out[#out + 1] = "%" .. c end
  end
  out[#out + 1] = "$"
  return table.concat(out)
end

local function check_fields(t, allowed, where)
  for k in pairs(t) do
    if type(k) ~= "string" or not allowed[k] then bad("%s: unknown field '%s'", where, tostring(k)) end
  end
end

local function read_file(path)
  local f, err = io.open(path, "rb")
  if not f then moraine.core.raise("EIO", "access policy: cannot read " .. path .. ": " .. tostring(err)) end
  local text = f:read("*a")
  f:close()
  local ok, doc = pcall(moraine.json_decode, text)
  if not ok then
    moraine.core.raise("EJSON", "access policy " .. path .. ": " .. (moraine.is_error(doc) and doc.message or tostring(doc)))
  end
  return doc
end

local Policy = {}
Policy.__index = Policy

--- Loads and checks a policy.
-- @param spec a policy table, or the path of a JSON file holding one (see the module's doc)
-- @return a policy object (methods authenticate, may_see, may_read_keys, may_name, unrestricted)
-- @raise EINVAL naming the token (by position and name) and the field that is wrong: not a
--   table, no tokens, a missing or duplicate name, a `sha256` that is not 64 hex digits or
--   that another token has, no scopes, a scope without string `schema` and `table`, a `keys`
--   that is not a boolean, an unknown field; EIO / EJSON for a file that cannot be read or
--   is not JSON
function M.new(spec)
  if type(spec) == "string" then spec = read_file(spec) end
  if type(spec) ~= "table" then bad("expected a table (or a JSON file) with 'tokens', got %s", type(spec)) end
  check_fields(spec, { tokens = true, realm = true }, "policy")
  if spec.realm ~= nil and (type(spec.realm) ~= "string" or not spec.realm:match('^[%w%.%-_ ]+$')) then
    bad("'realm' must be a string of letters, digits, '.', '-', '_' and spaces")
  end
  if type(spec.tokens) ~= "table" or #spec.tokens == 0 then bad("'tokens' must be a non-empty array") end
  local p = setmetatable({ tokens = {}, realm = spec.realm or "moraine" }, Policy)
  local names, hashes = {}, {}
  for i, t in ipairs(spec.tokens) do
    local where = ("tokens[%d]"):format(i)
    if type(t) ~= "table" then bad("%s: expected a table", where) end
    check_fields(t, { name = true, sha256 = true, scopes = true, keys = true }, where)
    if type(t.name) ~= "string" or t.name == "" then bad("%s: 'name' (a non-empty string) is required", where) end
    where = ("tokens[%d] (%s)"):format(i, t.name)
    if names[t.name] then bad("%s: the name is used by another token", where) end
    if type(t.sha256) ~= "string" or #t.sha256 ~= 64 or not t.sha256:match("^%x+$") then
      bad("%s: 'sha256' must be the token's SHA-256 as 64 hex digits (moraine token-hash)", where)
    end
    local digest = t.sha256:lower()
    if hashes[digest] then bad("%s: another token has the same sha256", where) end
    if t.keys ~= nil and type(t.keys) ~= "boolean" then bad("%s: 'keys' must be a boolean", where) end
    if type(t.scopes) ~= "table" or #t.scopes == 0 then bad("%s: 'scopes' must be a non-empty array", where) end
    local scopes = {}
    for j, s in ipairs(t.scopes) do
      local sw = ("%s: scopes[%d]"):format(where, j)
      if type(s) ~= "table" then bad("%s: expected a table", sw) end
      check_fields(s, { schema = true, table = true, keys = true }, sw)
      if type(s.schema) ~= "string" or s.schema == "" then bad("%s: 'schema' (a name pattern) is required", sw) end
      if type(s.table) ~= "string" or s.table == "" then bad("%s: 'table' (a name pattern) is required", sw) end
      if s.keys ~= nil and type(s.keys) ~= "boolean" then bad("%s: 'keys' must be a boolean", sw) end
      scopes[j] = { schema = glob_pattern(s.schema), table = glob_pattern(s.table), keys = s.keys == true or t.keys == true,
        all = s.schema:match("^%*+$") ~= nil and s.table:match("^%*+$") ~= nil }
    end
    names[t.name], hashes[digest] = true, true
    p.tokens[i] = { name = t.name, digest = digest, scopes = scopes }
  end
  return p
end

--- Compares two strings in time that depends only on their lengths (every
-- byte is looked at whatever differs first).
-- @tparam string a
-- @tparam string b
-- @treturn boolean whether they are equal
function M.consteq(a, b)
  if #a ~= #b then return false end
  local diff = 0
  for i = 1, #a do
    -- (x - y)^2 > 0 iff the bytes differ; summed without branching on the data
    local d = a:byte(i) - b:byte(i)
    diff = diff + d * d
  end
  return diff == 0
end

--- The token whose hash is `digest_hex`, or nil. Every token of the policy is
-- compared, each in constant time (M.consteq), so the time taken does not
-- tell which token (or which prefix) matched.
-- @tparam string digest_hex the hex SHA-256 of the bearer token presented
-- @return the token entry ({name = s, scopes = {...}}) or nil
function Policy:authenticate(digest_hex)
  digest_hex = digest_hex:lower()
  local found
  for _, t in ipairs(self.tokens) do
    if M.consteq(t.digest, digest_hex) then found = t end
  end
  return found
end

local function scope_for(tok, schema, tbl)
  local best
  for _, s in ipairs(tok.scopes) do
    if schema:match(s.schema) and tbl:match(s.table) then
      if s.keys then return s end
      best = best or s
    end
  end
  return best
end

--- Whether token `tok` may see table `schema`.`tbl`.
-- @param tok a token entry (Policy:authenticate)
-- @tparam string schema schema name
-- @tparam string tbl table name
-- @treturn boolean
function Policy.may_see(tok, schema, tbl) return scope_for(tok, schema, tbl) ~= nil end

--- Whether token `tok` may read the secret columns of table `schema`.`tbl` (a
-- matching scope with `keys`, or the token's own `keys`).
-- @treturn boolean
function Policy.may_read_keys(tok, schema, tbl)
  local s = scope_for(tok, schema, tbl)
  return s ~= nil and s.keys
end

--- Whether a request naming a table as `name` (`table` or `schema.table`, as
-- moraine.http takes it) may go on: the name is matched against the scopes
-- before the catalog is looked at, so that an out-of-scope name is refused
-- (403) whether or not such a table exists. An unqualified name passes when
-- some scope's table pattern matches it.
-- @treturn boolean
function Policy.may_name(tok, name)
  local schema, tbl = name:match("^([^.]+)%.(.+)$")
  if schema then return scope_for(tok, schema, tbl) ~= nil end
  for _, s in ipairs(tok.scopes) do
    if name:match(s.table) then return true end
  end
  return false
end

--- Whether token `tok` sees every table (a scope `*`/`*`): such a token also
-- sees the changes of each snapshot (`ducklake_snapshot_changes`), which name
-- tables.
-- @treturn boolean
function Policy.unrestricted(tok)
  for _, s in ipairs(tok.scopes) do
    if s.all then return true end
  end
  return false
end

return M
