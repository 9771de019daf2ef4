/*
 * fuzz_ident.c — libFuzzer target for DuckDB's identifier rules
 * (engine/ident.c): the input (up to its first NUL) is a name.
 * Invariants: moraine_ident_render reports the length it writes; a name is
 * written bare exactly when moraine_ident_requires_quotes says no, and then
 * unchanged; a quoted rendering reads back (outer quotes off, "" -> ") to the
 * name itself (round trip); rendering is the same for a buffer one byte
 * short (truncated, NUL-terminated); mr_ident_eq is reflexive and ignores
 * ASCII case only.
 */
#include "internal.h"
#include "moraine.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *name = malloc(size + 1);
    if (!name) return 0;
    memcpy(name, data, size);
    name[size] = 0;
    size_t n = strlen(name);
    size_t need = moraine_ident_render(name, NULL, 0);
    char *out = malloc(need + 1);
    if (!out) { free(name); return 0; }
    if (moraine_ident_render(name, out, need + 1) != need || strlen(out) != need) abort();
    if (!moraine_ident_requires_quotes(name)) {
        if (strcmp(out, name) != 0) abort();
    } else {
        if (need < 2 || out[0] != '"' || out[need - 1] != '"') abort();
        /* read back: outer quotes off, "" -> " */
        char *back = malloc(need + 1);
        if (!back) abort();
        size_t b = 0;
        for (size_t i = 1; i + 1 < need; i++) {
            if (out[i] == '"') {
                if (out[i + 1] != '"') abort();
                i++;
            }
            back[b++] = out[i];
        }
        back[b] = 0;
        if (strcmp(back, name) != 0) abort();
        free(back);
    }
    if (need > 0) {
        char *shortbuf = malloc(need);
        if (!shortbuf) abort();
        moraine_ident_render(name, shortbuf, need);
        if (strlen(shortbuf) != need - 1 || memcmp(shortbuf, out, need - 1) != 0) abort();
        free(shortbuf);
    }
    if (!mr_ident_eq(name, name)) abort();
    char *up = malloc(n + 1);
    if (!up) abort();
    for (size_t i = 0; i <= n; i++) up[i] = (char)((name[i] >= 'a' && name[i] <= 'z') ? name[i] - 32 : name[i]);
    if (!mr_ident_eq(name, up)) abort();
    if (moraine_ident_is_keyword(name) != moraine_ident_is_keyword(up)) abort();
    free(up);
    free(out);
    free(name);
    return 0;
}
