/*
 * web_fetch's HTML documents: parsed by lexbor (the WHATWG tokenizer and tree builder, with
 * the full named character reference table) within a memory budget, and the part of the
 * page worth reading.
 */
#ifndef WEB_FETCH_PAGE_H
#define WEB_FETCH_PAGE_H

#include <stddef.h>

#include <lexbor/html/html.h>

#include "toolcage.h"

/* Elements open at once past which a parse stops. */
#define WF_MAX_OPEN 1024

/* Attributes of a tag that reach the document: the rest are dropped. */
#define WF_MAX_ATTRS 128
/* Bytes of page per slot of the document's tables of tag and attribute names, and the most
 * slots a table gets (see page.c). */
#define WF_NAME_BYTES 64
#define WF_NAME_SLOTS 16384

/* Why a parse stopped early. */
#define WF_CUT_MEMORY 1
#define WF_CUT_DEPTH 2

/* Parse UTF-8 `html[0..n)`. The parse stops early, with *cut set to a WF_CUT_*, when
 * lexbor would hold more than `memory_budget` bytes or grow the guest's linear memory past
 * `linear_budget` (a page of millions of tiny elements), or when more than WF_MAX_OPEN
 * elements are open (nested) at once: the document then holds what was parsed so far.
 * A tag's attributes past the first WF_MAX_ATTRS, and those of a second <body> or <html>
 * tag, are left out. NULL when not even an empty document fits. */
lxb_html_document_t *wf_parse(const char *html, size_t n, size_t memory_budget,
                              size_t linear_budget, int *cut);

/* The document's title, whitespace collapsed, into `into` (left empty when it has none). */
void wf_title(lxb_html_document_t *doc, tc_buf *into);

/* Where the reading starts: the first <main> (or role="main"), else the only <article>,
 * else <body> (or the root element). *in_article is set when that is a main or an
 * article. */
lxb_dom_node_t *wf_content_root(lxb_html_document_t *doc, int *in_article);

/* The URL the page's relative links resolve against: its first <base href> made absolute
 * against `url`, else `url` (may be NULL: then the base is empty), into `into`. */
void wf_base_url(lxb_html_document_t *doc, const char *url, tc_buf *into);

#endif
