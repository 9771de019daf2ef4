/*
 * tables.c — what moraine knows of DuckLake's catalog tables: each table's
 * placement in the keyspace (docs/keyspace.md) and the types of the columns
 * DuckLake v1.0 (and 1.1-dev1) defines. A catalog's own column list always
 * wins: columns not listed here are kept with type ANY, and tables not listed
 * here (inlined data tables, tables of later versions) get a generic
 * placement chosen in store.c.
 *
 * Types: B = BIGINT, V = VARCHAR (UUID and TIMESTAMPTZ are kept as text),
 * O = BOOLEAN, K = VARCHAR holding key material (MORAINE_COL_SECRET: the
 * encryption key DuckLake writes for each Parquet data and delete file of an
 * encrypted lake, `ATTACH ... (ENCRYPTED)`; DuckLake v1.0 spec, tables
 * ducklake_data_file and ducklake_delete_file). These are the only columns of
 * the spec that hold key material; docs/security.md.
 */
#include "internal.h"
#include <stdlib.h>
#include <string.h>

static const mr_known_table known[] = {
    {"ducklake_metadata", MORAINE_PLACE_ROWS, NULL, NULL, 0, "key:V,value:V,scope:V,scope_id:B"},
    {"ducklake_snapshot", MORAINE_PLACE_SNAPSHOT, NULL, "snapshot_id", 0,
     "snapshot_id:B,snapshot_time:V,schema_version:B,next_catalog_id:B,next_file_id:B"},
    {"ducklake_snapshot_changes", MORAINE_PLACE_CHILD, "ducklake_snapshot", "snapshot_id", 0,
     "snapshot_id:B,changes_made:V,author:V,commit_message:V,commit_extra_info:V"},
    {"ducklake_schema", MORAINE_PLACE_TEMPORAL, NULL, "schema_id", 0,
     "schema_id:B,schema_uuid:V,begin_snapshot:B,end_snapshot:B,schema_name:V,path:V,path_is_relative:O"},
    {"ducklake_table", MORAINE_PLACE_TEMPORAL, NULL, "table_id", 1,
     "table_id:B,table_uuid:V,begin_snapshot:B,end_snapshot:B,schema_id:B,table_name:V,path:V,path_is_relative:O"},
    {"ducklake_view", MORAINE_PLACE_TEMPORAL, NULL, "view_id", 0,
     "view_id:B,view_uuid:V,begin_snapshot:B,end_snapshot:B,schema_id:B,view_name:V,dialect:V,sql:V,column_aliases:V"},
    {"ducklake_column", MORAINE_PLACE_TEMPORAL, NULL, "table_id,column_id", 1,
     "column_id:B,begin_snapshot:B,end_snapshot:B,table_id:B,column_order:B,column_name:V,column_type:V,"
     "initial_default:V,default_value:V,nulls_allowed:O,parent_column:B,default_value_type:V,default_value_dialect:V"},
    {"ducklake_macro", MORAINE_PLACE_TEMPORAL, NULL, "schema_id,macro_id", 0,
     "schema_id:B,macro_id:B,macro_name:V,begin_snapshot:B,end_snapshot:B"},
    {"ducklake_macro_impl", MORAINE_PLACE_ROWS, NULL, NULL, 0, "macro_id:B,impl_id:B,dialect:V,sql:V,type:V"},
    {"ducklake_macro_parameters", MORAINE_PLACE_ROWS, NULL, NULL, 0,
     "macro_id:B,impl_id:B,column_id:B,parameter_name:V,parameter_type:V,default_value:V,default_value_type:V"},
    {"ducklake_data_file", MORAINE_PLACE_TEMPORAL, NULL, "table_id,data_file_id", 1,
     "data_file_id:B,table_id:B,begin_snapshot:B,end_snapshot:B,file_order:B,path:V,path_is_relative:O,file_format:V,"
     "record_count:B,file_size_bytes:B,footer_size:B,row_id_start:B,partition_id:B,encryption_key:K,mapping_id:B,"
     "partial_max:B,row_group_count:B"},
    {"ducklake_delete_file", MORAINE_PLACE_TEMPORAL, NULL, "table_id,data_file_id,delete_file_id", 1,
     "delete_file_id:B,table_id:B,begin_snapshot:B,end_snapshot:B,data_file_id:B,path:V,path_is_relative:O,format:V,"
     "delete_count:B,file_size_bytes:B,footer_size:B,encryption_key:K,partial_max:B,row_group_count:B"},
    {"ducklake_files_scheduled_for_deletion", MORAINE_PLACE_ROWS, NULL, NULL, 0,
     "data_file_id:B,path:V,path_is_relative:O,schedule_start:V"},
    {"ducklake_inlined_data_tables", MORAINE_PLACE_ROWS, NULL, NULL, 0, "table_id:B,table_name:V,schema_version:B"},
    {"ducklake_column_mapping", MORAINE_PLACE_ROWS, NULL, NULL, 0, "mapping_id:B,table_id:B,type:V"},
    {"ducklake_name_mapping", MORAINE_PLACE_ROWS, NULL, NULL, 0,
     "mapping_id:B,column_id:B,source_name:V,target_field_id:B,parent_column:B,is_partition:O"},
    {"ducklake_table_stats", MORAINE_PLACE_ROWS, NULL, NULL, 0, "table_id:B,record_count:B,next_row_id:B,file_size_bytes:B"},
    {"ducklake_table_column_stats", MORAINE_PLACE_ROWS, NULL, NULL, 0,
     "table_id:B,column_id:B,contains_null:O,contains_nan:O,min_value:V,max_value:V,extra_stats:V"},
    {"ducklake_file_column_stats", MORAINE_PLACE_CHILD, "ducklake_data_file", "table_id,data_file_id", 1,
     "data_file_id:B,table_id:B,column_id:B,column_size_bytes:B,value_count:B,null_count:B,min_value:V,max_value:V,"
     "contains_nan:O,extra_stats:V"},
    {"ducklake_file_variant_stats", MORAINE_PLACE_CHILD, "ducklake_data_file", "table_id,data_file_id", 1,
     "data_file_id:B,table_id:B,column_id:B,variant_path:V,shredded_type:V,column_size_bytes:B,value_count:B,"
     "null_count:B,min_value:V,max_value:V,contains_nan:O,extra_stats:V"},
    {"ducklake_partition_info", MORAINE_PLACE_TEMPORAL, NULL, "table_id,partition_id", 1,
     "partition_id:B,table_id:B,begin_snapshot:B,end_snapshot:B"},
    {"ducklake_partition_column", MORAINE_PLACE_CHILD, "ducklake_partition_info", "table_id,partition_id", 1,
     "partition_id:B,table_id:B,partition_key_index:B,column_id:B,transform:V"},
    {"ducklake_file_partition_value", MORAINE_PLACE_CHILD, "ducklake_data_file", "table_id,data_file_id", 1,
     "data_file_id:B,table_id:B,partition_key_index:B,partition_value:V"},
    {"ducklake_sort_info", MORAINE_PLACE_TEMPORAL, NULL, "table_id,sort_id", 1, "sort_id:B,table_id:B,begin_snapshot:B,end_snapshot:B"},
    {"ducklake_sort_expression", MORAINE_PLACE_CHILD, "ducklake_sort_info", "table_id,sort_id", 1,
     "sort_id:B,table_id:B,sort_key_index:B,expression:V,dialect:V,sort_direction:V,null_order:V"},
    {"ducklake_tag", MORAINE_PLACE_TEMPORAL, NULL, "object_id,key", 0, "object_id:B,begin_snapshot:B,end_snapshot:B,key:V,value:V"},
    {"ducklake_column_tag", MORAINE_PLACE_TEMPORAL, NULL, "table_id,column_id,key", 1,
     "table_id:B,column_id:B,begin_snapshot:B,end_snapshot:B,key:V,value:V"},
    {"ducklake_schema_versions", MORAINE_PLACE_ROWS, NULL, NULL, 0, "begin_snapshot:B,schema_version:B,table_id:B"},
};

const mr_known_table *mr_known(const char *name)
{
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(known[i].name, name) == 0) return &known[i];
    return NULL;
}

size_t mr_known_columns(const mr_known_table *kt, char ***out)
{
    *out = NULL;
    if (!kt) return 0;
    size_t n = 0;
    for (const char *p = kt->columns; *p; p++)
        if (*p == ':') n++;
    char **cols = calloc(n ? n : 1, sizeof *cols);
    if (!cols) return (size_t)-1;
    size_t i = 0;
    for (const char *p = kt->columns; *p && i < n;) {
        const char *colon = strchr(p, ':');
        if (!colon || !(cols[i] = strndup(p, (size_t)(colon - p)))) {
            while (i > 0) free(cols[--i]);
            free(cols);
            return (size_t)-1;
        }
        i++;
        p = colon + 2;
        if (*p == ',') p++;
    }
    *out = cols;
    return n;
}

/* The type letter of column @col of known table @kt, or 0. */
static char known_letter(const mr_known_table *kt, const char *col)
{
    if (!kt) return 0;
    size_t n = strlen(col);
    for (const char *p = kt->columns; *p;) {
        const char *colon = strchr(p, ':');
        if (!colon) break;
        if ((size_t)(colon - p) == n && memcmp(p, col, n) == 0) return colon[1];
        p = colon + 2;
        if (*p == ',') p++;
    }
    return 0;
}

moraine_coltype mr_known_coltype(const mr_known_table *kt, const char *col)
{
    switch (known_letter(kt, col)) {
    case 'B': return MORAINE_COL_BIGINT;
    case 'V':
    case 'K': return MORAINE_COL_VARCHAR;
    case 'O': return MORAINE_COL_BOOLEAN;
    default: return MORAINE_COL_ANY;
    }
}

moraine_coltype moraine_known_column_type(const char *table, const char *column)
{
    if (!table || !column) return MORAINE_COL_ANY;
    return mr_known_coltype(mr_known(table), column);
}

unsigned mr_known_colflags(const mr_known_table *kt, const char *col)
{
    return known_letter(kt, col) == 'K' ? MORAINE_COL_SECRET : 0u;
}

/* Columns DuckLake added to a table after the table first appeared (its
 * migrations, docs/upgrade.md and bindings/moraine/upgrade.lua), with the
 * release that has them: 2 = 0.2, 3 = 0.3, 4 = 0.4, 6 = 1.1. Every other
 * column moraine knows is in every version of its table. */
static const struct {
    const char *table, *col;
    int since;
} added[] = {
    {"ducklake_schema", "path", 2},
    {"ducklake_schema", "path_is_relative", 2},
    {"ducklake_table", "path", 2},
    {"ducklake_table", "path_is_relative", 2},
    {"ducklake_metadata", "scope", 2},
    {"ducklake_metadata", "scope_id", 2},
    {"ducklake_data_file", "mapping_id", 2},
    {"ducklake_name_mapping", "is_partition", 3},
    {"ducklake_snapshot_changes", "author", 3},
    {"ducklake_snapshot_changes", "commit_message", 3},
    {"ducklake_snapshot_changes", "commit_extra_info", 3},
    {"ducklake_file_column_stats", "extra_stats", 3},
    {"ducklake_table_column_stats", "extra_stats", 3},
    {"ducklake_column", "default_value_type", 4},
    {"ducklake_column", "default_value_dialect", 4},
    {"ducklake_schema_versions", "table_id", 4},
    {"ducklake_data_file", "partial_max", 4},
    {"ducklake_delete_file", "partial_max", 4},
    {"ducklake_data_file", "row_group_count", 6},
    {"ducklake_delete_file", "row_group_count", 6},
};

int mr_known_release(const char *version)
{
    /* a dev version may be in the middle of the step to its release (DuckLake
     * reruns it): it is sure to have the columns of the release before */
    static const struct {
        const char *v;
        int r;
    } ladder[] = {{"0.1", 1}, {"0.2", 2}, {"0.3-dev1", 2}, {"0.3", 3}, {"0.4-dev1", 3},
                  {"0.4", 4}, {"1.0", 5},  {"1.1-dev1", 5}};
    for (size_t i = 0; version && i < sizeof ladder / sizeof ladder[0]; i++)
        if (strcmp(ladder[i].v, version) == 0) return ladder[i].r;
    return 1;
}

/* Tables DuckLake's migrations added (bindings/moraine/upgrade.lua: MigrateV01
 * creates the mappings, MigrateV02 the schema versions, MigrateV03 the macros,
 * sort tables and variant stats); every other known table is in every version. */
int mr_known_table_since(const char *table)
{
    static const struct {
        const char *table;
        int since;
    } later[] = {
        {"ducklake_column_mapping", 2},    {"ducklake_name_mapping", 2},       {"ducklake_file_column_stats", 3},
        {"ducklake_schema_versions", 3},   {"ducklake_macro", 4},              {"ducklake_macro_impl", 4},
        {"ducklake_macro_parameters", 4},  {"ducklake_sort_info", 4},          {"ducklake_sort_expression", 4},
        {"ducklake_file_variant_stats", 4},
    };
    if (!mr_known(table)) return 0;
    for (size_t i = 0; i < sizeof later / sizeof later[0]; i++)
        if (strcmp(later[i].table, table) == 0) return later[i].since;
    return 1;
}

const char *moraine_required_table(const char *version, size_t i)
{
    /* a version DuckLake never wrote (none, "1", a later one): nothing is required */
    if (!version || (mr_known_release(version) == 1 && strcmp(version, "0.1") != 0)) return NULL;
    int release = mr_known_release(version);
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
        int since = mr_known_table_since(known[k].name);
        if (since && since <= release && i-- == 0) return known[k].name;
    }
    return NULL;
}

int mr_known_column_since(const char *table, const char *col)
{
    for (size_t i = 0; i < sizeof added / sizeof added[0]; i++)
        if (strcmp(added[i].table, table) == 0 && strcmp(added[i].col, col) == 0) return added[i].since;
    return 1;
}
