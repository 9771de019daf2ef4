-- s2_multi_table: several tables, renames, a drop and re-create, deletes and a rewrite, as verbs
--
-- DuckLake's scenario s2_multi_table (tests/fixtures/ducklake/s2_multi_table/scenario.sql), statement by
-- statement, written with moraine's verbs instead of SQL. The data files each INSERT wrote are
-- listed as DuckLake wrote them (path, record_count, file_size_bytes, footer_size, partition
-- values, column statistics; row_group_count 1 for each, from scenario.lua): moraine never
-- reads data, so a script states the files.
-- spec/verbs_fixtures_spec.lua checks that the catalog rows this script produces equal
-- DuckLake's own rows in the fixture.
--
-- Usage: sh scripts/run-lua.sh lua5.4 build examples/scenarios/s2_multi_table.lua [NEW_CATALOG_DIR]
-- (without NEW_CATALOG_DIR: built in a new directory under $TMPDIR, else /tmp, removed at the end)
-- Loaded with dofile, the script returns build(dir, log) (examples/scenarios/scenario.lua), which builds the catalog in the
-- new directory dir, reports each statement through log (default print) and returns the open db.
local S = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "scenario.lua")
local N, files, deletes = S.N, S.files, S.deletes

return S.main("s2_multi_table", function(run)

run("CREATE SCHEMA sales", function(tx) tx:create_schema("sales") end)

run("CREATE TABLE sales.orders(order_id BIGINT, customer_id BIGINT, order_date DATE, status VARCHAR, total DOUBLE)", function(tx)
  tx:create_table("sales.orders", {
    { name = "order_id", type = "int64" }, { name = "customer_id", type = "int64" }, { name = "order_date", type = "date" },
    { name = "status", type = "varchar" }, { name = "total", type = "float64" },
  })
end)

run("CREATE TABLE sales.customers(customer_id BIGINT, name VARCHAR, country VARCHAR, signup TIMESTAMP)", function(tx)
  tx:create_table("sales.customers", {
    { name = "customer_id", type = "int64" }, { name = "name", type = "varchar" }, { name = "country", type = "varchar" },
    { name = "signup", type = "timestamp" },
  })
end)

run("ALTER TABLE sales.orders SET PARTITIONED BY (year(order_date), month(order_date))", function(tx)
  tx:set_partitioning("sales.orders", { "year(order_date)", "month(order_date)" })
end)

run("ALTER TABLE sales.customers SET PARTITIONED BY (country)", function(tx)
  tx:set_partitioning("sales.customers", { "country" })
end)

run("INSERT INTO sales.customers SELECT ... FROM range(0, 500)", function(tx)
  tx:add_data_files("sales.customers", files({
  {"country=DE/ducklake-01a22d27-add7-7bf7-b5b9-41a51662a4a4.parquet", 100, 2223, 487, {"DE"}, {{"customer_id",440,100,0,"1","496",N}, {"name",444,100,0,"cust_1","cust_96",N}, {"country",52,100,0,"DE","DE",N}, {"signup",741,100,0,"2024-01-02 00:00:00","2025-05-11 00:00:00",N}}}, -- data_file_id 0
  {"country=FR/ducklake-01a22d27-add8-7052-aa95-aff218f29157.parquet", 100, 2231, 491, {"FR"}, {{"customer_id",441,100,0,"2","497",N}, {"name",445,100,0,"cust_102","cust_97",N}, {"country",52,100,0,"FR","FR",N}, {"signup",743,100,0,"2024-01-03 00:00:00","2025-05-12 00:00:00",N}}}, -- data_file_id 1
  {"country=JP/ducklake-01a22d27-add9-78dd-9511-936494a6a37c.parquet", 100, 2231, 491, {"JP"}, {{"customer_id",441,100,0,"4","499",N}, {"name",445,100,0,"cust_104","cust_99",N}, {"country",52,100,0,"JP","JP",N}, {"signup",743,100,0,"2024-01-05 00:00:00","2025-05-14 00:00:00",N}}}, -- data_file_id 2
  {"country=NL/ducklake-01a22d27-add9-7d3f-b99c-185427369824.parquet", 100, 2221, 487, {"NL"}, {{"customer_id",438,100,0,"0","495",N}, {"name",444,100,0,"cust_0","cust_95",N}, {"country",52,100,0,"NL","NL",N}, {"signup",741,100,0,"2024-01-01 00:00:00","2025-05-10 00:00:00",N}}}, -- data_file_id 3
  {"country=US/ducklake-01a22d27-add9-702a-af60-894ec96012bc.parquet", 100, 2385, 491, {"US"}, {{"customer_id",592,100,0,"3","498",N}, {"name",446,100,0,"cust_103","cust_98",N}, {"country",52,100,0,"US","US",N}, {"signup",745,100,0,"2024-01-04 00:00:00","2025-05-13 00:00:00",N}}}, -- data_file_id 4
  }))
end)

run("INSERT INTO sales.orders SELECT ... FROM range(0, 3000)", function(tx)
  tx:add_data_files("sales.orders", files({
  {"year=2024/month=1/ducklake-01a22d27-ae06-7f52-9fe0-03ba722c8a90.parquet", 248, 4013, 602, {"2024", "1"}, {{"order_id",1109,248,0,"0","2830",N}, {"customer_id",951,248,0,"0","430",N}, {"order_date",335,248,0,"2024-01-01","2024-01-31",N}, {"status",80,248,0,"new","shipped",N}, {"total",797,248,0,"0.0","1045.0",false}}}, -- data_file_id 5
  {"year=2024/month=2/ducklake-01a22d27-ae07-75e4-adac-f2076dc50f41.parquet", 232, 3559, 602, {"2024", "2"}, {{"order_id",980,232,0,"31","2859",N}, {"customer_id",646,232,0,"31","459",N}, {"order_date",327,232,0,"2024-02-01","2024-02-29",N}, {"status",116,232,0,"new","shipped",N}, {"total",749,232,0,"38.75","1081.25",false}}}, -- data_file_id 6
  {"year=2024/month=3/ducklake-01a22d27-ae07-7a5e-9402-30e096b6d2f5.parquet", 248, 3707, 602, {"2024", "3"}, {{"order_id",1045,248,0,"60","2890",N}, {"customer_id",703,248,0,"60","490",N}, {"order_date",335,248,0,"2024-03-01","2024-03-31",N}, {"status",80,248,0,"new","shipped",N}, {"total",803,248,0,"75.0","1120.0",false}}}, -- data_file_id 7
  {"year=2024/month=4/ducklake-01a22d27-ae08-7540-89da-e105e42803c1.parquet", 240, 3695, 602, {"2024", "4"}, {{"order_id",1012,240,0,"91","2920",N}, {"customer_id",806,240,0,"0","499",N}, {"order_date",264,240,0,"2024-04-01","2024-04-30",N}, {"status",117,240,0,"new","shipped",N}, {"total",755,240,0,"113.75","1157.5",false}}}, -- data_file_id 8
  {"year=2024/month=5/ducklake-01a22d27-ae08-77c1-90c6-b09932040fd6.parquet", 248, 3707, 602, {"2024", "5"}, {{"order_id",1043,248,0,"121","2951",N}, {"customer_id",708,248,0,"21","451",N}, {"order_date",335,248,0,"2024-05-01","2024-05-31",N}, {"status",88,248,0,"new","shipped",N}, {"total",792,248,0,"151.25","1196.25",false}}}, -- data_file_id 9
  {"year=2024/month=6/ducklake-01a22d27-ae08-7a28-87d0-dbd2290d78b5.parquet", 240, 3602, 602, {"2024", "6"}, {{"order_id",1012,240,0,"152","2981",N}, {"customer_id",692,240,0,"52","481",N}, {"order_date",264,240,0,"2024-06-01","2024-06-30",N}, {"status",118,240,0,"new","shipped",N}, {"total",775,240,0,"190.0","1233.75",false}}}, -- data_file_id 10
  {"year=2024/month=7/ducklake-01a22d27-ae09-7002-bdaa-db67a64163e6.parquet", 235, 3615, 602, {"2024", "7"}, {{"order_id",993,235,0,"182","2999",N}, {"customer_id",705,235,0,"0","499",N}, {"order_date",335,235,0,"2024-07-01","2024-07-31",N}, {"status",84,235,0,"new","shipped",N}, {"total",757,235,0,"0.0","1245.0",false}}}, -- data_file_id 11
  {"year=2024/month=8/ducklake-01a22d27-ae09-7188-8ad1-a2f02f4949a5.parquet", 217, 3580, 602, {"2024", "8"}, {{"order_id",919,217,0,"213","2643",N}, {"customer_id",699,217,0,"13","443",N}, {"order_date",335,217,0,"2024-08-01","2024-08-31",N}, {"status",113,217,0,"new","shipped",N}, {"total",773,217,0,"20.0","1057.5",false}}}, -- data_file_id 12
  {"year=2024/month=9/ducklake-01a22d27-ae09-7af4-a10c-495786ba7bcd.parquet", 210, 3386, 602, {"2024", "9"}, {{"order_id",889,210,0,"244","2673",N}, {"customer_id",657,210,0,"44","473",N}, {"order_date",256,210,0,"2024-09-01","2024-09-30",N}, {"status",117,210,0,"new","shipped",N}, {"total",726,210,0,"58.75","1095.0",false}}}, -- data_file_id 13
  {"year=2024/month=10/ducklake-01a22d27-ae09-7991-9474-119b83c97f8e.parquet", 217, 3506, 602, {"2024", "10"}, {{"order_id",916,217,0,"274","2704",N}, {"customer_id",676,217,0,"0","499",N}, {"order_date",335,217,0,"2024-10-01","2024-10-31",N}, {"status",88,217,0,"new","shipped",N}, {"total",750,217,0,"96.25","1133.75",false}}}, -- data_file_id 14
  {"year=2024/month=11/ducklake-01a22d27-ae0a-72db-bea6-8fae1ef8d41b.parquet", 210, 3379, 602, {"2024", "11"}, {{"order_id",887,210,0,"305","2734",N}, {"customer_id",657,210,0,"5","434",N}, {"order_date",256,210,0,"2024-11-01","2024-11-30",N}, {"status",117,210,0,"new","shipped",N}, {"total",721,210,0,"135.0","1171.25",false}}}, -- data_file_id 15
  {"year=2024/month=12/ducklake-01a22d27-ae0a-767c-9904-2afe6a037ea1.parquet", 217, 3501, 602, {"2024", "12"}, {{"order_id",916,217,0,"335","2765",N}, {"customer_id",677,217,0,"35","465",N}, {"order_date",335,217,0,"2024-12-01","2024-12-31",N}, {"status",88,217,0,"new","shipped",N}, {"total",744,217,0,"172.5","1210.0",false}}}, -- data_file_id 16
  {"year=2025/month=1/ducklake-01a22d27-ae0a-7277-9117-9aefd5faacd5.parquet", 217, 3508, 602, {"2025", "1"}, {{"order_id",922,217,0,"366","2796",N}, {"customer_id",677,217,0,"66","496",N}, {"order_date",335,217,0,"2025-01-01","2025-01-31",N}, {"status",88,217,0,"new","shipped",N}, {"total",745,217,0,"0.0","1245.0",false}}}, -- data_file_id 17
  {"year=2025/month=2/ducklake-01a22d27-ae0b-7b65-abc7-3f57249ffaa7.parquet", 21, 1194, 594, {"2025", "2"}, {{"order_id",129,21,0,"397","2799",N}, {"customer_id",94,21,0,"97","499",N}, {"order_date",65,21,0,"2025-02-01","2025-02-03",N}, {"status",79,21,0,"new","shipped",N}, {"total",127,21,0,"3.75","1006.25",false}}}, -- data_file_id 18
  }))
end)

run("ALTER TABLE sales.orders SET SORTED BY (customer_id ASC NULLS FIRST, total DESC)", function(tx)
  tx:set_sorting("sales.orders", { "customer_id ASC NULLS FIRST", "total DESC" })
end)

run("INSERT INTO sales.orders SELECT ... FROM range(3000, 3400)", function(tx)
  tx:add_data_files("sales.orders", files({
  {"year=2025/month=2/ducklake-01a22d27-aedc-737b-a347-9894feaca9e5.parquet", 400, 6541, 592, {"2025", "2"}, {{"order_id",1642,400,0,"3000","3399",N}, {"customer_id",2385,400,0,"0","399",N}, {"order_date",176,400,0,"2025-02-01","2025-02-20",N}, {"status",53,400,0,"new","new",N}, {"total",1587,400,0,"13.5","213.0",false}}}, -- data_file_id 19
  }))
end)

-- DuckLake stores the expression as its binder prints it: lower("name")
run("ALTER TABLE sales.customers SET SORTED BY (lower(name) ASC, signup DESC NULLS LAST)", function(tx)
  tx:set_sorting("sales.customers", { 'lower("name") ASC', "signup DESC NULLS LAST" })
end)

run("INSERT INTO sales.customers SELECT ... FROM range(500, 600)", function(tx)
  tx:add_data_files("sales.customers", files({
  {"country=DE/ducklake-01a22d27-af9a-742b-9e17-968777f0b329.parquet", 50, 1462, 487, {"DE"}, {{"customer_id",241,50,0,"501","599",N}, {"name",245,50,0,"Cust_501","Cust_599",N}, {"country",49,50,0,"DE","DE",N}, {"signup",381,50,0,"2025-01-21 21:00:00","2025-01-25 23:00:00",N}}}, -- data_file_id 20
  {"country=NL/ducklake-01a22d27-af9a-778d-9c0a-359b0d5eb519.parquet", 50, 1464, 487, {"NL"}, {{"customer_id",241,50,0,"500","598",N}, {"name",246,50,0,"Cust_500","Cust_598",N}, {"country",49,50,0,"NL","NL",N}, {"signup",382,50,0,"2025-01-21 20:00:00","2025-01-25 22:00:00",N}}}, -- data_file_id 21
  }))
end)

run("CREATE TABLE sales.tmp(x INTEGER, y VARCHAR)", function(tx)
  tx:create_table("sales.tmp", { { name = "x", type = "int32" }, { name = "y", type = "varchar" } })
end)

run("ALTER TABLE sales.tmp SET PARTITIONED BY (x)", function(tx) tx:set_partitioning("sales.tmp", { "x" }) end)

run("ALTER TABLE sales.tmp SET SORTED BY (y)", function(tx) tx:set_sorting("sales.tmp", { "y" }) end)

run("INSERT INTO sales.tmp SELECT ... FROM range(0, 30)", function(tx)
  tx:add_data_files("sales.tmp", files({
  {"x=0/ducklake-01a22d27-b19b-7d5a-885f-209479f18d45.parquet", 10, 418, 236, {"0"}, {{"x",47,10,0,"0","0",N}, {"y",76,10,0,"v0","v9",N}}}, -- data_file_id 22
  {"x=1/ducklake-01a22d27-b19c-70ab-899e-7f8243010c04.parquet", 10, 418, 236, {"1"}, {{"x",47,10,0,"1","1",N}, {"y",76,10,0,"v1","v7",N}}}, -- data_file_id 23
  {"x=2/ducklake-01a22d27-b19c-7498-9822-0322c5e74f09.parquet", 10, 419, 238, {"2"}, {{"x",47,10,0,"2","2",N}, {"y",75,10,0,"v11","v8",N}}}, -- data_file_id 24
  }))
end)

-- ends the table, its columns, specs and files
run("DROP TABLE sales.tmp", function(tx) tx:drop_table("sales.tmp") end)

run("CREATE TABLE sales.tmp(x INTEGER, y VARCHAR)", function(tx)
  tx:create_table("sales.tmp", { { name = "x", type = "int32" }, { name = "y", type = "varchar" } })
end)

run("INSERT INTO sales.tmp VALUES (1, 'again')", function(tx)
  tx:add_data_files("sales.tmp", files({
  {"ducklake-01a22d27-b2ce-767e-9609-51cba2691a1c.parquet", 1, 310, 235, {}, {{"x",29,1,0,"1","1",N}, {"y",34,1,0,"again","again",N}}}, -- data_file_id 25
  }))
end)

run("ALTER TABLE sales.customers RENAME TO clients", function(tx) tx:rename_table("sales.customers", "clients") end)

-- the live sort spec names signup: a new version says signed_up_at; lower("name") is untouched
run("ALTER TABLE sales.clients RENAME COLUMN signup TO signed_up_at", function(tx)
  tx:rename_column("sales.clients", "signup", "signed_up_at")
end)

run("DELETE FROM sales.orders WHERE status = 'new' AND order_id % 7 = 0", function(tx)
  tx:add_delete_files("sales.orders", deletes({
  {10, "ducklake-01a22d27-b486-713f-b1bb-891dde3996f2-delete.parquet", 8, 898, 632}, -- delete_file_id 26
  {19, "ducklake-01a22d27-b485-7035-b029-ac984d06808f-delete.parquet", 57, 1097, 632}, -- delete_file_id 27
  {16, "ducklake-01a22d27-b487-73c3-9c70-d0e1f990ce00-delete.parquet", 9, 907, 636}, -- delete_file_id 28
  {13, "ducklake-01a22d27-b487-7f90-95e7-6f0213c81554-delete.parquet", 14, 923, 632}, -- delete_file_id 29
  {5, "ducklake-01a22d27-b485-7f56-aee4-9c83c027f3ab-delete.parquet", 9, 900, 632}, -- delete_file_id 30
  {18, "ducklake-01a22d27-b486-7cb4-8938-be11d0311c4b-delete.parquet", 3, 812, 620}, -- delete_file_id 31
  {11, "ducklake-01a22d27-b487-7642-a3e0-3bc0cfd9bd32-delete.parquet", 15, 927, 632}, -- delete_file_id 32
  {12, "ducklake-01a22d27-b487-74f1-9adb-90e5ca25af80-delete.parquet", 7, 892, 631}, -- delete_file_id 33
  {6, "ducklake-01a22d27-b486-775b-9771-3fabf4939242-delete.parquet", 12, 915, 632}, -- delete_file_id 34
  {15, "ducklake-01a22d27-b487-7a00-9123-826b01f4149e-delete.parquet", 12, 920, 636}, -- delete_file_id 35
  {8, "ducklake-01a22d27-b486-7326-a3bd-5b73a3f37894-delete.parquet", 10, 906, 632}, -- delete_file_id 36
  {14, "ducklake-01a22d27-b487-797f-9865-df2637685e3b-delete.parquet", 7, 897, 635}, -- delete_file_id 37
  {7, "ducklake-01a22d27-b486-7b09-a70c-607ecf45cd37-delete.parquet", 12, 915, 632}, -- delete_file_id 38
  {17, "ducklake-01a22d27-b485-744d-8825-2fe863dfa34b-delete.parquet", 11, 910, 632}, -- delete_file_id 39
  {9, "ducklake-01a22d27-b486-733f-acdf-ed87fc4bfd34-delete.parquet", 14, 923, 632}, -- delete_file_id 40
  }))
end)

-- compaction after deletes: one rewrite per partition (a merge never crosses partitions);
-- the inputs and their delete files end, the outputs carry no row_id_start
run("CALL ducklake_rewrite_data_files('lake', 'orders', schema => 'sales', delete_threshold => 0.0)", function(tx)
  local out = files({
  {"year=2024/month=3/ducklake-01a22d27-b613-7071-9b9c-b5cbebd3c63b.parquet", 236, 4975, 743, {"2024", "3"}, {{"order_id",987,236,0,"60","2890",N}, {"customer_id",801,236,0,"60","490",N}, {"order_date",328,236,0,"2024-03-01","2024-03-31",N}, {"status",123,236,0,"new","shipped",N}, {"total",868,236,0,"75.0","1120.0",false}}}, -- data_file_id 41
  {"year=2024/month=1/ducklake-01a22d27-b612-7257-a877-ae5ee4a92dff.parquet", 239, 5675, 743, {"2024", "1"}, {{"order_id",989,239,0,"1","2830",N}, {"customer_id",811,239,0,"0","430",N}, {"order_date",307,239,0,"2024-01-01","2024-01-31",N}, {"status",116,239,0,"new","shipped",N}, {"total",887,239,0,"1.25","1045.0",false}}}, -- data_file_id 42
  {"year=2024/month=5/ducklake-01a22d27-b613-7ffb-9ed5-784b8f74ef6e.parquet", 234, 4931, 743, {"2024", "5"}, {{"order_id",978,234,0,"121","2951",N}, {"customer_id",794,234,0,"21","451",N}, {"order_date",328,234,0,"2024-05-01","2024-05-31",N}, {"status",117,234,0,"new","shipped",N}, {"total",849,234,0,"151.25","1196.25",false}}}, -- data_file_id 43
  {"year=2024/month=9/ducklake-01a22d27-b613-746f-a64f-aa7ae07137f4.parquet", 196, 4381, 743, {"2024", "9"}, {{"order_id",827,196,0,"244","2673",N}, {"customer_id",705,196,0,"44","473",N}, {"order_date",266,196,0,"2024-09-01","2024-09-30",N}, {"status",121,196,0,"new","shipped",N}, {"total",754,196,0,"58.75","1095.0",false}}}, -- data_file_id 44
  {"year=2025/month=2/ducklake-01a22d27-b613-7596-8be1-51fe6a4c6b43.parquet", 361, 7211, 743, {"2025", "2"}, {{"order_id",1487,361,0,"397","3399",N}, {"customer_id",1439,361,0,"0","499",N}, {"order_date",366,361,0,"2025-02-01","2025-02-20",N}, {"status",98,361,0,"new","shipped",N}, {"total",1485,361,0,"3.75","1006.25",false}}}, -- data_file_id 45
  {"year=2025/month=1/ducklake-01a22d27-b613-75e3-ae2b-6bc84458213f.parquet", 206, 4566, 743, {"2025", "1"}, {{"order_id",866,206,0,"366","2796",N}, {"customer_id",740,206,0,"66","496",N}, {"order_date",309,206,0,"2025-01-01","2025-01-31",N}, {"status",121,206,0,"new","shipped",N}, {"total",780,206,0,"0.0","1245.0",false}}}, -- data_file_id 46
  {"year=2024/month=10/ducklake-01a22d27-b613-75a7-8a1d-70ae10934b7e.parquet", 210, 4621, 743, {"2024", "10"}, {{"order_id",881,210,0,"274","2704",N}, {"customer_id",750,210,0,"0","499",N}, {"order_date",309,210,0,"2024-10-01","2024-10-31",N}, {"status",120,210,0,"new","shipped",N}, {"total",797,210,0,"96.25","1133.75",false}}}, -- data_file_id 47
  {"year=2024/month=6/ducklake-01a22d27-b614-7a52-add4-d26c98cfe09d.parquet", 232, 4892, 743, {"2024", "6"}, {{"order_id",970,232,0,"152","2981",N}, {"customer_id",788,232,0,"52","481",N}, {"order_date",324,232,0,"2024-06-01","2024-06-30",N}, {"status",109,232,0,"new","shipped",N}, {"total",849,232,0,"190.0","1233.75",false}}}, -- data_file_id 48
  {"year=2024/month=2/ducklake-01a22d27-b613-73a7-9768-db3078700e4a.parquet", 220, 4729, 743, {"2024", "2"}, {{"order_id",923,220,0,"31","2859",N}, {"customer_id",749,220,0,"31","459",N}, {"order_date",320,220,0,"2024-02-01","2024-02-29",N}, {"status",117,220,0,"new","shipped",N}, {"total",816,220,0,"38.75","1081.25",false}}}, -- data_file_id 49
  {"year=2024/month=4/ducklake-01a22d27-b614-7f78-a295-f9de21f0b3da.parquet", 230, 4862, 743, {"2024", "4"}, {{"order_id",962,230,0,"91","2920",N}, {"customer_id",774,230,0,"0","499",N}, {"order_date",324,230,0,"2024-04-01","2024-04-30",N}, {"status",115,230,0,"new","shipped",N}, {"total",841,230,0,"113.75","1157.5",false}}}, -- data_file_id 50
  {"year=2024/month=7/ducklake-01a22d27-b614-7ddb-8760-5e10f3b26c2b.parquet", 220, 4761, 743, {"2024", "7"}, {{"order_id",926,220,0,"182","2999",N}, {"customer_id",762,220,0,"0","499",N}, {"order_date",328,220,0,"2024-07-01","2024-07-31",N}, {"status",116,220,0,"new","shipped",N}, {"total",824,220,0,"0.0","1245.0",false}}}, -- data_file_id 51
  {"year=2024/month=8/ducklake-01a22d27-b614-7698-bf60-5677fe665d4a.parquet", 210, 4634, 743, {"2024", "8"}, {{"order_id",881,210,0,"213","2643",N}, {"customer_id",753,210,0,"13","443",N}, {"order_date",309,210,0,"2024-08-01","2024-08-31",N}, {"status",116,210,0,"new","shipped",N}, {"total",811,210,0,"20.0","1057.5",false}}}, -- data_file_id 52
  {"year=2024/month=11/ducklake-01a22d27-b615-7f2c-84ca-d859cca68629.parquet", 198, 4425, 743, {"2024", "11"}, {{"order_id",832,198,0,"305","2734",N}, {"customer_id",711,198,0,"5","434",N}, {"order_date",295,198,0,"2024-11-01","2024-11-30",N}, {"status",121,198,0,"new","shipped",N}, {"total",752,198,0,"135.0","1171.25",false}}}, -- data_file_id 53
  {"year=2024/month=12/ducklake-01a22d27-b615-74d8-8688-ca71cd3d41c1.parquet", 208, 4593, 743, {"2024", "12"}, {{"order_id",871,208,0,"335","2765",N}, {"customer_id",748,208,0,"35","465",N}, {"order_date",309,208,0,"2024-12-01","2024-12-31",N}, {"status",120,208,0,"new","shipped",N}, {"total",789,208,0,"172.5","1210.0",false}}}, -- data_file_id 54
  })
  tx:rewrite_files("sales.orders", { 7 }, { out[1] })
  tx:rewrite_files("sales.orders", { 5 }, { out[2] })
  tx:rewrite_files("sales.orders", { 9 }, { out[3] })
  tx:rewrite_files("sales.orders", { 13 }, { out[4] })
  tx:rewrite_files("sales.orders", { 18, 19 }, { out[5] })
  tx:rewrite_files("sales.orders", { 17 }, { out[6] })
  tx:rewrite_files("sales.orders", { 14 }, { out[7] })
  tx:rewrite_files("sales.orders", { 10 }, { out[8] })
  tx:rewrite_files("sales.orders", { 6 }, { out[9] })
  tx:rewrite_files("sales.orders", { 8 }, { out[10] })
  tx:rewrite_files("sales.orders", { 11 }, { out[11] })
  tx:rewrite_files("sales.orders", { 12 }, { out[12] })
  tx:rewrite_files("sales.orders", { 15 }, { out[13] })
  tx:rewrite_files("sales.orders", { 16 }, { out[14] })
end)

run("ALTER TABLE sales.orders RESET SORTED BY", function(tx) tx:clear_sorting("sales.orders") end)

run("ALTER TABLE sales.orders RESET PARTITIONED BY", function(tx) tx:clear_partitioning("sales.orders") end)

run("INSERT INTO sales.orders VALUES (99999, 1, DATE '2026-01-01', 'paid', 10.0)", function(tx)
  tx:add_data_files("sales.orders", files({
  {"ducklake-01a22d27-b7f6-7c73-b130-b112ec1324c8.parquet", 1, 732, 559, {}, {{"order_id",33,1,0,"99999","99999",N}, {"customer_id",33,1,0,"1","1",N}, {"order_date",29,1,0,"2026-01-01","2026-01-01",N}, {"status",33,1,0,"paid","paid",N}, {"total",33,1,0,"10.0","10.0",false}}}, -- data_file_id 55
  }))
end)

end)
