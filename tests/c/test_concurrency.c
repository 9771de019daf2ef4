/*
 * test_concurrency — several reader processes read at their own snapshots
 * while a writer process commits; every read must be one whole snapshot. A
 * reader killed with SIGKILL in the middle of a read leaves a stale LMDB
 * reader slot: it must not block the writer, and moraine_reader_check clears
 * it.
 *
 * The writer is build/tests/crash_writer (one data file per snapshot; at every
 * snapshot that is a multiple of 7 it also sets a one-key partition spec, the
 * identity of k at odd ones, bucket(4) of k at even ones), so at snapshot
 * s >= 2 a reader must see exactly s - 1 files of table 1, no partition spec
 * before snapshot 7, and from 7 on the spec the writer set at the last multiple
 * of 7 up to s: one key, partition_key_index 0, that transform.
 */
#include "check.h"
#include "internal.h"
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define READERS 3

/* mdb_reader_list callback: counts the lines naming the pid in stale_pid */
static int stale_slots;
static const char *stale_pid;
static int count_pid(const char *msg, void *ctx)
{
    (void)ctx;
    char want[40];
    snprintf(want, sizeof want, " %s ", stale_pid);
    char line[256];
    snprintf(line, sizeof line, " %s", msg);
    if (strstr(line, want)) stale_slots++;
    return 0;
}
#define READS 300

/* each reader process prints its first few bad reads only */
static int reader_notes;
#define READER_NOTE(...) (reader_notes++ < 5 ? (void)fprintf(stderr, __VA_ARGS__) : (void)0)

/* Checks the partition spec read at @s (spec_at returned @hs, filled @spec)
 * against what the writer set (see the top); 0 if it matches, else 1 with
 * the difference printed. */
static int spec_differs(moraine_read *rd, int64_t s, int hs, const moraine_row *spec)
{
    int want = s >= 7;
    if (hs != want) {
        READER_NOTE("reader: snapshot %lld: partition_spec_at returned %d, expected %d\n", (long long)s, hs, want);
        return 1;
    }
    if (!want) return 0;
    const char *transform = (s / 7 * 7) % 2 ? "identity" : "bucket(4)";
    moraine_children it;
    moraine_row ch;
    int keys = 0, bad = 0, rc;
    moraine_row_children(rd, spec, &it);
    while ((rc = moraine_children_next(&it, &ch)) == 1) {
        if (strcmp(ch.rel->name, "ducklake_partition_column") != 0) continue;
        keys++;
        /* ducklake_partition_column: partition_id, table_id, partition_key_index, column_id, transform */
        if (ch.ncols != 5 || ch.vals[2].type != MORAINE_INT || ch.vals[2].i != 0 || ch.vals[4].type != MORAINE_STR ||
            ch.vals[4].len != strlen(transform) || memcmp(ch.vals[4].s, transform, ch.vals[4].len) != 0) {
            READER_NOTE("reader: snapshot %lld: the spec's key is not %s at index 0\n", (long long)s, transform);
            bad = 1;
        }
    }
    moraine_children_free(&it);
    if (rc < 0 || keys != 1) {
        READER_NOTE("reader: snapshot %lld: the spec has %d keys (walk %d), expected 1\n", (long long)s, keys, rc);
        bad = 1;
    }
    return bad;
}

/* One reader process: returns the number of inconsistent reads. */
static int reader(const char *cat, unsigned seed)
{
    moraine_options o = {.read_only = 1};
    moraine_db *db = NULL;
    for (int i = 0; i < 200 && moraine_open(cat, &o, &db) != 0; i++) usleep(5000);
    if (!db) return 1000;
    int bad = 0, reads = 0, idle = 0;
    srand(seed);
    while (reads < READS) {
        if (++idle > 40000) { /* 20 s and more without two snapshots to read: the writer is gone */
            READER_NOTE("reader: the catalog has had fewer than 2 snapshots for 20 s\n");
            bad++;
            break;
        }
        moraine_read *rd;
        if (moraine_read_begin(db, &rd)) {
            bad++;
            break;
        }
        int64_t last;
        if (moraine_read_last_snapshot(rd, &last) == 1 && last >= 2) {
            /* the newest snapshot and an older one, each whole */
            int64_t at[2] = {last, 2 + rand() % (last - 1)};
            for (int k = 0; k < 2; k++) {
                moraine_cursor *c;
                moraine_row row;
                int64_t n = 0;
                if (moraine_scan_open(rd, "ducklake_data_file", 1, at[k], &c) == 0) {
                    int rc;
                    while ((rc = moraine_cursor_next(c, &row)) == 1) n++;
                    if (rc < 0) bad++;
                    moraine_cursor_close(c);
                }
                if (n != at[k] - 1) {
                    bad++;
                    READER_NOTE("reader: snapshot %lld shows %lld files\n", (long long)at[k], (long long)n);
                }
                moraine_row spec;
                int hs = moraine_partition_spec_at(rd, 1, at[k], &spec);
                if (hs < 0 || spec_differs(rd, at[k], hs, &spec)) bad++;
            }
            reads++;
            idle = 0;
        }
        moraine_read_end(rd);
        usleep(500);
    }
    moraine_close(db);
    return bad;
}

static void remove_tree(const char *root)
{
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) check_note("could not remove %s", root);
}

int main(int argc, char **argv)
{
    check_seed("test_concurrency");
    char writer[4096];
    if (!check_crash_writer(writer, sizeof writer, argv[0])) return check_done();
    char tmpl[1024];
    char *root = check_mkdtemp(tmpl, sizeof tmpl, "moraine-conc");
    char cat[4200];
    snprintf(cat, sizeof cat, "%s/catalog", root);
    /* the catalog exists before readers start */
    pid_t w0 = fork();
    if (w0 == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        execl(writer, writer, cat, "3", (char *)NULL);
        _exit(127);
    }
    int st;
    waitpid(w0, &st, 0);
    const int created = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    CHECK(created, "the writer could not create the catalog (status %d)", st);
    if (!created) { /* nothing below can run: stop, rather than wait on readers of no catalog */
        remove_tree(root);
        return check_done();
    }

    pid_t w = fork();
    if (w == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        dup2(devnull, 1);
        execl(writer, writer, cat, (char *)NULL);
        _exit(127);
    }
    pid_t rs[READERS];
    for (int i = 0; i < READERS; i++) {
        rs[i] = fork();
        if (rs[i] == 0) _exit(reader(cat, (unsigned)check_below(1u << 30)) > 0 ? 1 : 0);
    }
    /* a reader that dies inside a read transaction */
    int pfd[2];
    CHECK(pipe(pfd) == 0, "pipe");
    pid_t stale = fork();
    if (stale == 0) {
        moraine_db *db;
        moraine_read *rd;
        if (moraine_open(cat, NULL, &db) || moraine_read_begin(db, &rd)) _exit(1);
        if (write(pfd[1], "r", 1) != 1) _exit(1);
        pause();
        _exit(0);
    }
    close(pfd[1]); /* the child's end only: if it dies before writing, read() returns 0 instead of waiting */
    char ch;
    CHECK(read(pfd[0], &ch, 1) == 1, "the stale reader did not start its read");
    kill(stale, SIGKILL);
    waitpid(stale, &st, 0);
    /* LMDB's reader check finds and clears the dead reader's slot */
    {
        moraine_options ro0 = {.read_only = 1};
        moraine_db *db0;
        int dead = -1;
        CHECK_RC(moraine_open(cat, &ro0, &db0), 0);
        /* another process (the writer, a reader's open) may clear it first; either
         * way, after a check no slot of the dead process is left */
        CHECK_RC(moraine_reader_check(db0, &dead), 0);
        CHECK(dead >= 0, "reader check reported %d", dead);
        char pidtxt[32];
        snprintf(pidtxt, sizeof pidtxt, "%d", (int)stale);
        stale_slots = 0;
        stale_pid = pidtxt;
        mdb_reader_list(db0->env, count_pid, NULL);
        CHECK(stale_slots == 0, "the dead reader (pid %s) still holds %d reader slots", pidtxt, stale_slots);
        CHECK_RC(moraine_reader_check(db0, &dead), 0);
        CHECK(dead == 0, "a second check still found %d dead slots", dead);
        moraine_close(db0);
    }

    int failed_readers = 0;
    for (int i = 0; i < READERS; i++) {
        waitpid(rs[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed_readers++;
    }
    CHECK(failed_readers == 0, "%d of %d readers saw a read that was not one whole snapshot", failed_readers, READERS);

    /* the writer went on committing past the dead reader */
    moraine_options ro = {.read_only = 1};
    moraine_db *db;
    int64_t before = 0, after = 0;
    CHECK_RC(moraine_open(cat, &ro, &db), 0);
    moraine_last_snapshot(db, &before);
    usleep(200000);
    moraine_last_snapshot(db, &after);
    CHECK(after > before, "the writer made no progress with a dead reader's slot held (%lld -> %lld)", (long long)before, (long long)after);
    moraine_close(db);
    kill(w, SIGKILL);
    waitpid(w, &st, 0);

    CHECK_RC(moraine_open(cat, NULL, &db), 0);
    CHECK(moraine_verify(db, NULL, NULL, NULL, NULL) == 0, "verify after the run: %s", moraine_errmsg());
    moraine_close(db);
    remove_tree(root);
    return check_done();
}
