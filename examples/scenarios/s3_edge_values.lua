-- s3_edge_values: awkward partition values and extreme integers, as verbs
--
-- DuckLake's scenario s3_edge_values (tests/fixtures/ducklake/s3_edge_values/scenario.sql), statement by
-- statement, written with moraine's verbs instead of SQL. The data files each INSERT wrote are
-- listed as DuckLake wrote them (path, record_count, file_size_bytes, footer_size, partition
-- values, column statistics; row_group_count 1 for each, from scenario.lua): moraine never
-- reads data, so a script states the files.
-- spec/verbs_fixtures_spec.lua checks that the catalog rows this script produces equal
-- DuckLake's own rows in the fixture.
--
-- Usage: sh scripts/run-lua.sh lua5.4 build examples/scenarios/s3_edge_values.lua [NEW_CATALOG_DIR]
-- (without NEW_CATALOG_DIR: built in a new directory under $TMPDIR, else /tmp, removed at the end)
-- Loaded with dofile, the script returns build(dir, log) (examples/scenarios/scenario.lua), which builds the catalog in the
-- new directory dir, reports each statement through log (default print) and returns the open db.
local S = dofile((debug.getinfo(1, "S").source:match("^@(.*[/\\])") or "./") .. "scenario.lua")
local N, files = S.N, S.files

return S.main("s3_edge_values", function(run)

run("CREATE TABLE edge(k VARCHAR, n BIGINT, d DATE, ts TIMESTAMP)", function(tx)
  tx:create_table("edge", {
    { name = "k", type = "varchar" }, { name = "n", type = "int64" }, { name = "d", type = "date" }, { name = "ts", type = "timestamp" },
  })
end)

run("ALTER TABLE edge SET PARTITIONED BY (k)", function(tx) tx:set_partitioning("edge", { "k" }) end)

-- partition values kept byte for byte: NULL, empty, quotes, unicode, 300 characters, tab and newline
run("INSERT INTO edge VALUES (NULL, 1, ...)", function(tx)
  tx:add_data_files("edge", files({
  {"ducklake-01a22d27-ca1d-79bf-b94a-5b501d4aee89.parquet", 1, 521, 389, {N}, {{"k",25,0,1,N,N,N}, {"n",33,1,0,"1","1",N}, {"d",29,1,0,"2000-01-01","2000-01-01",N}, {"ts",33,1,0,"2000-01-01 00:00:00","2000-01-01 00:00:00",N}}}, -- data_file_id 0
  }))
end)

run("INSERT INTO edge VALUES ('', 2, ...)", function(tx)
  tx:add_data_files("edge", files({
  {"ducklake-01a22d27-ca40-7dd7-beed-3e4cd7683495.parquet", 1, 532, 396, {""}, {{"k",29,1,0,"","",N}, {"n",33,1,0,"2","2",N}, {"d",29,1,0,"1970-01-01","1970-01-01",N}, {"ts",33,1,0,"1970-01-01 00:00:00","1970-01-01 00:00:00",N}}}, -- data_file_id 1
  }))
end)

run("INSERT INTO edge VALUES ('O''Reilly ...', 3, ...)", function(tx)
  tx:add_data_files("edge", files({
  {"ducklake-01a22d27-ca65-7ac3-b1d9-3fc6e08b2fd0.parquet", 1, 661, 500, {"O'Reilly \"quoted\" / slash"}, {{"k",54,1,0,"O'Reilly \"quoted\" / slash","O'Reilly \"quoted\" / slash",N}, {"n",33,1,0,"3","3",N}, {"d",29,1,0,"1969-12-31","1969-12-31",N}, {"ts",33,1,0,"1969-12-31 23:59:59","1969-12-31 23:59:59",N}}}, -- data_file_id 2
  }))
end)

run("INSERT INTO edge VALUES ('grüße — 東京 🦆', 4, ...)", function(tx)
  tx:add_data_files("edge", files({
  {"ducklake-01a22d27-ca8f-7e0f-a333-5753e66a3f7b.parquet", 1, 651, 492, {"grüße — 東京 🦆"}, {{"k",52,1,0,"grüße — 東京 🦆","grüße — 東京 🦆",N}, {"n",33,1,0,"4","4",N}, {"d",29,1,0,"2262-04-11","2262-04-11",N}, {"ts",33,1,0,"2262-04-11 23:47:16","2262-04-11 23:47:16",N}}}, -- data_file_id 3
  }))
end)

run("INSERT INTO edge VALUES (repeat('x', 300), 9223372036854775807, ...)", function(tx)
  tx:add_data_files("edge", files({
  {"ducklake-01a22d27-cab5-71e6-8c53-aeafb6cf5abe.parquet", 1, 1533, 1387, {"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}, {{"k",47,1,0,"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx","xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxy",N}, {"n",33,1,0,"9223372036854775807","9223372036854775807",N}, {"d",29,1,0,"0001-01-01","0001-01-01",N}, {"ts",25,0,1,N,N,N}}}, -- data_file_id 4
  }))
end)

run("INSERT INTO edge VALUES ('tab\\tand\\nnewline', -9223372036854775808, ...)", function(tx)
  tx:add_data_files("edge", files({
  {"ducklake-01a22d27-cadd-7c21-b4a0-d00e6f2a8ef9.parquet", 1, 581, 434, {"tab\tand\nnewline"}, {{"k",44,1,0,"tab\tand\nnewline","tab\tand\nnewline",N}, {"n",33,1,0,"-9223372036854775808","-9223372036854775808",N}, {"d",25,0,1,N,N,N}, {"ts",33,1,0,"2024-02-29 12:00:00","2024-02-29 12:00:00",N}}}, -- data_file_id 5
  }))
end)

run("ALTER TABLE edge SET PARTITIONED BY (year(d), bucket(7, n))", function(tx)
  tx:set_partitioning("edge", { "year(d)", "bucket(7, n)" })
end)

run("INSERT INTO edge VALUES ('a', 5, ...), ('b', 6, ...)", function(tx)
  tx:add_data_files("edge", files({
  {"ducklake-01a22d27-cbb7-7fba-8ff9-71890a8b8ce5.parquet", 1, 491, 362, {"2024", "1"}, {{"k",30,1,0,"a","a",N}, {"n",33,1,0,"5","5",N}, {"d",29,1,0,"2024-02-29","2024-02-29",N}, {"ts",25,0,1,N,N,N}}}, -- data_file_id 6
  {"ducklake-01a22d27-cbb8-7bb8-bd4c-ef53d9f054cd.parquet", 1, 461, 336, {N, "2"}, {{"k",30,1,0,"b","b",N}, {"n",33,1,0,"6","6",N}, {"d",25,0,1,N,N,N}, {"ts",25,0,1,N,N,N}}}, -- data_file_id 7
  }))
end)

run("ALTER TABLE edge SET PARTITIONED BY (hour(ts))", function(tx) tx:set_partitioning("edge", { "hour(ts)" }) end)

run("INSERT INTO edge VALUES ('c', 7, ...), ('d', 8, ...)", function(tx)
  tx:add_data_files("edge", files({
  {"ducklake-01a22d27-cc5d-71b3-987c-0e5839cc4dec.parquet", 1, 511, 378, {"23"}, {{"k",30,1,0,"c","c",N}, {"n",33,1,0,"7","7",N}, {"d",25,0,1,N,N,N}, {"ts",33,1,0,"2024-06-30 23:30:00","2024-06-30 23:30:00",N}}}, -- data_file_id 8
  {"ducklake-01a22d27-cc5d-766f-a75a-56f461cee728.parquet", 1, 461, 336, {N}, {{"k",30,1,0,"d","d",N}, {"n",33,1,0,"8","8",N}, {"d",25,0,1,N,N,N}, {"ts",25,0,1,N,N,N}}}, -- data_file_id 9
  }))
end)

-- DuckLake stores the quoted key "k" as k
run("ALTER TABLE edge SET SORTED BY (\"k\" DESC NULLS FIRST, n)", function(tx)
  tx:set_sorting("edge", { "k DESC NULLS FIRST", "n" })
end)

run("INSERT INTO edge VALUES ('z', 10, ...), ('y', 11, ...)", function(tx)
  tx:add_data_files("edge", files({
  {"ducklake-01a22d27-cd0c-7de9-875d-5f1424b63e8f.parquet", 2, 474, 336, {N}, {{"k",35,2,0,"y","z",N}, {"n",41,2,0,"10","11",N}, {"d",25,0,2,N,N,N}, {"ts",25,0,2,N,N,N}}}, -- data_file_id 10
  }))
end)

run("ALTER TABLE edge SET PARTITIONED BY (epoch_day(d), epoch_hour(ts))", function(tx)
  tx:set_partitioning("edge", { "epoch_day(d)", "epoch_hour(ts)" })
end)

run("INSERT INTO edge VALUES ('e', 12, ...)", function(tx)
  tx:add_data_files("edge", files({
  {"ducklake-01a22d27-cdbd-79c9-aa20-93163a57c422.parquet", 1, 541, 404, {"19783", "474797"}, {{"k",30,1,0,"e","e",N}, {"n",33,1,0,"12","12",N}, {"d",29,1,0,"2024-03-01","2024-03-01",N}, {"ts",33,1,0,"2024-03-01 05:00:00","2024-03-01 05:00:00",N}}}, -- data_file_id 11
  }))
end)

end)
