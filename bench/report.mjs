// report.mjs — the table of one bench run: node bench/report.mjs WORK
// Reads WORK/results/*.json, checks that every peer answered the same
// question (same files, deletes and spec keys), prints the table, the
// memory and disk sizes, where each target of issue #5 stands and (from the
// interleaved runs) each of issue #18, and
// writes it to WORK/results/table.md. Exits non-zero if a peer's results are
// missing or disagree.
import { readFileSync, writeFileSync, existsSync } from "node:fs";

const work = process.argv[2];
if (!work) {
  console.error("usage: node bench/report.mjs WORK");
  process.exit(2);
}
const meta = JSON.parse(readFileSync(`${work}/meta.json`, "utf8"));
const load = (name) => {
  const p = `${work}/results/${name}.json`;
  if (!existsSync(p)) {
    console.error(`bench report: FAILED: ${p} missing (the ${name} peer did not run)`);
    process.exit(1);
  }
  return JSON.parse(readFileSync(p, "utf8"));
};
const duck = { peer: "duckdb", workloads: {} };
for (const ph of ["load", "serve", "commits", "commits-nosync"]) {
  const r = load(`duckdb_${ph}`);
  Object.assign(duck.workloads, r.workloads);
  for (const k of Object.keys(r)) if (k !== "workloads") duck[k] = duck[k] ?? r[k];
}
const P = {
  c: load("moraine_c"),
  luajit: load("moraine_luajit"),
  lua54: load("moraine_lua54"),
  floor: load("floor"),
  sqlite: load("sqlite"),
  sqlidx: load("sqlite_indexed"),
  duckdb: duck,
};
const COLS = [
  ["c", "moraine C"],
  ["luajit", "moraine LuaJIT"],
  ["lua54", "moraine Lua 5.4"],
  ["floor", "floor (raw LMDB)"],
  ["sqlite", "SQLite"],
  ["sqlidx", "SQLite indexed"],
  ["duckdb", "DuckDB"],
];
const W = [
  ["a_files_latest", "(a) files of one table, latest snapshot, with partition values and column stats"],
  ["b_files_old", "(b) the same at an old snapshot"],
  ["c_specs", "(c) partition and sort spec in force for every table at S"],
  ["d_attach", "(d) whole catalog at S, as ATTACH reads it"],
  ["e_1file", "(e) one-file commits, no fsync"],
  ["e_1file_fsync", "(e) one-file commits, fsync"],
  ["e_10k", "(e) 10k-file commits, no fsync"],
  ["e_10k_fsync", "(e) 10k-file commits, fsync"],
  ["f_import", "(f) NDJSON import"],
];

const errors = [];
const med = (p, w) => P[p].workloads[w]?.median;
// the same question answered: files, deletes, spec keys
for (const w of ["a_files_latest", "b_files_old", "c_specs"]) {
  const ref = P.c.workloads[w]?.rows;
  for (const p of ["luajit", "lua54", "sqlite", "sqlidx", "duckdb"]) {
    const got = P[p].workloads[w]?.rows;
    if (got !== ref) errors.push(`${w}: ${p} answered ${got} rows, moraine C ${ref}`);
  }
}
for (const k of ["a_deletes", "b_deletes"]) {
  for (const p of ["luajit", "lua54", "sqlite", "sqlidx", "duckdb"])
    if (P[p][k] !== P.c[k]) errors.push(`${k}: ${p} matched ${P[p][k]} delete files, moraine C ${P.c[k]}`);
}
for (const [p] of COLS) for (const [w] of W) if (med(p, w) === undefined) errors.push(`${p} has no result for ${w}`);

const fmt = (v, unit) => {
  if (v === undefined || v === null || Number.isNaN(v)) return "—";
  if (unit === "s") {
    if (v < 1e-3) return `${(v * 1e6).toPrecision(3)} µs`;
    if (v < 1) return `${(v * 1e3).toPrecision(3)} ms`;
    return `${v.toPrecision(3)} s`;
  }
  if (v >= 1e6) return `${(v / 1e6).toPrecision(3)} M/s`;
  if (v >= 1e3) return `${(v / 1e3).toPrecision(3)} k/s`;
  return `${v.toPrecision(3)} /s`;
};
const x = (v) => (v === undefined || !isFinite(v) ? "—" : `${v >= 10 ? v.toFixed(0) : v.toFixed(2)}×`);

const lines = [];
const out = (s = "") => lines.push(s);
out(`## moraine bench — ${meta.files} files (${meta.live_files} live, ${meta.ended_files} ended by compaction) over ${meta.tables} tables, ` +
  `${meta.snapshots} snapshots, ${meta.stats} column stats and ${meta.pkeys} partition keys per file, ${meta.eras} spec eras per table, ${meta.total_rows} catalog rows`);
out();
out(`Latest snapshot ${meta.last_snapshot}, old snapshot ${meta.old_snapshot}; (a)/(b) read table ${meta.bench_table} ` +
  `(${meta.bench_table_live_files} files live at the latest snapshot, ${meta.bench_table_old_files} at the old one). Medians of ${P.c.runs} runs after a warm-up` +
  ` (imports: ${P.c.import_runs === 1 ? "one run" : `the median of ${P.c.import_runs} runs`} after a warm-up import).`);
out();
out(`| workload | ${COLS.map((c) => c[1]).join(" | ")} | C/floor | SQLite idx ÷ C | DuckDB ÷ C | SQLite idx ÷ LuaJIT | SQLite idx ÷ Lua 5.4 |`);
out(`|---|${COLS.map(() => "---:").join("|")}|---:|---:|---:|---:|---:|`);
for (const [w, label] of W) {
  const unit = P.c.workloads[w]?.unit ?? "s";
  const cells = COLS.map(([p]) => fmt(med(p, w), unit));
  let r;
  if (unit === "s") {
    // latency: how many times slower the others are than moraine
    r = [med("c", w) / med("floor", w), med("sqlidx", w) / med("c", w), med("duckdb", w) / med("c", w), med("sqlidx", w) / med("luajit", w), med("sqlidx", w) / med("lua54", w)];
  } else {
    // throughput: how many times faster moraine is
    r = [med("c", w) / med("floor", w), med("c", w) / med("sqlidx", w), med("c", w) / med("duckdb", w), med("luajit", w) / med("sqlidx", w), med("lua54", w) / med("sqlidx", w)];
  }
  out(`| ${label} | ${cells.join(" | ")} | ${r.map(x).join(" | ")} |`);
}
out();
out("Ratios: for times, C/floor is moraine's time over the floor's and the others are the peer's time over moraine's (above 1: moraine is faster);");
out("for rates (commits, import), C/floor is moraine's rate over the floor's and the others moraine's rate over the peer's (above 1: moraine is faster).");
out();
const mb = (kb) => (kb ? `${(kb / 1024).toFixed(0)} MiB` : "—");
const mbb = (b) => (b ? `${(b / 1048576).toFixed(1)} MiB` : "—");
out(`| store | ${COLS.map((c) => c[1]).join(" | ")} |`);
out(`|---|${COLS.map(() => "---:").join("|")}|`);
out(`| peak RSS, load (import) | ${COLS.map(([p]) => mb(P[p].peak_rss_load_kb)).join(" | ")} |`);
out(`| peak RSS, serving (a-d) | ${COLS.map(([p]) => mb(P[p].peak_rss_serve_kb)).join(" | ")} |`);
out(`| on disk after load | ${COLS.map(([p]) => mbb(P[p].disk_bytes)).join(" | ")} |`);
out();
out("Peak RSS of the moraine and floor processes includes the LMDB pages they touched (file-backed, shared); the Lua rows are one process");
out("each (serving measured before its import); the floor's disk size is the moraine store copied entry by entry with MDB_APPEND; DuckDB's peak is the node process.");
out();

// targets of issue #5
const t = [];
const chk = (ok, what, val) => t.push(`| ${what} | ${val} | ${ok ? "met" : "**missed**"} |`);
const a = (p) => med(p, "a_files_latest");
chk(a("c") <= 1.5 * a("floor"), "(a) C within 1.5× of the raw LMDB floor", `${x(a("c") / a("floor"))}`);
chk(a("sqlidx") >= 20 * a("c"), "(a) C ≥ 20× faster than indexed SQLite", x(a("sqlidx") / a("c")));
chk(a("duckdb") >= 5 * a("c"), "(a) C ≥ 5× faster than DuckDB", x(a("duckdb") / a("c")));
chk(a("sqlidx") >= 2 * a("luajit"), "(a) LuaJIT ≥ 2× faster than indexed SQLite", x(a("sqlidx") / a("luajit")));
chk(a("sqlidx") >= 2 * a("lua54"), "(a) Lua 5.4 ≥ 2× faster than indexed SQLite", x(a("sqlidx") / a("lua54")));
chk(med("c", "b_files_old") <= 2 * a("c"), "(b) within 2× of (a), through C", x(med("c", "b_files_old") / a("c")));
chk(med("luajit", "b_files_old") <= 2 * a("luajit"), "(b) within 2× of (a), through LuaJIT", x(med("luajit", "b_files_old") / a("luajit")));
chk(med("c", "e_10k") >= 200000, "(e) 10k-file commits ≥ 200k files/s without fsync (C)", fmt(med("c", "e_10k"), "files/s"));
chk(P.c.disk_bytes <= 1.5 * P.sqlite.disk_bytes, "on-disk size ≤ 1.5× SQLite's", x(P.c.disk_bytes / P.sqlite.disk_bytes));
out("Issue 5's targets (the first bench: the row-at-a-time reads and sizes of the table above; issue 18's follow the interleaved runs):");
out();
out("| target | where it stands | |");
out("|---|---:|---|");
for (const l of t) out(l);
out();
// the interleaved runs of (a) (bench interleave, bench/lua_interleave.lua):
// every ratio measured under the same load, min / median per entry
const inter = `${work}/results/interleave.json`;
if (existsSync(inter)) {
  out("### (a) interleaved: the peers round-robin in one process");
  out();
  for (const f of ["interleave.md", "interleave_luajit.md", "interleave_lua54.md"]) {
    const p = `${work}/results/${f}`;
    if (existsSync(p)) {
      out(readFileSync(p, "utf8").trimEnd());
      out();
    }
  }
  const J = JSON.parse(readFileSync(inter, "utf8"));
  const L = {};
  for (const rt of ["luajit", "lua54"]) {
    const p = `${work}/results/interleave_${rt}.json`;
    if (existsSync(p)) L[rt] = JSON.parse(readFileSync(p, "utf8"));
  }
  // the median of one peer and shape in an interleaved run (undefined when it did not run)
  const em = (run, peer, shape) => run?.entries.find((e) => e.peer === peer && e.shape === shape)?.median;
  const m = (peer, shape) => em(J, peer, shape);
  const fl = m("floor", "walk");
  const ti = [];
  const chk2 = (ok, what, val) => ti.push(`| ${what} | ${val} | ${ok === undefined ? "not run" : ok ? "met" : "**missed**"} |`);
  // ok when both sides ran: @peer's median at least @times faster than @base's
  const faster = (base, peer, times) => (base === undefined || peer === undefined ? undefined : base >= times * peer);
  const x2 = (v) => `${v.toFixed(2)}×`; // two decimals: 19.6× must not print as 20×
  const ratio = (num, den) => (num === undefined || den === undefined ? "—" : x2(num / den));
  // moraine C: the projected read, its child rows a group at a time (moraine_cursor_child_rows), the fastest C read
  const C = "moraine_c_groups";
  chk2(m(C, "pv") <= 1.5 * fl, "(a) partition values, projected C within 1.5× of the floor", ratio(m(C, "pv"), fl));
  chk2(m(C, "1col") <= 2 * fl, "(a) with one column's stats, projected C within 2× of the floor", ratio(m(C, "1col"), fl));
  const SHAPES = [
    ["pv", "partition values"],
    ["1col", "one column's stats"],
    ["all", "every column's stats"],
  ];
  for (const [shape, what] of SHAPES)
    chk2(faster(m("sqlite_indexed", shape), m(C, shape), 20), `(a) ${what}, C ≥ 20× indexed SQLite`, ratio(m("sqlite_indexed", shape), m(C, shape)));
  for (const [rt, name, times] of [
    ["luajit", "LuaJIT", 3],
    ["lua54", "Lua 5.4", 2],
  ])
    for (const [shape, what] of SHAPES)
      chk2(faster(em(L[rt], "sqlite_indexed", shape), em(L[rt], `moraine_${rt}_batch`, shape), times),
        `(a) ${what}, ${name} batch read ≥ ${times}× indexed SQLite`, ratio(em(L[rt], "sqlite_indexed", shape), em(L[rt], `moraine_${rt}_batch`, shape)));
  chk2(faster(m("sqlite_indexed", "d"), m("moraine_c", "d"), 2), "(d) whole catalog at S, C ≥ 2× indexed SQLite", ratio(m("sqlite_indexed", "d"), m("moraine_c", "d")));
  for (const [rt, name] of [
    ["luajit", "LuaJIT"],
    ["lua54", "Lua 5.4"],
  ])
    chk2(faster(em(L[rt], "sqlite_indexed", "d"), em(L[rt], `moraine_${rt}_batch`, "d"), 2), `(d) whole catalog at S, ${name} ≥ 2× indexed SQLite`,
      ratio(em(L[rt], "sqlite_indexed", "d"), em(L[rt], `moraine_${rt}_batch`, "d")));
  chk2(med("c", "e_10k") >= 200000, "(e) 10k-file commits ≥ 200k files/s without fsync (C)", fmt(med("c", "e_10k"), "files/s"));
  // one-file commits: from the interleaved run (bench commit1) when it ran, else from the peers' own runs
  const c1p = `${work}/results/commit1.json`;
  if (existsSync(c1p)) {
    const C1 = JSON.parse(readFileSync(c1p, "utf8"));
    chk2(C1.moraine.median >= 5 * C1.sqlite.median,
      `(e) one-file commits ≥ 5× SQLite's (as DuckLake creates it), no fsync; interleaved, ${C1.rounds} rounds of ${C1.commits}`,
      ratio(C1.moraine.median, C1.sqlite.median));
  } else {
    chk2(med("c", "e_1file") >= 5 * med("sqlite", "e_1file"), "(e) one-file commits ≥ 5× SQLite's (as DuckLake creates it), no fsync",
      ratio(med("c", "e_1file"), med("sqlite", "e_1file")));
  }
  chk2(P.c.disk_bytes <= 1.2 * P.sqlite.disk_bytes, "store ≤ 1.2× SQLite's file, after import (compacted, as `moraine import` leaves it)",
    `${(P.c.disk_bytes / P.sqlite.disk_bytes).toFixed(3)}× (${P.c.disk_bytes} ÷ ${P.sqlite.disk_bytes} bytes)`);
  out("Issue 18's targets (bench/README.md); the import targets (8M rows: peak RSS under 500 MiB, ≥ 300k rows/s) need a larger catalog:");
  out(`this run imported ${meta.total_rows} rows at ${fmt(med("c", "f_import"), "rows/s")}, peak RSS ${mb(P.c.peak_rss_load_kb)}.`);
  out();
  out("| target (interleaved runs' medians; 10k-file commits and sizes from the runs above) | where it stands | |");
  out("|---|---:|---|");
  for (const l of ti) out(l);
  out();
  const ff = (shape) => ratio(m("floor_format", shape), fl);
  if (m("floor_format", "pv") !== undefined)
    out(`The format floor (bench.c walk_cells: the least a reader of moraine's value format does, no API and no checks past the CRC) is ` +
      `${ff("pv")} the floor for partition values and ${ff("1col")} with one column's stats; moraine's projected read is ` +
      `${ratio(m(C, "pv"), m("floor_format", "pv"))} and ${ratio(m(C, "1col"), m("floor_format", "1col"))} the format floor.`);
  out();
}
const text = lines.join("\n");
console.log(text);
writeFileSync(`${work}/results/table.md`, text + "\n");
if (errors.length) {
  console.error("bench report: FAILED: the peers did not answer the same question:\n  " + errors.join("\n  "));
  process.exit(1);
}
