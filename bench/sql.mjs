// sql.mjs — the SQL each SQL peer runs, written once for both dialects.
//
//   node bench/sql.mjs META.json OUTDIR
//
// writes OUTDIR/{sqlite,duckdb}/{a,b,c,d}.sql and OUTDIR/{sqlite,duckdb}/schema.sql
// (statements separated by a line "-- next"). The queries are the ones the
// ducklake extension issues (src/storage/ducklake_metadata_manager.cpp):
//   a, b  GenerateFileListQuery: the data files of one table at a snapshot, the
//         delete files LEFT JOINed, one col_<id>_stats CTE per column joined for
//         its min/max (the form DuckLake issues when the scan needs every
//         column's stats), and the partition values joined as
//         GetFilesForCompaction joins them (ARRAY_AGG ordered by key index,
//         restricted to the table as the bucket-pruning subquery is);
//   c     the partition and sort queries of BuildCatalogForSnapshot;
//   d     the catalog load on ATTACH: LoadDuckLake's metadata query, the
//         newest snapshot, then every query of BuildCatalogForSnapshot
//         (schemas; tables with columns, tags, inlined tables, column tags;
//         views; macros; partitions; sorts) and the global table stats.
// SQLite differences, kept to what its dialect needs: LIST({...}) becomes
// json_group_array(json_object(...)) (DuckLake's ListAggregation), ARRAY_AGG
// (... ORDER BY) a json_group_array over an ordered subquery (SQLite 3.40 has
// no ordered aggregates), x::VARCHAR CAST(x AS TEXT), and "view" is quoted.
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";

const [metaPath, outDir] = process.argv.slice(2);
if (!metaPath || !outDir) {
  console.error("usage: node bench/sql.mjs META.json OUTDIR");
  process.exit(2);
}
const meta = JSON.parse(readFileSync(metaPath, "utf8"));

// DuckLake's CREATE TABLE statements (GetCreateTableStatements), with the
// columns the 1.1-dev1 catalog of the fixtures has (row_group_count on data
// and delete files; ducklake_view_column_tag).
export const SCHEMA = [
  "CREATE TABLE ducklake_metadata(key VARCHAR NOT NULL, value VARCHAR NOT NULL, scope VARCHAR, scope_id BIGINT)",
  "CREATE TABLE ducklake_snapshot(snapshot_id BIGINT PRIMARY KEY, snapshot_time TIMESTAMPTZ, schema_version BIGINT, next_catalog_id BIGINT, next_file_id BIGINT)",
  "CREATE TABLE ducklake_snapshot_changes(snapshot_id BIGINT PRIMARY KEY, changes_made VARCHAR, author VARCHAR, commit_message VARCHAR, commit_extra_info VARCHAR)",
  "CREATE TABLE ducklake_schema(schema_id BIGINT PRIMARY KEY, schema_uuid UUID, begin_snapshot BIGINT, end_snapshot BIGINT, schema_name VARCHAR, path VARCHAR, path_is_relative BOOLEAN)",
  "CREATE TABLE ducklake_table(table_id BIGINT, table_uuid UUID, begin_snapshot BIGINT, end_snapshot BIGINT, schema_id BIGINT, table_name VARCHAR, path VARCHAR, path_is_relative BOOLEAN)",
  "CREATE TABLE ducklake_view(view_id BIGINT, view_uuid UUID, begin_snapshot BIGINT, end_snapshot BIGINT, schema_id BIGINT, view_name VARCHAR, dialect VARCHAR, sql VARCHAR, column_aliases VARCHAR)",
  "CREATE TABLE ducklake_tag(object_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, key VARCHAR, value VARCHAR)",
  "CREATE TABLE ducklake_column_tag(table_id BIGINT, column_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, key VARCHAR, value VARCHAR)",
  "CREATE TABLE ducklake_data_file(data_file_id BIGINT PRIMARY KEY, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, file_order BIGINT, path VARCHAR, path_is_relative BOOLEAN, file_format VARCHAR, record_count BIGINT, file_size_bytes BIGINT, footer_size BIGINT, row_id_start BIGINT, partition_id BIGINT, encryption_key VARCHAR,  mapping_id BIGINT, partial_max BIGINT, row_group_count BIGINT)",
  "CREATE TABLE ducklake_file_column_stats(data_file_id BIGINT, table_id BIGINT, column_id BIGINT, column_size_bytes BIGINT, value_count BIGINT, null_count BIGINT, min_value VARCHAR, max_value VARCHAR, contains_nan BOOLEAN, extra_stats VARCHAR)",
  "CREATE TABLE ducklake_file_variant_stats(data_file_id BIGINT, table_id BIGINT, column_id BIGINT, variant_path VARCHAR, shredded_type VARCHAR, column_size_bytes BIGINT, value_count BIGINT, null_count BIGINT, min_value VARCHAR, max_value VARCHAR, contains_nan BOOLEAN, extra_stats VARCHAR)",
  "CREATE TABLE ducklake_delete_file(delete_file_id BIGINT PRIMARY KEY, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, data_file_id BIGINT, path VARCHAR, path_is_relative BOOLEAN, format VARCHAR, delete_count BIGINT, file_size_bytes BIGINT, footer_size BIGINT, encryption_key VARCHAR, partial_max BIGINT, row_group_count BIGINT)",
  "CREATE TABLE ducklake_column(column_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, table_id BIGINT, column_order BIGINT, column_name VARCHAR, column_type VARCHAR, initial_default VARCHAR, default_value VARCHAR, nulls_allowed BOOLEAN, parent_column BIGINT, default_value_type VARCHAR, default_value_dialect VARCHAR)",
  "CREATE TABLE ducklake_table_stats(table_id BIGINT, record_count BIGINT, next_row_id BIGINT, file_size_bytes BIGINT)",
  "CREATE TABLE ducklake_table_column_stats(table_id BIGINT, column_id BIGINT, contains_null BOOLEAN, contains_nan BOOLEAN, min_value VARCHAR, max_value VARCHAR, extra_stats VARCHAR)",
  "CREATE TABLE ducklake_partition_info(partition_id BIGINT, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT)",
  "CREATE TABLE ducklake_partition_column(partition_id BIGINT, table_id BIGINT, partition_key_index BIGINT, column_id BIGINT, transform VARCHAR)",
  "CREATE TABLE ducklake_file_partition_value(data_file_id BIGINT, table_id BIGINT, partition_key_index BIGINT, partition_value VARCHAR)",
  "CREATE TABLE ducklake_files_scheduled_for_deletion(data_file_id BIGINT, path VARCHAR, path_is_relative BOOLEAN, schedule_start TIMESTAMPTZ)",
  "CREATE TABLE ducklake_inlined_data_tables(table_id BIGINT, table_name VARCHAR, schema_version BIGINT)",
  "CREATE TABLE ducklake_column_mapping(mapping_id BIGINT, table_id BIGINT, type VARCHAR)",
  "CREATE TABLE ducklake_name_mapping(mapping_id BIGINT, column_id BIGINT, source_name VARCHAR, target_field_id BIGINT, parent_column BIGINT, is_partition BOOLEAN)",
  "CREATE TABLE ducklake_schema_versions(begin_snapshot BIGINT, schema_version BIGINT, table_id BIGINT)",
  "CREATE TABLE ducklake_macro(schema_id BIGINT, macro_id BIGINT, macro_name VARCHAR, begin_snapshot BIGINT, end_snapshot BIGINT)",
  "CREATE TABLE ducklake_macro_impl(macro_id BIGINT, impl_id BIGINT, dialect VARCHAR, sql VARCHAR, type VARCHAR)",
  "CREATE TABLE ducklake_macro_parameters(macro_id BIGINT, impl_id BIGINT,column_id BIGINT, parameter_name VARCHAR, parameter_type VARCHAR, default_value VARCHAR, default_value_type VARCHAR)",
  "CREATE TABLE ducklake_sort_info(sort_id BIGINT, table_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT)",
  "CREATE TABLE ducklake_sort_expression(sort_id BIGINT, table_id BIGINT, sort_key_index BIGINT, expression VARCHAR, dialect VARCHAR, sort_direction VARCHAR, null_order VARCHAR)",
  "CREATE TABLE ducklake_view_column_tag(view_id BIGINT, column_name VARCHAR, begin_snapshot BIGINT, end_snapshot BIGINT, key VARCHAR, value VARCHAR)",
];

// What a tuned SQLite deployment adds: table_id first, so "all X of table T"
// is an index range, plus the keys the joins above look up.
export const INDEXES = [
  "CREATE INDEX ix_data_file_table ON ducklake_data_file(table_id, begin_snapshot, end_snapshot)",
  "CREATE INDEX ix_file_column_stats ON ducklake_file_column_stats(table_id, column_id, data_file_id)",
  "CREATE INDEX ix_file_partition_value ON ducklake_file_partition_value(table_id, data_file_id, partition_key_index)",
  "CREATE INDEX ix_delete_file_table ON ducklake_delete_file(table_id, data_file_id)",
  "CREATE INDEX ix_partition_info ON ducklake_partition_info(table_id, partition_id)",
  "CREATE INDEX ix_partition_column ON ducklake_partition_column(partition_id, partition_key_index)",
  "CREATE INDEX ix_sort_info ON ducklake_sort_info(table_id, sort_id)",
  "CREATE INDEX ix_sort_expression ON ducklake_sort_expression(sort_id, sort_key_index)",
  "CREATE INDEX ix_table ON ducklake_table(table_id)",
  "CREATE INDEX ix_column ON ducklake_column(table_id, column_id)",
  "CREATE INDEX ix_tag ON ducklake_tag(object_id)",
  "CREATE INDEX ix_column_tag ON ducklake_column_tag(table_id, column_id)",
  "CREATE INDEX ix_table_column_stats ON ducklake_table_column_stats(table_id, column_id)",
  "CREATE INDEX ix_table_stats ON ducklake_table_stats(table_id)",
];

const visible = (s, p = "") =>
  `${s} >= ${p}begin_snapshot AND (${s} < ${p}end_snapshot OR ${p}end_snapshot IS NULL)`;

// ids: the column ids whose min/max are joined (default: every column; [] for
// the independent shape, partition values only; [1] for a planner with one
// predicate).
function fileList(d, T, S, ids = Array.from({ length: meta.stats }, (_, i) => i + 1)) {
  const ctes = ids
    .map(
      (c) => `col_${c}_stats AS (
  SELECT data_file_id, min_value, max_value
  FROM ducklake_file_column_stats
  WHERE column_id = ${c} AND table_id = ${T}
)`
    )
    .join(",\n");
  const statsSel = ids
    .map((c) => `col_${c}_stats.min_value AS col_${c}_stats_min_value, col_${c}_stats.max_value AS col_${c}_stats_max_value, `)
    .join("");
  const joins = ids.map((c) => `LEFT JOIN col_${c}_stats ON col_${c}_stats.data_file_id = data.data_file_id`).join("\n");
  const parts =
    d === "duckdb"
      ? `SELECT data_file_id, ARRAY_AGG(partition_value ORDER BY partition_key_index) keys
    FROM ducklake_file_partition_value
    WHERE table_id = ${T}
    GROUP BY data_file_id`
      : `SELECT data_file_id, json_group_array(partition_value) keys
    FROM (SELECT data_file_id, partition_value FROM ducklake_file_partition_value
          WHERE table_id = ${T} ORDER BY data_file_id, partition_key_index)
    GROUP BY data_file_id`;
  return `${ids.length ? "WITH " + ctes : ""}
SELECT data.data_file_id, data.path AS data_path, data.path_is_relative AS data_path_is_relative, data.file_size_bytes AS data_file_size_bytes, data.footer_size AS data_footer_size, data.row_id_start, data.begin_snapshot, data.partial_max, data.mapping_id, del.path AS del_path, del.path_is_relative AS del_path_is_relative, del.file_size_bytes AS del_file_size_bytes, del.footer_size AS del_footer_size, del.format AS del_format, ${statsSel}data.record_count, data.partition_id, partition_info.keys
FROM ducklake_data_file data
${joins}
LEFT JOIN (
    SELECT *
    FROM ducklake_delete_file
    WHERE table_id=${T}  AND ${S} >= begin_snapshot
          AND (${S} < end_snapshot OR end_snapshot IS NULL)
    ) del ON del.data_file_id = data.data_file_id
LEFT JOIN (
    ${parts}
) partition_info ON partition_info.data_file_id = data.data_file_id
WHERE data.table_id=${T} AND ${visible(S, "data.")}`;
}

function specs(S) {
  return [
    `SELECT partition_id, part.table_id, partition_key_index, column_id, transform
FROM ducklake_partition_info part
JOIN ducklake_partition_column part_col USING (partition_id)
WHERE ${visible(S, "part.")}
ORDER BY part.table_id, partition_id, partition_key_index`,
    `SELECT sort.sort_id, sort.table_id, sort_expr.sort_key_index, sort_expr.expression, sort_expr.dialect, sort_expr.sort_direction, sort_expr.null_order
FROM ducklake_sort_info sort
JOIN ducklake_sort_expression sort_expr USING (sort_id)
WHERE ${visible(S, "sort.")}
ORDER BY sort.table_id, sort.sort_id, sort_expr.sort_key_index`,
  ];
}

function attach(d, S) {
  const list = (fields) =>
    d === "duckdb"
      ? `LIST({${fields.map(([k, v]) => `'${k}': ${v}`).join(", ")}})`
      : `json_group_array(json_object(${fields.map(([k, v]) => `'${k}', ${v}`).join(", ")}))`;
  const TAG = [["key", "key"], ["value", "value"]];
  const INL = [["name", "table_name"], ["schema_version", "schema_version"]];
  const VCT = [["column_name", "column_name"], ["key", "key"], ["value", "value"]];
  const asText = (x) => (d === "duckdb" ? `${x}::VARCHAR` : `CAST(${x} AS TEXT)`);
  const view = d === "duckdb" ? "view" : '"view"';
  const param = list([["parameter_name", "parameter_name"], ["parameter_type", "parameter_type"], ["default_value", "default_value"], ["default_value_type", "default_value_type"]]);
  const impl = list([["dialect", "dialect"], ["sql", "sql"], ["type", "type"], ["params", `(
		SELECT ${param}
		FROM ducklake_macro_parameters
		WHERE ducklake_macro_impl.macro_id = ducklake_macro_parameters.macro_id
		AND ducklake_macro_impl.impl_id = ducklake_macro_parameters.impl_id
		)`]]);
  return [
    `SELECT key, value, scope, scope_id FROM ducklake_metadata`,
    `SELECT snapshot_id, schema_version, next_catalog_id, next_file_id
FROM ducklake_snapshot WHERE snapshot_id = (SELECT MAX(snapshot_id) FROM ducklake_snapshot)`,
    `SELECT schema_id, ${asText("schema_uuid")}, schema_name, path, path_is_relative
FROM ducklake_schema
WHERE ${visible(S)}`,
    `SELECT schema_id, tbl.table_id, ${asText("table_uuid")}, table_name,
	(
		SELECT ${list(TAG)}
		FROM ducklake_tag tag
		WHERE object_id=table_id AND
		      ${visible(S, "tag.")}
	) AS tag,
	(
		SELECT ${list(INL)}
		FROM ducklake_inlined_data_tables inlined_data_tables
		WHERE inlined_data_tables.table_id = tbl.table_id
	) AS inlined_data_tables,
	path, path_is_relative,
	col.column_id, column_name, column_type, initial_default, default_value, nulls_allowed, parent_column,
	(
		SELECT ${list(TAG)}
		FROM ducklake_column_tag col_tag
		WHERE col_tag.table_id=tbl.table_id AND col_tag.column_id=col.column_id AND
		      ${visible(S, "col_tag.")}
	) AS column_tags, default_value_type
FROM ducklake_table tbl
LEFT JOIN ducklake_column col USING (table_id)
WHERE ${visible(S, "tbl.")}
  AND ((${visible(S, "col.")}) OR column_id IS NULL)
ORDER BY table_id, parent_column NULLS FIRST, column_order`,
    `SELECT view_id, view_uuid, schema_id, view_name, dialect, sql, column_aliases,
	(
		SELECT ${list(TAG)}
		FROM ducklake_tag tag
		WHERE object_id=view_id AND
		      ${visible(S, "tag.")}
	) AS tag,
	(
		SELECT ${list(VCT)}
		FROM ducklake_view_column_tag vct
		WHERE vct.view_id=${view}.view_id AND
		      ${visible(S, "vct.")}
	) AS view_column_tags
FROM ducklake_view ${view}
WHERE ${S} >= begin_snapshot AND (${S} < ${view}.end_snapshot OR ${view}.end_snapshot IS NULL)`,
    `SELECT schema_id, ducklake_macro.macro_id, macro_name, (
		SELECT ${impl}
		FROM ducklake_macro_impl
		WHERE ducklake_macro.macro_id = ducklake_macro_impl.macro_id
	) AS impl
FROM ducklake_macro
WHERE ${visible(S, "ducklake_macro.")}`,
    ...specs(S),
    `SELECT table_id, column_id, record_count, next_row_id, file_size_bytes, contains_null, contains_nan, min_value, max_value, extra_stats
FROM ducklake_table_stats
LEFT JOIN ducklake_table_column_stats USING (table_id)
WHERE record_count IS NOT NULL
  AND file_size_bytes IS NOT NULL
ORDER BY table_id`,
  ];
}

const SEP = "\n-- next\n";
for (const d of ["sqlite", "duckdb"]) {
  const dir = `${outDir}/${d}`;
  mkdirSync(dir, { recursive: true });
  const T = meta.bench_table_id;
  writeFileSync(`${dir}/a.sql`, fileList(d, T, meta.last_snapshot) + "\n");
  writeFileSync(`${dir}/b.sql`, fileList(d, T, meta.old_snapshot) + "\n");
  writeFileSync(`${dir}/a_pv.sql`, fileList(d, T, meta.last_snapshot, []) + "\n");
  writeFileSync(`${dir}/a_1col.sql`, fileList(d, T, meta.last_snapshot, [1]) + "\n");
  writeFileSync(`${dir}/c.sql`, specs(meta.old_snapshot).join(SEP) + "\n");
  writeFileSync(`${dir}/d.sql`, attach(d, meta.last_snapshot).join(SEP) + "\n");
  writeFileSync(`${dir}/schema.sql`, SCHEMA.join(SEP) + "\n");
  writeFileSync(`${dir}/indexes.sql`, INDEXES.join(SEP) + "\n");
}
