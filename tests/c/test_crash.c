/*
 * test_crash — kill a committing writer with SIGKILL at random moments and
 * check that nothing acknowledged is lost and nothing is half there.
 *
 * Each round starts build/tests/crash_writer on one catalog, lets it commit
 * for a random 1-25 ms, kills it with SIGKILL, reads the snapshot ids it had
 * acknowledged (printed after each commit returned), reopens the catalog and
 * checks: moraine_verify finds no violation; the last snapshot is at least
 * every acknowledged one; snapshot ids 0..last are all there; and each
 * acknowledged snapshot (plus a random sample of older ones) is whole: it
 * shows exactly s - 1 data files and its ducklake_snapshot row has
 * next_file_id == s - 1. MORAINE_CRASH_KILLS sets the number of rounds
 * (default 200; `make crash-long` runs 10,000, on a fresh catalog every 200
 * rounds so that each check stays short).
 */
#include "check.h"
#include "moraine.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char writer_path[4096];

/* Files of table 1 visible at @s, and the snapshot row's next_file_id. */
static int snapshot_whole(moraine_db *db, int64_t s, char *why, size_t n)
{
    moraine_read *rd;
    if (moraine_read_begin(db, &rd)) {
        snprintf(why, n, "read: %s", moraine_errmsg());
        return 0;
    }
    moraine_cursor *c;
    moraine_row row;
    int64_t files = 0, next_file = -1;
    int ok = 1;
    if (moraine_scan_open(rd, "ducklake_data_file", 1, s, &c) == 0) {
        int rc;
        while ((rc = moraine_cursor_next(c, &row)) == 1) files++;
        if (rc < 0) ok = 0, snprintf(why, n, "files: %s", moraine_errmsg());
    }
    if (ok && moraine_scan_open(rd, "ducklake_snapshot", MORAINE_ANY_SCOPE, MORAINE_ALL_VERSIONS, &c) == 0) {
        int rc, ic = -1, inf = -1;
        while ((rc = moraine_cursor_next(c, &row)) == 1) {
            if (ic < 0) ic = moraine_column_index(row.rel, "snapshot_id"), inf = moraine_column_index(row.rel, "next_file_id");
            if (row.vals[ic].i == s) next_file = row.vals[inf].i;
        }
    }
    moraine_read_end(rd);
    if (!ok) return 0;
    if (s >= 1 && files != (s >= 2 ? s - 1 : 0)) {
        snprintf(why, n, "snapshot %lld shows %lld data files, expected %lld", (long long)s, (long long)files, (long long)(s - 1));
        return 0;
    }
    if (s >= 2 && next_file != s - 1) {
        snprintf(why, n, "snapshot %lld has next_file_id %lld, expected %lld", (long long)s, (long long)next_file, (long long)(s - 1));
        return 0;
    }
    return 1;
}

static void report(void *ud, const char *key, const char *problem)
{
    (void)ud;
    check_note("verify: %s: %s", key, problem);
}

int main(int argc, char **argv)
{
    check_seed("test_crash");
    if (!check_crash_writer(writer_path, sizeof writer_path, argv[0])) return check_done();
    long rounds = getenv("MORAINE_CRASH_KILLS") ? atol(getenv("MORAINE_CRASH_KILLS")) : 200;
    char tmpl[1024];
    char *root = check_mkdtemp(tmpl, sizeof tmpl, "moraine-crash");
    char cat[4200];
    snprintf(cat, sizeof cat, "%s/catalog", root);
    long lost = 0, partial = 0, unsound = 0, killed_mid = 0, writer_failed = 0;
    int64_t max_acked = -1, acked_total = 0;
    /* The kill comes 1 ms + [0, span) µs after the writer starts. A round in
     * which the writer acknowledged nothing doubles span (up to 1 s), so on a
     * slow machine (ASan under load: a first commit can take 100 ms) the kills
     * still land among commits instead of always before the first one; a round
     * that acknowledged more than 32 halves it again (not below 24 ms), so the
     * catalog, which every round verifies whole, stays small. */
    uint64_t span = 24000;
    for (long r = 0; r < rounds; r++) {
        if (r % 200 == 0) {
            snprintf(cat, sizeof cat, "%s/catalog-%ld", root, r / 200);
            max_acked = -1;
        }
        int fds[2];
        if (pipe(fds) != 0) break;
        pid_t pid = fork();
        if (pid == 0) {
            dup2(fds[1], 1);
            close(fds[0]);
            close(fds[1]);
            execl(writer_path, writer_path, cat, (char *)NULL);
            _exit(127);
        }
        close(fds[1]);
        usleep((useconds_t)(1000 + check_below(span)));
        kill(pid, SIGKILL);
        int st;
        waitpid(pid, &st, 0);
        if (WIFSIGNALED(st)) killed_mid++;
        else writer_failed++, check_note("round %ld: the writer stopped by itself (status %d)", r, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        /* every ACK written before the kill is in the pipe */
        FILE *f = fdopen(fds[0], "r");
        char line[128];
        int64_t acked[4096];
        size_t nacked = 0;
        while (f && fgets(line, sizeof line, f))
            if (strncmp(line, "ACK ", 4) == 0 && nacked < 4096) acked[nacked++] = strtoll(line + 4, NULL, 10), acked_total++;
        if (f) fclose(f);
        if (nacked == 0 && span < 1000000) span *= 2;
        else if (nacked > 32 && span > 24000) span /= 2;
        moraine_db *db;
        if (moraine_open(cat, NULL, &db) != 0) {
            CHECK(0, "round %ld: the catalog does not reopen: %s", r, moraine_errmsg());
            break;
        }
        int v = moraine_verify(db, report, NULL, NULL, NULL);
        if (v != 0) unsound++;
        int64_t last = -1;
        moraine_last_snapshot(db, &last);
        for (size_t i = 0; i < nacked; i++) {
            if (acked[i] > max_acked) max_acked = acked[i];
        }
        if (max_acked > last) {
            lost++;
            check_note("round %ld: snapshot %lld was acknowledged, the catalog ends at %lld", r, (long long)max_acked, (long long)last);
        }
        char why[256];
        for (size_t i = 0; i < nacked; i++)
            if (!snapshot_whole(db, acked[i], why, sizeof why)) partial++, check_note("round %ld: %s", r, why);
        for (int k = 0; k < 8 && last > 1; k++) {
            int64_t s = 1 + (int64_t)check_below((uint64_t)last);
            if (!snapshot_whole(db, s, why, sizeof why)) partial++, check_note("round %ld: %s", r, why);
        }
        if (last >= 0 && !snapshot_whole(db, last, why, sizeof why)) partial++, check_note("round %ld (last): %s", r, why);
        moraine_close(db);
    }
    printf("test_crash: %ld rounds, %ld writers killed mid-run, %lld acknowledged commits checked\n", rounds, killed_mid,
           (long long)acked_total);
    CHECK(lost == 0, "%ld rounds lost an acknowledged snapshot", lost);
    CHECK(partial == 0, "%ld snapshots were present in part", partial);
    CHECK(unsound == 0, "%ld reopened catalogs failed verify", unsound);
    CHECK(writer_failed == 0, "%ld writers failed on their own (see their messages above)", writer_failed);
    CHECK(acked_total > 10, "the writer acknowledged only %lld commits", (long long)acked_total);
    char cmd[4300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0) check_note("could not remove %s", root);
    return check_done();
}
