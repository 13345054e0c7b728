/*
 * What web_fetch makes of each kind of element (see elements.h).
 */
#include "elements.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#define LAYOUT_SCAN 5000 /* nodes a table is searched for signs of layout */

static int is_space(char ch) {
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f';
}

const char *wf_attr(lxb_dom_node_t *node, const char *name, size_t *len) {
    /* A walk over the element's few attributes: looking the name up in the document's
     * table of names, as lxb_dom_element_get_attribute does, costs more. */
    size_t want = strlen(name);
    *len = 0;
    for (lxb_dom_attr_t *a = lxb_dom_interface_element(node)->first_attr; a; a = a->next) {
        size_t n = 0;
        const lxb_char_t *local = lxb_dom_attr_local_name(a, &n);
        if (!local || n != want || memcmp(local, name, n) != 0) continue;
        const lxb_char_t *value = lxb_dom_attr_value(a, len);
        return value ? (const char *)value : "";
    }
    return NULL;
}

int wf_has_prefix(const char *s, size_t n, const char *p) {
    size_t pl = strlen(p);
    return n >= pl && strncasecmp(s, p, pl) == 0;
}

/* The language of a code block from class="language-x", "lang-x" or "highlight-x". */
void wf_language(lxb_dom_node_t *node, tc_buf *into) {
    size_t n;
    const char *cls = wf_attr(node, "class", &n);
    static const char *const PREFIXES[] = {"language-", "lang-", "highlight-source-",
                                           "highlight-"};
    for (size_t i = 0; cls && i < n && !into->len; i++) {
        if (i && !is_space(cls[i - 1])) continue;
        for (size_t p = 0; p < sizeof PREFIXES / sizeof *PREFIXES; p++) {
            if (!wf_has_prefix(cls + i, n - i, PREFIXES[p])) continue;
            size_t a = i + strlen(PREFIXES[p]), b = a;
            while (b < n && b - a < 32 && (isalnum((unsigned char)cls[b]) || cls[b] == '-' ||
                                           cls[b] == '+' || cls[b] == '#' || cls[b] == '_'))
                b++;
            tc_buf_put(into, cls + a, b - a);
            break;
        }
    }
}

int wf_heading_level(lxb_tag_id_t tag) {
    switch (tag) {
    case LXB_TAG_H1: return 1;
    case LXB_TAG_H2: return 2;
    case LXB_TAG_H3: return 3;
    case LXB_TAG_H4: return 4;
    case LXB_TAG_H5: return 5;
    case LXB_TAG_H6: return 6;
    default: return 0;
    }
}

/* Elements that begin a line of their own. */
int wf_is_block(lxb_tag_id_t tag) {
    switch (tag) {
    case LXB_TAG_P: case LXB_TAG_DIV: case LXB_TAG_SECTION: case LXB_TAG_ARTICLE:
    case LXB_TAG_MAIN: case LXB_TAG_HEADER: case LXB_TAG_ASIDE: case LXB_TAG_UL:
    case LXB_TAG_OL: case LXB_TAG_LI: case LXB_TAG_DL: case LXB_TAG_DT: case LXB_TAG_DD:
    case LXB_TAG_PRE: case LXB_TAG_BLOCKQUOTE: case LXB_TAG_TABLE: case LXB_TAG_TR:
    case LXB_TAG_FIGURE: case LXB_TAG_FIGCAPTION: case LXB_TAG_FORM: case LXB_TAG_H1:
    case LXB_TAG_H2: case LXB_TAG_H3: case LXB_TAG_H4: case LXB_TAG_H5: case LXB_TAG_H6:
    case LXB_TAG_ADDRESS: case LXB_TAG_DETAILS: case LXB_TAG_SUMMARY: case LXB_TAG_CAPTION:
        return 1;
    default:
        return 0;
    }
}

/* Elements whose content is never the page's text. */
int wf_boilerplate(lxb_dom_node_t *node, lxb_tag_id_t tag, int in_article) {
    switch (tag) {
    case LXB_TAG_SCRIPT: case LXB_TAG_STYLE: case LXB_TAG_NOSCRIPT: case LXB_TAG_TEMPLATE:
    case LXB_TAG_NAV: case LXB_TAG_FOOTER: case LXB_TAG_SVG: case LXB_TAG_IFRAME:
    case LXB_TAG_OBJECT: case LXB_TAG_EMBED: case LXB_TAG_CANVAS: case LXB_TAG_SELECT:
    case LXB_TAG_BUTTON: case LXB_TAG_TEXTAREA: case LXB_TAG_INPUT: case LXB_TAG_HEAD:
    case LXB_TAG_TITLE: case LXB_TAG_DIALOG: case LXB_TAG_MAP: case LXB_TAG_NOEMBED:
    case LXB_TAG_NOFRAMES: case LXB_TAG_FRAMESET: case LXB_TAG_DATALIST: case LXB_TAG_MATH:
        return 1;
    case LXB_TAG_HEADER: case LXB_TAG_ASIDE:
        return !in_article;
    case LXB_TAG_FORM: { /* a form that wraps the whole page is the page */
        for (lxb_dom_node_t *s = node->parent ? node->parent->first_child : NULL; s; s = s->next)
            if (s != node && s->type == LXB_DOM_NODE_TYPE_ELEMENT) return 1;
        return 0;
    }
    default:
        break;
    }
    size_t n;
    if (!lxb_dom_interface_element(node)->first_attr) return 0;
    if (wf_attr(node, "hidden", &n)) return 1;
    const char *v = wf_attr(node, "aria-hidden", &n);
    if (v && n == 4 && strncasecmp(v, "true", 4) == 0) return 1;
    v = wf_attr(node, "role", &n);
    if (!v) return 0;
    if ((n == 10 && strncasecmp(v, "navigation", 10) == 0) ||
        (n == 11 && strncasecmp(v, "contentinfo", 11) == 0) ||
        (n == 6 && strncasecmp(v, "search", 6) == 0))
        return 1;
    return !in_article && ((n == 6 && strncasecmp(v, "banner", 6) == 0) ||
                                (n == 13 && strncasecmp(v, "complementary", 13) == 0));
}

/* Whether a table lays out the page rather than holding data: it says so
 * (role="presentation" or "none"), it holds another table, or none of its rows has two
 * cells. Looks at LAYOUT_SCAN nodes at most; a bigger table is taken for data. */
int wf_layout_table(lxb_dom_node_t *t) {
    size_t n;
    const char *role = wf_attr(t, "role", &n);
    if (role && ((n == 12 && strncasecmp(role, "presentation", 12) == 0) ||
                 (n == 4 && strncasecmp(role, "none", 4) == 0)))
        return 1;
    int wide = 0;
    size_t seen = 0;
    for (lxb_dom_node_t *node = t->first_child; node && seen < LAYOUT_SCAN; seen++) {
        int element = node->type == LXB_DOM_NODE_TYPE_ELEMENT && node->ns == LXB_NS_HTML;
        lxb_tag_id_t tag = element ? lxb_dom_node_tag_id(node) : LXB_TAG__UNDEF;
        if (tag == LXB_TAG_TABLE) return 1;
        if (tag == LXB_TAG_TR && !wide) {
            int cells = 0;
            for (lxb_dom_node_t *k = node->first_child; k; k = k->next)
                if (k->type == LXB_DOM_NODE_TYPE_ELEMENT &&
                    (lxb_dom_node_tag_id(k) == LXB_TAG_TD || lxb_dom_node_tag_id(k) == LXB_TAG_TH))
                    cells++;
            wide = cells > 1;
        }
        if (element && node->first_child) {
            node = node->first_child;
            continue;
        }
        while (node != t && !node->next) node = node->parent;
        node = node == t ? NULL : node->next;
    }
    return !wide && seen < LAYOUT_SCAN;
}
