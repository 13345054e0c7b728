/*
 * web_fetch: fetch a page and turn it into Markdown or plain text, inside the guest.
 *
 * The HTML converter is a single forgiving pass over the markup -- no DOM, no recursion,
 * bounded state -- so hostile HTML (unclosed tags, deep nesting, bogus entities, stray
 * '<') degrades into odd text rather than a crash or a blow-up. script, style, noscript,
 * template, svg and head content are dropped; headings, links, lists, code blocks and
 * tables keep a readable Markdown shape; entities are decoded. Text types other than
 * HTML pass through; binary types are refused.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "toolcage_host.h"

#define MAX_DEPTH 32

typedef struct {
    tc_buf *out;
    int markdown;
    int pre;             /* inside <pre> */
    int skip;            /* inside head/title: drop text */
    int space;           /* a collapsed space is pending */
    int list_depth;
    int ordered[MAX_DEPTH];
    int counter[MAX_DEPTH];
    char *href[MAX_DEPTH];
    int link_depth;
    int table_row;       /* rows seen in the current table */
    int cells;           /* cells in the current row */
    int header_cells;    /* cells of the first row, for the separator */
    char *title;
    const char *base; /* final URL of the page, for relative links */
} conv;

static int ends_with_newlines(tc_buf *b, int n) {
    if (b->len == 0) return 1;
    for (int i = 1; i <= n; i++)
        if ((size_t)i > b->len || b->data[b->len - i] != '\n') return 0;
    return 1;
}

static void block(conv *c, int blank) {
    c->space = 0;
    while (c->out->len && c->out->data[c->out->len - 1] == ' ') c->out->len--;
    if (!ends_with_newlines(c->out, blank ? 2 : 1)) {
        tc_buf_putc(c->out, '\n');
        if (blank && !ends_with_newlines(c->out, 2)) tc_buf_putc(c->out, '\n');
    }
}

static void text(conv *c, const char *s, size_t n) {
    if (c->skip) return;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (c->pre) {
            tc_buf_putc(c->out, ch);
            continue;
        }
        if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f') {
            c->space = 1;
            continue;
        }
        if (c->space && c->out->len && !ends_with_newlines(c->out, 1) &&
            c->out->data[c->out->len - 1] != ' ')
            tc_buf_putc(c->out, ' ');
        c->space = 0;
        tc_buf_putc(c->out, ch);
    }
}

static void put_utf8(tc_buf *b, unsigned long cp) {
    char u[4];
    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) cp = 0xFFFD;
    if (cp < 0x80) {
        tc_buf_putc(b, (char)cp);
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3F));
        tc_buf_put(b, u, 2);
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        tc_buf_put(b, u, 3);
    } else {
        u[0] = (char)(0xF0 | (cp >> 18)), u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F));
        tc_buf_put(b, u, 4);
    }
}

static const struct {
    const char *name;
    unsigned long cp;
} ENTITIES[] = {
    {"amp", '&'},     {"lt", '<'},       {"gt", '>'},       {"quot", '"'},    {"apos", '\''},
    {"nbsp", 0xA0},   {"copy", 0xA9},    {"reg", 0xAE},     {"trade", 0x2122}, {"mdash", 0x2014},
    {"ndash", 0x2013}, {"hellip", 0x2026}, {"laquo", 0xAB},  {"raquo", 0xBB},  {"lsquo", 0x2018},
    {"rsquo", 0x2019}, {"ldquo", 0x201C}, {"rdquo", 0x201D}, {"bull", 0x2022}, {"middot", 0xB7},
    {"eacute", 0xE9}, {"egrave", 0xE8},  {"agrave", 0xE0},  {"aacute", 0xE1}, {"ccedil", 0xE7},
    {"uuml", 0xFC},   {"ouml", 0xF6},    {"auml", 0xE4},    {"szlig", 0xDF},  {"euro", 0x20AC},
    {"pound", 0xA3},  {"yen", 0xA5},     {"cent", 0xA2},    {"sect", 0xA7},   {"deg", 0xB0},
    {"plusmn", 0xB1}, {"times", 0xD7},   {"divide", 0xF7},  {"larr", 0x2190}, {"rarr", 0x2192},
    {"shy", 0xAD},    {"zwj", 0x200D},   {"iexcl", 0xA1},   {"iquest", 0xBF}, {"ntilde", 0xF1},
};

/* Decode entities in s[0..n) into b. */
static void decode(tc_buf *b, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '&') {
            tc_buf_putc(b, s[i]);
            continue;
        }
        size_t j = i + 1;
        while (j < n && j - i < 34 && (isalnum((unsigned char)s[j]) || s[j] == '#')) j++;
        size_t len = j - i - 1;
        int done = 0;
        if (len > 1 && s[i + 1] == '#') {
            int hex = (s[i + 2] == 'x' || s[i + 2] == 'X');
            const char *digits = s + i + 2 + hex;
            size_t dn = len - 1 - (size_t)hex;
            unsigned long cp = 0;
            size_t k;
            for (k = 0; k < dn; k++) {
                int d = hex ? (isxdigit((unsigned char)digits[k])
                                   ? (isdigit((unsigned char)digits[k])
                                          ? digits[k] - '0'
                                          : (tolower((unsigned char)digits[k]) - 'a' + 10))
                                   : -1)
                            : (isdigit((unsigned char)digits[k]) ? digits[k] - '0' : -1);
                if (d < 0) break;
                if (cp < 0x110000) cp = cp * (hex ? 16 : 10) + (unsigned long)d;
            }
            if (dn > 0 && k == dn) {
                put_utf8(b, cp);
                done = 1;
            }
        } else if (len > 0) {
            for (size_t e = 0; e < sizeof ENTITIES / sizeof *ENTITIES; e++) {
                if (strlen(ENTITIES[e].name) == len && strncmp(ENTITIES[e].name, s + i + 1, len) == 0) {
                    put_utf8(b, ENTITIES[e].cp == 0xA0 ? ' ' : ENTITIES[e].cp);
                    done = 1;
                    break;
                }
            }
        }
        if (done) {
            i = j < n && s[j] == ';' ? j : j - 1;
        } else {
            tc_buf_putc(b, '&');
        }
    }
}

static void decoded_text(conv *c, const char *s, size_t n) {
    tc_buf tmp = {0};
    decode(&tmp, s, n);
    if (tmp.len) text(c, tmp.data, tmp.len);
    tc_buf_free(&tmp);
}

/* The value of attribute `name` in a tag's attribute text, decoded; malloc'd or NULL. */
static char *attribute(const char *attrs, size_t n, const char *name) {
    size_t nl = strlen(name);
    for (size_t i = 0; i + nl < n; i++) {
        if ((i == 0 || isspace((unsigned char)attrs[i - 1])) && strncasecmp(attrs + i, name, nl) == 0) {
            size_t j = i + nl;
            while (j < n && isspace((unsigned char)attrs[j])) j++;
            if (j >= n || attrs[j] != '=') continue;
            j++;
            while (j < n && isspace((unsigned char)attrs[j])) j++;
            char q = (j < n && (attrs[j] == '"' || attrs[j] == '\'')) ? attrs[j++] : 0;
            size_t k = j;
            while (k < n && (q ? attrs[k] != q : !isspace((unsigned char)attrs[k]) && attrs[k] != '>')) k++;
            tc_buf v = {0};
            decode(&v, attrs + j, k - j);
            return (char *)tc_buf_cstr(&v);
        }
    }
    return NULL;
}

/* `ref` made absolute against `base` (scheme://host/path...); malloc'd. Takes ownership. */
static char *resolve(const char *base, char *ref) {
    if (!ref || !base || !*ref || strstr(ref, "://") || ref[0] == '#' ||
        strncmp(ref, "mailto:", 7) == 0 || strncmp(ref, "data:", 5) == 0 ||
        strncmp(ref, "javascript:", 11) == 0)
        return ref;
    const char *scheme_end = strstr(base, "://");
    if (!scheme_end) return ref;
    tc_buf out = {0};
    if (ref[0] == '/' && ref[1] == '/') { /* scheme-relative */
        tc_buf_put(&out, base, (size_t)(scheme_end - base) + 1);
    } else {
        const char *host_end = strchr(scheme_end + 3, '/');
        size_t root = host_end ? (size_t)(host_end - base) : strlen(base);
        if (ref[0] == '/') {
            tc_buf_put(&out, base, root);
        } else { /* relative to the base's directory */
            const char *query = strpbrk(base + root, "?#");
            size_t path_end = query ? (size_t)(query - base) : strlen(base);
            size_t dir = path_end;
            while (dir > root && base[dir - 1] != '/') dir--;
            if (dir == root) {
                tc_buf_put(&out, base, root);
                tc_buf_putc(&out, '/');
            } else {
                tc_buf_put(&out, base, dir);
            }
        }
    }
    tc_buf_puts(&out, ref);
    free(ref);
    return (char *)tc_buf_cstr(&out);
}

static int is(const char *name, const char *want) { return strcmp(name, want) == 0; }

static void open_tag(conv *c, const char *name, const char *attrs, size_t alen) {
    tc_buf *o = c->out;
    int md = c->markdown;
    if (name[0] == 'h' && name[1] >= '1' && name[1] <= '6' && !name[2]) {
        block(c, 1);
        if (md) {
            for (int i = 0; i < name[1] - '0'; i++) tc_buf_putc(o, '#');
            tc_buf_putc(o, ' ');
        }
    } else if (is(name, "p") || is(name, "div") || is(name, "section") || is(name, "article") ||
               is(name, "header") || is(name, "footer") || is(name, "main") || is(name, "nav") ||
               is(name, "aside") || is(name, "figure") || is(name, "form") || is(name, "dl")) {
        block(c, 1);
    } else if (is(name, "blockquote")) {
        block(c, 1);
        if (md) tc_buf_puts(o, "> ");
    } else if (is(name, "br")) {
        if (c->pre) tc_buf_putc(o, '\n');
        else block(c, 0);
    } else if (is(name, "hr")) {
        block(c, 1);
        tc_buf_puts(o, md ? "---" : "----------");
        block(c, 1);
    } else if (is(name, "ul") || is(name, "ol")) {
        if (c->list_depth == 0) block(c, 1);
        if (c->list_depth < MAX_DEPTH) {
            c->ordered[c->list_depth] = is(name, "ol");
            c->counter[c->list_depth] = 0;
        }
        c->list_depth++;
    } else if (is(name, "li")) {
        block(c, 0);
        int d = c->list_depth ? c->list_depth - 1 : 0;
        if (d >= MAX_DEPTH) d = MAX_DEPTH - 1;
        for (int i = 0; i < d && i < 8; i++) tc_buf_puts(o, "  ");
        if (c->list_depth && c->ordered[d]) {
            char num[16];
            snprintf(num, sizeof num, "%d. ", ++c->counter[d]);
            tc_buf_puts(o, num);
        } else {
            tc_buf_puts(o, md ? "- " : "* ");
        }
    } else if (is(name, "dt")) {
        block(c, 0);
    } else if (is(name, "dd")) {
        block(c, 0);
        tc_buf_puts(o, "  ");
    } else if (is(name, "pre")) {
        if (c->pre == 0) {
            block(c, 1);
            if (md) tc_buf_puts(o, "```\n");
        }
        c->pre++;
    } else if (is(name, "code") && !c->pre) {
        text(c, "", 0);
        if (c->space) tc_buf_putc(o, ' '), c->space = 0;
        if (md) tc_buf_putc(o, '`');
    } else if ((is(name, "b") || is(name, "strong")) && md) {
        if (c->space) tc_buf_putc(o, ' '), c->space = 0;
        tc_buf_puts(o, "**");
    } else if ((is(name, "i") || is(name, "em")) && md) {
        if (c->space) tc_buf_putc(o, ' '), c->space = 0;
        tc_buf_putc(o, '*');
    } else if (is(name, "a")) {
        if (c->link_depth < MAX_DEPTH) c->href[c->link_depth] = resolve(c->base, attribute(attrs, alen, "href"));
        c->link_depth++;
        if (md) {
            if (c->space && o->len && !ends_with_newlines(o, 1)) tc_buf_putc(o, ' ');
            c->space = 0;
            tc_buf_putc(o, '[');
        }
    } else if (is(name, "img")) {
        char *alt = attribute(attrs, alen, "alt");
        char *src = resolve(c->base, attribute(attrs, alen, "src"));
        if (md && src) {
            if (c->space) tc_buf_putc(o, ' '), c->space = 0;
            tc_buf_puts(o, "![");
            tc_buf_puts(o, alt ? alt : "");
            tc_buf_puts(o, "](");
            tc_buf_puts(o, src);
            tc_buf_puts(o, ")");
        } else if (alt && *alt) {
            text(c, alt, strlen(alt));
        }
        free(alt);
        free(src);
    } else if (is(name, "table")) {
        block(c, 1);
        c->table_row = 0;
    } else if (is(name, "tr")) {
        block(c, 0);
        c->cells = 0;
        if (md) tc_buf_puts(o, "|");
    } else if (is(name, "td") || is(name, "th")) {
        c->space = 0;
        tc_buf_putc(o, md ? ' ' : (c->cells ? '\t' : '\0'));
        if (!md && !c->cells) o->len--;
        c->cells++;
    } else if (is(name, "head") || is(name, "title")) {
        c->skip++;
    }
}

static void close_tag(conv *c, const char *name) {
    tc_buf *o = c->out;
    int md = c->markdown;
    if ((name[0] == 'h' && name[1] >= '1' && name[1] <= '6' && !name[2]) || is(name, "p") ||
        is(name, "div") || is(name, "section") || is(name, "article") || is(name, "blockquote") ||
        is(name, "header") || is(name, "footer") || is(name, "main") || is(name, "nav") ||
        is(name, "aside") || is(name, "figure") || is(name, "form") || is(name, "dl")) {
        block(c, 1);
    } else if (is(name, "ul") || is(name, "ol")) {
        if (c->list_depth > 0) c->list_depth--;
        if (c->list_depth == 0) block(c, 1);
    } else if (is(name, "pre")) {
        if (c->pre > 0 && --c->pre == 0) {
            if (md) {
                if (!ends_with_newlines(o, 1)) tc_buf_putc(o, '\n');
                tc_buf_puts(o, "```");
            }
            block(c, 1);
        }
    } else if (is(name, "code") && !c->pre) {
        if (md) tc_buf_putc(o, '`');
    } else if ((is(name, "b") || is(name, "strong")) && md) {
        tc_buf_puts(o, "**");
    } else if ((is(name, "i") || is(name, "em")) && md) {
        tc_buf_putc(o, '*');
    } else if (is(name, "a") && c->link_depth > 0) {
        c->link_depth--;
        char *href = c->link_depth < MAX_DEPTH ? c->href[c->link_depth] : NULL;
        if (md) {
            tc_buf_puts(o, "](");
            tc_buf_puts(o, href ? href : "");
            tc_buf_putc(o, ')');
        }
        free(href);
        if (c->link_depth < MAX_DEPTH) c->href[c->link_depth] = NULL;
    } else if (is(name, "td") || is(name, "th")) {
        if (md) tc_buf_puts(o, " |");
    } else if (is(name, "tr")) {
        if (md && c->table_row == 0 && c->cells > 0) {
            c->header_cells = c->cells;
            tc_buf_puts(o, "\n|");
            for (int i = 0; i < c->cells && i < 64; i++) tc_buf_puts(o, " --- |");
        }
        c->table_row++;
        block(c, 0);
    } else if (is(name, "table")) {
        block(c, 1);
    } else if (is(name, "head") || is(name, "title")) {
        if (c->skip > 0) c->skip--;
    }
}

/* Skip raw-text content up to "</name" (case-insensitive); return the new position. */
static size_t skip_raw(const char *s, size_t n, size_t i, const char *name) {
    size_t nl = strlen(name);
    for (; i + 2 + nl <= n; i++)
        if (s[i] == '<' && s[i + 1] == '/' && strncasecmp(s + i + 2, name, nl) == 0) return i;
    return n;
}

static void html_to_text(const char *s, size_t n, int markdown, const char *base, tc_buf *out,
                         char **title) {
    conv c = {0};
    c.base = base;
    c.out = out;
    c.markdown = markdown;
    size_t i = 0;
    while (i < n) {
        if (s[i] != '<') {
            size_t j = i;
            while (j < n && s[j] != '<') j++;
            decoded_text(&c, s + i, j - i);
            i = j;
            continue;
        }
        if (i + 4 <= n && strncmp(s + i, "<!--", 4) == 0) {
            const char *end = NULL;
            for (size_t k = i + 4; k + 3 <= n; k++)
                if (strncmp(s + k, "-->", 3) == 0) { end = s + k; break; }
            i = end ? (size_t)(end - s) + 3 : n;
            continue;
        }
        size_t j = i + 1;
        int closing = j < n && s[j] == '/';
        if (closing) j++;
        if (j >= n || !(isalpha((unsigned char)s[j]) || s[j] == '!' || s[j] == '?')) {
            text(&c, "<", 1); /* a stray '<' is text */
            i++;
            continue;
        }
        char name[16] = {0};
        size_t k = 0;
        while (j < n && (isalnum((unsigned char)s[j]) || s[j] == '!' || s[j] == '?' || s[j] == '-')) {
            if (k < sizeof name - 1) name[k++] = (char)tolower((unsigned char)s[j]);
            j++;
        }
        size_t attrs = j;
        char quote = 0;
        while (j < n && (quote || s[j] != '>')) {
            if (quote && s[j] == quote) quote = 0;
            else if (!quote && (s[j] == '"' || s[j] == '\'')) quote = s[j];
            j++;
        }
        size_t alen = j - attrs;
        i = j < n ? j + 1 : n;
        if (name[0] == '!' || name[0] == '?') continue;
        if (!closing && (is(name, "script") || is(name, "style") || is(name, "noscript") ||
                         is(name, "template") || is(name, "svg") || is(name, "iframe") ||
                         is(name, "object") || is(name, "textarea"))) {
            i = skip_raw(s, n, i, name);
            j = i;
            while (j < n && s[j] != '>') j++;
            i = j < n ? j + 1 : n;
            continue;
        }
        if (!closing && is(name, "title") && title && !*title) {
            size_t end = skip_raw(s, n, i, "title");
            tc_buf t = {0};
            decode(&t, s + i, end - i);
            *title = (char *)tc_buf_cstr(&t);
        }
        if (closing) close_tag(&c, name);
        else open_tag(&c, name, s + attrs, alen);
    }
    if (c.pre > 0) { /* close an unterminated code block */
        c.pre = 1;
        close_tag(&c, "pre");
    }
    for (int d = 0; d < MAX_DEPTH; d++) free(c.href[d]);
    /* trim, and squeeze runs of blank lines */
    tc_buf clean = {0};
    int newlines = 0;
    for (size_t p = 0; p < out->len; p++) {
        char ch = out->data[p];
        if (ch == '\n') {
            while (clean.len && clean.data[clean.len - 1] == ' ') clean.len--;
            if (++newlines > 2 || clean.len == 0) continue;
        } else {
            newlines = 0;
        }
        tc_buf_putc(&clean, ch);
    }
    while (clean.len && (clean.data[clean.len - 1] == '\n' || clean.data[clean.len - 1] == ' ')) clean.len--;
    out->len = 0;
    if (clean.len) tc_buf_put(out, clean.data, clean.len);
    else tc_buf_cstr(out);
    tc_buf_free(&clean);
}

static int has_prefix(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static const char *run(const char *args, tc_buf *out) {
    size_t ulen = 0;
    char *url = tc_json_str(tc_json_get(args, "url"), &ulen);
    if (!url || !ulen) {
        free(url);
        tc_buf_puts(out, "url must be a non-empty string");
        return "validation_error";
    }
    char *format = tc_json_str(tc_json_get(args, "format"), NULL);
    int markdown = !format || strcmp(format, "markdown") == 0;
    if (format && !markdown && strcmp(format, "text") != 0) {
        free(url);
        free(format);
        tc_buf_puts(out, "format must be \"markdown\" or \"text\"");
        return "validation_error";
    }
    free(format);
    tc_buf req = {0};
    tc_buf_puts(&req, "{\"method\":\"GET\",\"url\":");
    tc_buf_json_string(&req, url, ulen);
    tc_buf_puts(&req, ",\"headers\":{\"accept\":\"text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5\"}}");
    tc_buf note = {0};
    tc_buf_puts(&note, "fetching ");
    tc_buf_put(&note, url, ulen);
    tch_progress(tc_buf_cstr(&note), 0.0);
    tc_buf_free(&note);
    int32_t code;
    char *result = tch_http(req.data, req.len, &code);
    tc_buf_free(&req);
    free(url);
    if (!result) {
        tc_buf_puts(out, "HTTP is not available to this tool");
        return "execution_error";
    }
    const char *error_type = NULL;
    int ok = 0, truncated = 0;
    double status = 0, size = -1;
    char *ctype = NULL, *encoding = NULL, *body = NULL, *final = NULL;
    size_t blen = 0;
    if (!tc_json_bool(tc_json_get(result, "ok"), &ok) || !ok) {
        error_type = tch_result_error(result, out);
        goto done;
    }
    tc_json_num(tc_json_get(result, "status"), &status);
    tc_json_bool(tc_json_get(result, "truncated"), &truncated);
    if (!tc_json_num(tc_json_get(result, "size"), &size)) size = -1;
    ctype = tc_json_str(tc_json_get(result, "content_type"), NULL);
    encoding = tc_json_str(tc_json_get(result, "body_encoding"), NULL);
    final = tc_json_str(tc_json_get(result, "url"), NULL);
    body = tc_json_str(tc_json_get(result, "body"), &blen);
    if (status >= 400) {
        char line[64];
        snprintf(line, sizeof line, "HTTP %d from ", (int)status);
        tc_buf_puts(out, line);
        tc_buf_puts(out, final ? final : "the server");
        error_type = "execution_error";
        goto done;
    }
    if (!body || (encoding && strcmp(encoding, "base64") == 0)) {
        tc_buf_puts(out, "cannot show binary content (");
        tc_buf_puts(out, ctype && *ctype ? ctype : "unknown type");
        tc_buf_puts(out, ") as text; use http_request to see raw bytes");
        error_type = "execution_error";
        goto done;
    }
    const char *first = tc_json_ws(body);
    int html = ctype && (has_prefix(ctype, "text/html") || has_prefix(ctype, "application/xhtml"));
    if (!html && (!ctype || !*ctype) && first && *first == '<') html = 1;
    if (html) {
        tch_progress("converting HTML", 0.5);
        char *title = NULL;
        tc_buf converted = {0};
        html_to_text(body, blen, markdown, final, &converted, &title);
        if (title && *title) {
            tc_buf_puts(out, markdown ? "Title: " : "");
            tc_buf_puts(out, title);
            tc_buf_puts(out, "\n\n");
        }
        tc_buf_put(out, tc_buf_cstr(&converted), converted.len);
        tc_buf_free(&converted);
        free(title);
    } else {
        tc_buf_put(out, body, blen);
    }
    if (truncated) {
        tc_buf_puts(out, "\n\n");
        tc_buf_truncation_marker(out, size >= 0 ? (long long)size : -1);
    }
done:
    free(ctype);
    free(encoding);
    free(body);
    free(final);
    free(result);
    return error_type;
}

int main(void) { return tc_tool_main(run); }
