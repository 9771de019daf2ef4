/*
 * fuzz_tmp.h — the scratch directory of a fuzz target that writes files
 * (ndjson, verbs): <base>/moraine-fuzz-<target>-<pid>, base /dev/shm when it
 * exists (else $TMPDIR or /tmp). Every run works in fresh subdirectories of
 * it and removes them. A process that crashes (libFuzzer exits on abort()
 * without running atexit handlers) leaves its directory behind, so the
 * first call also removes the directories of this target whose process is
 * gone.
 */
#ifndef FUZZ_TMP_H
#define FUZZ_TMP_H

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int fuzz_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if ((flag == FTW_DP ? rmdir(path) : unlink(path)) != 0) {
        fprintf(stderr, "fuzz: cannot remove %s: %s\n", path, strerror(errno));
        abort();
    }
    return 0;
}

/* Removes @dir and everything in it; a missing @dir is fine. */
static void fuzz_rm_tree(const char *dir)
{
    struct stat st;
    if (lstat(dir, &st) != 0) return;
    if (nftw(dir, fuzz_rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0) abort();
}

static char fuzz_root_dir[512];

static void fuzz_root_cleanup(void) { fuzz_rm_tree(fuzz_root_dir); }

/* The scratch directory of this process (created on the first call). */
static const char *fuzz_root(const char *target)
{
    if (fuzz_root_dir[0]) return fuzz_root_dir;
    struct stat st;
    const char *base = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) ? "/dev/shm" : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char prefix[128];
    int plen = snprintf(prefix, sizeof prefix, "moraine-fuzz-%s-", target);
    DIR *d = opendir(base);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        if (strncmp(de->d_name, prefix, (size_t)plen) != 0) continue;
        char *end;
        long pid = strtol(de->d_name + plen, &end, 10);
        if (*end || pid <= 0) continue;
        int gone = kill((pid_t)pid, 0) != 0 && errno == ESRCH;
        if (!gone && pid != (long)getpid()) continue; /* another live fuzzer's */
        char stale[1024];
        snprintf(stale, sizeof stale, "%s/%s", base, de->d_name);
        fuzz_rm_tree(stale); /* its process is gone (or it is ours, from a reused pid) */
    }
    if (d) closedir(d);
    snprintf(fuzz_root_dir, sizeof fuzz_root_dir, "%s/%s%ld", base, prefix, (long)getpid());
    if (mkdir(fuzz_root_dir, 0700) != 0) {
        fprintf(stderr, "fuzz: mkdir %s: %s\n", fuzz_root_dir, strerror(errno));
        abort();
    }
    atexit(fuzz_root_cleanup);
    return fuzz_root_dir;
}

#endif
