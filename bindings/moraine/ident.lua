--- DuckDB's identifier rules, as moraine's SQL path applies them.
--
-- DuckDB looks identifiers up case-insensitively and stores them as written
-- (case-preserving); two names that differ only by case are the same name.
-- When DuckDB renders an expression (ParsedExpression::ToString, which is
-- what DuckLake stores as a sort expression) it writes each name through
-- KeywordHelper::WriteOptionallyQuoted with allow_caps = true: the name is
-- left bare when every byte is a lowercase or uppercase ASCII letter, an
-- underscore, or (not first) a digit, and the name is not a keyword of any
-- category; otherwise it is written in double quotes with `"` doubled.
-- The keyword list is DuckDB's grammar keyword lists
-- (third_party/libpg_query/grammar/keywords/*.list: unreserved, reserved,
-- column name, function name, type name), without their `_P` suffixes.
-- Evidence in the corpus (tests/fixtures/ducklake/corpus): `"day"`,
-- `"year"("select")`, `camelCase`, `"1st"`, `"a""b"`, `"naïve col"`.
-- @module moraine.ident
local M = {}

local LISTS = {
  -- unreserved
  [[ABORT ABSOLUTE ACCESS ACTION ADD ADMIN AFTER AGGREGATE ALSO ALTER ALWAYS ASSERTION
  ASSIGNMENT AT ATTACH ATTRIBUTE BACKWARD BEFORE BEGIN BY CACHE CALL CALLED CASCADE CASCADED
  CATALOG CHAIN CHARACTERISTICS CHECKPOINT CLASS CLOSE CLUSTER COMMENT COMMENTS COMMIT
  COMMITTED COMPRESSION CONFIGURATION CONFLICT CONNECTION CONSTRAINTS CONTENT CONTINUE
  CONVERSION COPY CSV CUBE CURRENT CURSOR CYCLE DATA DATABASE DAY DAYS DEALLOCATE DECLARE
  DEFAULTS DEFERRED DEFINER DELETE DELIMITER DELIMITERS DEPENDS DESCRIBE DETACH DICTIONARY
  DISABLE DISCARD DOCUMENT DOMAIN DOUBLE DROP EACH ENABLE ENCODING ENCRYPTED ENUM ESCAPE
  EVENT EXCLUDE EXCLUDING EXCLUSIVE EXECUTE EXPLAIN EXPORT EXPORT_STATE EXTENSION EXTERNAL
  FAMILY FILTER FIRST FOLLOWING FORCE FORWARD FUNCTION FUNCTIONS GLOBAL GRANTED HANDLER
  HEADER HOLD HOUR HOURS IDENTITY IF IGNORE IMMEDIATE IMMUTABLE IMPLICIT IMPORT INCLUDE
  INCLUDING INCREMENT INDEX INDEXES INHERIT INHERITS INLINE INPUT INSENSITIVE INSERT INSTALL
  INSTEAD INVOKER JSON ISOLATION KEY LABEL LANGUAGE LARGE LAST LEAKPROOF LEVEL LISTEN LOAD
  LOCAL LOCATION LOCK LOCKED LOGGED MACRO MAPPING MATCH MATERIALIZED MAXVALUE METHOD
  MICROSECOND MICROSECONDS MILLISECOND MILLISECONDS MINUTE MINUTES MINVALUE MODE MONTH
  MONTHS MOVE NAME NAMES NEW NEXT NO NOTHING NOTIFY NOWAIT NULLS OBJECT OF OFF OIDS OLD
  OPERATOR OPTION OPTIONS ORDINALITY OVER OVERRIDING OWNED OWNER PARALLEL PARSER PARTIAL
  PARTITION PASSING PASSWORD PERCENT PLANS POLICY PRAGMA PRECEDING PREPARE PREPARED
  PRESERVE PRIOR PRIVILEGES PROCEDURAL PROCEDURE PROGRAM PUBLICATION QUOTE RANGE READ
  REASSIGN RECHECK RECURSIVE REF REFERENCING REFRESH REINDEX RELATIVE RELEASE RENAME
  REPEATABLE REPLACE REPLICA RESET RESPECT RESTART RESTRICT RETURNS REVOKE ROLE ROLLBACK
  ROLLUP ROWS RULE SAMPLE SAVEPOINT SCHEMA SCHEMAS SCROLL SEARCH SECOND SECONDS SECURITY
  SEQUENCE SEQUENCES SERIALIZABLE SERVER SESSION SET SETS SHARE SHOW SKIP SNAPSHOT SQL
  STABLE STANDALONE START STATEMENT STATISTICS STDIN STDOUT STORAGE STORED STRICT STRIP
  SUBSCRIPTION SUMMARIZE SYSID SYSTEM TABLES TABLESPACE TEMP TEMPLATE TEMPORARY TEXT
  TRANSACTION TRANSFORM TRIGGER TRUNCATE TRUSTED TYPE TYPES UNBOUNDED UNCOMMITTED
  UNENCRYPTED UNKNOWN UNLISTEN UNLOGGED UNTIL UPDATE USE USER VACUUM VALID VALIDATE
  VALIDATOR VALUE VARYING VERSION VIEW VIEWS VIRTUAL VOLATILE WHITESPACE WITHIN WITHOUT
  WORK WRAPPER WRITE XML YEAR YEARS YES ZONE]],
  -- reserved
  [[ALL ANALYSE ANALYZE AND ANY ARRAY AS ASC ASYMMETRIC BOTH CASE CAST CHECK COLLATE COLUMN
  CONSTRAINT CREATE DEFAULT DEFERRABLE DESC DISTINCT DO ELSE END EXCEPT FALSE FETCH FOR
  FOREIGN FROM GRANT GRAPH_TABLE GROUP HAVING QUALIFY IN INITIALLY INTERSECT INTO LATERAL
  LEADING LIMIT NOT NULL OFFSET ON ONLY OR ORDER PIVOT PIVOT_WIDER PIVOT_LONGER PLACING
  PRIMARY REFERENCES RETURNING SELECT SOME SYMMETRIC TABLE THEN TO TRAILING TRUE UNION
  UNIQUE UNPIVOT USING VARIADIC WHEN WHERE WINDOW WITH]],
  -- column name
  [[BETWEEN BIGINT BIT BOOLEAN CHAR CHARACTER COALESCE DEC DECIMAL EXISTS EXTRACT FLOAT
  GENERATED GROUPING GROUPING_ID INOUT INT INTEGER INTERVAL MAP NATIONAL NCHAR NONE NULLIF
  NUMERIC OUT OVERLAY POSITION PRECISION REAL ROW SETOF SMALLINT SUBSTRING STRUCT TIME
  TIMESTAMP TREAT TRIM TRY_CAST VALUES VARCHAR XMLATTRIBUTES XMLCONCAT XMLELEMENT XMLEXISTS
  XMLFOREST XMLNAMESPACES XMLPARSE XMLPI XMLROOT XMLSERIALIZE XMLTABLE]],
  -- function name and type name
  [[ASOF AUTHORIZATION BINARY COLLATION CONCURRENTLY CROSS CURRENT_SCHEMA FREEZE FULL GLOB
  ILIKE INNER IS ISNULL JOIN LEFT LIKE NATURAL NOTNULL OUTER OVERLAPS POSITIONAL RIGHT
  SIMILAR TABLESAMPLE VERBOSE]],
}

local KEYWORDS = {}
for _, list in ipairs(LISTS) do
  for w in list:gmatch("%S+") do KEYWORDS[w:lower()] = true end
end

-- The engine holds the same rules (engine/ident.c); when the C module is
-- loaded these functions are its, so there is one implementation in use.
local ok_core, core = pcall(require, "moraine.core")
if not ok_core or type(core) ~= "table" or not core.ident_render then core = nil end

--- Whether `name` is one of DuckDB's keywords (any category), compared
-- without regard to ASCII case (DuckDB: KeywordHelper::IsKeyword).
-- @tparam string name
-- @treturn boolean
function M.is_keyword(name)
  if core then return core.ident_is_keyword(name) end
  return KEYWORDS[name:lower()] == true
end

--- Whether DuckDB writes `name` in double quotes when it renders it
-- (KeywordHelper::RequiresQuotes with allow_caps = true): a byte other than
-- an ASCII letter, `_` or a digit (a digit first counts), an empty name, or a keyword.
-- @tparam string name the identifier as stored (bytes)
-- @treturn boolean
function M.requires_quotes(name)
  if name == "" or name:find("^[0-9]") or name:find("[^A-Za-z0-9_]") then return true end
  return M.is_keyword(name)
end

--- Renders an identifier as DuckDB does (KeywordHelper::WriteOptionallyQuoted):
-- bare, or in double quotes with every `"` doubled when @{requires_quotes}.
-- @tparam string name
-- @treturn string
function M.render(name)
  if core and not name:find("%z") then return core.ident_render(name) end
  if M.requires_quotes(name) then return '"' .. name:gsub('"', '""') .. '"' end
  return name
end

--- The key under which DuckDB compares identifiers: ASCII letters lowered,
-- every other byte kept (DuckDB's StringUtil::Lower, used by its
-- case-insensitive catalog lookups).
-- @tparam string name
-- @treturn string
function M.fold(name)
  return (name:gsub("%u", string.lower))
end

--- Whether two identifiers name the same thing in DuckDB (equal after @{fold}).
-- A name that is not a string (a NULL name of a catalog row,
-- `moraine.null`) is the same as no name, as NULL equals nothing in SQL.
-- @tparam string a
-- @tparam string b
-- @treturn boolean
function M.same(a, b)
  if type(a) ~= "string" or type(b) ~= "string" then return false end
  return M.fold(a) == M.fold(b)
end

return M
