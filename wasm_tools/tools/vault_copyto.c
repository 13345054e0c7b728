/* vault_copyto: copy a vault item into /shared or /tmp; the host copies, the bytes never enter this guest.
 * The host checks the agent's grant and copies (toolcage_vault_v1.copy). */
#include "toolcage_host.h"

static const char *run(const char *args, tc_buf *out) {
    return tch_relay(toolcage_vault_copy, toolcage_vault_result, "vault", args, out);
}

int main(void) { return tc_tool_main(run); }
