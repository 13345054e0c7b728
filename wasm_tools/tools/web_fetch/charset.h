/*
 * web_fetch's bytes to text: base64 bodies, the charset of a response (byte order mark,
 * the Content-Type header, then <meta> in the document's first 1024 bytes, as the WHATWG
 * encoding sniffing algorithm orders them) and decoding to UTF-8.
 */
#ifndef WEB_FETCH_CHARSET_H
#define WEB_FETCH_CHARSET_H

#include <stddef.h>

#include "toolcage.h"

/* Decode base64 text `s[0..n)` in place; the length of the bytes at `s`, or (size_t)-1
 * when it is not base64. */
size_t wf_base64_decode(char *s, size_t n);

/* The charsets decoded here; WF_OTHER is one they do not cover. */
typedef enum { WF_UTF8, WF_WINDOWS_1252, WF_UTF16LE, WF_UTF16BE, WF_OTHER } wf_charset;

typedef struct {
    wf_charset charset;
    char label[40]; /* the declared label (lowercase), or the charset's name */
    size_t skip;    /* bytes of byte order mark to skip */
} wf_sniffed;

/* The charset of `body`: from its byte order mark, else the `charset` parameter of the
 * Content-Type `content_type` (may be NULL), else (for HTML, `html` set) a <meta charset>
 * or <meta http-equiv content> near the start, else UTF-8. */
wf_sniffed wf_sniff(const char *body, size_t n, const char *content_type, int html);

/* `body[0..n)` in `charset` as UTF-8, in `into` (replacing its content, allocated once);
 * bytes that do not decode become U+FFFD (one per maximal invalid subsequence, as the
 * WHATWG UTF-8 decoder does). 0 when the guest's memory cannot hold it. */
int wf_to_utf8(wf_charset charset, const char *body, size_t n, tc_buf *into);

/* The canonical name of a charset, for the result's details. */
const char *wf_charset_name(wf_charset charset);

#endif
