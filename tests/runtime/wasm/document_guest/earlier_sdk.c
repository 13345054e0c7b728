/* A guest as the SDK built them before the text reply: it reads its arguments from argv[1]
 * and leaves a JSON result document in its memory, found through its `toolcage_result`
 * export ("fail": an error document instead). */
#include <stdint.h>
#include <string.h>

static const char *result;

__attribute__((export_name("toolcage_result"))) uint64_t toolcage_result(void) {
    return ((uint64_t)(uintptr_t)result << 32) | (uint64_t)strlen(result);
}

int main(int argc, char **argv) {
    const char *args = argc > 1 ? argv[1] : "";
    if (strstr(args, "fail")) {
        result = "{\"ok\":false,\"error_type\":\"validation_error\",\"message\":\"no \\\"x\\\"\","
                 "\"field\":\"shape\"}";
    } else {
        result = "{\"ok\":true,\"text\":\"line \\\"one\\\"\\nline two \\u00e9\",\"details\":"
                 "{\"n\":1},\"display\":\"Shown\"}";
    }
    return 0;
}
