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

void tc_buf_json_string(tc_buf *b, const char *s, size_t n) {
    static const char hex[] = "0123456789abcdef";
    tc_buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            tc_buf_putc(b, '\\');
            tc_buf_putc(b, (char)c);
        } else if (c == '\n') {
            tc_buf_puts(b, "\\n");
        } else if (c == '\r') {
            tc_buf_puts(b, "\\r");
        } else if (c == '\t') {
            tc_buf_puts(b, "\\t");
        } else if (c < 0x20) {
            char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            tc_buf_put(b, esc, 6);
        } else {
            tc_buf_putc(b, (char)c);
        }
    }
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

/* Where the result document is left for the host (see tc_tool_main). */
static const char *result_data;
static size_t result_size;

/* (address << 32) | length of the result document, 0 when it went to stdout. */
__attribute__((export_name("toolcage_result"))) uint64_t toolcage_result(void) {
    return ((uint64_t)(uintptr_t)result_data << 32) | (uint64_t)result_size;
}

int tc_tool_main(tc_tool_fn run) {
    tc_buf in = {0}, out = {0}, doc = {0};
    int from_host = read_arguments(&in);
    const char *error_type = run(tc_buf_cstr(&in), &out);
    tc_buf_cstr(&out);
    if (error_type) {
        tc_buf_puts(&doc, "{\"ok\":false,\"error_type\":");
        tc_buf_json_string(&doc, error_type, strlen(error_type));
        tc_buf_puts(&doc, ",\"message\":");
    } else {
        tc_buf_puts(&doc, "{\"ok\":true,\"text\":");
    }
    tc_buf_json_string(&doc, out.data, out.len);
    tc_buf_puts(&doc, "}\n");
    if (from_host) {
        /* The toolcage host (which passes argv[1]) reads the result out of linear memory
         * through toolcage_result(): a write to stdout would cost a trip through its I/O
         * threads. */
        result_data = doc.data;
        result_size = doc.len;
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

const char *tc_fail_errno(tc_buf *out, int err, const char *what, const char *path) {
    switch (err) {
        case ENOENT:
            return tc_fail(out, TC_EXECUTION, "%s: %s does not exist", what, path);
        case EEXIST:
            return tc_fail(out, TC_EXECUTION, "%s: %s already exists", what, path);
        case EACCES:
        case EPERM:
        case EROFS:
        case ENOTCAPABLE:
            return tc_fail(out, TC_PERMISSION,
                           "%s: %s is not writable here (read-only mount or no permission)", what,
                           path);
        case EISDIR:
            return tc_fail(out, TC_EXECUTION, "%s: %s is a directory", what, path);
        case ENOTDIR:
            return tc_fail(out, TC_EXECUTION, "%s: %s (or a parent) is not a directory", what,
                           path);
        case ENOTEMPTY:
            return tc_fail(out, TC_EXECUTION,
                           "%s: directory %s is not empty (pass recursive=true to delete it "
                           "with its contents)",
                           what, path);
        case ELOOP:
            return tc_fail(out, TC_PERMISSION, "%s: %s: too many symbolic links", what, path);
        default:
            return tc_fail(out, TC_EXECUTION, "%s: %s: %s", what, path, strerror(err));
    }
}

static int reserve(tc_buf *b, size_t room) {
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
    if (reserve(into, first)) return ENOMEM;
    ssize_t n = read(fd, into->data + into->len, first);
    if (n < 0) return errno == EBADF ? EISDIR : errno; /* a directory opens, but reads EBADF */
    into->len += (size_t)n;
    if ((size_t)n == first) {
        struct stat st;
        if (fstat(fd, &st) != 0) return errno;
        if (size_out) *size_out = (long long)st.st_size;
        if ((unsigned long long)st.st_size > cap) return EFBIG;
        size_t rest = (size_t)st.st_size > first ? (size_t)st.st_size - first : 0;
        if (reserve(into, rest + 1)) return ENOMEM;
        /* Read to the end; one byte more than expected tells a file that grew meanwhile. */
        while ((n = read(fd, into->data + into->len, into->cap - into->len - 1)) > 0) {
            into->len += (size_t)n;
            if (into->len > cap) return EFBIG;
            if (into->len + 1 >= into->cap && reserve(into, into->len)) return ENOMEM;
        }
        if (n < 0) return errno;
    }
    if (size_out) *size_out = (long long)into->len;
    into->data[into->len] = '\0';
    return 0;
}

int tc_read_file(const char *path, size_t cap, tc_buf *into, long long *size_out) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return errno;
    int err = tc_read_fd(fd, cap, into, size_out);
    /* No close: a guest lives for one call and its descriptors die with its store, so
     * closing would only cost one more trip into the host. Loops over many files use
     * tc_read_fd and close themselves. */
    return err;
}

int tc_write_file(const char *path, const char *data, size_t len, int flags) {
    int fd = open(path, O_WRONLY | flags, 0644);
    if (fd < 0) return errno;
    size_t done = 0;
    while (done < len) {
        ssize_t n = write(fd, data + done, len - done);
        if (n < 0) {
            int err = errno;
            close(fd);
            return err;
        }
        done += (size_t)n;
    }
    if (close(fd) != 0) return errno;
    return 0;
}

int tc_is_utf8(const char *data, size_t len) {
    const unsigned char *s = (const unsigned char *)data;
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        size_t n;
        unsigned min;
        unsigned cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1, min = 0x80, cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2, min = 0x800, cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3, min = 0x10000, cp = c & 0x07;
        } else {
            return 0;
        }
        if (i + n >= len) return 0;
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) return 0;
        i += n + 1;
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
