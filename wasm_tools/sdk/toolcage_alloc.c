/* malloc and friends for guests: the free part of the initial linear memory first.
 *
 * A guest lives for one call in a fresh instance, so what matters is what its first few
 * allocations cost. zig's libc allocator takes a new 64 KiB wasm page from memory.grow
 * for each size class it meets (a small tool grows its memory five or six times per call)
 * and never uses the room its initial memory has past the data. Each grow is an mprotect
 * in wasmtime's pooled memory slot, and the next instance in that slot shrinks it back
 * with mprotect(PROT_NONE): a TLB flush on every CPU the host process last ran on, an
 * interrupt per CPU on a virtual machine. This allocator carves blocks from the initial
 * memory -- a zero-filled arena in the guest's data, then what lies past the data -- and
 * grows the memory only when that runs out.
 *
 * Blocks are power-of-two slots (32 bytes up), each with a 16-byte header (its size class
 * and its offset into the slot, for the over-aligned ones), kept on a free list per class
 * when freed: no coalescing, like the allocator it replaces. Guests are single-threaded.
 * zig's libc defines these names weakly, so these take their place in every guest. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HEADER 16u
#define MIN_SHIFT 5u /* 32-byte slots: the header and 16 bytes */
#define MAX_SHIFT 31u
#define WASM_PAGE 65536u

typedef struct {
    uint32_t shift;  /* the slot is 1 << shift bytes */
    uint32_t offset; /* from the slot's start to this header (0 unless over-aligned) */
    uint32_t pad[2];
} header;

#define ARENA (1u << 20)

extern unsigned char __heap_base;

/* Zero-filled data: it lies inside the initial memory and costs nothing until touched (a
 * fresh instance maps it copy-on-write, and it is not part of the module's image). */
static unsigned char arena[ARENA] __attribute__((aligned(16)));
static uintptr_t next_free, region_end; /* the unused part of the current region */
static int past_arena;
static void *free_slots[MAX_SHIFT + 1];

static unsigned shift_for(size_t need) {
    unsigned shift = MIN_SHIFT;
    while (shift <= MAX_SHIFT && ((size_t)1 << shift) < need) shift++;
    return shift;
}

static uintptr_t align16(uintptr_t at) { return (at + 15u) & ~(uintptr_t)15u; }

/* Room for `size` more bytes past next_free: the arena, then the memory past the data,
 * then memory.grow (by what this block needs: tools that budget their memory watch its
 * size). */
static int make_room(size_t size) {
    if (!region_end) {
        next_free = (uintptr_t)arena;
        region_end = next_free + ARENA;
    }
    if (size <= region_end - next_free) return 1;
    if (!past_arena) {
        past_arena = 1;
        next_free = align16((uintptr_t)&__heap_base);
        region_end = (uintptr_t)__builtin_wasm_memory_size(0) * WASM_PAGE;
        if (next_free <= region_end && size <= region_end - next_free) return 1;
    }
    size_t pages = (size + 15u + WASM_PAGE - 1u) / WASM_PAGE;
    size_t old = __builtin_wasm_memory_grow(0, pages);
    if (old == SIZE_MAX) return 0;
    uintptr_t start = (uintptr_t)old * WASM_PAGE;
    if (start != region_end || next_free > region_end) next_free = start; /* not contiguous */
    region_end = start + pages * WASM_PAGE;
    next_free = align16(next_free);
    return size <= region_end - next_free;
}

/* `size` bytes (a power of two, at least 32) aligned to 16, never used before. */
static void *carve(size_t size) {
    if (!make_room(size)) return NULL;
    void *slot = (void *)next_free;
    next_free += size;
    return slot;
}

/* A block of at least `n` bytes whose address is a multiple of `align` (a power of two). */
static void *block(size_t n, size_t align) {
    size_t extra = align > HEADER ? align : 0;
    if (n > SIZE_MAX / 2 - HEADER - extra) {
        errno = ENOMEM;
        return NULL;
    }
    unsigned shift = shift_for(n + HEADER + extra);
    if (shift > MAX_SHIFT) {
        errno = ENOMEM;
        return NULL;
    }
    unsigned char *slot = free_slots[shift];
    if (slot) {
        free_slots[shift] = *(void **)slot;
    } else {
        slot = carve((size_t)1 << shift);
        if (!slot) {
            errno = ENOMEM;
            return NULL;
        }
    }
    uintptr_t user = (uintptr_t)slot + HEADER;
    if (extra) user = (user + align - 1u) & ~(uintptr_t)(align - 1u);
    header *h = (header *)(user - HEADER);
    h->shift = shift;
    h->offset = (uint32_t)((uintptr_t)h - (uintptr_t)slot);
    return (void *)user;
}

static header *header_of(void *p) { return (header *)((unsigned char *)p - HEADER); }

static size_t usable(header *h) { return ((size_t)1 << h->shift) - h->offset - HEADER; }

void *malloc(size_t n) { return block(n, HEADER); }

void free(void *p) {
    if (!p) return;
    header *h = header_of(p);
    unsigned shift = h->shift;
    void **slot = (void **)((unsigned char *)h - h->offset);
    *slot = free_slots[shift];
    free_slots[shift] = slot;
}

void *calloc(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = malloc(count * size);
    if (p) memset(p, 0, count * size);
    return p;
}

void *realloc(void *p, size_t n) {
    if (!p) return malloc(n);
    header *h = header_of(p);
    size_t have = usable(h);
    if (n <= have) return p;
    void *q = malloc(n); /* C keeps no over-alignment across realloc */
    if (!q) return NULL;
    memcpy(q, p, have);
    free(p);
    return q;
}

void *reallocarray(void *p, size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, count * size);
}

size_t malloc_usable_size(void *p) { return p ? usable(header_of(p)) : 0; }

void *aligned_alloc(size_t align, size_t n) {
    if (!align || (align & (align - 1u))) {
        errno = EINVAL;
        return NULL;
    }
    return block(n, align < HEADER ? HEADER : align);
}

void *memalign(size_t align, size_t n) { return aligned_alloc(align, n); }

int posix_memalign(void **out, size_t align, size_t n) {
    if (align < sizeof(void *) || (align & (align - 1u))) return EINVAL;
    void *p = aligned_alloc(align, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}

void *valloc(size_t n) { return aligned_alloc(WASM_PAGE, n); }
