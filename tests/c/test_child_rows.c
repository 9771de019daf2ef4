/*
 * test_child_rows — format 4 (docs/codec.md): every embedded child row carries
 * its byte length (format 3), then its ord as the difference from the row
 * before it in the group and its cells without a count; a catalog of format 2
 * or 3 is rewritten in format 4 by moraine_compact.
 *
 *  - mr_encode_child_row writes the length, the zigzag of the ord's
 *    difference and exactly the cells mr_encode_row writes (one, two and
 *    three length bytes; differences of any sign and size), mr_child_row_span
 *    finds its end and mr_decode_child_row reads the ord and cells back; a
 *    length running past the end is refused.
 *  - mr_upgrade_value turns a format-2 or format-3 value (built here by hand)
 *    into the bytes the format-4 encoder writes for the same rows; a format-4
 *    value is copied as it is; a damaged value, a child row whose column
 *    count is not its table's and a group of an unknown table are refused.
 *  - A stored child row whose length disagrees with its cells (the value's
 *    checksum recomputed, so only the length is wrong) is MORAINE_ECORRUPT
 *    for the plain child walk and for a projected read (also one filtered
 *    on its column_id; filtered past it, it is skipped by its length), and
 *    a violation for moraine_verify; the other rows still read.
 *  - Catalogs of format 2 and 3 (tests/fixtures/format2 and format3, written
 *    by the builds before formats 3 and 4) open, refuse reads and commits with
 *    the reason (nothing is written), and moraine_compact's copy exports the
 *    same NDJSON, byte for byte, as a fresh import of the same DuckLake
 *    catalog, verifies clean and takes a commit. A damaged value stops the copy: nothing at the
 *    destination, data.mdb as it was, and the message says what to do.
 *  - Child rows whose length takes 1, 2 and 3 bytes, written by commits to
 *    stored parents and by moraine_txn_insert_version, read the same through
 *    the plain walk and projected reads (every row, or filtered on
 *    column_id), verify clean and export and import again unchanged.
 */
#include "check.h"
#include "internal.h"

#include <dirent.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PI "ducklake_partition_info"
#define PC "ducklake_partition_column"
static const char *const PI_COLS[] = {"partition_id", "table_id", "begin_snapshot", "end_snapshot"};
static const char *const PC_COLS[] = {"partition_id", "table_id", "partition_key_index", "column_id", "transform"};

static char root[4096];

static moraine_value vint(int64_t i) { return (moraine_value){.type = MORAINE_INT, .i = i}; }
static moraine_value vstr(const char *s, size_t n) { return (moraine_value){.type = MORAINE_STR, .s = s, .len = n}; }
static moraine_value vnull(void) { return (moraine_value){.type = MORAINE_NULL}; }

/* ---- the codec ---------------------------------------------------------------- */

static char bigs[3][20000];

/* @n random cells into @v: ints, NULLs and strings of 0..20, 100..200 or
 * (rarely) 16,000..20,000 bytes, so a row's length takes 1, 2 or 3 bytes */
static size_t random_row(moraine_value *v)
{
    size_t n = 1 + check_below(8);
    for (size_t i = 0; i < n; i++) {
        switch (check_below(4)) {
        case 0: v[i] = vnull(); break;
        case 1: v[i] = vint((int64_t)check_rand()); break;
        default: {
            size_t len = check_below(3) ? check_below(21) : check_below(10) ? 100 + check_below(101) : 16000 + check_below(4001);
            v[i] = vstr(bigs[check_below(3)], len);
        }
        }
    }
    return n;
}

static void test_encode(void)
{
    for (int i = 0; i < 3; i++)
        for (size_t j = 0; j < sizeof bigs[i]; j++) bigs[i][j] = (char)check_rand();
    int bad = 0, lens[4] = {0};
    for (int round = 0; round < 3000; round++) {
        moraine_value v[8];
        size_t n = random_row(v);
        /* ords rising by small steps (the usual group), falling, and far apart */
        int64_t prev = round % 2 ? (int64_t)check_below(1u << 20) : 0, ord;
        switch (round % 4) {
        case 0: ord = prev + 1 + (int64_t)check_below(3); break;
        case 1: ord = prev - (int64_t)check_below(1000); break;
        case 2: ord = (int64_t)check_rand(); break;
        default: ord = round % 8 == 3 ? INT64_MAX : INT64_MIN + (int64_t)check_below(5); prev = -prev; break;
        }
        /* up to two parent-key columns (format 5), anywhere in the row: not
         * written, read back from the parent's key cells */
        mr_keymap km = {0};
        moraine_value pkey[MR_MAX_KEYCOLS], kept[8];
        for (size_t c = 0; c < n && km.n < 2; c++)
            if (check_below(3) == 0) {
                km.ccol[km.n] = (int)c;
                km.pcol[km.n] = (int)check_below(6);
                pkey[km.n++] = v[c];
            }
        size_t nkept = 0;
        for (size_t c = 0, j = 0; c < n; c++) {
            if (j < (size_t)km.n && (size_t)km.ccol[j] == c) j++;
            else kept[nkept++] = v[c];
        }
        mr_buf plain = {0}, child = {0};
        mr_buf_put(&child, "junk", 4); /* what the buffer held before stays */
        if (mr_encode_row(&plain, ord, kept, nkept) || mr_encode_child_row(&child, prev, ord, v, n, &km)) abort();
        const uint8_t *p = child.p + 4, *rend = NULL;
        int rc = mr_child_row_span(&p, child.p + child.len, &rend);
        size_t head = (size_t)(p - child.p) - 4;
        if (head < 4) lens[head]++;
        /* the row: the zigzag of the difference, then the cells as mr_encode_row writes them, but the key columns' */
        uint64_t diff = (uint64_t)ord - (uint64_t)prev, zz = diff << 1 ^ (uint64_t)((int64_t)diff >> 63);
        mr_buf want = {0};
        const uint8_t *cells = mr_row_cells(plain.p);
        if (mr_put_uvarint(&want, zz) || mr_buf_put(&want, cells, plain.len - (size_t)(cells - plain.p))) abort();
        if (rc || memcmp(child.p, "junk", 4) != 0 || rend != child.p + child.len || (size_t)(rend - p) != want.len ||
            memcmp(p, want.p, want.len) != 0)
            bad++;
        /* the row decodes within its span, to its end, to the same ord */
        moraine_value out[8];
        int64_t o;
        if (!rc && (mr_decode_child_row(&p, rend, "t", prev, &o, out, n, &km, pkey, NULL) || p != rend || o != ord)) bad++;
        for (size_t c = 0; !rc && c < n; c++)
            if (out[c].type != v[c].type || (v[c].type == MORAINE_INT && out[c].i != v[c].i) ||
                (v[c].type == MORAINE_STR && (out[c].len != v[c].len || memcmp(out[c].s, v[c].s, v[c].len) != 0)))
                bad++;
        mr_buf_free(&want);
        mr_buf_free(&plain);
        mr_buf_free(&child);
    }
    CHECK(bad == 0, "%d child rows not written as their length, their ord's difference and their cells but the parent-key ones", bad);
    CHECK(lens[1] > 0 && lens[2] > 0 && lens[3] > 0, "lengths of 1, 2 and 3 bytes all tried (%d, %d, %d)", lens[1], lens[2], lens[3]);

    /* a length running past the end, and a damaged length varint */
    static const uint8_t past[] = {0x05, 0x00, 0x01, 0x00, 0x00, 0x00};
    static const uint8_t cut[] = {0x85};
    const uint8_t *p, *rend;
    p = past;
    CHECK_RC(mr_child_row_span(&p, past + 5, &rend), MORAINE_ECORRUPT); /* four bytes after a length of 5 */
    CHECK(strstr(moraine_errmsg(), "runs past the end") != NULL, "message '%s' says why", moraine_errmsg());
    p = past;
    CHECK_RC(mr_child_row_span(&p, past + sizeof past, &rend), 0); /* exactly enough bytes */
    CHECK(p == past + 1 && rend == past + sizeof past, "a span of 5 bytes after its length");
    p = cut;
    CHECK_RC(mr_child_row_span(&p, cut + 1, &rend), MORAINE_ECORRUPT);
}

/* The ords of build_value's child rows: ords[g][r], or 3r + 1 when NULL. */
static int64_t (*build_ords)[4];

/* A value of format @version: the parent row @pv, then @ng groups of rel
 * ids @ids with @nr[g] rows each (rows[g][r], @ncols[g] cells, ords
 * build_ords[g][r] or 3r + 1), sealed under @key. Format 2 writes the rows
 * bare, format 3 each after its length, format 4 as mr_encode_child_row
 * does with every cell, format 5 as it does without the parent-key cells
 * (@kms[g]). */
static void build_value(mr_buf *b, int version, const uint8_t *key, size_t klen, const moraine_value *pv, size_t npv, size_t ng,
                        const uint64_t *ids, const size_t *nr, moraine_value rows[][4][8], const size_t *ncols, const mr_keymap *kms)
{
    b->len = 0;
    if (mr_value_begin(b) || mr_encode_row(b, 7, pv, npv)) abort();
    b->p[0] = (uint8_t)version;
    for (size_t g = 0; g < ng; g++) {
        mr_buf rb = {0}, row = {0};
        for (size_t r = 0; r < nr[g]; r++) {
            int64_t ord = build_ords ? build_ords[g][r] : (int64_t)(r * 3 + 1);
            int64_t prev = !r ? 0 : build_ords ? build_ords[g][r - 1] : ord - 3;
            row.len = 0;
            int rc = version >= 4 ? mr_encode_child_row(&rb, prev, ord, rows[g][r], ncols[g], version == 5 ? &kms[g] : NULL)
                                  : mr_encode_row(&row, ord, rows[g][r], ncols[g]);
            if (!rc && version == 3) rc = mr_put_uvarint(&rb, row.len);
            if (!rc && version < 4) rc = mr_buf_put(&rb, row.p, row.len);
            if (rc) abort();
        }
        if (mr_put_uvarint(b, ids[g]) || mr_put_uvarint(b, nr[g]) || mr_put_uvarint(b, rb.len) || mr_buf_put(b, rb.p, rb.len)) abort();
        mr_buf_free(&rb);
        mr_buf_free(&row);
    }
    mr_value_seal(b, 0, key, klen);
}

static moraine_db *new_catalog(const char *name, char *path, size_t n);

static void test_upgrade_value(void)
{
    /* a data file's three child tables, of 3, 5 and 8 columns, their
     * parent-key columns (data_file_id, table_id) in different places */
    static const char *const pcols[4] = {"data_file_id", "table_id", "begin_snapshot", "end_snapshot"};
    static const char *const kcols[3][8] = {{"c0", "table_id", "data_file_id"},
                                            {"data_file_id", "table_id", "partition_key_index", "partition_value", "x"},
                                            {"a", "b", "c", "data_file_id", "d", "table_id", "e", "f"}};
    static const char *const names[3] = {"ducklake_file_variant_stats", "ducklake_file_partition_value", "ducklake_file_column_stats"};
    const size_t ncols[3] = {3, 5, 8};
    uint64_t ids[3];
    mr_keymap kms[3];
    char path[4096];
    moraine_db *db = new_catalog("codec", path, sizeof path);
    moraine_txn *txn;
    CHECK_RC(moraine_txn_begin(db, 1, &txn), 0);
    CHECK_RC(moraine_txn_define(txn, "ducklake_data_file", 4, pcols), 0);
    for (int t = 0; t < 3; t++) CHECK_RC(moraine_txn_define(txn, names[t], ncols[t], kcols[t]), 0);
    CHECK_RC(moraine_txn_commit(txn), 0);
    for (int t = 0; t < 3; t++) {
        moraine_relation_info ri;
        CHECK_RC(moraine_relation(db, names[t], &ri), 0);
        ids[t] = ri.id;
        CHECK_RC(mr_child_keymap(mr_rel_by_name(db, names[t]), mr_rel_by_name(db, "ducklake_data_file"), &kms[t]), 0);
    }
    CHECK(kms[0].n == 2 && kms[0].ccol[0] == 1 && kms[0].pcol[0] == 1 && kms[0].ccol[1] == 2 && kms[0].pcol[1] == 0 && kms[2].ccol[0] == 3 &&
              kms[2].pcol[0] == 0 && kms[2].ccol[1] == 5 && kms[2].pcol[1] == 1,
          "the keymaps list the child's parent-key columns in its column order, each with the parent's column");
    static const uint8_t key[] = {'C', 0x14, 0x80, 0, 0, 0, 0, 0, 0, 0x03, 0x14, 0x80, 0, 0, 0, 0, 0, 0, 0x01};
    static moraine_value rows[3][4][8];
    int bad = 0;
    mr_buf v2 = {0}, v3 = {0}, v4 = {0}, v5 = {0}, up = {0};
    for (int round = 0; round < 400; round++) {
        moraine_value pv[8];
        size_t npv = random_row(pv), ng = check_below(4), nr[3];
        if (npv < 2) pv[npv++] = vnull(); /* the parent row has its two key cells */
        for (size_t g = 0; g < ng; g++) {
            nr[g] = check_below(5);
            for (size_t r = 0; r < nr[g]; r++) {
                moraine_value tmp[8];
                size_t n = random_row(tmp);
                for (size_t c = 0; c < ncols[g]; c++) rows[g][r][c] = c < n ? tmp[c] : vint((int64_t)c);
                for (int j = 0; j < kms[g].n; j++) rows[g][r][kms[g].ccol[j]] = pv[kms[g].pcol[j]]; /* the parent they are embedded in */
            }
        }
        /* half the rounds: ords that fall, jump and reach both ends of 64 bits
         * (an older store's ord is any uvarint; the difference wraps) */
        static int64_t ords[3][4];
        static const int64_t edge[] = {0, 1, INT64_MAX, INT64_MAX - 1, INT64_MIN, -1, (int64_t)1 << 40, 63, 64, 8191, 8192};
        for (size_t g = 0; g < 3; g++)
            for (size_t r = 0; r < 4; r++)
                ords[g][r] = check_below(2) ? edge[check_below(sizeof edge / sizeof edge[0])] : (int64_t)check_rand();
        build_ords = round % 2 ? ords : NULL;
        build_value(&v2, 2, key, sizeof key, pv, npv, ng, ids, nr, rows, ncols, kms);
        build_value(&v3, 3, key, sizeof key, pv, npv, ng, ids, nr, rows, ncols, kms);
        build_value(&v4, 4, key, sizeof key, pv, npv, ng, ids, nr, rows, ncols, kms);
        build_value(&v5, 5, key, sizeof key, pv, npv, ng, ids, nr, rows, ncols, kms);
        if (mr_upgrade_value(db, &up, v2.p, v2.len, key, sizeof key) || up.len != v5.len || memcmp(up.p, v5.p, v5.len) != 0) bad++;
        if (mr_upgrade_value(db, &up, v3.p, v3.len, key, sizeof key) || up.len != v5.len || memcmp(up.p, v5.p, v5.len) != 0) bad++;
        if (mr_upgrade_value(db, &up, v4.p, v4.len, key, sizeof key) || up.len != v5.len || memcmp(up.p, v5.p, v5.len) != 0) bad++;
    const uint8_t *q = up.p + MR_HEADER_LEN, *qend = up.p + up.len;
        moraine_value tmp[8];
        int64_t o;
        size_t tn;
        if (mr_decode_row(&q, qend, &o, tmp, 8, &tn)) bad++;
        for (size_t g = 0; g < ng && !bad; g++) {
            uint64_t id, nrows;
            const uint8_t *gend, *rend;
            int64_t prev = 0;
            if (mr_group_head(&q, qend, &id, &nrows, &gend) || id != ids[g] || nrows != nr[g]) bad++;
            for (size_t r = 0; r < nr[g] && !bad; r++) {
                int64_t want = build_ords ? ords[g][r] : (int64_t)(r * 3 + 1);
                moraine_value pkey[MR_MAX_KEYCOLS];
                for (int j = 0; j < kms[g].n; j++) pkey[j] = pv[kms[g].pcol[j]];
                if (mr_child_row_span(&q, gend, &rend) || mr_decode_child_row(&q, rend, "t", prev, &o, tmp, ncols[g], &kms[g], pkey, NULL) ||
                    o != want)
                    bad++;
                for (size_t c = 0; c < ncols[g] && !bad; c++)
                    if (tmp[c].type != rows[g][r][c].type || (tmp[c].type == MORAINE_INT && tmp[c].i != rows[g][r][c].i) ||
                        (tmp[c].type == MORAINE_STR && (tmp[c].len != rows[g][r][c].len || memcmp(tmp[c].s, rows[g][r][c].s, tmp[c].len) != 0)))
                        bad++;
                prev = o;
            }
        }
        /* format 5 is copied as it is */
        if (mr_upgrade_value(db, &up, v5.p, v5.len, key, sizeof key) || up.len != v5.len || memcmp(up.p, v5.p, v5.len) != 0) bad++;
        /* under another key the checksum fails */
        if (mr_upgrade_value(db, &up, v2.p, v2.len, key, sizeof key - 1) != MORAINE_ECORRUPT) bad++;
    }
    CHECK(bad == 0, "%d format-2, -3 or -4 values not rewritten as the format-5 encoder writes them", bad);
    build_ords = NULL;

    /* damaged older values: a flipped bit, a group with a stray byte (the
     * checksum recomputed), a format-3 row whose length says more than it
     * takes, a row with a column more than its table, a group of no table, a
     * version byte of no format this build knows */
    moraine_value pv[2] = {vnull(), vstr("year", 4)}; /* data_file_id, table_id: as the child row below names them */
    static moraine_value one[3][4][8];
    one[0][0][0] = vint(9);
    one[0][0][1] = vstr("year", 4);
    one[0][0][2] = vnull();
    size_t nr[1] = {1};
    build_value(&v2, 2, key, sizeof key, pv, 2, 1, ids, nr, one, ncols, kms);
    v2.p[v2.len - 1] ^= 0x01;
    CHECK_RC(mr_upgrade_value(db, &up, v2.p, v2.len, key, sizeof key), MORAINE_ECORRUPT);
    CHECK(strstr(moraine_errmsg(), "checksum") != NULL, "a flipped bit: '%s'", moraine_errmsg());
    build_value(&v2, 2, key, sizeof key, pv, 2, 1, ids, nr, one, ncols, kms);
    size_t nbytes_at = v2.len - 12; /* the group: id, nrows, nbytes, then a row of 11 bytes: ord, ncols, INT 9, STR 'year', NULL */
    CHECK(v2.p[nbytes_at] == 11 && v2.p[nbytes_at - 1] == 1, "the hand-built group is where expected");
    v2.p[nbytes_at] = 12;
    mr_buf_byte(&v2, 0x00);
    mr_value_seal(&v2, 0, key, sizeof key);
    CHECK_RC(mr_upgrade_value(db, &up, v2.p, v2.len, key, sizeof key), MORAINE_ECORRUPT);
    CHECK(strstr(moraine_errmsg(), "stray") != NULL, "a stray byte: '%s'", moraine_errmsg());
    build_value(&v3, 3, key, sizeof key, pv, 2, 1, ids, nr, one, ncols, kms);
    CHECK(v3.p[v3.len - 12] == 11 && v3.p[v3.len - 13] == 12, "the hand-built format-3 row is where expected");
    v3.p[v3.len - 13] = 13; /* the group's nbytes one more, the row's length one more, a byte after it */
    v3.p[v3.len - 12] = 12;
    mr_buf_byte(&v3, 0x00);
    mr_value_seal(&v3, 0, key, sizeof key);
    CHECK_RC(mr_upgrade_value(db, &up, v3.p, v3.len, key, sizeof key), MORAINE_ECORRUPT);
    CHECK(strstr(moraine_errmsg(), "before its length says") != NULL, "a format-3 length past the row: '%s'", moraine_errmsg());
    one[0][0][3] = vint(1);
    for (int version = 3; version >= 2; version--) /* a column too many, then too few, for a table of 3 */
        for (size_t nc = 4; nc >= 2; nc -= 2) {
            const size_t count[1] = {nc};
            char says[40];
            snprintf(says, sizeof says, "has %zu columns, expected 3", nc);
            build_value(&v3, version, key, sizeof key, pv, 2, 1, ids, nr, one, count, kms);
            CHECK_RC(mr_upgrade_value(db, &up, v3.p, v3.len, key, sizeof key), MORAINE_ECORRUPT);
            CHECK(strstr(moraine_errmsg(), says) != NULL, "format %d, %zu columns: '%s'", version, nc, moraine_errmsg());
        }
    const uint64_t nowhere[1] = {ids[2] + 1000};
    build_value(&v3, 3, key, sizeof key, pv, 2, 1, nowhere, nr, one, ncols, kms);
    CHECK_RC(mr_upgrade_value(db, &up, v3.p, v3.len, key, sizeof key), MORAINE_ECORRUPT);
    CHECK(strstr(moraine_errmsg(), "unknown table id") != NULL, "a group of no table: '%s'", moraine_errmsg());
    build_value(&v2, 2, key, sizeof key, pv, 2, 1, ids, nr, one, ncols, kms);
    v2.p[0] = 1;
    CHECK_RC(mr_upgrade_value(db, &up, v2.p, v2.len, key, sizeof key), MORAINE_ECORRUPT);
    v2.p[0] = 6;
    CHECK_RC(mr_upgrade_value(db, &up, v2.p, v2.len, key, sizeof key), MORAINE_ECORRUPT);
    CHECK(strstr(moraine_errmsg(), "version 6") != NULL, "an unknown version: '%s'", moraine_errmsg());
    /* a child row naming another parent than the one it is stored in (its
     * table_id cell 'yeas', the parent's 'year'): format 5 would read it back
     * as the parent's, so the rewrite refuses it, in every older format */
    one[0][0][1] = vstr("yeas", 4);
    for (int version = 2; version <= 4; version++) {
        build_value(&v3, version, key, sizeof key, pv, 2, 1, ids, nr, one, ncols, kms);
        CHECK_RC(mr_upgrade_value(db, &up, v3.p, v3.len, key, sizeof key), MORAINE_ECORRUPT);
        CHECK(strstr(moraine_errmsg(), "names another parent in column 'table_id'") != NULL, "format %d, another parent: '%s'", version,
              moraine_errmsg());
    }
    /* a group of a table that is not a child of the parent's */
    const uint64_t parent_id[1] = {mr_rel_by_name(db, "ducklake_data_file")->info.id};
    one[0][0][1] = vstr("year", 4);
    build_value(&v3, 3, key, sizeof key, pv, 2, 1, parent_id, nr, one, ncols, kms);
    CHECK_RC(mr_upgrade_value(db, &up, v3.p, v3.len, key, sizeof key), MORAINE_ECORRUPT);
    CHECK(strstr(moraine_errmsg(), "not their parent table") != NULL, "a group of no child table: '%s'", moraine_errmsg());
    mr_buf_free(&v2);
    mr_buf_free(&v3);
    mr_buf_free(&v4);
    mr_buf_free(&v5);
    mr_buf_free(&up);
    moraine_close(db);
}

/* The worked example of docs/codec.md, byte for byte. */
static void test_worked_example(void)
{
    static const uint8_t want[] = {0x05, 0x9b, 0xe5, 0xbf, 0x6e, 0x00, 0x04, 0x01, 0x06, 0x01, 0x02, 0x01, 0x08, 0x00, 0x02,
                                   0x01, 0x0c, 0x0b, 0x00, 0x01, 0x00, 0x01, 0x04, 0x02, 0x04, 'y',  'e',  'a',  'r'};
    uint8_t key[28] = {'C'};
    for (int e = 0; e < 3; e++) { /* C(1, 1, 3): each a key int, 0x14 then 8 bytes big-endian with the sign bit flipped */
        key[1 + 9 * e] = 0x14;
        key[2 + 9 * e] = 0x80;
        key[9 + 9 * e] = e == 2 ? 3 : 1;
    }
    moraine_value pi[4] = {vint(3), vint(1), vint(4), vnull()};
    moraine_value pc[5] = {vint(3), vint(1), vint(0), vint(2), vstr("year", 4)};
    mr_buf rows = {0}, v = {0};
    const mr_keymap km = {2, {0, 1}, {0, 1}}; /* partition_id and table_id: the parent's */
    if (mr_encode_child_row(&rows, 0, 0, pc, 5, &km) || mr_value_begin(&v) || mr_encode_row(&v, 0, pi, 4) || mr_put_uvarint(&v, 2) ||
        mr_put_uvarint(&v, 1) || mr_put_uvarint(&v, rows.len) || mr_buf_put(&v, rows.p, rows.len))
        abort();
    mr_value_seal(&v, 0, key, sizeof key);
    CHECK(v.len == sizeof want && memcmp(v.p, want, sizeof want) == 0, "the worked example of docs/codec.md (%zu bytes)", v.len);
    mr_buf_free(&rows);
    mr_buf_free(&v);
}

/* Two child tables of one parent listing their parent-key columns in
 * different orders (stats: table_id, data_file_id; partition values:
 * data_file_id, table_id), both asking for them: a group read in one call
 * (moraine_cursor_child_rows) between two rows of the call-a-row walk
 * (moraine_cursor_child) leaves the walk's parent-key values as they were
 * (they were swapped when both shared one array). */
static void test_mixed_walks_keys(void)
{
    static const char *const df[4] = {"data_file_id", "table_id", "begin_snapshot", "end_snapshot"};
    static const char *const st[3] = {"table_id", "data_file_id", "column_id"};
    static const char *const pv[3] = {"data_file_id", "table_id", "partition_value"};
    char path[4096];
    moraine_db *db = new_catalog("mixed-keys", path, sizeof path);
    moraine_txn *txn;
    CHECK_RC(moraine_txn_begin(db, 1, &txn), 0);
    CHECK_RC(moraine_txn_define(txn, "ducklake_data_file", 4, df), 0);
    CHECK_RC(moraine_txn_define(txn, "ducklake_file_column_stats", 3, st), 0);
    CHECK_RC(moraine_txn_define(txn, "ducklake_file_partition_value", 3, pv), 0);
    moraine_value f[4] = {vint(10), vint(1), vint(1), vnull()};
    moraine_value s1[3] = {vint(1), vint(10), vint(1)}, s2[3] = {vint(1), vint(10), vint(2)};
    moraine_value p1[3] = {vint(10), vint(1), vstr("x", 1)};
    CHECK_RC(moraine_txn_insert(txn, "ducklake_data_file", f, 4, -1), 0);
    CHECK_RC(moraine_txn_insert(txn, "ducklake_file_column_stats", s1, 3, -1), 0);
    CHECK_RC(moraine_txn_insert(txn, "ducklake_file_column_stats", s2, 3, -1), 0);
    CHECK_RC(moraine_txn_insert(txn, "ducklake_file_partition_value", p1, 3, -1), 0);
    CHECK_RC(moraine_txn_commit(txn), 0);
    static const char *const stc[3] = {"table_id", "data_file_id", "column_id"};
    static const char *const pvc[2] = {"table_id", "data_file_id"};
    for (int filtered = 0; filtered < 2; filtered++) {
        static const int64_t tables[1] = {1};
        moraine_child_projection kids[2] = {{"ducklake_file_column_stats", stc, 3, filtered ? "table_id" : NULL, tables, 1},
                                            {"ducklake_file_partition_value", pvc, 2, NULL, NULL, 0}};
        moraine_projection proj = {NULL, 0, kids, 2};
        moraine_read *rd;
        moraine_cursor *c;
        moraine_row row, kid;
        size_t which, n = 0;
        const moraine_value *kv;
        CHECK_RC(moraine_read_begin(db, &rd), 0);
        CHECK_RC(moraine_scan_project(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, 1, &proj, &c), 0);
        CHECK_RC(moraine_cursor_next(c, &row), 1);
        int seen = 0;
        for (int r = 0; r < 2; r++) {
            CHECK_RC(moraine_cursor_child(c, &which, &kid), 1);
            CHECK(which == 0 && kid.vals[0].type == MORAINE_INT && kid.vals[0].i == 1 && kid.vals[1].type == MORAINE_INT &&
                      kid.vals[1].i == 10 && kid.vals[2].i == r + 1,
                  "stats row %d (filtered %d): table_id %lld, data_file_id %lld, column_id %lld", r, filtered, (long long)kid.vals[0].i,
                  (long long)kid.vals[1].i, (long long)kid.vals[2].i);
            seen++;
            if (r == 0) { /* the partition values in one call, between the two stats rows */
                CHECK_RC(moraine_cursor_child_rows(c, 1, &kv, NULL, &n), 0);
                CHECK(n == 1 && kv[0].i == 1 && kv[1].i == 10, "partition values: %zu rows, table_id %lld, data_file_id %lld", n,
                      (long long)kv[0].i, (long long)kv[1].i);
            }
        }
        CHECK_INT(seen, 2);
        moraine_read_end(rd);
    }
    moraine_close(db);
}

/* ---- a stored child row whose length is wrong ---------------------------------- */

static void path_of(char *out, size_t n, const char *name)
{
    if (snprintf(out, n, "%s/%s", root, name) >= (int)n) abort();
}

/* Opens the LMDB environment of the catalog at @path itself and begins a
 * write transaction on its database; 0 or an LMDB error (nothing open). */
static int raw_begin(const char *path, MDB_env **env, MDB_txn **t, MDB_dbi *dbi)
{
    int rc = mdb_env_create(env);
    if (rc) return rc;
    if (!(rc = mdb_env_set_mapsize(*env, 1ULL << 30)) && !(rc = mdb_env_open(*env, path, 0, 0664)) && !(rc = mdb_txn_begin(*env, NULL, 0, t)) &&
        (rc = mdb_dbi_open(*t, NULL, 0, dbi)))
        mdb_txn_abort(*t);
    if (rc) mdb_env_close(*env);
    return rc;
}

/* A new, empty catalog in directory @name of the test's folder (its path in
 * @path), opened to write. */
static moraine_db *new_catalog(const char *name, char *path, size_t n)
{
    path_of(path, n, name);
    moraine_options o = {.no_sync = 1, .create = 1};
    moraine_db *db = NULL;
    CHECK_RC(moraine_open(path, &o, &db), 0);
    return db;
}

/* Replaces the value of the first current row of relation @rel_id through
 * LMDB itself with what @damage makes of it (sealed again under its key). */
static int poke(const char *path, uint32_t rel_id, void (*damage)(mr_buf *v))
{
    mr_buf prefix = {0}; /* docs/keyspace.md: the current subspace, then the relation id as a key int */
    if (mr_buf_byte(&prefix, MR_SUB_CURRENT) || mr_key_int(&prefix, rel_id)) abort();
    MDB_env *env;
    MDB_txn *t;
    MDB_dbi dbi;
    MDB_cursor *c;
    int rc = raw_begin(path, &env, &t, &dbi);
    if (rc) {
        mr_buf_free(&prefix);
        return rc;
    }
    rc = mdb_cursor_open(t, dbi, &c);
    MDB_val k = {prefix.len, prefix.p}, v;
    if (!rc) {
        rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
        if (!rc && (k.mv_size < prefix.len || memcmp(k.mv_data, prefix.p, prefix.len) != 0)) rc = -1;
        mdb_cursor_close(c);
    }
    mr_buf_free(&prefix);
    if (!rc) {
        mr_buf b = {0}, kb = {0};
        mr_buf_put(&b, v.mv_data, v.mv_size);
        mr_buf_put(&kb, k.mv_data, k.mv_size);
        damage(&b);
        mr_value_seal(&b, 0, kb.p, kb.len);
        MDB_val nk = {kb.len, kb.p}, nv = {b.len, b.p};
        rc = mdb_put(t, dbi, &nk, &nv, 0);
        mr_buf_free(&b);
        mr_buf_free(&kb);
    }
    if (rc) mdb_txn_abort(t);
    else rc = mdb_txn_commit(t);
    mdb_env_close(env);
    return rc;
}

/* where the first child row's length byte is in a partition_info value
 * (header, ord, 4 cells of one-byte INTs or NULL, then the group head) */
static size_t first_len_at(const mr_buf *v, size_t *nbytes_at)
{
    const uint8_t *p = v->p + MR_HEADER_LEN, *end = v->p + v->len;
    moraine_value vals[8];
    int64_t ord;
    size_t n;
    uint64_t id, nrows, nbytes;
    if (mr_decode_row(&p, end, &ord, vals, 8, &n) || mr_get_uvarint(&p, end, &id) || mr_get_uvarint(&p, end, &nrows)) abort();
    *nbytes_at = (size_t)(p - v->p);
    if (mr_get_uvarint(&p, end, &nbytes) || nbytes >= 0x80) abort();
    return (size_t)(p - v->p);
}

/* the first child row says one byte more than it takes: a 0x00 after it */
static void longer(mr_buf *v)
{
    size_t nb, at = first_len_at(v, &nb);
    size_t rowlen = v->p[at];
    v->p[nb]++;
    v->p[at]++;
    mr_buf_byte(v, 0);
    memmove(v->p + at + 1 + rowlen + 1, v->p + at + 1 + rowlen, v->len - 1 - (at + 1 + rowlen));
    v->p[at + 1 + rowlen] = 0x00;
}

/* the group says it holds one row more than it does (its nbytes right) */
static void more_rows(mr_buf *v)
{
    size_t nb;
    first_len_at(v, &nb);
    v->p[nb - 1]++; /* nrows, the byte before nbytes */
}

/* the first child row says one byte less than it takes */
static void shorter(mr_buf *v)
{
    size_t nb, at = first_len_at(v, &nb);
    v->p[at]--;
}

/* the first child row without its last cell ('year', 6 bytes), its length
 * and its group's nbytes 6 less: a cell too few, the lengths consistent */
static void fewer_cells(mr_buf *v)
{
    size_t nb, at = first_len_at(v, &nb);
    size_t rowlen = v->p[at], cut = at + 1 + rowlen - 6;
    if (memcmp(v->p + cut, "\x02\x04year", 6) != 0) abort();
    v->p[nb] = (uint8_t)(v->p[nb] - 6);
    v->p[at] = (uint8_t)(rowlen - 6);
    memmove(v->p + cut, v->p + cut + 6, v->len - cut - 6);
    v->len -= 6;
}

/* the first child row's dord (0x00) as 0x80 0x00, a varint not in its
 * shortest form: its length and its group's nbytes one more */
static void overlong_dord(mr_buf *v)
{
    size_t nb, at = first_len_at(v, &nb);
    if (v->p[at + 1] != 0x00) abort();
    v->p[nb]++;
    v->p[at]++;
    mr_buf_byte(v, 0);
    memmove(v->p + at + 2, v->p + at + 1, v->len - 1 - (at + 1));
    v->p[at + 1] = 0x80;
}

/* the first child row's dord as ten bytes whose last one overflows 64 bits */
static void huge_dord(mr_buf *v)
{
    size_t nb, at = first_len_at(v, &nb);
    if (v->p[at + 1] != 0x00) abort();
    v->p[nb] = (uint8_t)(v->p[nb] + 9);
    v->p[at] = (uint8_t)(v->p[at] + 9);
    for (int i = 0; i < 9; i++) mr_buf_byte(v, 0);
    memmove(v->p + at + 11, v->p + at + 2, v->len - 9 - (at + 2));
    memset(v->p + at + 1, 0xff, 9);
    v->p[at + 10] = 0x02;
}

/* the first child row's dord (0x00: ord 0) as 0x01 (ord -1) or as 0x7e
 * (ord 63, past the table's counter): valid varints, a wrong ord */
static void dord_minus_one(mr_buf *v)
{
    size_t nb, at = first_len_at(v, &nb);
    if (v->p[at + 1] != 0x00) abort();
    v->p[at + 1] = 0x01;
}
static void dord_far(mr_buf *v)
{
    size_t nb, at = first_len_at(v, &nb);
    if (v->p[at + 1] != 0x00) abort();
    v->p[at + 1] = 0x7e;
}

/* The value as it was before the damage (keep), put back (restore). */
static mr_buf kept;
static void keep(mr_buf *v)
{
    kept.len = 0;
    mr_buf_put(&kept, v->p, v->len);
}
static void restore(mr_buf *v)
{
    v->len = 0;
    mr_buf_put(v, kept.p, kept.len);
}

/* The number of child rows read from every row of partition_info (plain
 * walk, or projected with every child column; with @match, @nmatch, only
 * the rows of those column_ids); else the error, its message in @msg */
static int walk_match(moraine_db *db, int projected, const int64_t *match, size_t nmatch, char *msg, size_t n)
{
    moraine_read *rd;
    int rc = moraine_read_begin(db, &rd);
    if (rc) return rc;
    moraine_cursor *c;
    moraine_child_projection kp = {PC, NULL, 0, match ? "column_id" : NULL, match, nmatch};
    moraine_projection p = {NULL, 0, &kp, 1};
    rc = projected ? moraine_scan_project(rd, PI, MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &p, &c)
                   : moraine_scan_open(rd, PI, MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c);
    moraine_row row, kid;
    int kids = 0;
    while (!rc && (rc = moraine_cursor_next(c, &row)) == 1) {
        int kr;
        size_t which;
        if (projected == 2) { /* a group in one call */
            const moraine_value *kv;
            size_t nr;
            if ((kr = moraine_cursor_child_rows(c, 0, &kv, NULL, &nr)) == 0) kids += (int)nr;
        } else if (projected) {
            while ((kr = moraine_cursor_child(c, &which, &kid)) == 1) kids++;
        } else {
            moraine_children it;
            moraine_row_children(rd, &row, &it);
            while ((kr = moraine_children_next(&it, &kid)) == 1) kids++;
            moraine_children_free(&it);
        }
        if (kr < 0) rc = kr;
        else rc = 0;
    }
    if (rc < 0) snprintf(msg, n, "%s", moraine_errmsg());
    else rc = kids;
    if (c) moraine_cursor_close(c);
    moraine_read_end(rd);
    return rc;
}

/* walk_match without a filter */
static int walk(moraine_db *db, int projected, char *msg, size_t n) { return walk_match(db, projected, NULL, 0, msg, n); }

static void count_violation(void *ud, const char *key, const char *problem)
{
    (void)key;
    if (strstr(problem, PC)) ++*(int *)ud;
}

static void fewer_rows(mr_buf *v);

/* the relation id group_of_parent writes into the group's head */
static uint32_t damage_rel;

/* the group's relation id made damage_rel (the partition spec's own: a
 * relation that is not a child table of it), the checksum computed again */
static void group_of_parent(mr_buf *v)
{
    size_t nb;
    first_len_at(v, &nb);
    if (damage_rel >= 0x80) abort();
    v->p[nb - 2] = (uint8_t)damage_rel; /* rel_id, nrows, nbytes: one byte each */
}

/* A group whose relation is not a child table of the row's (its rows could
 * not be given their parent-key cells, store format 5): the plain walk
 * refuses it; a projected read that did not ask for it skips it by its
 * length, as any group it did not ask for; verify reports it. */
static void test_group_of_no_child(void)
{
    char path[4096];
    moraine_db *db = new_catalog("no-child", path, sizeof path);
    moraine_txn *txn;
    CHECK_RC(moraine_txn_begin(db, 1, &txn), 0);
    CHECK_RC(moraine_txn_define(txn, PI, 4, PI_COLS), 0);
    CHECK_RC(moraine_txn_define(txn, PC, 5, PC_COLS), 0);
    moraine_value pi[4] = {vint(3), vint(1), vint(1), vnull()};
    moraine_value pc[5] = {vint(3), vint(1), vint(0), vint(2), vstr("year", 4)};
    CHECK_RC(moraine_txn_insert(txn, PI, pi, 4, -1), 0);
    CHECK_RC(moraine_txn_insert(txn, PC, pc, 5, -1), 0);
    CHECK_RC(moraine_txn_commit(txn), 0);
    moraine_relation_info ri;
    CHECK_RC(moraine_relation(db, PI, &ri), 0);
    moraine_close(db);
    damage_rel = ri.id;
    CHECK_RC(poke(path, ri.id, group_of_parent), 0);
    CHECK_RC(moraine_open(path, NULL, &db), 0);
    char msg[1024];
    CHECK_RC(walk(db, 0, msg, sizeof msg), MORAINE_ECORRUPT);
    CHECK(strstr(msg, "not their parent table") != NULL, "the plain walk: '%s'", msg);
    CHECK_INT(walk(db, 1, msg, sizeof msg), 0);
    CHECK_INT(walk(db, 2, msg, sizeof msg), 0);
    CHECK(moraine_verify(db, NULL, NULL, NULL, NULL) >= 1, "verify reports the group");
    moraine_close(db);
}


static void test_damaged_length(void)
{
    char path[4096];
    moraine_db *db = new_catalog("lengths", path, sizeof path);
    moraine_txn *txn;
    CHECK_RC(moraine_txn_begin(db, 1, &txn), 0);
    CHECK_RC(moraine_txn_define(txn, PI, 4, PI_COLS), 0);
    CHECK_RC(moraine_txn_define(txn, PC, 5, PC_COLS), 0);
    moraine_value pi[4] = {vint(3), vint(1), vint(1), vnull()};
    moraine_value pc1[5] = {vint(3), vint(1), vint(0), vint(2), vstr("year", 4)};
    moraine_value pc2[5] = {vint(3), vint(1), vint(1), vint(4), vstr("month", 5)};
    CHECK_RC(moraine_txn_insert(txn, PI, pi, 4, -1), 0);
    CHECK_RC(moraine_txn_insert(txn, PC, pc1, 5, -1), 0);
    CHECK_RC(moraine_txn_insert(txn, PC, pc2, 5, -1), 0);
    CHECK_RC(moraine_txn_commit(txn), 0);
    char msg[1024];
    CHECK_INT(walk(db, 0, msg, sizeof msg), 2);
    CHECK_INT(walk(db, 1, msg, sizeof msg), 2);
    moraine_relation_info ri;
    CHECK_RC(moraine_relation(db, PI, &ri), 0);
    uint32_t id = ri.id;
    moraine_close(db);

    static const struct {
        const char *what;
        void (*damage)(mr_buf *);
        const char *says;
    } cases[] = {{"a length one byte longer than the row (a cell too many)", longer, "its length says"},
                 {"a length one byte shorter", shorter, NULL},
                 {"a cell too few, the lengths agreeing", fewer_cells, "truncated at column 2"},
                 {"a dord not in its shortest form", overlong_dord, "shortest form"},
                 {"a dord of ten bytes overflowing 64 bits", huge_dord, "overflows"}};
    CHECK_RC(poke(path, id, keep), 0);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK_RC(poke(path, id, cases[i].damage), 0);
        CHECK_RC(moraine_open(path, NULL, &db), 0);
        for (int proj = 0; proj < 3; proj++) {
            int rc = walk(db, proj, msg, sizeof msg);
            static const char *const how[] = {"plain", "projected", "projected, moraine_cursor_child_rows"};
            CHECK(rc == MORAINE_ECORRUPT, "%s, %s walk: %d (%s)", cases[i].what, how[proj], rc, msg);
            if (cases[i].says) CHECK(strstr(msg, cases[i].says) != NULL, "%s: message '%s'", cases[i].what, msg);
        }
        /* filtered on column_id: the damaged row (column_id 2) asked for is
         * refused; not asked for, it is skipped by its length unread (the
         * value's checksum vouches for the bytes: docs/codec.md, Projected
         * reads), so only verify and the reads that decode it see it */
        static const int64_t damaged_col[] = {2}, other_col[] = {4};
        int rc;
        for (int proj = 1; proj < 3; proj++) {
            rc = walk_match(db, proj, damaged_col, 1, msg, sizeof msg);
            CHECK(rc == MORAINE_ECORRUPT, "%s, filtered on its column_id (%d): %d (%s)", cases[i].what, proj, rc, msg);
            if (cases[i].damage == longer || cases[i].damage == fewer_cells) CHECK_INT(walk_match(db, proj, other_col, 1, msg, sizeof msg), 1);
            if (cases[i].damage == overlong_dord || cases[i].damage == huge_dord) {
                rc = walk_match(db, proj, other_col, 1, msg, sizeof msg);
                CHECK(rc == MORAINE_ECORRUPT, "%s, filtered past it (%d): %d (%s)", cases[i].what, proj, rc, msg);
            }
        }
        if (cases[i].damage == overlong_dord || cases[i].damage == huge_dord) { /* the ord of every later row hangs on it */
            /* a commit adding a row to the group needs the last row's ord: refused, nothing written */
            moraine_txn *tx;
            moraine_value pc3[5] = {vint(3), vint(1), vint(2), vint(5), vnull()};
            CHECK_RC(moraine_txn_begin(db, 2, &tx), 0);
            rc = moraine_txn_insert(tx, PC, pc3, 5, -1);
            if (rc == 0) rc = moraine_txn_partial(tx, 1);
            if (rc == 0) rc = moraine_txn_commit(tx);
            else moraine_txn_abort(tx);
            CHECK(rc == MORAINE_ECORRUPT, "%s: a commit adding a row to the group: %d (%s)", cases[i].what, rc, moraine_errmsg());
        }
        int found = 0;
        int nv = moraine_verify(db, count_violation, &found, NULL, NULL);
        CHECK(nv >= 1 && found >= 1, "%s: verify found %d violations, %d about %s", cases[i].what, nv, found, PC);
        moraine_close(db);
        /* put the sound value back (the damage undone by a fresh commit is not possible: rewrite it whole) */
        CHECK_RC(poke(path, id, restore), 0);
        CHECK_RC(moraine_open(path, NULL, &db), 0);
        CHECK_INT(walk(db, 0, msg, sizeof msg), 2);
        CHECK_INT(moraine_verify(db, NULL, NULL, NULL, NULL), 0);
        moraine_close(db);
    }
    /* the group says one row fewer than it holds (its nbytes right, the
     * checksum computed again): the second row's bytes lie after the last row
     * the group counts. Every walk refuses them, none reads them as the next
     * group's head nor passes over them */
    CHECK_RC(poke(path, id, fewer_rows), 0);
    CHECK_RC(moraine_open(path, NULL, &db), 0);
    for (int proj = 0; proj < 3; proj++) {
        int rc = walk(db, proj, msg, sizeof msg);
        CHECK(rc == MORAINE_ECORRUPT && strstr(msg, "bytes after its") != NULL, "a group of 2 rows saying 1, walk %d: %d (%s)", proj, rc, msg);
    }
    moraine_close(db);
    CHECK_RC(poke(path, id, restore), 0);
    /* a dord that is a sound varint but gives a position no commit gave
     * (below 0, or at or past the table's ord counter): the reads cannot
     * tell (the checksum was computed again), verify reports it */
    void (*wrong_ord[2])(mr_buf *) = {dord_minus_one, dord_far};
    for (int i = 0; i < 2; i++) {
        CHECK_RC(poke(path, id, wrong_ord[i]), 0);
        CHECK_RC(moraine_open(path, NULL, &db), 0);
        CHECK_INT(walk(db, 0, msg, sizeof msg), 2);
        int found = 0;
        int nv = moraine_verify(db, count_violation, &found, NULL, NULL);
        CHECK(nv == (i ? 2 : 1) && found == nv, "a first ord of %s (the second row follows it): verify found %d violations, %d about %s", i ? "63" : "-1", nv, found, PC);
        moraine_close(db);
        CHECK_RC(poke(path, id, restore), 0);
    }
    mr_buf_free(&kept);
}

/* counts the violations about stray bytes after a group's rows */
static void count_stray(void *ud, const char *key, const char *problem)
{
    (void)key;
    if (strstr(problem, "stray bytes")) ++*(int *)ud;
}

/* the group says it holds 127 rows (a one-byte varint) */
static void many_rows(mr_buf *v)
{
    size_t nb;
    first_len_at(v, &nb);
    v->p[nb - 1] = 0x7F;
}

/* the group says it holds one row fewer than it does */
static void fewer_rows(mr_buf *v)
{
    size_t nb;
    first_len_at(v, &nb);
    v->p[nb - 1]--;
}

/* A data file with a group of partition values and a group of stats: the
 * first group claiming a row more than its bytes hold must not have the
 * second group's head read as a row (the plain walk holds rows within their
 * group, as the projected read does). */
static void test_rows_within_group(void)
{
    char path[4096];
    moraine_db *db = new_catalog("groups", path, sizeof path);
    moraine_txn *txn;
    CHECK_RC(moraine_txn_begin(db, 1, &txn), 0);
    static const char *const DF[] = {"data_file_id", "table_id", "begin_snapshot", "end_snapshot", "path"};
    static const char *const PV[] = {"data_file_id", "table_id", "partition_key_index", "partition_value"};
    static const char *const ST[] = {"data_file_id", "table_id", "column_id", "min_value", "max_value"};
    CHECK_RC(moraine_txn_define(txn, "ducklake_data_file", 5, DF), 0);
    CHECK_RC(moraine_txn_define(txn, "ducklake_file_partition_value", 4, PV), 0);
    CHECK_RC(moraine_txn_define(txn, "ducklake_file_column_stats", 5, ST), 0);
    moraine_value df[5] = {vint(7), vint(1), vint(1), vnull(), vstr("a.parquet", 9)};
    moraine_value pv[4] = {vint(7), vint(1), vint(0), vstr("2024", 4)};
    moraine_value st[5] = {vint(7), vint(1), vint(3), vstr("1", 1), vstr("9", 1)};
    CHECK_RC(moraine_txn_insert(txn, "ducklake_data_file", df, 5, -1), 0);
    CHECK_RC(moraine_txn_insert(txn, "ducklake_file_partition_value", pv, 4, -1), 0);
    CHECK_RC(moraine_txn_insert(txn, "ducklake_file_column_stats", st, 5, -1), 0);
    CHECK_RC(moraine_txn_commit(txn), 0);
    moraine_relation_info ri;
    CHECK_RC(moraine_relation(db, "ducklake_data_file", &ri), 0);
    uint32_t id = ri.id;
    moraine_close(db);
    CHECK_RC(poke(path, id, more_rows), 0);
    CHECK_RC(moraine_open(path, NULL, &db), 0);
    if (!db) return;
    moraine_read *rd;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    moraine_cursor *c;
    moraine_row row, kid;
    CHECK_RC(moraine_scan_open(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c), 0);
    CHECK_RC(moraine_cursor_next(c, &row), 1);
    moraine_children it;
    moraine_row_children(rd, &row, &it);
    CHECK_RC(moraine_children_next(&it, &kid), 1);
    CHECK(strcmp(kid.rel->name, "ducklake_file_partition_value") == 0, "the partition value first");
    CHECK_RC(moraine_children_next(&it, &kid), MORAINE_ECORRUPT);
    CHECK(strstr(moraine_errmsg(), "ends before") != NULL, "the second row of the group is refused as past its group: '%s'", moraine_errmsg());
    moraine_children_free(&it);
    moraine_cursor_close(c);
    /* the group's rows in one call: refused too, the stats group's head not read as a row */
    moraine_child_projection kp = {"ducklake_file_partition_value", NULL, 0, NULL, NULL, 0};
    moraine_projection p = {NULL, 0, &kp, 1};
    const moraine_value *kv;
    size_t nr = 99;
    CHECK_RC(moraine_scan_project(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &p, &c), 0);
    CHECK_RC(moraine_cursor_next(c, &row), 1);
    CHECK_RC(moraine_cursor_child_rows(c, 0, &kv, NULL, &nr), MORAINE_ECORRUPT);
    CHECK(nr == 0, "no rows handed out with the error (%zu)", nr);
    moraine_read_end(rd);
    moraine_close(db);
    /* the first group back to its one row, then claiming none: its row's bytes
     * are left over. A commit adding a partition value to that data file
     * loads the stored value and refuses it (the ord to append after is not
     * known), writing nothing; verify reports the stray bytes. */
    CHECK_RC(poke(path, id, fewer_rows), 0);
    CHECK_RC(poke(path, id, fewer_rows), 0);
    CHECK_RC(moraine_open(path, NULL, &db), 0);
    if (!db) return;
    uint64_t before = 0, after = 0;
    CHECK_RC(moraine_last_txnid(db, &before), 0);
    moraine_value pv2[4] = {vint(7), vint(1), vint(1), vstr("05", 2)};
    CHECK_RC(moraine_txn_begin(db, 2, &txn), 0);
    int rc = moraine_txn_insert(txn, "ducklake_file_partition_value", pv2, 4, -1);
    if (!rc) rc = moraine_txn_commit(txn);
    else moraine_txn_abort(txn);
    CHECK(rc == MORAINE_ECORRUPT && strstr(moraine_errmsg(), "bytes after its 0 rows") != NULL,
          "a group with bytes after its rows is refused when a row is appended: %d '%s'", rc, moraine_errmsg());
    CHECK_RC(moraine_last_txnid(db, &after), 0);
    CHECK(before == after, "the refused commit wrote (txnid %llu -> %llu)", (unsigned long long)before, (unsigned long long)after);
    int nv = 0;
    CHECK(moraine_verify(db, count_stray, &nv, NULL, NULL) >= 1 && nv == 1, "verify reports the stray bytes (%d violations)", nv);
    /* the plain walk and the projected walk a row a call refuse them too */
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    CHECK_RC(moraine_scan_open(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c), 0);
    CHECK_RC(moraine_cursor_next(c, &row), 1);
    moraine_row_children(rd, &row, &it);
    CHECK_RC(moraine_children_next(&it, &kid), MORAINE_ECORRUPT);
    CHECK(strstr(moraine_errmsg(), "bytes after its 0 rows") != NULL, "the plain walk names the stray bytes: '%s'", moraine_errmsg());
    moraine_children_free(&it);
    moraine_cursor_close(c);
    CHECK_RC(moraine_scan_project(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &p, &c), 0);
    CHECK_RC(moraine_cursor_next(c, &row), 1);
    size_t which;
    CHECK_RC(moraine_cursor_child(c, &which, &kid), MORAINE_ECORRUPT);
    CHECK(strstr(moraine_errmsg(), "bytes after its 0 rows") != NULL, "the projected walk names the stray bytes: '%s'", moraine_errmsg());
    moraine_read_end(rd);
    /* the group's rows in one call: the bytes after its rows are refused, not passed over */
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    CHECK_RC(moraine_scan_project(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &p, &c), 0);
    CHECK_RC(moraine_cursor_next(c, &row), 1);
    CHECK_RC(moraine_cursor_child_rows(c, 0, &kv, NULL, &nr), MORAINE_ECORRUPT);
    CHECK(strstr(moraine_errmsg(), "bytes after its 0 rows") != NULL && strstr(moraine_errmsg(), "ducklake_data_file") != NULL,
          "names the group and the parent: '%s'", moraine_errmsg());
    moraine_read_end(rd);
    moraine_close(db);
    /* the group says 127 rows in its few bytes: refused before the rows are
     * made room for (each takes a byte at least), by every walk */
    CHECK_RC(poke(path, id, many_rows), 0);
    CHECK_RC(moraine_open(path, NULL, &db), 0);
    if (!db) return;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    CHECK_RC(moraine_scan_project(rd, "ducklake_data_file", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &p, &c), 0);
    CHECK_RC(moraine_cursor_next(c, &row), 1);
    nr = 99;
    CHECK_RC(moraine_cursor_child_rows(c, 0, &kv, NULL, &nr), MORAINE_ECORRUPT);
    CHECK(strstr(moraine_errmsg(), "says 127 rows in") != NULL && nr == 0, "a head claiming more rows than bytes: '%s' (%zu rows)",
          moraine_errmsg(), nr);
    CHECK_RC(moraine_cursor_child(c, &which, &kid), 1); /* the one row there is, then the next runs past the group */
    CHECK_RC(moraine_cursor_child(c, &which, &kid), MORAINE_ECORRUPT);
    moraine_read_end(rd);
    moraine_close(db);
}

/* ---- catalogs of older formats ------------------------------------------------------ */

static int copy_file(const char *from, const char *to)
{
    FILE *f = fopen(from, "rb"), *g = f ? fopen(to, "wb") : NULL;
    if (!g) {
        if (f) fclose(f);
        return -1;
    }
    char buf[65536];
    size_t n;
    int rc = 0;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        if (fwrite(buf, 1, n, g) != n) rc = -1;
    fclose(f);
    if (fclose(g)) rc = -1;
    return rc;
}

/* whether every file of export directory @a equals its namesake in @b (and
 * both hold as many files) */
static int same_export(const char *a, const char *b, int *files)
{
    DIR *d = opendir(a);
    if (!d) return 0;
    int same = 1, n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char pa[4096], pb[4096];
        if (snprintf(pa, sizeof pa, "%s/%s", a, e->d_name) >= (int)sizeof pa || snprintf(pb, sizeof pb, "%s/%s", b, e->d_name) >= (int)sizeof pb)
            abort();
        FILE *fa = fopen(pa, "rb"), *fb = fopen(pb, "rb");
        if (!fa || !fb) same = 0;
        else {
            int ca, cb;
            do {
                ca = fgetc(fa);
                cb = fgetc(fb);
            } while (ca == cb && ca != EOF);
            if (ca != cb) {
                same = 0;
                fprintf(stderr, "  %s differs\n", e->d_name);
            }
        }
        if (fa) fclose(fa);
        if (fb) fclose(fb);
        n++;
    }
    closedir(d);
    d = opendir(b);
    int m = 0;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') m++;
    if (d) closedir(d);
    *files = n;
    return same && n == m;
}

/* Every embedded child row of the catalog at @path (not open in this
 * process) read from LMDB itself, in key order, as store format @format
 * writes it (2: `ord ncols cell*`; 3: the same after its length; 4: its
 * length, the zigzag of its ord less the ord of the row before, its cells up
 * to its length): its ord and the CRC-32C of its cells' bytes, the first
 * @cap into @out. Returns the number of rows, or -1 when a record is not of
 * @format or does not read. */
typedef struct {
    int64_t ord;
    uint32_t cells_crc; /* of the cells' bytes */
} raw_kid;
static long raw_child_ords(const char *path, int format, raw_kid *out, long cap)
{
    MDB_env *env;
    MDB_txn *t;
    MDB_dbi dbi;
    MDB_cursor *c;
    if (raw_begin(path, &env, &t, &dbi)) return -1;
    long n = 0;
    moraine_value vals[64];
    MDB_val k, v;
    int mrc = mdb_cursor_open(t, dbi, &c);
    for (mrc = mrc ? mrc : mdb_cursor_get(c, &k, &v, MDB_FIRST); !mrc && n >= 0; mrc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        uint8_t sub = *(const uint8_t *)k.mv_data;
        if (sub != MR_SUB_CURRENT && sub != MR_SUB_HISTORY && sub != MR_SUB_SNAPSHOT && sub != MR_SUB_ROWS) continue;
        const uint8_t *p = v.mv_data, *end = p + v.mv_size;
        if (v.mv_size < MR_HEADER_LEN || *p != format) {
            n = -1;
            break;
        }
        p += MR_HEADER_LEN;
        int64_t ord;
        size_t nc;
        if (mr_decode_row(&p, end, &ord, vals, 64, &nc)) n = -1;
        while (n >= 0 && p < end) {
            uint64_t id, nrows;
            const uint8_t *gend;
            int64_t prev = 0;
            if (mr_group_head(&p, end, &id, &nrows, &gend)) n = -1;
            for (uint64_t r = 0; n >= 0 && r < nrows; r++) {
                const uint8_t *rend = gend, *cells;
                uint64_t u, cnt = 0;
                if ((format > 2 && mr_child_row_span(&p, gend, &rend)) || mr_get_uvarint(&p, rend, &u) ||
                    (format < 4 && mr_get_uvarint(&p, rend, &cnt))) {
                    n = -1;
                    break;
                }
                cells = p;
                if (format < 5) { /* past the parent-key cells, which lead in every DuckLake child table and format 5 leaves out */
                    if (mr_decode_cells(&cells, rend, vals, sub == MR_SUB_SNAPSHOT ? 1 : 2)) {
                        n = -1;
                        break;
                    }
                }
                if (format >= 4) { /* the cells run to the row's end */
                    p = rend;
                    ord = mr_child_ord(prev, u);
                } else {
                    if (cnt > 64 || mr_decode_cells(&p, rend, vals, (size_t)cnt)) {
                        n = -1;
                        break;
                    }
                    ord = (int64_t)u;
                }
                prev = ord;
                if (n < cap) out[n] = (raw_kid){ord, mr_crc32c(cells, (size_t)(p - cells))};
                n++;
            }
            if (n >= 0 && p != gend) n = -1;
        }
    }
    mdb_cursor_close(c);
    mdb_txn_abort(t);
    mdb_env_close(env);
    return n;
}

/* The catalog of tests/fixtures/format@format/@name (an older build's
 * import): refused reads and commits, then compacted to this build's format
 * and compared with a fresh import. */
static void test_older_format(int format, const char *name)
{
    char fixture[4096], src[4096], dir[4096], dest[4096], fresh[4096], e1[4096], e2[4096], ndjson[4096], says[40];
    const char *fx = getenv("MORAINE_FIXTURES") ? getenv("MORAINE_FIXTURES") : "tests/fixtures";
    if (snprintf(fixture, sizeof fixture, "%s/format%d/%s/data.mdb", fx, format, name) >= (int)sizeof fixture) abort();
    if (snprintf(ndjson, sizeof ndjson, "%s/ducklake/%s/catalog", fx, name) >= (int)sizeof ndjson) abort();
    if (snprintf(dir, sizeof dir, "%s/f%d-%s", root, format, name) >= (int)sizeof dir) abort();
    if (snprintf(src, sizeof src, "%s/data.mdb", dir) >= (int)sizeof src) abort();
    if (snprintf(dest, sizeof dest, "%s/f%d-%s-compacted", root, format, name) >= (int)sizeof dest) abort();
    if (snprintf(fresh, sizeof fresh, "%s/f%d-%s-fresh", root, format, name) >= (int)sizeof fresh) abort();
    if (snprintf(e1, sizeof e1, "%s/f%d-%s-export-upgraded", root, format, name) >= (int)sizeof e1) abort();
    if (snprintf(e2, sizeof e2, "%s/f%d-%s-export-fresh", root, format, name) >= (int)sizeof e2) abort();
    snprintf(says, sizeof says, "format %d", format);
    CHECK(mkdir(dir, 0700) == 0 && copy_file(fixture, src) == 0, "%s: copying the format-%d fixture %s", name, format, fixture);

    moraine_db *db;
    CHECK_RC(moraine_open(dir, NULL, &db), 0);
    if (!db) return;
    moraine_read *rd;
    CHECK_RC(moraine_read_begin(db, &rd), MORAINE_EFORMAT);
    CHECK(strstr(moraine_errmsg(), says) && strstr(moraine_errmsg(), "moraine compact"), "%s: read refused with '%s'", name,
          moraine_errmsg());
    /* a commit is refused and writes nothing */
    uint64_t before = 0, after = 0;
    CHECK_RC(moraine_last_txnid(db, &before), 0);
    moraine_txn *txn;
    CHECK_RC(moraine_txn_begin(db, 1000, &txn), 0);
    moraine_value meta[4] = {vstr("k", 1), vstr("v", 1), vnull(), vnull()};
    CHECK_RC(moraine_txn_insert(txn, "ducklake_metadata", meta, 4, -1), 0);
    CHECK_RC(moraine_txn_commit(txn), MORAINE_EFORMAT);
    CHECK(strstr(moraine_errmsg(), "nothing was written") != NULL, "%s: commit refused with '%s'", name, moraine_errmsg());
    CHECK_RC(moraine_last_txnid(db, &after), 0);
    CHECK(before == after, "%s: the refused commit wrote (txnid %llu -> %llu)", name, (unsigned long long)before, (unsigned long long)after);

    moraine_compact_info info;
    CHECK_RC(moraine_compact(db, dest, &info, NULL, NULL), 0);
    moraine_close(db);

    /* every child row of the copy has the ord and the cells it had */
    enum { KCAP = 4096 };
    static raw_kid was[KCAP], now[KCAP];
    long nwas = raw_child_ords(dir, format, was, KCAP), nnow = raw_child_ords(dest, MR_FORMAT_VERSION, now, KCAP);
    CHECK(nwas > 20 && nwas <= KCAP && nnow == nwas, "%s: %ld child rows in the format-%d fixture, %ld in its copy", name, nwas, format, nnow);
    int moved = 0;
    for (long i = 0; i < nwas && i < nnow && i < KCAP; i++)
        if (was[i].ord != now[i].ord || was[i].cells_crc != now[i].cells_crc) moved++;
    CHECK(moved == 0, "%s: %d of %ld child rows changed ord or cells in the upgrade", name, moved, nwas);

    /* the copy is format 4: reads, verifies, exports what a fresh import exports */
    CHECK_RC(moraine_open(dest, NULL, &db), 0);
    if (!db) return;
    CHECK_INT(moraine_verify(db, NULL, NULL, NULL, NULL), 0);
    CHECK_RC(moraine_export_ndjson(db, e1, NULL, NULL), 0);
    moraine_db *fdb;
    moraine_options o = {.no_sync = 1, .create = 1};
    CHECK_RC(moraine_open(fresh, &o, &fdb), 0);
    if (fdb) {
        CHECK_RC(moraine_import_ndjson(fdb, ndjson, NULL, NULL), 0);
        CHECK_RC(moraine_export_ndjson(fdb, e2, NULL, NULL), 0);
        moraine_close(fdb);
    }
    int files = 0;
    CHECK(same_export(e1, e2, &files) && files > 20, "%s: the upgraded catalog exports what a fresh import exports (%d files)", name, files);
    /* and takes a commit */
    int64_t last = 0;
    CHECK_RC(moraine_last_snapshot(db, &last), 1);
    CHECK_RC(moraine_txn_begin(db, last + 1, &txn), 0);
    CHECK_RC(moraine_txn_insert(txn, "ducklake_metadata", meta, 4, -1), 0);
    CHECK_RC(moraine_txn_partial(txn, 1), 0);
    CHECK_RC(moraine_txn_commit(txn), 0);
    moraine_close(db);
}

/* A damaged value in a format-2 catalog (a byte of one data file's path
 * flipped in the file, so its checksum fails): moraine_compact stops with
 * MORAINE_ECORRUPT naming the key and what to do (this build neither reads
 * nor verifies format 2, so the remedy is the build that wrote it), leaves
 * nothing at the destination and data.mdb as it was. */
static void test_format2_damaged(void)
{
    char fixture[4096], dir[4096], src[4096], dest[4096];
    const char *fx = getenv("MORAINE_FIXTURES") ? getenv("MORAINE_FIXTURES") : "tests/fixtures";
    if (snprintf(fixture, sizeof fixture, "%s/format2/s1_evolution/data.mdb", fx) >= (int)sizeof fixture) abort();
    path_of(dir, sizeof dir, "f2-damaged");
    path_of(dest, sizeof dest, "f2-damaged-compacted");
    if (snprintf(src, sizeof src, "%s/data.mdb", dir) >= (int)sizeof src) abort();
    CHECK(mkdir(dir, 0700) == 0 && copy_file(fixture, src) == 0, "copying the format-2 fixture %s", fixture);
    /* the file's bytes, with one data file's path damaged */
    FILE *f = fopen(src, "rb");
    static char bytes[1 << 20];
    size_t n = f ? fread(bytes, 1, sizeof bytes, f) : 0;
    if (f) fclose(f);
    static const char path[] = "day=26/ducklake";
    char *at = n ? memmem(bytes, n, path, sizeof path - 1) : NULL;
    CHECK(at != NULL, "the fixture holds a data file path with '%s'", path);
    if (!at) return;
    at[sizeof path - 4] = 'X';
    f = fopen(src, "wb");
    CHECK(f && fwrite(bytes, 1, n, f) == n && fclose(f) == 0, "writing the damaged copy");

    moraine_db *db;
    CHECK_RC(moraine_open(dir, NULL, &db), 0);
    if (!db) return;
    CHECK_RC(moraine_compact(db, dest, NULL, NULL, NULL), MORAINE_ECORRUPT);
    const char *m = moraine_errmsg();
    CHECK(strstr(m, "C(") && strstr(m, "checksum"), "the message names the key and the checksum: '%s'", m);
    CHECK(strstr(m, "format 2") && strstr(m, "the moraine that wrote it"), "the message says what to do with a format-2 catalog: '%s'", m);
    struct stat st;
    CHECK(stat(dest, &st) != 0, "nothing left at %s", dest);
    moraine_close(db);
    /* data.mdb as it was */
    static char after[1 << 20];
    f = fopen(src, "rb");
    size_t n2 = f ? fread(after, 1, sizeof after, f) : 0;
    if (f) fclose(f);
    CHECK(n2 == n && memcmp(bytes, after, n) == 0, "data.mdb unchanged by the failed compact (%zu -> %zu bytes)", n, n2);
}

/* ---- long child rows through the writers and readers ---------------------------------- */

/* A transform of 0..29, 100..399 or 16,000..19,999 bytes: a child row's length of 1, 2 or 3 bytes. */
static size_t long_len(void)
{
    int k = (int)check_below(3);
    return k == 0 ? check_below(30) : k == 1 ? 100 + check_below(300) : 16000 + check_below(4000);
}

/* whether column_id @col is among @match (@nm values) */
static int matched(int64_t col, const int64_t *match, size_t nm)
{
    for (size_t i = 0; i < nm; i++)
        if (match[i] == col) return 1;
    return 0;
}

/* Child rows whose length takes 1, 2 and 3 bytes, appended to stored parents
 * over several commits (moraine_txn_insert) and given with a past version
 * (moraine_txn_insert_version): the plain child walk is the oracle; projected
 * reads (every row, or filtered on random column_ids, so most rows are
 * skipped by their length) give the same rows and values; verify is clean;
 * the NDJSON export imports again to the same export. */
static void test_long_rows(void)
{
    char path[4096], e1[4200], e2[4200], again[4200];
    path_of(path, sizeof path, "long");
    if (snprintf(e1, sizeof e1, "%s-e1", path) >= (int)sizeof e1 || snprintf(e2, sizeof e2, "%s-e2", path) >= (int)sizeof e2 ||
        snprintf(again, sizeof again, "%s-again", path) >= (int)sizeof again)
        abort();
    moraine_options o = {.no_sync = 1, .create = 1};
    moraine_db *db;
    CHECK_RC(moraine_open(path, &o, &db), 0);
    if (!db) return;
    enum { NPAR = 12 };
    int lens[4] = {0};
    static char text[20000]; /* printable: the export carries it as JSON */
    for (size_t i = 0; i < sizeof text; i++) text[i] = (char)('a' + check_below(26));
    for (int64_t snap = 1; snap <= 4; snap++) {
        moraine_txn *txn;
        CHECK_RC(moraine_txn_begin(db, snap, &txn), 0);
        if (snap == 1) {
            CHECK_RC(moraine_txn_define(txn, PI, 4, PI_COLS), 0);
            CHECK_RC(moraine_txn_define(txn, PC, 5, PC_COLS), 0);
            for (int64_t p = 0; p < NPAR; p++) {
                moraine_value pi[4] = {vint(p), vint(p), vint(1), vnull()};
                CHECK_RC(moraine_txn_insert(txn, PI, pi, 4, -1), 0);
            }
        }
        for (int j = 0; j < 25; j++) {
            int64_t p = (int64_t)check_below(NPAR);
            size_t len = long_len();
            lens[len < 100 ? 1 : len < 16000 ? 2 : 3]++;
            moraine_value pc[5] = {vint(p), vint(p), vint(j), vint((int64_t)check_below(6)), check_below(10) ? vstr(text, len) : vnull()};
            CHECK_RC(moraine_txn_insert(txn, PC, pc, 5, -1), 0);
        }
        CHECK_RC(moraine_txn_commit(txn), 0);
    }
    { /* a past version of a new table's spec, its children given with it */
        moraine_txn *txn;
        CHECK_RC(moraine_txn_begin(db, 5, &txn), 0);
        moraine_value pi[4] = {vint(100), vint(100), vint(2), vint(3)};
        moraine_value c1[5] = {vint(100), vint(100), vint(0), vint(1), vstr(text, 20)};
        moraine_value c2[5] = {vint(100), vint(100), vint(1), vint(2), vstr(text, 300)};
        moraine_value c3[5] = {vint(100), vint(100), vint(2), vint(3), vstr(text, 17000)};
        moraine_child_row kids[3] = {{PC, c1, 5, -1}, {PC, c2, 5, -1}, {PC, c3, 5, -1}};
        CHECK_RC(moraine_txn_insert_version(txn, PI, pi, 4, -1, kids, 3), 0);
        CHECK_RC(moraine_txn_partial(txn, 1), 0);
        CHECK_RC(moraine_txn_commit(txn), 0);
    }
    CHECK(lens[1] && lens[2] && lens[3], "child rows of 1, 2 and 3 length bytes written (%d, %d, %d)", lens[1], lens[2], lens[3]);
    CHECK_INT(moraine_verify(db, NULL, NULL, NULL, NULL), 0);

    /* the oracle: every child row of every parent, in order */
    enum { MAXK = 200 };
    static int64_t col[MAXK], kord[MAXK];
    static moraine_value tr[MAXK];
    size_t nk = 0;
    moraine_read *rd;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    if (!rd) return;
    moraine_cursor *c = NULL;
    moraine_row row, kid;
    int rc;
    CHECK_RC(moraine_scan_open(rd, PI, MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c), 0);
    while (c && (rc = moraine_cursor_next(c, &row)) == 1) {
        moraine_children it;
        moraine_row_children(rd, &row, &it);
        while ((rc = moraine_children_next(&it, &kid)) == 1 && nk < MAXK) {
            col[nk] = kid.vals[3].i;
            kord[nk] = kid.ord;
            tr[nk++] = kid.vals[4]; /* points into the map: valid while @rd is open */
        }
        CHECK_INT(rc, 0);
        moraine_children_free(&it);
    }
    if (c) moraine_cursor_close(c);
    CHECK_INT((int)nk, 4 * 25 + 3);
    int bad = 0;
    for (int q = 0; q < 200; q++) {
        int64_t match[6];
        size_t nm = 0;
        for (int64_t v = 0; v < 6; v++)
            if (check_below(2)) match[nm++] = v;
        int filtered = check_below(4) != 0;
        static const char *const cols[] = {"transform", "column_id"};
        moraine_child_projection kp = {PC, cols, 2, filtered ? "column_id" : NULL, match, nm};
        moraine_projection pj = {NULL, 0, &kp, 1};
        CHECK_RC(moraine_scan_project(rd, PI, MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &pj, &c), 0);
        size_t i = 0, which;
        while (c && (rc = moraine_cursor_next(c, &row)) == 1) {
            int kr;
            while ((kr = moraine_cursor_child(c, &which, &kid)) == 1) {
                while (i < nk && filtered && !matched(col[i], match, nm)) i++;
                if (i >= nk || kid.ord != kord[i] || kid.vals[1].i != col[i] || kid.vals[0].type != tr[i].type ||
                    (tr[i].type == MORAINE_STR && (kid.vals[0].len != tr[i].len || memcmp(kid.vals[0].s, tr[i].s, tr[i].len) != 0)))
                    bad++;
                i++;
            }
            if (kr < 0) bad++;
        }
        while (i < nk && filtered && !matched(col[i], match, nm)) i++;
        if (i != nk) bad++;
        if (c) moraine_cursor_close(c);
    }
    CHECK(bad == 0, "%d projected child rows differ from the plain walk", bad);
    moraine_read_end(rd);

    /* export, import again, the same export */
    CHECK_RC(moraine_export_ndjson(db, e1, NULL, NULL), 0);
    moraine_close(db);
    CHECK_RC(moraine_open(again, &o, &db), 0);
    if (!db) return;
    CHECK_RC(moraine_import_ndjson(db, e1, NULL, NULL), 0);
    CHECK_INT(moraine_verify(db, NULL, NULL, NULL, NULL), 0);
    CHECK_RC(moraine_export_ndjson(db, e2, NULL, NULL), 0);
    moraine_close(db);
    int files = 0;
    CHECK(same_export(e1, e2, &files) && files == 2, "the export of long child rows imports to the same export (%d files)", files);
}

/* ---- every child row's ord, through every reader ------------------------------------ */

/* The child rows the test wrote: for each, its parent's partition_id and
 * begin_snapshot, its ord and its partition_key_index (unique: it names the
 * row); in the order they were appended to their parent's group. */
enum { MAXO = 128 };
typedef struct {
    int64_t pid, begin, ord, idx, col;
} ord_kid;
static ord_kid okids[MAXO];
static size_t nokids;

/* Inserts child row @idx of parent @pid (begun at @begin) at @ord (-1: the
 * next position) and records it with the ord the commit gives it (@want, or
 * for -1 the one after the highest so far: @next) */
static void ord_insert(moraine_txn *txn, int64_t pid, int64_t begin, int64_t ord, int64_t *next)
{
    int64_t idx = (int64_t)nokids, col = idx % 6;
    moraine_value pc[5] = {vint(pid), vint(pid), vint(idx), vint(col), vstr("t", 1)};
    CHECK_RC(moraine_txn_insert(txn, PC, pc, 5, ord), 0);
    int64_t got = ord < 0 ? *next : ord;
    if (got + 1 > *next) *next = got + 1;
    okids[nokids++] = (ord_kid){pid, begin, got, idx, col};
}

/* The child rows of parent (@pid, @begin) as the model has them, "ord:idx "
 * each, in group order, keeping those whose column_id is in @match (NULL:
 * all). */
static void model_group(int64_t pid, int64_t begin, const int64_t *match, size_t nm, char *out, size_t n)
{
    size_t at = 0;
    out[0] = 0;
    for (size_t i = 0; i < nokids; i++)
        if (okids[i].pid == pid && okids[i].begin == begin && (!match || matched(okids[i].col, match, nm)))
            at += (size_t)snprintf(out + at, at < n ? n - at : 0, "%lld:%lld ", (long long)okids[i].ord, (long long)okids[i].idx);
}

/* Every partition_info version's child rows, read by the plain walk (@how
 * 0), the projected read (1), or the projected read filtered on random
 * column_ids (2), compared with the model (and each row's raw bytes decoded
 * as its cells); the number of parents whose rows differ. */
static int ords_differ(moraine_db *db, int how)
{
    moraine_read *rd;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    if (!rd) return 1;
    int64_t match[6];
    size_t nm = 0;
    for (int64_t v = 0; v < 6; v++)
        if (check_below(2)) match[nm++] = v;
    static const char *const cols[] = {"column_id", "partition_key_index"};
    moraine_child_projection kp = {PC, cols, 2, how == 2 ? "column_id" : NULL, match, nm};
    moraine_projection pj = {NULL, 0, &kp, 1};
    moraine_cursor *c = NULL;
    int rc = how ? moraine_scan_project(rd, PI, MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &pj, &c)
                 : moraine_scan_open(rd, PI, MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c);
    CHECK_RC(rc, 0);
    int bad = 0, parents = 0;
    moraine_row row, kid;
    while (c && (rc = moraine_cursor_next(c, &row)) == 1) {
        /* the projection asks every parent column, in catalog order */
        int64_t pid = row.vals[0].i, begin = row.vals[2].i;
        char got[4096], want[4096];
        size_t at = 0, which;
        int kr;
        got[0] = 0;
        /* each row's raw bytes are its three stored cells (format 5: not
         * partition_id and table_id, its parent's), partition_key_index first;
         * parent_raw the parent's cells, its key among them */
        moraine_value cells[5];
        const uint8_t *q;
#define RAW_OK(idx) ((q = kid.raw) != NULL && mr_decode_cells(&q, kid.raw + kid.raw_len, cells, 3) == 0 && q == kid.raw + kid.raw_len && \
                     cells[0].type == MORAINE_INT && cells[0].i == (idx) && (q = kid.parent_raw) != NULL &&                         \
                     mr_decode_cells(&q, kid.parent_raw + kid.parent_raw_len, cells, 4) == 0 && cells[0].type == MORAINE_INT && cells[0].i == pid)
        if (how) {
            while ((kr = moraine_cursor_child(c, &which, &kid)) == 1)
                at += (size_t)snprintf(got + at, at < sizeof got ? sizeof got - at : 0, "%lld:%lld%s ", (long long)kid.ord, (long long)kid.vals[1].i,
                                       RAW_OK(kid.vals[1].i) ? "" : "(raw differs)");
        } else {
            moraine_children it;
            moraine_row_children(rd, &row, &it);
            while ((kr = moraine_children_next(&it, &kid)) == 1)
                at += (size_t)snprintf(got + at, at < sizeof got ? sizeof got - at : 0, "%lld:%lld%s ", (long long)kid.ord, (long long)kid.vals[2].i,
                                       RAW_OK(kid.vals[2].i) ? "" : "(raw differs)");
            moraine_children_free(&it);
        }
#undef RAW_OK
        model_group(pid, begin, how == 2 ? match : NULL, nm, want, sizeof want);
        if (kr != 0 || strcmp(got, want) != 0) {
            bad++;
            fprintf(stderr, "  partition_info %lld begun at %lld (read %d): got '%s', want '%s'\n", (long long)pid, (long long)begin, how, got, want);
        }
        parents++;
    }
    CHECK_INT(rc, 0);
    if (c) moraine_cursor_close(c);
    moraine_read_end(rd);
    return bad + (parents == 0);
}

/* The export's ducklake_partition_column.ndjson lists the child rows by
 * ord: their partition_key_index in that order, against the model's. */
static int export_differs(moraine_db *db, const char *dir)
{
    char cmd[4400], file[4400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) return 1;
    CHECK_RC(moraine_export_ndjson(db, dir, NULL, NULL), 0);
    snprintf(file, sizeof file, "%s/" PC ".ndjson", dir);
    FILE *f = fopen(file, "rb");
    if (!f) return 1;
    int64_t seen[MAXO];
    size_t n = 0;
    char line[1024];
    while (fgets(line, sizeof line, f) && n < MAXO) {
        const char *k = strstr(line, "\"partition_key_index\":");
        if (k) seen[n++] = strtoll(k + strlen("\"partition_key_index\":"), NULL, 10);
    }
    fclose(f);
    /* the model sorted by ord (the ords are distinct) */
    ord_kid s[MAXO];
    memcpy(s, okids, nokids * sizeof *s);
    for (size_t i = 1; i < nokids; i++)
        for (size_t j = i; j > 0 && s[j - 1].ord > s[j].ord; j--) {
            ord_kid t = s[j];
            s[j] = s[j - 1];
            s[j - 1] = t;
        }
    int bad = n != nokids;
    for (size_t i = 0; i < n && i < nokids; i++)
        if (seen[i] != s[i].idx) bad++;
    return bad;
}

/* Checks every reader against the model; @when says where in the test. */
static void ords_check(moraine_db *db, const char *dir, const char *when)
{
    for (int how = 0; how < 3; how++)
        for (int k = 0; k < (how == 2 ? 8 : 1); k++) CHECK(ords_differ(db, how) == 0, "%s: read %d gives every child row's ord", when, how);
    CHECK(export_differs(db, dir) == 0, "%s: the export lists the child rows by their ords", when);
    CHECK_INT(moraine_verify(db, NULL, NULL, NULL, NULL), 0);
}

/* Child rows at ords that rise, fall and jump (by 2^40, to INT64_MAX - 1
 * and back to 0), appended to parents inserted in the same commit and to
 * stored parents over later commits, to a parent ended since (its group
 * moves to history as it was) and its new version, and given with a past
 * version (moraine_txn_insert_version): every child row reads back at its
 * ord through the plain walk, the projected read (every row, and filtered on
 * column_id) and the export's order, before and after moraine_compact and in
 * a commit on the compacted copy. */
static void test_child_ords(void)
{
    char path[4096], dir[4200], dest[4200];
    moraine_db *db = new_catalog("ords", path, sizeof path);
    if (snprintf(dir, sizeof dir, "%s-export", path) >= (int)sizeof dir || snprintf(dest, sizeof dest, "%s-compacted", path) >= (int)sizeof dest) abort();
    int64_t next = 0;
    moraine_txn *txn;
    /* snapshot 1: four parents; their children in falling, rising and jumping ords */
    CHECK_RC(moraine_txn_begin(db, 1, &txn), 0);
    CHECK_RC(moraine_txn_define(txn, PI, 4, PI_COLS), 0);
    CHECK_RC(moraine_txn_define(txn, PC, 5, PC_COLS), 0);
    for (int64_t p = 0; p < 4; p++) {
        moraine_value pi[4] = {vint(p), vint(p), vint(1), vnull()};
        CHECK_RC(moraine_txn_insert(txn, PI, pi, 4, -1), 0);
    }
    static const int64_t first[][4] = {{1000, 5, 4, 900}, {-1, -1, 3, -1}, {1 << 20, 0, (int64_t)1 << 40, 7}, {-1, 20, -1, 2}};
    for (int k = 0; k < 4; k++)
        for (int64_t p = 0; p < 4; p++) ord_insert(txn, p, 1, first[p][k], &next);
    CHECK_RC(moraine_txn_commit(txn), 0);
    ords_check(db, dir, "after snapshot 1");
    /* snapshot 2: rows appended to the stored parents, after their last row's ord */
    CHECK_RC(moraine_txn_begin(db, 2, &txn), 0);
    ord_insert(txn, 0, 1, 6, &next);
    ord_insert(txn, 0, 1, -1, &next);
    ord_insert(txn, 2, 1, 1, &next);
    ord_insert(txn, 2, 1, ((int64_t)1 << 40) + 3, &next);
    ord_insert(txn, 3, 1, -1, &next);
    CHECK_RC(moraine_txn_partial(txn, 1), 0);
    CHECK_RC(moraine_txn_commit(txn), 0);
    ords_check(db, dir, "after snapshot 2");
    /* snapshot 3: parent 1 gains a row and is ended (its group to history);
     * its new version gets rows of its own; parent 0 gains a row */
    CHECK_RC(moraine_txn_begin(db, 3, &txn), 0);
    ord_insert(txn, 1, 1, 8, &next);
    moraine_value old1[4] = {vint(1), vint(1), vint(1), vnull()};
    CHECK_RC(moraine_txn_end(txn, PI, old1, 4), 0);
    moraine_value new1[4] = {vint(1), vint(1), vint(3), vnull()};
    CHECK_RC(moraine_txn_insert(txn, PI, new1, 4, -1), 0);
    ord_insert(txn, 1, 3, 9, &next);
    ord_insert(txn, 1, 3, -1, &next);
    ord_insert(txn, 1, 3, 10, &next);
    ord_insert(txn, 0, 1, 11, &next);
    CHECK_RC(moraine_txn_partial(txn, 1), 0);
    CHECK_RC(moraine_txn_commit(txn), 0);
    ords_check(db, dir, "after snapshot 3");
    /* snapshot 4: a past version of parent 9 with its children, ords falling and jumping */
    CHECK_RC(moraine_txn_begin(db, 4, &txn), 0);
    {
        static const int64_t kords[] = {40, 12, ((int64_t)1 << 50), 13};
        moraine_child_row kids[4];
        moraine_value rows[4][5];
        for (int k = 0; k < 4; k++) {
            int64_t idx = (int64_t)nokids;
            rows[k][0] = vint(9), rows[k][1] = vint(9), rows[k][2] = vint(idx), rows[k][3] = vint(idx % 6), rows[k][4] = vnull();
            kids[k] = (moraine_child_row){PC, rows[k], 5, kords[k]};
            okids[nokids++] = (ord_kid){9, 2, kords[k], idx, idx % 6};
            if (kords[k] + 1 > next) next = kords[k] + 1;
        }
        moraine_value pi[4] = {vint(9), vint(9), vint(2), vint(3)};
        CHECK_RC(moraine_txn_insert_version(txn, PI, pi, 4, -1, kids, 4), 0);
    }
    CHECK_RC(moraine_txn_partial(txn, 1), 0);
    CHECK_RC(moraine_txn_commit(txn), 0);
    ords_check(db, dir, "after snapshot 4");
    /* snapshot 5: the largest ord a row can have, then the smallest, on a stored parent */
    CHECK_RC(moraine_txn_begin(db, 5, &txn), 0);
    ord_insert(txn, 3, 1, INT64_MAX - 1, &next);
    ord_insert(txn, 3, 1, 14, &next);
    ord_insert(txn, 2, 1, INT64_MAX - 2, &next);
    CHECK_RC(moraine_txn_partial(txn, 1), 0);
    CHECK_RC(moraine_txn_commit(txn), 0);
    ords_check(db, dir, "after snapshot 5");
    /* compacted: the same ords, and a commit on the copy appends after them */
    CHECK_RC(moraine_compact(db, dest, NULL, NULL, NULL), 0);
    moraine_close(db);
    CHECK_RC(moraine_open(dest, NULL, &db), 0);
    if (!db) return;
    ords_check(db, dir, "compacted");
    CHECK_RC(moraine_txn_begin(db, 6, &txn), 0);
    ord_insert(txn, 3, 1, 0, &next);
    ord_insert(txn, 2, 1, 15, &next);
    ord_insert(txn, 1, 3, INT64_MAX - 3, &next);
    CHECK_RC(moraine_txn_partial(txn, 1), 0);
    CHECK_RC(moraine_txn_commit(txn), 0);
    ords_check(db, dir, "after snapshot 6, on the compacted copy");
    moraine_close(db);
}

/* Writes format marker @fmt into the catalog at @path through LMDB itself;
 * 0 or an LMDB error. Run in a process of its own (set_marker). */
static int write_marker(const char *path, int64_t fmt)
{
    MDB_env *env;
    MDB_txn *t;
    MDB_dbi dbi;
    mr_buf k = {0};
    int rc = raw_begin(path, &env, &t, &dbi);
    if (rc) return rc;
    if ((rc = mr_meta_key(&k, "format"))) mdb_txn_abort(t);
    if (!rc && (rc = mr_int_put(t, dbi, k.p, k.len, fmt))) mdb_txn_abort(t);
    if (!rc) rc = mdb_txn_commit(t);
    mr_buf_free(&k);
    mdb_env_close(env);
    return rc;
}

static const char *self; /* argv[0]: set_marker runs this binary again */

/* Sets the format marker of the catalog at @path to @fmt in another process
 * (LMDB: one environment per file per process, and the caller has it open):
 * this binary run again with --set-marker, not a fork that would write and
 * exit with the caller's open catalog (under `make valgrind` the forked copy
 * reports the caller's LMDB buffers as possibly lost and exits 99). */
static int set_marker(const char *path, int64_t fmt)
{
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)fmt);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        execl(self, self, "--set-marker", path, num, (char *)NULL);
        _exit(127);
    }
    int st;
    return waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* A new, empty catalog (as new_catalog) whose marker then says format 2, as
 * an older moraine would have created it, opened again. */
static moraine_db *empty_format2(const char *name, char *path, size_t n)
{
    moraine_db *db = new_catalog(name, path, n);
    moraine_close(db);
    CHECK(set_marker(path, 2) == 0, "marking the catalog format 2");
    db = NULL;
    CHECK_RC(moraine_open(path, NULL, &db), 0);
    return db;
}

/* A catalog marked format 1, or a format newer than this build's, is refused
 * at open with MORAINE_EFORMAT (not ECORRUPT: nothing is damaged), naming
 * the format; an LMDB file of something else stays MORAINE_ECORRUPT. */
static void test_format_refused_at_open(void)
{
    char path[4096];
    for (int i = 0; i < 2; i++) {
        int64_t fmt = i ? MR_FORMAT_VERSION + 1 : 1;
        moraine_db *db = new_catalog(i ? "newer" : "format1", path, sizeof path);
        moraine_close(db);
        CHECK(set_marker(path, fmt) == 0, "marking the catalog format %lld", (long long)fmt);
        db = NULL;
        CHECK_RC(moraine_open(path, NULL, &db), MORAINE_EFORMAT);
        char want[40];
        snprintf(want, sizeof want, "catalog format %lld", (long long)fmt);
        CHECK(db == NULL && strstr(moraine_errmsg(), want) != NULL, "format %lld refused at open: '%s'", (long long)fmt, moraine_errmsg());
        if (db) moraine_close(db);
    }
    /* an LMDB file that is not a catalog: an entry, no marker */
    MDB_env *env;
    MDB_txn *t;
    MDB_dbi dbi;
    path_of(path, sizeof path, "not-a-catalog");
    CHECK(mkdir(path, 0700) == 0, "mkdir %s", path);
    CHECK_RC(raw_begin(path, &env, &t, &dbi), 0);
    MDB_val k = {3, (void *)"abc"}, v = {3, (void *)"xyz"};
    CHECK_RC(mdb_put(t, dbi, &k, &v, 0), 0);
    CHECK_RC(mdb_txn_commit(t), 0);
    mdb_env_close(env);
    moraine_db *db = NULL;
    CHECK_RC(moraine_open(path, NULL, &db), MORAINE_ECORRUPT);
    if (db) moraine_close(db);
}

/* A handle opened on a format-2 catalog learns when it was rewritten in
 * format 4 since (by another handle or process): the next read and commit
 * read the marker again instead of refusing for good. */
static void test_marker_again(void)
{
    char path[4096];
    moraine_db *db = empty_format2("marker", path, sizeof path);
    if (!db) return;
    moraine_read *rd = NULL;
    CHECK_RC(moraine_read_begin(db, &rd), MORAINE_EFORMAT);
    CHECK(rd == NULL, "no read handed out");
    moraine_txn *txn;
    CHECK_RC(moraine_txn_begin(db, 0, &txn), 0);
    static const char *const cols[] = {"a"};
    CHECK_RC(moraine_txn_define(txn, "t", 1, cols), 0);
    CHECK_RC(moraine_txn_commit(txn), MORAINE_EFORMAT);
    CHECK(set_marker(path, MR_FORMAT_VERSION) == 0, "marking the catalog format 4");
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    if (rd) moraine_read_end(rd);
    CHECK_RC(moraine_txn_begin(db, 0, &txn), 0);
    CHECK_RC(moraine_txn_define(txn, "t", 1, cols), 0);
    CHECK_RC(moraine_txn_commit(txn), 0);
    moraine_close(db);
}

/* An empty catalog an older moraine created (format 2, no rows) takes an
 * import: the import writes every record in format 4 and the marker with
 * them, as it would in a new catalog. */
static void test_import_into_empty_format2(void)
{
    char path[4096], ndjson[4096];
    const char *fx = getenv("MORAINE_FIXTURES") ? getenv("MORAINE_FIXTURES") : "tests/fixtures";
    if (snprintf(ndjson, sizeof ndjson, "%s/ducklake/s1_evolution/catalog", fx) >= (int)sizeof ndjson) abort();
    moraine_db *db = empty_format2("empty2", path, sizeof path);
    if (!db) return;
    CHECK_RC(moraine_import_ndjson(db, ndjson, NULL, NULL), 0);
    moraine_read *rd = NULL;
    CHECK_RC(moraine_read_begin(db, &rd), 0);
    if (rd) moraine_read_end(rd);
    CHECK_INT(moraine_verify(db, NULL, NULL, NULL, NULL), 0);
    moraine_close(db);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--set-marker") == 0) return write_marker(argv[2], strtoll(argv[3], NULL, 10)) ? 1 : 0;
    self = argv[0];
    check_seed("test_child_rows");
    if (!check_mkdtemp(root, sizeof root, "moraine-test-child-rows")) {
        CHECK(0, "a temporary directory");
        return check_done();
    }
    test_encode();
    test_worked_example();
    test_mixed_walks_keys();
    test_group_of_no_child();
    test_upgrade_value();
    test_damaged_length();
    test_rows_within_group();
    test_long_rows();
    test_child_ords();
    test_marker_again();
    test_format_refused_at_open();
    test_import_into_empty_format2();
    test_older_format(2, "s1_evolution");
    test_older_format(2, "s3_edge_values");
    test_older_format(3, "s1_evolution");
    test_older_format(3, "s3_edge_values");
    test_older_format(4, "s1_evolution");
    test_older_format(4, "s3_edge_values");
    test_format2_damaged();
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0, "cannot remove %s", root);
    return check_done();
}
