/*
 * store_pages.c — where the bytes of a compacted moraine store go: the keys
 * and values themselves, LMDB's per-entry and per-page overhead, and the room
 * left at the end of each leaf page because the next entry did not fit.
 *
 *   build/bench/store_pages CATALOG_DIR [SHAVE ...]
 *
 * Walks data.mdb in key order (read-only, no lock taken: run it on a catalog
 * no process is writing) and packs the entries into 4 KiB leaf pages the way
 * MDB_APPEND fills them (moraine_compact, `moraine import`): an entry goes on
 * the current page if it fits, else it starts the next one. The packing is
 * checked against the leaf page count LMDB itself reports, and the run fails
 * if the two differ. Then, for each SHAVE (bytes, default 8 16 24 32 48), the
 * same packing with every value of 256 bytes or more that many bytes smaller:
 * how many leaf pages a format with smaller records would save, without
 * writing one. Not part of `make test`; bench/README.md ("store size") has a
 * run and what it shows.
 */
#include <lmdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define PAGE 4096u
#define PAGE_HEAD 16u /* LMDB's page header */
#define NODE_HEAD 8u  /* LMDB's leaf node header */
#define SLOT 2u       /* the node's offset in the page's index */

typedef struct {
    uint64_t pages, overflow, used, slack; /* slack: bytes left unused on full pages */
} packing;

/* One entry into @pk as MDB_APPEND places it. Values too big for a leaf node
 * go to overflow pages (LMDB's me_nodemax for 4 KiB pages); moraine's are
 * well below it, but the count stays honest if one is not. */
static void pack(packing *pk, size_t klen, size_t vlen)
{
    const size_t nodemax = ((PAGE - PAGE_HEAD) / 2 & ~(size_t)1) - SLOT;
    size_t node = NODE_HEAD + klen + vlen;
    if (node > nodemax) {
        pk->overflow += (vlen + PAGE_HEAD + PAGE - 1) / PAGE;
        node = NODE_HEAD + klen + sizeof(uint64_t);
    }
    node = ((node + 1) & ~(size_t)1) + SLOT;
    if (!pk->pages || pk->used + node > PAGE - PAGE_HEAD) {
        if (pk->pages) pk->slack += PAGE - PAGE_HEAD - pk->used;
        pk->pages++;
        pk->used = 0;
    }
    pk->used += node;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "store_pages: %s: %s\n", what, mdb_strerror(rc));
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: store_pages CATALOG_DIR [SHAVE ...]\n");
        return 2;
    }
    size_t shave[16] = {8, 16, 24, 32, 48};
    int nshave = 5;
    if (argc > 2) {
        nshave = 0;
        for (int i = 2; i < argc && nshave < 16; i++) shave[nshave++] = (size_t)strtoul(argv[i], NULL, 10);
    }
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *cur;
    MDB_val k, v;
    int rc;
    if ((rc = mdb_env_create(&env))) die("mdb_env_create", rc);
    if ((rc = mdb_env_set_mapsize(env, (size_t)1 << 40))) die("mdb_env_set_mapsize", rc);
    if ((rc = mdb_env_open(env, argv[1], MDB_RDONLY | MDB_NOLOCK, 0))) die(argv[1], rc);
    if ((rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn))) die("mdb_txn_begin", rc);
    if ((rc = mdb_dbi_open(txn, NULL, 0, &dbi))) die("mdb_dbi_open", rc);
    if ((rc = mdb_cursor_open(txn, dbi, &cur))) die("mdb_cursor_open", rc);
    packing now = {0}, what_if[16] = {{0}};
    uint64_t entries = 0, kbytes = 0, vbytes = 0;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        entries++;
        kbytes += k.mv_size;
        vbytes += v.mv_size;
        pack(&now, k.mv_size, v.mv_size);
        for (int i = 0; i < nshave; i++) pack(&what_if[i], k.mv_size, v.mv_size >= 256 ? v.mv_size - shave[i] : v.mv_size);
    }
    if (rc != MDB_NOTFOUND) die("mdb_cursor_get", rc);
    MDB_stat st;
    if ((rc = mdb_stat(txn, dbi, &st))) die("mdb_stat", rc);
    MDB_envinfo ei;
    if ((rc = mdb_env_info(env, &ei))) die("mdb_env_info", rc);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    if (st.ms_leaf_pages != now.pages || st.ms_overflow_pages != now.overflow) {
        fprintf(stderr, "store_pages: the packing gives %llu leaf and %llu overflow pages, LMDB has %zu and %zu: is %s compacted?\n",
                (unsigned long long)now.pages, (unsigned long long)now.overflow, st.ms_leaf_pages, st.ms_overflow_pages, argv[1]);
        return 1;
    }
    uint64_t file = (uint64_t)(ei.me_last_pgno + 1) * PAGE;
    uint64_t overhead = now.pages * (PAGE - PAGE_HEAD) - (kbytes + vbytes) - now.slack - (now.pages ? PAGE - PAGE_HEAD - now.used : 0);
    printf("%s: %llu entries; data.mdb %llu bytes (%llu pages: %zu leaf, %zu branch, %zu overflow, 2 meta, %llu free)\n", argv[1],
           (unsigned long long)entries, (unsigned long long)file, (unsigned long long)(ei.me_last_pgno + 1), st.ms_leaf_pages,
           st.ms_branch_pages, st.ms_overflow_pages,
           (unsigned long long)(ei.me_last_pgno + 1 - st.ms_leaf_pages - st.ms_branch_pages - st.ms_overflow_pages - 2));
    printf("| leaf pages hold | bytes | share of the leaf pages |\n|---|---:|---:|\n");
    double leaf = (double)now.pages * PAGE;
    printf("| keys | %llu | %.1f%% |\n", (unsigned long long)kbytes, 100.0 * (double)kbytes / leaf);
    printf("| values | %llu | %.1f%% |\n", (unsigned long long)vbytes, 100.0 * (double)vbytes / leaf);
    printf("| node headers, index slots, alignment | %llu | %.1f%% |\n", (unsigned long long)overhead, 100.0 * (double)overhead / leaf);
    printf("| page headers | %llu | %.1f%% |\n", (unsigned long long)(now.pages * PAGE_HEAD), 100.0 * (double)(now.pages * PAGE_HEAD) / leaf);
    printf("| room left at the end of a page (the next entry did not fit) | %llu | %.1f%% |\n",
           (unsigned long long)(now.slack + PAGE - PAGE_HEAD - now.used), 100.0 * (double)(now.slack + PAGE - PAGE_HEAD - now.used) / leaf);
    printf("\n| every value of 256 bytes or more smaller by | leaf pages | change |\n|---:|---:|---:|\n| 0 | %llu | |\n",
           (unsigned long long)now.pages);
    for (int i = 0; i < nshave; i++)
        printf("| %zu bytes | %llu | %+.2f%% |\n", shave[i], (unsigned long long)what_if[i].pages,
               100.0 * ((double)what_if[i].pages - (double)now.pages) / (double)now.pages);
    return 0;
}
