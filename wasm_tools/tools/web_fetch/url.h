/* web_fetch's links: a reference made absolute against the page's URL. */
#ifndef WEB_FETCH_URL_H
#define WEB_FETCH_URL_H

#include <stddef.h>

#include "toolcage.h"

/* `ref[0..len)` made absolute against `base` (scheme://host/path...; may be NULL), into
 * `into`, with the characters that would end a Markdown link target percent-encoded. */
void wf_resolve(const char *base, const char *ref, size_t len, tc_buf *into);

#endif
