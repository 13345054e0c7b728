/*
 * Links of a page made absolute (see url.h): RFC 3986 reference resolution against the
 * page's URL, with dot segments removed.
 */
#include "url.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static int is_space(char ch) {
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f';
}

/* A URL with the characters that would end a Markdown link target escaped. */
static void put_url(tc_buf *into, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch <= ' ' || ch == '(' || ch == ')' || ch == '<' || ch == '>' || ch == 0x7F) {
            if (is_space((char)ch) && (i == 0 || i + 1 == n)) continue;
            char hex[4];
            snprintf(hex, sizeof hex, "%%%02X", ch);
            tc_buf_puts(into, hex);
        } else {
            tc_buf_putc(into, (char)ch);
        }
    }
}

/* RFC 3986's remove_dot_segments on the path that starts at `at` in `url` (up to its
 * query or fragment), in place. */
static void remove_dot_segments(tc_buf *url, size_t at) {
    char *s = url->data;
    size_t end = at;
    while (end < url->len && s[end] != '?' && s[end] != '#') end++;
    size_t in = at, out = at;
    while (in < end) {
        size_t seg = in + 1; /* s[in] is '/' */
        size_t next = seg;
        while (next < end && s[next] != '/') next++;
        size_t n = next - seg;
        if (n == 1 && s[seg] == '.') {
            if (next == end) s[out++] = '/';
        } else if (n == 2 && s[seg] == '.' && s[seg + 1] == '.') {
            while (out > at && s[out - 1] != '/') out--; /* drop the last segment */
            if (out > at) out--;
            if (next == end) s[out++] = '/';
        } else {
            memmove(s + out, s + in, next - in);
            out += next - in;
        }
        in = next;
    }
    if (out == at && end > at) s[out++] = '/';
    memmove(s + out, s + end, url->len - end);
    url->len = out + (url->len - end);
    s[url->len] = '\0';
}

void wf_resolve(const char *base, const char *ref, size_t len, tc_buf *into) {
    size_t scheme = 0;
    while (scheme < len && (isalnum((unsigned char)ref[scheme]) || ref[scheme] == '+' ||
                            ref[scheme] == '-' || ref[scheme] == '.'))
        scheme++;
    const char *sep = base ? strstr(base, "://") : NULL;
    if (!sep || (scheme && scheme < len && ref[scheme] == ':') || (len && ref[0] == '#')) {
        put_url(into, ref, len);
        return;
    }
    tc_buf joined = {0};
    if (len >= 2 && ref[0] == '/' && ref[1] == '/') { /* scheme-relative */
        tc_buf_put(&joined, base, (size_t)(sep - base) + 1);
    } else {
        const char *host_end = strpbrk(sep + 3, "/?#");
        size_t root = host_end ? (size_t)(host_end - base) : strlen(base);
        if (len && ref[0] == '/') {
            tc_buf_put(&joined, base, root);
        } else if (len && ref[0] == '?') {
            const char *query = strpbrk(base + root, "?#");
            tc_buf_put(&joined, base, query ? (size_t)(query - base) : strlen(base));
        } else { /* relative to the base's directory */
            const char *query = strpbrk(base + root, "?#");
            size_t dir = query ? (size_t)(query - base) : strlen(base);
            while (dir > root && base[dir - 1] != '/') dir--;
            tc_buf_put(&joined, base, dir);
            if (dir == root) tc_buf_putc(&joined, '/');
        }
    }
    tc_buf_put(&joined, ref, len);
    tc_buf_cstr(&joined);
    const char *path = strchr(joined.data + (sep - base) + 3, '/');
    if (path) remove_dot_segments(&joined, (size_t)(path - joined.data));
    put_url(into, joined.data, joined.len);
    tc_buf_free(&joined);
}
