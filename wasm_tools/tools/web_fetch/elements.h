/*
 * web_fetch's view of elements: which are boilerplate, which begin a block, which tables
 * lay out a page, a code block's language.
 */
#ifndef WEB_FETCH_ELEMENTS_H
#define WEB_FETCH_ELEMENTS_H

#include <stddef.h>

#include <lexbor/html/html.h>

#include "toolcage.h"

/* The value of attribute `name` (lowercase) of element `node`, not NUL-terminated: "" for
 * one without a value, NULL when it has no such attribute. */
const char *wf_attr(lxb_dom_node_t *node, const char *name, size_t *len);

/* Whether s[0..n) starts with `prefix`, ignoring case. */
int wf_has_prefix(const char *s, size_t n, const char *prefix);

/* The language of a code block from its class: "language-x", "lang-x", "highlight-x". */
void wf_language(lxb_dom_node_t *node, tc_buf *into);

/* 1-6 for h1-h6, else 0. */
int wf_heading_level(lxb_tag_id_t tag);

/* Whether the element begins a line of its own. */
int wf_is_block(lxb_tag_id_t tag);

/* Whether an element's content is never the page's text: scripts, styles, forms,
 * navigation, footers, hidden elements; headers and asides too outside an article
 * (`in_article` 0). */
int wf_boilerplate(lxb_dom_node_t *node, lxb_tag_id_t tag, int in_article);

/* Whether a table lays out the page rather than holding data. */
int wf_layout_table(lxb_dom_node_t *table);

#endif
