/* send_message: send a text message to the user on the session's channel.
 * The host's channel binding (toolcage_channel_v1.message) checks the text against the
 * channel policy and queues it; the runtime sends it once the guest has succeeded, on the
 * session's channel (a branch's parent's). */
#include "toolcage_host.h"

/* The text-message import of the channel binding (its result is read with
 * toolcage_channel_result, as for a file). */
TCH_IMPORT("toolcage_channel_v1", "message")
int32_t toolcage_channel_message(const char *req, int32_t len);

static const char *run(const char *args, tc_buf *out) {
    return tch_relay(toolcage_channel_message, toolcage_channel_result, "channel", args, out);
}

int main(void) { return tc_tool_main(run); }
