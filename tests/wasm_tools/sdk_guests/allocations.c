/* Exercises the SDK's allocator the way tools use it, checking every byte it was given;
 * answers "ok" or names the first check that failed. Details: the wasm pages the memory
 * had at the start and after the small allocations and after the large ones. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "toolcage.h"

#define BLOCKS 200

/* Where a block that must not exist goes: compilers may take an allocation whose pointer is
 * only compared for NULL as a success and drop it. */
static void *volatile kept;

static void fill(unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed + i * 7u);
}

static int intact(const unsigned char *p, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        if (p[i] != (unsigned char)(seed + i * 7u)) return 0;
    return 1;
}

static const char *small(void) {
    static unsigned char *blocks[BLOCKS];
    static size_t sizes[BLOCKS];
    for (unsigned i = 0; i < BLOCKS; i++) {
        sizes[i] = (i * 37u) % 2000u; /* 0 included: a valid, distinct block */
        blocks[i] = malloc(sizes[i]);
        if (!blocks[i] || ((uintptr_t)blocks[i] & 15u)) return "malloc";
        fill(blocks[i], sizes[i], i);
    }
    for (unsigned i = 0; i < BLOCKS; i += 2) free(blocks[i]);
    for (unsigned i = 0; i < BLOCKS; i += 2) { /* reuses the freed slots */
        blocks[i] = malloc(sizes[i]);
        if (!blocks[i]) return "malloc after free";
        fill(blocks[i], sizes[i], i);
    }
    for (unsigned i = 1; i < BLOCKS; i += 3) {
        size_t grown = sizes[i] * 3u + 100u;
        unsigned char *p = realloc(blocks[i], grown);
        if (!p || !intact(p, sizes[i], i)) return "realloc keeps the content";
        blocks[i] = p;
        sizes[i] = grown;
        fill(p, grown, i);
    }
    for (unsigned i = 0; i < BLOCKS; i++)
        if (!intact(blocks[i], sizes[i], i)) return "blocks do not overlap";
    unsigned char *zeros = calloc(1000, 9);
    if (!zeros) return "calloc";
    for (size_t i = 0; i < 9000; i++)
        if (zeros[i]) return "calloc zeroes";
    free(zeros);
    void *wide = aligned_alloc(4096, 100);
    void *memaligned = NULL;
    if (!wide || ((uintptr_t)wide & 4095u)) return "aligned_alloc";
    if (posix_memalign(&memaligned, 256, 10) || ((uintptr_t)memaligned & 255u))
        return "posix_memalign";
    memset(wide, 1, 100);
    wide = realloc(wide, 9000);
    if (!wide || ((unsigned char *)wide)[99] != 1 || ((uintptr_t)wide & 15u))
        return "realloc of an aligned block";
    free(wide);
    free(memaligned);
    size_t huge = SIZE_MAX / 2;
    if ((kept = calloc(huge, 4))) return "calloc past size_t";
    if ((kept = realloc(blocks[0], huge * 2))) return "realloc past the address space";
    if (!intact(blocks[0], sizes[0], 0)) return "a failed realloc keeps the block";
    for (unsigned i = 0; i < BLOCKS; i++) free(blocks[i]);
    free(NULL);
    char *copy = strdup("libc allocates through it too");
    if (!copy || strcmp(copy, "libc allocates through it too")) return "strdup";
    free(copy);
    return NULL;
}

static const char *large(void) {
    size_t n = 3u << 20; /* past the arena and the initial memory */
    unsigned char *big = malloc(n);
    if (!big) return "a large block";
    fill(big, n, 3);
    unsigned char *bigger = realloc(big, 2 * n);
    if (!bigger || !intact(bigger, n, 3)) return "realloc of a large block";
    free(bigger);
    if ((kept = malloc((size_t)1 << 30))) return "a block past the memory limit";
    return NULL;
}

static const char *run(const char *args, tc_buf *out) {
    long long start = __builtin_wasm_memory_size(0);
    const char *failed = small();
    long long after_small = __builtin_wasm_memory_size(0);
    if (!failed && tc_arg_bool(args, "large", 0)) failed = large();
    tc_detail_int("pages", start);
    tc_detail_int("pages_after_small", after_small);
    tc_detail_int("pages_after_large", __builtin_wasm_memory_size(0));
    if (failed) return tc_fail(out, TC_EXECUTION, "%s", failed);
    tc_buf_puts(out, "ok");
    return NULL;
}

int main(void) { return tc_tool_main(run); }
