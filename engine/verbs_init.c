/*
 * verbs_init.c — moraine_init: a new DuckLake catalog (format 1.1's tables,
 * its metadata, snapshot 0 with schema "main"), as DuckLake's ATTACH writes it.
 */
#include "verbs_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- moraine_init ---- */

static const char *const v11_tables[][2] = {
    {"ducklake_metadata", "key,value,scope,scope_id"},
    {"ducklake_snapshot", "snapshot_id,snapshot_time,schema_version,next_catalog_id,next_file_id"},
    {"ducklake_snapshot_changes", "snapshot_id,changes_made,author,commit_message,commit_extra_info"},
    {"ducklake_schema", "schema_id,schema_uuid,begin_snapshot,end_snapshot,schema_name,path,path_is_relative"},
    {"ducklake_table", "table_id,table_uuid,begin_snapshot,end_snapshot,schema_id,table_name,path,path_is_relative"},
    {"ducklake_view", "view_id,view_uuid,begin_snapshot,end_snapshot,schema_id,view_name,dialect,sql,column_aliases"},
    {"ducklake_tag", "object_id,begin_snapshot,end_snapshot,key,value"},
    {"ducklake_column_tag", "table_id,column_id,begin_snapshot,end_snapshot,key,value"},
    {"ducklake_data_file", "data_file_id,table_id,begin_snapshot,end_snapshot,file_order,path,path_is_relative,file_format,record_count,"
                           "file_size_bytes,footer_size,row_id_start,partition_id,encryption_key,mapping_id,partial_max,row_group_count"},
    {"ducklake_file_column_stats", "data_file_id,table_id,column_id,column_size_bytes,value_count,null_count,min_value,max_value,contains_nan,"
                                   "extra_stats"},
    {"ducklake_file_variant_stats", "data_file_id,table_id,column_id,variant_path,shredded_type,column_size_bytes,value_count,null_count,"
                                    "min_value,max_value,contains_nan,extra_stats"},
    {"ducklake_delete_file", "delete_file_id,table_id,begin_snapshot,end_snapshot,data_file_id,path,path_is_relative,format,delete_count,"
                             "file_size_bytes,footer_size,encryption_key,partial_max,row_group_count"},
    {"ducklake_column", "column_id,begin_snapshot,end_snapshot,table_id,column_order,column_name,column_type,initial_default,default_value,"
                        "nulls_allowed,parent_column,default_value_type,default_value_dialect"},
    {"ducklake_table_stats", "table_id,record_count,next_row_id,file_size_bytes"},
    {"ducklake_table_column_stats", "table_id,column_id,contains_null,contains_nan,min_value,max_value,extra_stats"},
    {"ducklake_partition_info", "partition_id,table_id,begin_snapshot,end_snapshot"},
    {"ducklake_partition_column", "partition_id,table_id,partition_key_index,column_id,transform"},
    {"ducklake_file_partition_value", "data_file_id,table_id,partition_key_index,partition_value"},
    {"ducklake_files_scheduled_for_deletion", "data_file_id,path,path_is_relative,schedule_start"},
    {"ducklake_inlined_data_tables", "table_id,table_name,schema_version"},
    {"ducklake_column_mapping", "mapping_id,table_id,type"},
    {"ducklake_name_mapping", "mapping_id,column_id,source_name,target_field_id,parent_column,is_partition"},
    {"ducklake_schema_versions", "begin_snapshot,schema_version,table_id"},
    {"ducklake_macro", "schema_id,macro_id,macro_name,begin_snapshot,end_snapshot"},
    {"ducklake_macro_impl", "macro_id,impl_id,dialect,sql,type"},
    {"ducklake_macro_parameters", "macro_id,impl_id,column_id,parameter_name,parameter_type,default_value,default_value_type"},
    {"ducklake_sort_info", "sort_id,table_id,begin_snapshot,end_snapshot"},
    {"ducklake_sort_expression", "sort_id,table_id,sort_key_index,expression,dialect,sort_direction,null_order"},
    {"ducklake_view_column_tag", "view_id,column_index,begin_snapshot,end_snapshot,key,value"},
};

static int define_list(moraine_txn *txn, const char *name, const char *list)
{
    char buf[1024];
    const char *cols[64];
    size_t n = 0;
    snprintf(buf, sizeof buf, "%s", list);
    for (char *p = strtok(buf, ","); p && n < 64; p = strtok(NULL, ",")) cols[n++] = p;
    return moraine_txn_define(txn, name, n, cols);
}

static int put_str_row(moraine_txn *txn, const char *name, const char *const *vals, size_t n)
{
    moraine_value v[16];
    for (size_t i = 0; i < n; i++) {
        if (vals[i]) v[i] = (moraine_value){.type = MORAINE_STR, .s = vals[i], .len = strlen(vals[i])};
        else v[i] = (moraine_value){.type = MORAINE_NULL};
    }
    return moraine_txn_insert(txn, name, v, n, -1);
}

int moraine_init(moraine_db *db, const char *data_path)
{
    if (!db) return mr_err(MORAINE_EINVAL, "moraine_init: NULL catalog");
    if (!data_path || !*data_path) return mr_err(MORAINE_EINVAL, "moraine_init: a data path is needed (DuckLake's DATA_PATH, e.g. \"data/\")");
    if (db->opts.read_only) return mr_err(MORAINE_EREADONLY, "the catalog is open read-only");
    int rc = mr_catalog_empty(db);
    if (rc) return rc == MORAINE_EEXIST ? mr_err(rc, "moraine_init: the catalog is not empty") : rc;
    /* DuckLake (DuckLakeInitializer::InitializeDataPath): trailing separators
     * dropped, one '/' put back, so "data" and "data//" are stored "data/"
     * (file paths are the data path and the relative path joined as text) */
    size_t n = strlen(data_path);
    while (n && (data_path[n - 1] == '/' || data_path[n - 1] == '\\')) n--;
    char *dp = malloc(n + 2);
    if (!dp) return mr_err(MORAINE_ENOMEM, "out of memory");
    memcpy(dp, data_path, n);
    dp[n] = '/', dp[n + 1] = 0;
    moraine_txn *txn;
    if ((rc = moraine_txn_begin(db, 0, &txn))) {
        free(dp);
        return rc;
    }
    for (size_t i = 0; !rc && i < sizeof v11_tables / sizeof v11_tables[0]; i++) rc = define_list(txn, v11_tables[i][0], v11_tables[i][1]);
    const char *meta[][2] = {{"version", "1.1-dev1"}, {"created_by", "moraine " MORAINE_VERSION_STRING}, {"data_path", dp}, {"encrypted", "false"}};
    for (size_t i = 0; !rc && i < 4; i++) {
        const char *row[4] = {meta[i][0], meta[i][1], NULL, NULL};
        rc = put_str_row(txn, "ducklake_metadata", row, 4);
    }
    char when[64], uuid[37];
    mv_now_text(when, sizeof when);
    mv_uuid7(uuid);
    if (!rc) {
        moraine_value s[5] = {{.type = MORAINE_INT, .i = 0}, {.type = MORAINE_STR, .s = when, .len = strlen(when)}, {.type = MORAINE_INT, .i = 0},
                              {.type = MORAINE_INT, .i = 1}, {.type = MORAINE_INT, .i = 0}};
        rc = moraine_txn_insert(txn, "ducklake_snapshot", s, 5, -1);
    }
    if (!rc) {
        const char *changes = "created_schema:\"main\"";
        moraine_value c[5] = {{.type = MORAINE_INT, .i = 0}, {.type = MORAINE_STR, .s = changes, .len = strlen(changes)}, {.type = MORAINE_NULL},
                              {.type = MORAINE_NULL}, {.type = MORAINE_NULL}};
        rc = moraine_txn_insert(txn, "ducklake_snapshot_changes", c, 5, -1);
    }
    if (!rc) {
        moraine_value s[7] = {{.type = MORAINE_INT, .i = 0},   {.type = MORAINE_STR, .s = uuid, .len = strlen(uuid)},
                              {.type = MORAINE_INT, .i = 0},   {.type = MORAINE_NULL},
                              {.type = MORAINE_STR, .s = "main", .len = 4}, {.type = MORAINE_STR, .s = "main/", .len = 5},
                              {.type = MORAINE_BOOL, .i = 1}};
        rc = moraine_txn_insert(txn, "ducklake_schema", s, 7, -1);
    }
    if (rc) moraine_txn_abort(txn);
    else rc = moraine_txn_commit(txn);
    free(dp);
    return rc;
}
