/*
 * ndjson_tables.h — the table names the ndjson fuzz target picks from with
 * its first input byte (shared with seed_corpus.c, which writes one seed per
 * fixture file as <index byte><file content>). Every ducklake_* table of a
 * DuckLake 1.1 export, plus one name moraine does not know (an inlined data
 * table, placed by the generic rule).
 */
#ifndef FUZZ_NDJSON_TABLES_H
#define FUZZ_NDJSON_TABLES_H

static const char *const fuzz_ndjson_tables[] = {
    "ducklake_column",
    "ducklake_column_mapping",
    "ducklake_column_tag",
    "ducklake_data_file",
    "ducklake_delete_file",
    "ducklake_file_column_stats",
    "ducklake_file_partition_value",
    "ducklake_file_variant_stats",
    "ducklake_files_scheduled_for_deletion",
    "ducklake_inlined_data_tables",
    "ducklake_macro",
    "ducklake_macro_impl",
    "ducklake_macro_parameters",
    "ducklake_metadata",
    "ducklake_name_mapping",
    "ducklake_partition_column",
    "ducklake_partition_info",
    "ducklake_schema",
    "ducklake_schema_versions",
    "ducklake_snapshot",
    "ducklake_snapshot_changes",
    "ducklake_sort_expression",
    "ducklake_sort_info",
    "ducklake_table",
    "ducklake_table_column_stats",
    "ducklake_table_stats",
    "ducklake_tag",
    "ducklake_view",
    "ducklake_view_column_tag",
    "ducklake_inlined_data_1_2", /* unknown to moraine: generic rule */
};

#define FUZZ_NDJSON_NTABLES (sizeof fuzz_ndjson_tables / sizeof fuzz_ndjson_tables[0])

#endif
