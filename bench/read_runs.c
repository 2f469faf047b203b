/* What a cross-memory read costs per run: the measurement behind
 * docs/src/performance/analysis.md, "Halo'd inputs read row by row".
 *
 *   gcc -O2 bench/read_runs.c -o read_runs && ./read_runs
 *
 * One process reads 32 MiB of its own memory with process_vm_readv (or writes
 * it with process_vm_writev) into a 256 KiB bounce buffer, 256 KiB a call, as a
 * direct read of a strided input does. The runs are rows of R bytes, G bytes
 * apart (G = 0: back to back, one iovec each), on the remote side (as a read of
 * a halo'd input gathers them) or on the local side (as a sender writing its
 * rows into a reader's buffer would). Printed: the least of 5 passes of each. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum { TOTAL = 32 << 20, BOUNCE = 256 << 10, MAX_IOV = 1024, PASSES = 5 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* One pass over TOTAL bytes in rows of `row` bytes `gap` apart (`row` = 0: one
 * range a call), the rows remote (`rows_local` = 0, a read) or local (a write).
 * Returns the seconds taken, or a negative number when a call failed. */
static double pass(char *memory, char *bounce, size_t row, size_t gap, int rows_local)
{
    static struct iovec rows[MAX_IOV];
    const size_t per_call = row ? BOUNCE / row : 1, calls = TOTAL / BOUNCE;
    const double start = now();
    for (size_t c = 0; c < calls; c++) {
        size_t n = 0;
        if (!row) {
            rows[n++] = (struct iovec){memory + c * BOUNCE, BOUNCE};
        } else {
            for (size_t k = 0; k < per_call; k++, n++)
                rows[n] = (struct iovec){memory + (c * per_call + k) * (row + gap), row};
        }
        struct iovec whole = {bounce, BOUNCE};
        const ssize_t moved = rows_local
                                  ? process_vm_writev(getpid(), rows, n, &whole, 1, 0)
                                  : process_vm_readv(getpid(), &whole, 1, rows, n, 0);
        if (moved != BOUNCE) return -1.0;
    }
    return now() - start;
}

int main(void)
{
    static const struct { size_t row, gap; int rows_local; const char *what; } cases[] = {
        {0, 0, 0, "remote: one range a call"},
        {4096, 0, 0, "remote: 4 KiB rows, back to back"},
        {2048, 0, 0, "remote: 2 KiB rows, back to back"},
        {1024, 0, 0, "remote: 1 KiB rows, back to back"},
        {2048, 32, 0, "remote: 2 KiB rows, 32 bytes apart"},
        {1024, 32, 0, "remote: 1 KiB rows, 32 bytes apart"},
        {2048, 32, 1, "local (writev): 2 KiB rows, 32 bytes apart"},
        {1024, 32, 1, "local (writev): 1 KiB rows, 32 bytes apart"},
    };
    const size_t span = TOTAL / 1024 * (1024 + 32);
    char *memory = malloc(span), *bounce = aligned_alloc(4096, BOUNCE);
    if (!memory || !bounce) return 1;
    memset(memory, 1, span);
    memset(bounce, 0, BOUNCE);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double best = 1e30;
        for (int p = 0; p < PASSES; p++) {
            const double t = pass(memory, bounce, cases[i].row, cases[i].gap, cases[i].rows_local);
            if (t < 0) {
                perror(cases[i].what);
                return 1;
            }
            if (t < best) best = t;
        }
        printf("%-45s %7.2f ms\n", cases[i].what, best * 1e3);
    }
    return 0;
}
