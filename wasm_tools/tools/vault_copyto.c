/* vault_copyto: copy a vault item into /shared or /tmp; the host copies, the bytes never enter this guest.
 * The host checks the agent's grant and copies (toolcage_vault_v1.copy).
 * Details: {item, path, bytes, created}. */
#include <stdlib.h>
#include <string.h>

#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    char *answer = NULL;
    int32_t n = toolcage_vault_copy(args, (int32_t)strlen(args));
    const char *error = tch_answer_keep(n, toolcage_vault_result, "vault", out, &answer);
    if (!error) {
        char *item = tc_arg_str(args, "item", NULL), *path = tc_arg_str(args, "path", NULL);
        char *shown_item = tc_name(item ? item : ""), *shown = tc_name(path ? path : "");
        double bytes = 0;
        int created = 0;
        tc_json_num(tc_json_get(answer, "bytes"), &bytes);
        tc_json_bool(tc_json_get(answer, "created"), &created);
        tc_detail_str("item", shown_item);
        tc_detail_str("path", shown);
        tc_detail_int("bytes", (long long)bytes);
        tc_detail_bool("created", created);
        if (path) tc_result_artifact("file", path, created ? TC_CREATED : TC_MODIFIED);
        tc_buf amount = {0};
        tc_buf_size(&amount, (unsigned long long)bytes);
        tc_result_display("Copied vault item %s to %s (%s)", shown_item, shown,
                          tc_buf_cstr(&amount));
        tc_buf_free(&amount);
        free(shown_item);
        free(shown);
        free(item);
        free(path);
    }
    free(answer);
    return error;
}

int main(void) { return tc_tool_main(run); }
