// duckdb_bench.mjs — the DuckDB peer, through the npm package @duckdb/node-api.
//
//   node bench/duckdb_bench.mjs WORK load       import (f): the NDJSON rows into DuckLake's schema
//   node bench/duckdb_bench.mjs WORK serve      workloads a-d (the SQL of WORK/sql/duckdb)
//   node bench/duckdb_bench.mjs WORK commits    (e) with fsync (DuckDB's only mode)
//   eatmydata node bench/duckdb_bench.mjs WORK commits-nosync
//                                               (e) with fsync made a no-op by libeatmydata:
//                                               DuckDB has no setting to skip it
//
// Each phase is its own process, so its peak RSS is its own; results go to
// WORK/results/duckdb_<phase>.json. Timings use process.hrtime inside the
// process: one warm-up run, then BENCH_RUNS runs (at least 5), median. A
// query's time is run + reading every result chunk into the client
// (runAndReadAll), the point where a client holds the whole answer.
import { DuckDBInstance } from "@duckdb/node-api";
import { readFileSync, writeFileSync, mkdirSync, existsSync, rmSync, statSync, readdirSync, copyFileSync } from "node:fs";

const [work, phase] = process.argv.slice(2);
if (!work || !phase) {
  console.error("usage: node bench/duckdb_bench.mjs WORK load|serve|commits|commits-nosync");
  process.exit(2);
}
const meta = JSON.parse(readFileSync(`${work}/meta.json`, "utf8"));
let RUNS = Math.max(5, parseInt(process.env.BENCH_RUNS || "5", 10) || 5);
const IMPORT_RUNS = parseInt(process.env.BENCH_IMPORT_RUNS || "", 10) || RUNS;
const stores = `${work}/stores`;
mkdirSync(stores, { recursive: true });
mkdirSync(`${work}/results`, { recursive: true });
const dbPath = `${stores}/duckdb.db`;
const results = { peer: "duckdb", phase, runs: RUNS, workloads: {} };

const now = () => Number(process.hrtime.bigint()) / 1e9;
const median = (v) => {
  const c = [...v].sort((a, b) => a - b);
  return c.length % 2 ? c[(c.length - 1) / 2] : (c[c.length / 2 - 1] + c[c.length / 2]) / 2;
};
const statements = (name) => readFileSync(`${work}/sql/duckdb/${name}.sql`, "utf8").split("\n-- next\n");
const rmdb = (p) => {
  for (const f of [p, `${p}.wal`]) if (existsSync(f)) rmSync(f);
};
const fail = (msg) => {
  console.error(`bench duckdb: FAILED: ${msg}`);
  process.exit(1);
};

async function open(path) {
  const inst = await DuckDBInstance.create(path);
  const conn = await inst.connect();
  return { inst, conn };
}

async function load() {
  const times = [];
  for (let run = 0; run <= IMPORT_RUNS; run++) {
    rmdb(dbPath);
    const { inst, conn } = await open(dbPath);
    for (const s of statements("schema")) await conn.run(s);
    const cols = {};
    for (const row of (await conn.runAndReadAll("SELECT table_name, column_name, data_type FROM information_schema.columns ORDER BY table_name, ordinal_position")).getRows()) {
      (cols[row[0]] ||= []).push([row[1], row[2]]);
    }
    const dir = `${work}/catalog`;
    const t = now();
    for (const f of readdirSync(dir).sort()) {
      if (!f.endsWith(".ndjson")) continue;
      const table = f.slice(0, -7);
      if (statSync(`${dir}/${f}`).size <= 1) continue; // an empty table: one newline
      if (!cols[table]) fail(`no DDL for ${table}`);
      const spec = cols[table].map(([c, ty]) => `'${c}': '${ty}'`).join(", ");
      await conn.run(`INSERT INTO ${table} SELECT * FROM read_json('${dir}/${f}', format = 'newline_delimited', columns = {${spec}})`);
    }
    await conn.run("CHECKPOINT");
    const dt = now() - t;
    conn.closeSync();
    inst.closeSync?.();
    times.push(meta.total_rows / dt);
    console.error(`  f_import       run ${run}: ${dt.toFixed(2)} s, ${(meta.total_rows / dt).toFixed(0)} rows/s`);
  }
  const r = times.slice(1);
  results.workloads.f_import = { runs: r, median: median(r), unit: "rows/s", rows: meta.total_rows };
  let size = statSync(dbPath).size;
  if (existsSync(`${dbPath}.wal`)) size += statSync(`${dbPath}.wal`).size;
  results.disk_bytes = size;
  results.peak_rss_load_kb = process.resourceUsage().maxRSS;
}

async function serve() {
  const { conn } = await open(dbPath);
  for (const [name, file] of [["a_files_latest", "a"], ["b_files_old", "b"], ["c_specs", "c"], ["d_attach", "d"]]) {
    const st = statements(file);
    // warm-up, which also gives the checks
    let rows = 0, deletes = 0;
    for (const s of st) {
      const rd = await conn.runAndReadAll(s);
      rows += rd.currentRowCount;
      const names = rd.columnNames();
      const di = names.indexOf("del_path");
      if (di >= 0) for (const row of rd.getRows()) if (row[di] !== null) deletes++;
    }
    const times = [];
    for (let i = 0; i < RUNS; i++) {
      const t = now();
      let n = 0;
      for (const s of st) n += (await conn.runAndReadAll(s)).currentRowCount;
      times.push(now() - t);
      if (n !== rows) fail(`${name}: run ${i} answered ${n} rows, the warm-up ${rows}`);
    }
    results.workloads[name] = { runs: times, median: median(times), unit: "s", rows };
    if (file === "a" || file === "b") results[`${file}_deletes`] = deletes;
    console.error(`  ${name.padEnd(14)} ${median(times).toFixed(6)} s median (${rows} rows)`);
  }
  results.peak_rss_serve_kb = process.resourceUsage().maxRSS;
}

// the statements DuckLake's commit of an INSERT issues, as SQL text (as bench.c builds them for SQLite)
let seq = Date.now() % 100000;
async function commit(conn, nfiles) {
  await conn.run("BEGIN TRANSACTION");
  const snap = (await conn.runAndReadAll("SELECT snapshot_id, schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot WHERE snapshot_id = (SELECT MAX(snapshot_id) FROM ducklake_snapshot)")).getRows()[0];
  const ts = (await conn.runAndReadAll(`SELECT record_count, next_row_id, file_size_bytes FROM ducklake_table_stats WHERE table_id = ${meta.bench_table_id}`)).getRows()[0];
  const s = Number(snap[0]) + 1, sv = Number(snap[1]), cat = Number(snap[2]), fid = Number(snap[3]);
  const T = meta.bench_table_id, K = meta.stats, P = meta.pkeys;
  seq++;
  let row = Number(ts[1]);
  const r0 = row;
  const parts = [];
  parts.push(`INSERT INTO ducklake_snapshot VALUES (${s}, '2026-02-01 00:00:00+00', ${sv}, ${cat}, ${fid + nfiles});`);
  parts.push(`INSERT INTO ducklake_snapshot_changes VALUES (${s}, 'inserted_into_table:${T}', NULL, NULL, NULL);`);
  const df = [];
  for (let f = 0; f < nfiles; f++) {
    df.push(`(${fid + f}, ${T}, ${s}, NULL, NULL, 'bench/commit-${seq}-${f}/ducklake-0197aaaa-bbbb-7ccc-8ddd-${String(f).padStart(12, "0")}.parquet', true, 'parquet', ${100000 + f}, ${1800000 + f}, 2048, ${row}, NULL, NULL, NULL, NULL, NULL)`);
    row += 100000 + f;
  }
  parts.push(`INSERT INTO ducklake_data_file VALUES ${df.join(", ")};`);
  const st = [];
  for (let f = 0; f < nfiles; f++) for (let k = 0; k < K; k++) st.push(`(${fid + f}, ${T}, ${k + 1}, ${200000 + k}, ${100000 + f}, ${k}, '${f}', '${f + 100000}', NULL, NULL)`);
  parts.push(`INSERT INTO ducklake_file_column_stats VALUES ${st.join(", ")};`);
  if (P) {
    const pv = [];
    for (let f = 0; f < nfiles; f++) for (let k = 0; k < P; k++) pv.push(`(${fid + f}, ${T}, ${k}, '${(f + k) % 16}')`);
    parts.push(`INSERT INTO ducklake_file_partition_value VALUES ${pv.join(", ")};`);
  }
  parts.push(`UPDATE ducklake_table_stats SET record_count = ${Number(ts[0]) + (row - r0)}, next_row_id = ${row}, file_size_bytes = ${Number(ts[2]) + 1800000 * nfiles} WHERE table_id = ${T};`);
  for (let k = 0; k < K; k++)
    parts.push(`UPDATE ducklake_table_column_stats SET contains_null = (contains_null OR true), min_value = least(min_value, '0'), max_value = greatest(max_value, '${100000 + nfiles}') WHERE table_id = ${T} AND column_id = ${k + 1};`);
  await conn.run(parts.join("\n"));
  await conn.run("COMMIT");
}

async function commits(nosync) {
  const path = `${stores}/duckdb-commits.db`;
  if (!nosync) {
    rmdb(path);
    copyFileSync(dbPath, path);
  }
  const { conn } = await open(path);
  const plan = [
    ["e_1file", 1, 200, "snapshots/s"],
    ["e_10k", 10000, 1, "files/s"],
  ];
  for (const [base, nfiles, ncommits0, unit] of plan) {
    const ncommits = nosync ? ncommits0 : Math.max(1, Math.floor(ncommits0 / 10));
    const name = nosync ? base : `${base}_fsync`;
    const units = nfiles === 1 ? ncommits : nfiles * ncommits;
    const rates = [];
    for (let run = 0; run <= RUNS; run++) {
      const t = now();
      for (let i = 0; i < ncommits; i++) await commit(conn, nfiles);
      if (run > 0) rates.push(units / (now() - t));
    }
    results.workloads[name] = { runs: rates, median: median(rates), unit };
    console.error(`  ${name.padEnd(14)} ${median(rates).toFixed(1)} ${unit} median`);
  }
  if (nosync) rmdb(path);
}

try {
  if (phase === "load") await load();
  else if (phase === "serve") await serve();
  else if (phase === "commits") await commits(false);
  else if (phase === "commits-nosync") await commits(true);
  else fail(`unknown phase ${phase}`);
} catch (e) {
  fail(e && e.stack ? e.stack : String(e));
}
writeFileSync(`${work}/results/duckdb_${phase}.json`, JSON.stringify(results, null, 1));
