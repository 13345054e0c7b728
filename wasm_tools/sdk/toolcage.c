/* toolcage guest SDK, file helpers; see toolcage.h. */
#include "toolcage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wasi/api.h>
#include <wasm_simd128.h>

void tc_buf_put(tc_buf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *grown = realloc(b->data, cap);
        if (!grown) abort();
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void tc_buf_puts(tc_buf *b, const char *s) { tc_buf_put(b, s, strlen(s)); }
void tc_buf_putc(tc_buf *b, char c) { tc_buf_put(b, &c, 1); }

static size_t utf8_seq(const unsigned char *s, size_t len, unsigned *cp);

/* The first index from i of a byte of u[0, n) that a JSON string cannot hold as it is (a
 * control, '"', '\\') or that starts a non-ASCII character; 16 bytes at a time with wasm SIMD
 * (wasmtime compiles it to the host's vector instructions), since every result's text
 * passes here. */
static __attribute__((target("simd128"))) size_t next_special(const unsigned char *u, size_t i,
                                                               size_t n) {
    const v128_t quote = wasm_i8x16_splat('"'), backslash = wasm_i8x16_splat('\\');
    const v128_t space = wasm_i8x16_splat(0x20);
    for (; i + 16 <= n; i += 16) {
        v128_t v = wasm_v128_load(u + i);
        /* Unsigned v < 0x20 catches the controls, and as signed, v < 0 the bytes >= 0x80. */
        v128_t special = wasm_v128_or(wasm_i8x16_eq(v, quote), wasm_i8x16_eq(v, backslash));
        special = wasm_v128_or(special, wasm_u8x16_lt(v, space));
        special = wasm_v128_or(special, wasm_i8x16_lt(v, wasm_i8x16_splat(0)));
        uint32_t mask = wasm_i8x16_bitmask(special);
        if (mask) return i + (size_t)__builtin_ctz(mask);
    }
    for (; i < n; i++)
        if (u[i] < 0x20 || u[i] >= 0x80 || u[i] == '"' || u[i] == '\\') return i;
    return n;
}

void tc_buf_json_string(tc_buf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    tc_buf_putc(b, '"');
    size_t plain = 0; /* s[plain, i) needs no escape: copied in one piece */
    for (size_t i = next_special(u, 0, n); i < n; i = next_special(u, i + 1, n)) {
        unsigned char c = u[i];
        if (c >= 0x80) {
            unsigned cp;
            size_t len = utf8_seq(u + i, n - i, &cp);
            if (len) {
                i += len - 1;
                continue;
            }
            tc_buf_put(b, s + plain, i - plain);
            tc_buf_puts(b, "\xef\xbf\xbd"); /* U+FFFD for a byte that is not UTF-8 */
            plain = i + 1;
            continue;
        }
        tc_buf_put(b, s + plain, i - plain);
        plain = i + 1;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            tc_buf_put(b, esc, 2);
        } else if (c == '\n') {
            tc_buf_puts(b, "\\n");
        } else if (c == '\r') {
            tc_buf_puts(b, "\\r");
        } else if (c == '\t') {
            tc_buf_puts(b, "\\t");
        } else {
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            tc_buf_put(b, esc, 6);
        }
    }
    tc_buf_put(b, s + plain, n - plain);
    tc_buf_putc(b, '"');
}

const char *tc_buf_cstr(tc_buf *b) {
    if (!b->data) tc_buf_put(b, "", 0);
    return b->data;
}

void tc_buf_free(tc_buf *b) {
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

const char *tc_json_ws(const char *p) {
    while (p && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

static const char *skip_string(const char *p) {
    for (p++; *p; p++) {
        if (*p == '\\') {
            if (!*++p) return NULL;
        } else if (*p == '"') {
            return p + 1;
        }
    }
    return NULL;
}

const char *tc_json_skip(const char *p) {
    p = tc_json_ws(p);
    if (!p || !*p) return NULL;
    if (*p == '"') return skip_string(p);
    if (*p == '{' || *p == '[') {
        char close = *p == '{' ? '}' : ']';
        p = tc_json_ws(p + 1);
        if (*p == close) return p + 1;
        for (;;) {
            if (close == '}') {
                p = tc_json_ws(p);
                if (*p != '"' || !(p = skip_string(p))) return NULL;
                p = tc_json_ws(p);
                if (*p++ != ':') return NULL;
            }
            if (!(p = tc_json_skip(p))) return NULL;
            p = tc_json_ws(p);
            if (*p == ',') {
                p++;
                continue;
            }
            return *p == close ? p + 1 : NULL;
        }
    }
    while (*p && !strchr(",]} \t\r\n", *p)) p++;
    return p;
}

const char *tc_json_get(const char *obj, const char *key) {
    const char *p = tc_json_ws(obj);
    if (!p || *p != '{') return NULL;
    size_t klen = strlen(key);
    p = tc_json_ws(p + 1);
    while (*p == '"') {
        const char *name = p + 1;
        const char *end = skip_string(p);
        if (!end) return NULL;
        int match = (size_t)(end - 1 - name) == klen && memcmp(name, key, klen) == 0;
        p = tc_json_ws(end);
        if (*p++ != ':') return NULL;
        p = tc_json_ws(p);
        if (match) return p;
        if (!(p = tc_json_skip(p))) return NULL;
        p = tc_json_ws(p);
        if (*p != ',') return NULL;
        p = tc_json_ws(p + 1);
    }
    return NULL;
}

static void put_utf8(tc_buf *b, unsigned long cp) {
    char u[4];
    if (cp < 0x80) {
        tc_buf_putc(b, (char)cp);
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        tc_buf_put(b, u, 2);
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        tc_buf_put(b, u, 3);
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        tc_buf_put(b, u, 4);
    }
}

static long hex4(const char *p) {
    char tmp[5] = {0};
    for (int i = 0; i < 4; i++) {
        if (!p[i] || !strchr("0123456789abcdefABCDEF", p[i])) return -1;
        tmp[i] = p[i];
    }
    return strtol(tmp, NULL, 16);
}

char *tc_json_str(const char *p, size_t *len) {
    p = tc_json_ws(p);
    if (!p || *p != '"') return NULL;
    tc_buf b = {0};
    for (p++; *p && *p != '"'; p++) {
        if (*p != '\\') {
            tc_buf_putc(&b, *p);
            continue;
        }
        p++;
        switch (*p) {
            case 'n': tc_buf_putc(&b, '\n'); break;
            case 't': tc_buf_putc(&b, '\t'); break;
            case 'r': tc_buf_putc(&b, '\r'); break;
            case 'b': tc_buf_putc(&b, '\b'); break;
            case 'f': tc_buf_putc(&b, '\f'); break;
            case 'u': {
                long cp = hex4(p + 1);
                if (cp < 0) goto bad;
                p += 4;
                if (cp >= 0xD800 && cp < 0xDC00 && p[1] == '\\' && p[2] == 'u') {
                    long lo = hex4(p + 3);
                    if (lo >= 0xDC00 && lo < 0xE000) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        p += 6;
                    }
                }
                put_utf8(&b, (unsigned long)cp);
                break;
            }
            case '\0': goto bad;
            default: tc_buf_putc(&b, *p);
        }
    }
    if (*p != '"') goto bad;
    if (len) *len = b.len;
    tc_buf_cstr(&b);
    return b.data;
bad:
    tc_buf_free(&b);
    return NULL;
}

int tc_json_num(const char *p, double *out) {
    p = tc_json_ws(p);
    if (!p) return 0;
    char *end;
    double v = strtod(p, &end);
    if (end == p) return 0;
    *out = v;
    return 1;
}

int tc_json_bool(const char *p, int *out) {
    p = tc_json_ws(p);
    if (!p) return 0;
    if (strncmp(p, "true", 4) == 0) return *out = 1, 1;
    if (strncmp(p, "false", 5) == 0) return *out = 0, 1;
    return 0;
}

/* The arguments document: argv[1] when the host passed it there (no I/O, so no trip through
 * the host's file-operation threads), else all of stdin. */
static int read_arguments(tc_buf *in) {
    __wasi_size_t argc = 0, size = 0;
    if (__wasi_args_sizes_get(&argc, &size) == 0 && argc >= 2) {
        char **argv = malloc(argc * sizeof *argv);
        char *buf = malloc(size);
        if (argv && buf && __wasi_args_get((uint8_t **)argv, (uint8_t *)buf) == 0) {
            tc_buf_puts(in, argv[1]);
            free(argv);
            free(buf);
            return 1;
        }
        free(argv);
        free(buf);
    }
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0) tc_buf_put(in, chunk, n);
    return 0;
}

static size_t utf8_seq(const unsigned char *s, size_t len, unsigned *cp);

/* The format characters (Unicode category Cf, as of Unicode 15.1), as ranges in order: the
 * same table as the host's (toolcage.runtime._display.FORMAT_RANGES). */
static const unsigned FORMAT_RANGES[][2] = {
    {0x00AD, 0x00AD}, {0x0600, 0x0605}, {0x061C, 0x061C}, {0x06DD, 0x06DD}, {0x070F, 0x070F},
    {0x0890, 0x0891}, {0x08E2, 0x08E2}, {0x180E, 0x180E}, {0x200B, 0x200F}, {0x202A, 0x202E},
    {0x2060, 0x2064}, {0x2066, 0x206F}, {0xFEFF, 0xFEFF}, {0xFFF9, 0xFFFB}, {0x110BD, 0x110BD},
    {0x110CD, 0x110CD}, {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A},
    {0xE0001, 0xE0001}, {0xE0020, 0xE007F},
};

/* Whether a display line shows `cp` as its escape: a C1 control, U+2028, U+2029 or a format
 * character. */
static int is_invisible(unsigned cp) {
    if (cp < 0xA0) return cp >= 0x80;
    if (cp == 0x2028 || cp == 0x2029) return 1;
    for (size_t i = 0; i < sizeof FORMAT_RANGES / sizeof *FORMAT_RANGES; i++) {
        if (cp < FORMAT_RANGES[i][0]) return 0;
        if (cp <= FORMAT_RANGES[i][1]) return 1;
    }
    return 0;
}

/* `s[0..n)` as one line of visible text, into `into` (see tc_result_display): a C0 control
 * or DEL becomes a space, an invisible character its escape; bytes that are not UTF-8 stay,
 * for tc_buf_json_string to write as U+FFFD. */
static void visible_line(tc_buf *into, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, plain = 0; /* u[plain..i) is copied as it is */
    while (i < n) {
        unsigned char c = u[i];
        unsigned cp = c;
        size_t len = c < 0x80 ? 1 : utf8_seq(u + i, n - i, &cp);
        if ((c >= 0x20 && c < 0x7F) || len == 0 || (len > 1 && !is_invisible(cp))) {
            i += len ? len : 1;
            continue;
        }
        tc_buf_put(into, s + plain, i - plain);
        if (len == 1) {
            tc_buf_putc(into, ' ');
        } else {
            int digits = cp > 0xFFFF ? 8 : 4;
            tc_buf_putc(into, '\\');
            tc_buf_putc(into, digits == 8 ? 'U' : 'u');
            for (int d = digits - 1; d >= 0; d--) tc_buf_putc(into, hex[(cp >> (4 * d)) & 15]);
        }
        i += len;
        plain = i;
    }
    tc_buf_put(into, s + plain, n - plain);
}

/* Where the reply is left for the host (see tc_tool_main). */
static const char *reply_data;
static size_t reply_size;
/* The structured parts of a successful result: the details object without its closing
 * brace, the display line, the artifact array without its closing bracket. */
static tc_buf details_json, display_line, artifacts_json;
/* The argument a failure is about, if it names one. */
static tc_buf error_field;

/* (address << 32) | length of the reply, 0 when the result went to stdout. */
__attribute__((export_name("toolcage_reply"))) uint64_t toolcage_reply(void) {
    return ((uint64_t)(uintptr_t)reply_data << 32) | (uint64_t)reply_size;
}

/* Whether s[0, n) is valid UTF-8 (what tc_buf_json_string would copy unchanged). */
static int valid_utf8(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = next_special(u, 0, n); i < n; i = next_special(u, i + 1, n)) {
        unsigned cp;
        if (u[i] < 0x80) continue; /* a control or a quote: fine as it is */
        size_t len = utf8_seq(u + i, n - i, &cp);
        if (!len) return 0;
        i += len - 1;
    }
    return 1;
}

/* The members of a result document after its text (details, display, artifacts). */
static void put_members(tc_buf *doc, const tc_buf *shown) {
    if (details_json.len) {
        tc_buf_puts(doc, ",\"details\":");
        tc_buf_put(doc, details_json.data, details_json.len);
        tc_buf_putc(doc, '}');
    }
    if (shown->len) {
        tc_buf_puts(doc, ",\"display\":");
        tc_buf_json_string(doc, shown->data, shown->len);
    }
    if (artifacts_json.len) {
        tc_buf_puts(doc, ",\"artifacts\":");
        tc_buf_put(doc, artifacts_json.data, artifacts_json.len);
        tc_buf_putc(doc, ']');
    }
}

int tc_tool_main(tc_tool_fn run) {
    tc_buf in = {0}, out = {0}, doc = {0}, shown = {0};
    int from_host = read_arguments(&in);
    const char *error_type = run(tc_buf_cstr(&in), &out);
    tc_buf_cstr(&out);
    if (!error_type && display_line.len) visible_line(&shown, display_line.data, display_line.len);
    /* Room for the text and the envelope at once: growing by doubling would copy it again
     * and again. */
    size_t room = out.len + 128 + details_json.len + 2 * shown.len + artifacts_json.len +
                  2 * error_field.len;
    doc.data = malloc(room);
    doc.cap = doc.data ? room : 0;
    if (from_host && !error_type && valid_utf8(out.data, out.len)) {
        /* A text reply: 't', the length of the document without its text (4 bytes, little
         * endian), that document, then the text as it is -- the host takes it without
         * unescaping a JSON string. */
        tc_buf_put(&doc, "t\0\0\0\0{\"ok\":true", 15);
        put_members(&doc, &shown);
        tc_buf_putc(&doc, '}');
        size_t head = doc.len - 5;
        for (int i = 0; i < 4; i++) doc.data[1 + i] = (char)((head >> (8 * i)) & 0xFF);
        tc_buf_put(&doc, out.data, out.len);
        reply_data = doc.data;
        reply_size = doc.len;
        return 0;
    }
    if (from_host) tc_buf_putc(&doc, 'j'); /* a JSON reply: the result document follows */
    if (error_type) {
        tc_buf_puts(&doc, "{\"ok\":false,\"error_type\":");
        tc_buf_json_string(&doc, error_type, strlen(error_type));
        tc_buf_puts(&doc, ",\"message\":");
    } else {
        tc_buf_puts(&doc, "{\"ok\":true,\"text\":");
    }
    tc_buf_json_string(&doc, out.data, out.len);
    if (error_type && error_field.len) {
        tc_buf_puts(&doc, ",\"field\":");
        tc_buf_json_string(&doc, error_field.data, error_field.len);
    }
    if (!error_type) put_members(&doc, &shown);
    tc_buf_puts(&doc, "}\n");
    if (from_host) {
        /* The toolcage host (which passes argv[1]) reads the reply out of linear memory
         * through toolcage_reply(): a write to stdout would cost a trip through its I/O
         * threads. */
        reply_data = doc.data;
        reply_size = doc.len;
        return 0;
    }
    /* One write, past stdio's buffer. */
    for (size_t done = 0; done < doc.len;) {
        ssize_t n = write(1, doc.data + done, doc.len - done);
        if (n <= 0) return 1;
        done += (size_t)n;
    }
    return 0;
}

char *tc_arg_str(const char *args, const char *key, size_t *len) {
    const char *value = tc_json_get(args, key);
    return value ? tc_json_str(value, len) : NULL;
}

long long tc_arg_int(const char *args, const char *key, long long dflt) {
    double v;
    const char *value = tc_json_get(args, key);
    if (!value || !tc_json_num(value, &v)) return dflt;
    return (long long)v;
}

int tc_arg_bool(const char *args, const char *key, int dflt) {
    int v;
    const char *value = tc_json_get(args, key);
    if (!value || !tc_json_bool(value, &v)) return dflt;
    return v;
}

static void vprint(tc_buf *b, const char *fmt, va_list ap) {
    char small[512];
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    if (n < 0) {
        va_end(copy);
        return;
    }
    if ((size_t)n < sizeof small) {
        tc_buf_put(b, small, (size_t)n);
    } else {
        char *big = malloc((size_t)n + 1);
        if (!big) abort();
        vsnprintf(big, (size_t)n + 1, fmt, copy);
        tc_buf_put(b, big, (size_t)n);
        free(big);
    }
    va_end(copy);
}

void tc_buf_printf(tc_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vprint(b, fmt, ap);
    va_end(ap);
}

const char *tc_fail(tc_buf *out, const char *error_type, const char *fmt, ...) {
    out->len = 0;
    va_list ap;
    va_start(ap, fmt);
    vprint(out, fmt, ap);
    va_end(ap);
    return error_type;
}

const char *tc_fail_errno(tc_buf *out, int err, tc_access access, const char *what,
                          const char *path) {
    char *shown = tc_name(path);
    const char *type = TC_EXECUTION;
    out->len = 0;
    tc_buf_printf(out, "%s: %s", what, shown);
    switch (err) {
        case ENOENT: tc_buf_puts(out, " does not exist"); break;
        case EEXIST: tc_buf_puts(out, " already exists"); break;
        case EACCES:
        case EPERM:
        case ENOTCAPABLE:
            type = TC_PERMISSION;
            tc_buf_puts(out, access == TC_WRITING
                                 ? " is not writable here (read-only mount or no permission)"
                                 : " is not readable here (no permission)");
            break;
        case EROFS:
            type = TC_PERMISSION;
            tc_buf_puts(out, " is on a read-only file system");
            break;
        case ENOSPC:
            tc_buf_puts(out, ": the file system is full (no space left on device)");
            break;
        case EDQUOT:
            tc_buf_puts(out, ": the disk quota is exhausted (no space left for this user)");
            break;
        case EFBIG: tc_buf_puts(out, ": the file would exceed the file system's size limit"); break;
        case EISDIR: tc_buf_puts(out, " is a directory"); break;
        case ESTALE:
            tc_buf_puts(out, ": its directory was moved, removed or replaced while the tool ran");
            break;
        case ENOTDIR: tc_buf_puts(out, " (or a parent) is not a directory"); break;
        case ENOTEMPTY:
            tc_buf_puts(out, " is a directory that is not empty (pass recursive=true to delete "
                             "it with its contents)");
            break;
        case ELOOP:
            type = TC_PERMISSION;
            tc_buf_puts(out, " is a symbolic link (or goes through too many of them)");
            break;
        case EMLINK:
            type = TC_PERMISSION;
            tc_buf_puts(out, " is a file with more than one hard link; hard-linked files are "
                             "refused (the other link may be outside the mounts)");
            break;
        case ENAMETOOLONG: tc_buf_puts(out, ": a name in it is too long"); break;
        case EILSEQ:
            tc_buf_puts(out, " holds a name that is not valid UTF-8 (the sandbox shows only UTF-8 "
                             "names)");
            break;
        case EIO:
            tc_buf_puts(out, access == TC_WRITING
                                 ? ": I/O error (the file system may be read-only or failing)"
                                 : ": I/O error");
            break;
        case ENXIO: tc_buf_puts(out, " is not a regular file (a FIFO, socket or device)"); break;
        default: tc_buf_printf(out, ": %s", strerror(err));
    }
    free(shown);
    return type;
}

/* The length of the valid UTF-8 sequence at s (its code point in *cp), 0 when invalid. */
static size_t utf8_seq(const unsigned char *s, size_t len, unsigned *cp) {
    unsigned char c = s[0];
    size_t n;
    unsigned min, v;
    if (c < 0x80) return *cp = c, 1;
    if ((c & 0xE0) == 0xC0) n = 1, min = 0x80, v = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) n = 2, min = 0x800, v = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) n = 3, min = 0x10000, v = c & 0x07;
    else return 0;
    if (n >= len) return 0;
    for (size_t k = 1; k <= n; k++) {
        if ((s[k] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (s[k] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v < 0xE000)) return 0;
    *cp = v;
    return n + 1;
}

static int is_shown_escaped(unsigned cp) {
    return (cp >= 0x80 && cp <= 0x9F) || cp == 0x2028 || cp == 0x2029 || cp == 0x061C ||
           cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

void tc_buf_put_name(tc_buf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, plain = 0; /* u[plain..i) is copied as it is */
    while (i < n) {
        unsigned char c = u[i];
        if (c >= 0x20 && c < 0x7F && c != '\\') {
            i++;
            continue;
        }
        unsigned cp = 0;
        size_t len = c < 0x80 ? 1 : utf8_seq(u + i, n - i, &cp);
        if (len > 1 && !is_shown_escaped(cp)) {
            i += len;
            continue;
        }
        tc_buf_put(b, s + plain, i - plain);
        if (c == '\\') {
            tc_buf_puts(b, "\\\\");
        } else if (len > 1) {
            char esc[6] = {'\\', 'u', hex[cp >> 12], hex[(cp >> 8) & 15], hex[(cp >> 4) & 15],
                           hex[cp & 15]};
            tc_buf_put(b, esc, 6);
        } else {
            char esc[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
            tc_buf_put(b, esc, 4);
            len = 1;
        }
        i += len;
        plain = i;
    }
    tc_buf_put(b, s + plain, n - plain);
}

char *tc_name(const char *s) {
    tc_buf b = {0};
    tc_buf_put_name(&b, s, strlen(s));
    return (char *)tc_buf_cstr(&b);
}

int tc_buf_reserve(tc_buf *b, size_t room) {
    if (b->len + room + 1 <= b->cap) return 0;
    char *grown = realloc(b->data, b->len + room + 1);
    if (!grown) return ENOMEM;
    b->data = grown;
    b->cap = b->len + room + 1;
    return 0;
}

int tc_read_fd(int fd, size_t cap, tc_buf *into, long long *size_out) {
    /* No fstat up front: a first read of 64 KiB, and a short read is the end of a regular
     * file. Each WASI call is a trip through the host's I/O threads, so a small file costs
     * exactly one read. A larger one is sized once with fstat and read into one exact
     * buffer (growing by doubling would cost malloc about twice the file in linear memory). */
    const size_t first = 65536;
    if (tc_buf_reserve(into, first)) return ENOMEM;
    ssize_t n = read(fd, into->data + into->len, first);
    if (n < 0) return errno == EBADF ? EISDIR : errno; /* a directory opens, but reads EBADF */
    into->len += (size_t)n;
    if ((size_t)n == first) {
        struct stat st;
        if (fstat(fd, &st) != 0) return errno;
        if (size_out) *size_out = (long long)st.st_size;
        if ((unsigned long long)st.st_size > cap) return EFBIG;
        size_t rest = (size_t)st.st_size > first ? (size_t)st.st_size - first : 0;
        if (tc_buf_reserve(into, rest + 1)) return ENOMEM;
        /* Read to the end; one byte more than expected tells a file that grew meanwhile. */
        while ((n = read(fd, into->data + into->len, into->cap - into->len - 1)) > 0) {
            into->len += (size_t)n;
            if (into->len > cap) return EFBIG;
            if (into->len + 1 >= into->cap && tc_buf_reserve(into, into->len)) return ENOMEM;
        }
        if (n < 0) return errno;
    }
    if (size_out) *size_out = (long long)into->len;
    into->data[into->len] = '\0';
    return 0;
}

int tc_open_replaced(const char *path, int *fd) {
    *fd = open(path, O_RDONLY | O_NOFOLLOW);
    if (*fd < 0) return errno;
    struct stat st;
    if (fstat(*fd, &st) != 0) return errno;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    if (!S_ISREG(st.st_mode)) return ENXIO;
    if (st.st_nlink > 1) return EMLINK;
    return 0;
}

/* The errno the host named (_temp_error) when it could not make the temporary file. */
static int temp_errno(const char *name) {
    static const struct {
        const char *name;
        int value;
    } known[] = {
        {"ENOENT", ENOENT}, {"ENOTDIR", ENOTDIR}, {"ELOOP", ELOOP},   {"EACCES", EACCES},
        {"EPERM", EPERM},   {"EROFS", EROFS},     {"ENOSPC", ENOSPC}, {"EDQUOT", EDQUOT},
        {"EISDIR", EISDIR}, {"EEXIST", EEXIST},   {"EMLINK", EMLINK}, {"ENAMETOOLONG", ENAMETOOLONG},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(name, known[i].name) == 0) return known[i].value;
    return EIO;
}

int tc_temp_create(tc_temp *t, const char *args, const char *target) {
    t->fd = -1;
    char *name = tc_arg_str(args, "_temp", NULL);
    if (!name || !*name || strchr(name, '/')) {
        free(name);
        return ENOTSUP;
    }
    const char *slash = strrchr(target, '/');
    tc_buf path = {0};
    if (slash) tc_buf_put(&path, target, (size_t)(slash - target) + 1);
    tc_buf_puts(&path, name);
    int err = 0;
    char *refused = tc_arg_str(args, "_temp_error", NULL);
    if (refused) {
        err = temp_errno(refused);
        free(refused);
    } else if (tc_arg_bool(args, "_temp_made", 0)) {
        /* The host made it, empty, in the directory it holds: ESTALE when the directory at
         * the path is another one now, EEXIST when the name holds anything but that file. */
        struct stat st;
        t->fd = open(path.data, O_WRONLY | O_NOFOLLOW);
        if (t->fd < 0) {
            err = errno == ENOENT ? ESTALE : errno == ELOOP ? EEXIST : errno;
        } else if (fstat(t->fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
                   st.st_size != 0) {
            close(t->fd);
            t->fd = -1;
            err = EEXIST;
        }
    } else {
        t->fd = open(path.data, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
        err = t->fd < 0 ? errno : 0;
    }
    tc_buf_free(&path);
    free(name);
    return err;
}

int tc_temp_write(tc_temp *t, const char *data, size_t len) {
    for (size_t done = 0; done < len;) {
        ssize_t n = write(t->fd, data + done, len - done);
        if (n < 0) return errno;
        done += (size_t)n;
    }
    return 0;
}

int tc_temp_copy(tc_temp *t, int from) {
    const size_t chunk = 1u << 20;
    char *buf = malloc(chunk);
    if (!buf) return ENOMEM;
    int err = 0;
    for (;;) {
        ssize_t n = read(from, buf, chunk);
        if (n < 0) err = errno;
        if (n <= 0) break;
        if ((err = tc_temp_write(t, buf, (size_t)n)) != 0) break;
    }
    free(buf);
    return err;
}

int tc_temp_finish(tc_temp *t) {
    int err = fdatasync(t->fd) != 0 ? errno : 0;
    if (close(t->fd) != 0 && !err) err = errno;
    t->fd = -1;
    return err;
}

int tc_is_utf8(const char *data, size_t len) {
    const unsigned char *s = (const unsigned char *)data;
    unsigned cp;
    for (size_t i = 0, n; i < len; i += n) {
        if (s[i] < 0x80) {
            n = 1;
            continue;
        }
        if ((n = utf8_seq(s + i, len - i, &cp)) == 0) return 0;
    }
    return 1;
}

int tc_is_binary(const char *data, size_t len) {
    size_t head = len < 8192 ? len : 8192;
    if (memchr(data, '\0', head)) return 1;
    return !tc_is_utf8(data, len);
}

void tc_path_join(tc_buf *into, const char *dir, const char *name) {
    into->len = 0;
    tc_buf_puts(into, dir);
    if (into->len == 0 || into->data[into->len - 1] != '/') tc_buf_putc(into, '/');
    tc_buf_puts(into, name);
}

void tc_buf_truncation_marker(tc_buf *b, long long original_size) {
    tc_buf_puts(b, "[output truncated \xe2\x80\x94 original size: ");
    if (original_size < 0) {
        tc_buf_puts(b, "unknown]");
        return;
    }
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%lld", original_size);
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0) tc_buf_putc(b, ',');
        tc_buf_putc(b, digits[i]);
    }
    tc_buf_puts(b, " bytes]");
}

static void detail_key(const char *key) {
    tc_buf_putc(&details_json, details_json.len ? ',' : '{');
    tc_buf_json_string(&details_json, key, strlen(key));
    tc_buf_putc(&details_json, ':');
}

void tc_detail_strn(const char *key, const char *value, size_t n) {
    detail_key(key);
    tc_buf_json_string(&details_json, value, n);
}

void tc_detail_str(const char *key, const char *value) {
    if (!value) {
        detail_key(key);
        tc_buf_puts(&details_json, "null");
        return;
    }
    tc_detail_strn(key, value, strlen(value));
}

void tc_detail_name(const char *key, const char *name) {
    tc_buf shown = {0};
    tc_buf_put_name(&shown, name, strlen(name));
    tc_detail_strn(key, tc_buf_cstr(&shown), shown.len);
    tc_buf_free(&shown);
}

void tc_buf_int(tc_buf *b, long long value) {
    char digits[24];
    size_t n = 0;
    unsigned long long v = value < 0 ? 0ULL - (unsigned long long)value : (unsigned long long)value;
    do digits[sizeof digits - 1 - n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    if (value < 0) digits[sizeof digits - 1 - n++] = '-';
    tc_buf_put(b, digits + sizeof digits - n, n);
}

void tc_detail_int(const char *key, long long value) {
    detail_key(key);
    tc_buf_int(&details_json, value);
}

void tc_detail_bool(const char *key, int value) {
    detail_key(key);
    tc_buf_puts(&details_json, value ? "true" : "false");
}

/* The end of the one JSON value at p, or NULL. Literals are checked whole and a number must
 * start like one, so that a word that is no JSON cannot spoil the result document. */
static const char *value_end(const char *p) {
    p = tc_json_ws(p);
    if (!p || !*p) return NULL;
    const char *end = tc_json_skip(p);
    if (!end) return NULL;
    size_t n = (size_t)(end - p);
    if (*p == 't') return n == 4 && strncmp(p, "true", 4) == 0 ? end : NULL;
    if (*p == 'f') return n == 5 && strncmp(p, "false", 5) == 0 ? end : NULL;
    if (*p == 'n') return n == 4 && strncmp(p, "null", 4) == 0 ? end : NULL;
    return strchr("\"{[-0123456789", *p) ? end : NULL;
}

void tc_detail_json(const char *key, const char *value) {
    const char *start = tc_json_ws(value);
    const char *end = value_end(start);
    if (!end) return;
    detail_key(key);
    tc_buf_put(&details_json, start, (size_t)(end - start));
}

void tc_result_details(const char *object) {
    const char *start = tc_json_ws(object);
    const char *end = start && *start == '{' ? value_end(start) : NULL;
    if (!end) return;
    details_json.len = 0;
    if (*tc_json_ws(start + 1) != '}') /* all but the closing brace: members may follow */
        tc_buf_put(&details_json, start, (size_t)(end - 1 - start));
}

void tc_result_display(const char *fmt, ...) {
    display_line.len = 0;
    va_list ap;
    va_start(ap, fmt);
    vprint(&display_line, fmt, ap);
    va_end(ap);
}

tc_buf *tc_display(void) { return &display_line; }

void tc_error_field(const char *field) {
    error_field.len = 0;
    if (field) tc_buf_puts(&error_field, field);
}

void tc_result_artifact(const char *kind, const char *ref, const char *action) {
    tc_buf shown = {0};
    tc_buf_put_name(&shown, ref, strlen(ref));
    tc_buf_putc(&artifacts_json, artifacts_json.len ? ',' : '[');
    tc_buf_puts(&artifacts_json, "{\"kind\":");
    tc_buf_json_string(&artifacts_json, kind, strlen(kind));
    tc_buf_puts(&artifacts_json, ",\"ref\":");
    tc_buf_json_string(&artifacts_json, tc_buf_cstr(&shown), shown.len);
    tc_buf_puts(&artifacts_json, ",\"action\":");
    tc_buf_json_string(&artifacts_json, action, strlen(action));
    tc_buf_putc(&artifacts_json, '}');
    tc_buf_free(&shown);
}

void tc_buf_size(tc_buf *b, unsigned long long bytes) {
    if (bytes < 1024) {
        tc_buf_printf(b, "%llu B", bytes);
        return;
    }
    unsigned long long unit = 1024;
    int scale = 0;
    while (scale < 3 && bytes / 1024 >= unit) {
        unit *= 1024;
        scale++;
    }
    unsigned long long tenths = bytes / unit * 10 + (bytes % unit * 10 + unit / 2) / unit;
    tc_buf_printf(b, "%llu.%llu %cB", tenths / 10, tenths % 10, "KMGT"[scale]);
}

const char *tc_base_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return slash && slash[1] ? slash + 1 : path;
}

long long tc_json_pluck(const char *array, const char *key, size_t max, tc_buf *into,
                        size_t *kept_out) {
    into->len = 0;
    tc_buf_putc(into, '[');
    const char *p = tc_json_ws(array);
    long long count = -1;
    size_t kept = 0;
    if (p && *p == '[') {
        count = 0;
        p = tc_json_ws(p + 1);
        while (p && *p && *p != ']') {
            count++;
            const char *value = tc_json_ws(tc_json_get(p, key));
            const char *end = value_end(value);
            if (end && *value != 'n' && kept < max) {
                if (kept++) tc_buf_putc(into, ',');
                tc_buf_put(into, value, (size_t)(end - value));
            }
            p = tc_json_ws(tc_json_skip(p));
            if (!p || *p != ',') break;
            p = tc_json_ws(p + 1);
        }
    }
    tc_buf_putc(into, ']');
    if (kept_out) *kept_out = kept;
    return count;
}
