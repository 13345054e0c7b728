/*
 * Charsets for web_fetch (see charset.h). The labels are the WHATWG Encoding Standard's:
 * every ISO-8859-1, US-ASCII and windows-1252 label means windows-1252, whose bytes
 * 0x80-0x9F are the punctuation Windows puts there (curly quotes, dashes, the euro sign).
 */
#include "charset.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int b64_value(unsigned char ch) {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    return -1;
}

size_t wf_base64_decode(char *s, size_t n) {
    size_t out = 0;
    unsigned long acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '=') break;
        int v = b64_value(ch);
        if (v < 0) return (size_t)-1;
        acc = (acc << 6) | (unsigned long)v;
        bits += 6;
        if (bits >= 8) { /* out <= i: the bytes are written behind the text read */
            bits -= 8;
            s[out++] = (char)((acc >> bits) & 0xFF);
        }
    }
    return out;
}

static const char *const UTF8_LABELS[] = {
    "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "utf-8", "utf8", "x-unicode20utf8",
};
static const char *const WINDOWS_1252_LABELS[] = {
    "ansi_x3.4-1968", "ascii",      "cp1252",   "cp819",      "csisolatin1",
    "ibm819",         "iso-8859-1", "iso-ir-100", "iso8859-1", "iso88591",
    "iso_8859-1",     "iso_8859-1:1987", "l1",  "latin1",     "us-ascii",
    "windows-1252",   "x-cp1252",
};
static const char *const UTF16LE_LABELS[] = {
    "csunicode", "iso-10646-ucs-2", "ucs-2", "unicode", "unicodefeff", "utf-16", "utf-16le",
};
static const char *const UTF16BE_LABELS[] = {"unicodefffe", "utf-16be"};

static int in(const char *label, const char *const *labels, size_t count) {
    for (size_t i = 0; i < count; i++)
        if (strcmp(label, labels[i]) == 0) return 1;
    return 0;
}

#define IN(label, table) in(label, table, sizeof table / sizeof *table)

static wf_charset by_label(const char *label) {
    if (IN(label, UTF8_LABELS)) return WF_UTF8;
    if (IN(label, WINDOWS_1252_LABELS)) return WF_WINDOWS_1252;
    if (IN(label, UTF16LE_LABELS)) return WF_UTF16LE;
    if (IN(label, UTF16BE_LABELS)) return WF_UTF16BE;
    return WF_OTHER;
}

const char *wf_charset_name(wf_charset charset) {
    switch (charset) {
    case WF_UTF8: return "utf-8";
    case WF_WINDOWS_1252: return "windows-1252";
    case WF_UTF16LE: return "utf-16le";
    case WF_UTF16BE: return "utf-16be";
    default: return "unknown";
    }
}

/* The label after "charset" in s[0..n), lowercased and trimmed into `label`; 1 if found. */
static int charset_param(const char *s, size_t n, char *label, size_t cap) {
    for (size_t i = 0; i + 7 <= n; i++) {
        if (strncasecmp(s + i, "charset", 7) != 0) continue;
        size_t j = i + 7;
        while (j < n && isspace((unsigned char)s[j])) j++;
        if (j >= n || s[j] != '=') continue;
        j++;
        while (j < n && (isspace((unsigned char)s[j]) || s[j] == '"' || s[j] == '\'')) j++;
        size_t k = 0;
        while (j < n && k + 1 < cap && !isspace((unsigned char)s[j]) && s[j] != ';' &&
               s[j] != '"' && s[j] != '\'' && s[j] != '>' && s[j] != ',')
            label[k++] = (char)tolower((unsigned char)s[j++]);
        label[k] = '\0';
        return k > 0;
    }
    return 0;
}

/* A charset declared by a <meta> among the first 1024 bytes of an HTML document. */
static int meta_charset(const char *s, size_t n, char *label, size_t cap) {
    if (n > 1024) n = 1024;
    for (size_t i = 0; i + 5 < n; i++) {
        if (s[i] != '<' || strncasecmp(s + i + 1, "meta", 4) != 0) continue;
        if (!isspace((unsigned char)s[i + 5]) && s[i + 5] != '/') continue;
        size_t end = i + 5;
        while (end < n && s[end] != '>') end++;
        if (charset_param(s + i + 5, end - i - 5, label, cap)) return 1;
    }
    return 0;
}

wf_sniffed wf_sniff(const char *body, size_t n, const char *content_type, int html) {
    wf_sniffed found = {WF_UTF8, "utf-8", 0};
    const unsigned char *b = (const unsigned char *)body;
    if (n >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF) {
        found.skip = 3;
        return found;
    }
    if (n >= 2 && b[0] == 0xFF && b[1] == 0xFE) {
        found = (wf_sniffed){WF_UTF16LE, "utf-16le", 2};
        return found;
    }
    if (n >= 2 && b[0] == 0xFE && b[1] == 0xFF) {
        found = (wf_sniffed){WF_UTF16BE, "utf-16be", 2};
        return found;
    }
    char label[sizeof found.label];
    int declared = content_type && charset_param(content_type, strlen(content_type), label,
                                                 sizeof label);
    if (!declared && html) {
        declared = meta_charset(body, n, label, sizeof label);
        /* A document that reached the parser as bytes cannot be UTF-16 (its <meta> was
         * readable as ASCII): the standard takes such a declaration as UTF-8. */
        if (declared && (by_label(label) == WF_UTF16LE || by_label(label) == WF_UTF16BE))
            strcpy(label, "utf-8");
    }
    if (declared) {
        found.charset = by_label(label);
        strcpy(found.label, found.charset == WF_OTHER ? label : wf_charset_name(found.charset));
    }
    return found;
}

/* windows-1252's 0x80-0x9F; 0 where the standard maps the byte to the C1 control itself. */
static const unsigned short CP1252_HIGH[32] = {
    0x20AC, 0,      0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0,      0x017D, 0,      0,      0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0,      0x017E, 0x0178,
};

/* Where converted text goes: `data` NULL only counts the bytes. */
typedef struct {
    char *data;
    size_t len;
} sink;

static void put(sink *s, const char *p, size_t n) {
    if (s->data) memcpy(s->data + s->len, p, n);
    s->len += n;
}

static void put_cp(sink *s, unsigned long cp) {
    char u[4];
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) cp = 0xFFFD;
    if (cp < 0x80) {
        u[0] = (char)cp;
        put(s, u, 1);
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3F));
        put(s, u, 2);
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        put(s, u, 3);
    } else {
        u[0] = (char)(0xF0 | (cp >> 18)), u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F));
        put(s, u, 4);
    }
}

static const char REPLACEMENT[] = "\xEF\xBF\xBD";

/* The length of the valid UTF-8 sequence at s[0..n), or 0 with *bad set to the length of
 * the maximal invalid subpart to replace by one U+FFFD. */
static size_t utf8_sequence(const unsigned char *s, size_t n, size_t *bad) {
    unsigned char c = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else {
        *bad = 1;
        return 0;
    }
    for (size_t i = 1; i <= need; i++) {
        if (i >= n || s[i] < lo || s[i] > hi) {
            *bad = i;
            return 0;
        }
        lo = 0x80, hi = 0xBF;
    }
    return need + 1;
}

static void convert(wf_charset charset, const char *body, size_t n, sink *into) {
    const unsigned char *b = (const unsigned char *)body;
    if (charset == WF_UTF16LE || charset == WF_UTF16BE) {
        int le = charset == WF_UTF16LE;
        for (size_t i = 0; i + 1 < n; i += 2) {
            unsigned long u = le ? (unsigned long)(b[i] | b[i + 1] << 8)
                                 : (unsigned long)(b[i] << 8 | b[i + 1]);
            if (u >= 0xD800 && u < 0xDC00 && i + 3 < n) {
                unsigned long v = le ? (unsigned long)(b[i + 2] | b[i + 3] << 8)
                                     : (unsigned long)(b[i + 2] << 8 | b[i + 3]);
                if (v >= 0xDC00 && v < 0xE000) {
                    put_cp(into, 0x10000 + ((u - 0xD800) << 10) + (v - 0xDC00));
                    i += 2;
                    continue;
                }
            }
            put_cp(into, u);
        }
        if (n % 2) put(into, REPLACEMENT, 3);
        return;
    }
    if (charset == WF_WINDOWS_1252) {
        for (size_t i = 0; i < n; i++) {
            unsigned char c = b[i];
            if (c < 0x80) put(into, body + i, 1);
            else if (c < 0xA0 && CP1252_HIGH[c - 0x80]) put_cp(into, CP1252_HIGH[c - 0x80]);
            else put_cp(into, c);
        }
        return;
    }
    size_t run = 0; /* valid bytes not copied yet: copied in one piece */
    for (size_t i = 0; i < n;) {
        size_t bad = 0, len = utf8_sequence(b + i, n - i, &bad);
        if (len) {
            i += len;
            run += len;
            continue;
        }
        put(into, body + i - run, run);
        run = 0;
        put(into, REPLACEMENT, 3);
        i += bad;
    }
    put(into, body + n - run, run);
}

int wf_to_utf8(wf_charset charset, const char *body, size_t n, tc_buf *into) {
    sink count = {NULL, 0};
    convert(charset, body, n, &count);
    char *data = malloc(count.len + 1);
    if (!data) return 0;
    sink text = {data, 0};
    convert(charset, body, n, &text);
    data[text.len] = '\0';
    tc_buf_free(into);
    *into = (tc_buf){data, text.len, count.len + 1};
    return 1;
}
