-- moraine: DuckLake catalog engine on LMDB, as the Lua module `moraine`.
--
-- Build and install from the source tree (offline; LMDB, jansson and SQLite's
-- C library come from the system: apt-get install liblmdb-dev libjansson-dev
-- libsqlite3-dev):
--
--     luarocks --lua-version 5.4 make moraine-scm-1.rockspec              -- system tree
--     luarocks --lua-version 5.4 make --tree /tmp/rt moraine-scm-1.rockspec
--
-- Every engine/*.c is compiled into the C module `moraine.core` (there is no
-- separate libmoraine in a rock; `make install` installs that); the Lua
-- modules and the `moraine` command come along. spec/examples_spec.lua checks
-- that the lists below name every engine source and every Lua module.
-- Dependencies are the system's only, so the build works offline.
-- `moraine.sql` (db:exec, moraine sql) needs LPeg (Debian: lua-lpeg;
-- LuaRocks: lpeg), loaded on first use; the rest of the module runs without it.
-- `moraine.sqlite`'s import and export_sqlite read and write SQLite through
-- LuaSQL (Debian: lua-sql-sqlite3), its export_sql does not; `moraine.sync`
-- reads and `moraine.push` writes SQLite and PostgreSQL through LuaSQL
-- (lua-sql-sqlite3, lua-sql-postgres) when a source or target of that kind is
-- given; `moraine.http` runs inside OpenResty/nginx's Lua module. The
-- `moraine` command (moraine.cli.*) parses its command line with argparse
-- (Debian: lua-argparse; LuaRocks: argparse), like those not listed under
-- dependencies, so that the build stays offline.
rockspec_format = "3.0"
package = "moraine"
version = "scm-1"

-- `luarocks make` builds the tree it is run in; source.url is only read by
-- `luarocks build`/`pack`/`install` of this rockspec, which clone it.
-- (The address is where the repository is to be published; until it is,
-- build from a checkout with `luarocks make`.)
source = {
  url = "git+https://github.com/moraine-db/moraine.git",
  branch = "main",
}

description = {
  summary = "Embedded DuckLake catalog engine on LMDB, with time travel",
  detailed = [[
moraine keeps a DuckLake lake's metadata rows (ducklake_snapshot,
ducklake_data_file, ducklake_partition_info, ...) in an ordered LMDB keyspace
and serves them exactly as DuckLake wrote them, at any snapshot. Its verbs
write the rows DuckLake would write for the same statements. Runs on Lua 5.4
and LuaJIT.
]],
  labels = { "ducklake", "lmdb", "catalog" },
  homepage = "https://github.com/moraine-db/moraine",
  license = "MIT",
}

-- Lua 5.4 and LuaJIT (which is Lua 5.1 to LuaRocks) are what the module is
-- built and tested for.
dependencies = {
  "lua >= 5.1",
}

external_dependencies = {
  LMDB = { header = "lmdb.h", library = "lmdb" },
  JANSSON = { header = "jansson.h", library = "jansson" },
  SQLITE = { header = "sqlite3.h", library = "sqlite3" },
}

build = {
  type = "builtin",
  modules = {
    ["moraine.core"] = {
      sources = {
        "bindings/moraine_batch.c",
        "bindings/moraine_core.c",
        "bindings/moraine_db.c",
        "bindings/moraine_json.c",
        "bindings/moraine_read.c",
        "bindings/moraine_staged.c",
        "bindings/moraine_values.c",
        "bindings/moraine_verbs.c",
        "engine/codec.c",
        "engine/coltype.c",
        "engine/commit.c",
        "engine/compact.c",
        "engine/count.c",
        "engine/int_cache.c",
        "engine/crc32c.c",
        "engine/error.c",
        "engine/history_rewrite.c",
        "engine/ident.c",
        "engine/json.c",
        "engine/key.c",
        "engine/ndjson.c",
        "engine/ndjson_export.c",
        "engine/ndjson_fast.c",
        "engine/ndjson_plan.c",
        "engine/project.c",
        "engine/read.c",
        "engine/secrets.c",
        "engine/sqlite_import.c",
        "engine/statval.c",
        "engine/store.c",
        "engine/tables.c",
        "engine/txn.c",
        "engine/txn_rows.c",
        "engine/verbs_cache.c",
        "engine/verbs_catalog.c",
        "engine/verbs_colstats.c",
        "engine/verbs_column.c",
        "engine/verbs_commit.c",
        "engine/verbs_files.c",
        "engine/verbs_idorder.c",
        "engine/verbs_init.c",
        "engine/verbs_spec.c",
        "engine/verbs_table.c",
        "engine/verbs_tx.c",
        "engine/verify.c",
      },
      libraries = { "lmdb", "jansson", "sqlite3", "pthread", "m" },
      incdirs = { "engine", "$(LMDB_INCDIR)", "$(JANSSON_INCDIR)", "$(SQLITE_INCDIR)" },
      libdirs = { "$(LMDB_LIBDIR)", "$(JANSSON_LIBDIR)", "$(SQLITE_LIBDIR)" },
      defines = { "_GNU_SOURCE" },
    },
    ["moraine"] = "bindings/moraine.lua",
    ["moraine.sqlite"] = "bindings/moraine/sqlite.lua",
    ["moraine.push"] = "bindings/moraine/push.lua",
    ["moraine.push_target"] = "bindings/moraine/push_target.lua",
    ["moraine.push_rebase"] = "bindings/moraine/push_rebase.lua",
    ["moraine.http"] = "bindings/moraine/http.lua",
    ["moraine.policy"] = "bindings/moraine/policy.lua",
    ["moraine.progress"] = "bindings/moraine/progress.lua",
    ["moraine.sync"] = "bindings/moraine/sync.lua",
    ["moraine.sync_source"] = "bindings/moraine/sync_source.lua",
    ["moraine.sync_rewrite"] = "bindings/moraine/sync_rewrite.lua",
    ["moraine.follow_state"] = "bindings/moraine/follow_state.lua",
    ["moraine.audit"] = "bindings/moraine/audit.lua",
    ["moraine.clustering"] = "bindings/moraine/clustering.lua",
    ["moraine.layout"] = "bindings/moraine/layout.lua",
    ["moraine.layout_http"] = "bindings/moraine/layout_http.lua",
    ["moraine.svg"] = "bindings/moraine/svg.lua",
    ["moraine.tablefiles"] = "bindings/moraine/tablefiles.lua",
    ["moraine.typed"] = "bindings/moraine/typed.lua",
    ["moraine.sql"] = "bindings/moraine/sql.lua",
    ["moraine.sql_types"] = "bindings/moraine/sql_types.lua",
    ["moraine.expr"] = "bindings/moraine/expr.lua",
    ["moraine.ident"] = "bindings/moraine/ident.lua",
    ["moraine.cli.catalog"] = "bindings/moraine/cli/catalog.lua",
    ["moraine.cli.compact"] = "bindings/moraine/cli/compact.lua",
    ["moraine.cli.diff"] = "bindings/moraine/cli/diff.lua",
    ["moraine.cli.errors"] = "bindings/moraine/cli/errors.lua",
    ["moraine.cli.export"] = "bindings/moraine/cli/export.lua",
    ["moraine.cli.files"] = "bindings/moraine/cli/files.lua",
    ["moraine.cli.help"] = "bindings/moraine/cli/help.lua",
    ["moraine.cli.history"] = "bindings/moraine/cli/history.lua",
    ["moraine.cli.init_command"] = "bindings/moraine/cli/init_command.lua",
    ["moraine.cli.layout"] = "bindings/moraine/cli/layout.lua",
    ["moraine.cli.main"] = "bindings/moraine/cli/main.lua",
    ["moraine.cli.output"] = "bindings/moraine/cli/output.lua",
    ["moraine.cli.push"] = "bindings/moraine/cli/push.lua",
    ["moraine.cli.repl"] = "bindings/moraine/cli/repl.lua",
    ["moraine.cli.show"] = "bindings/moraine/cli/show.lua",
    ["moraine.cli.snapshots"] = "bindings/moraine/cli/snapshots.lua",
    ["moraine.cli.sql"] = "bindings/moraine/cli/sql.lua",
    ["moraine.cli.stats"] = "bindings/moraine/cli/stats.lua",
    ["moraine.cli.sync"] = "bindings/moraine/cli/sync.lua",
    ["moraine.cli.tables"] = "bindings/moraine/cli/tables.lua",
    ["moraine.cli.token_hash"] = "bindings/moraine/cli/token_hash.lua",
    ["moraine.cli.util"] = "bindings/moraine/cli/util.lua",
    ["moraine.cli.verify"] = "bindings/moraine/cli/verify.lua",
    ["moraine.cli.upgrade"] = "bindings/moraine/cli/upgrade.lua",
    ["moraine.catalog_version"] = "bindings/moraine/catalog_version.lua",
    ["moraine.upgrade"] = "bindings/moraine/upgrade.lua",
    ["moraine.compact"] = "bindings/moraine/compact.lua",
  },
  install = {
    bin = { moraine = "scripts/moraine" },
  },
}
