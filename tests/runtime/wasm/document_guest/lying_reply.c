/* A guest that exports `toolcage_reply` but leaves a text reply whose parts do not fit: the
 * length of its document past the reply's end ("long"), or a document that is no success
 * object ("list"). */
#include <stdint.h>
#include <string.h>

static const char LONG[] = "t\xff\xff\x00\x00{\"ok\":true}text";
static const char LIST[] = "t\x05\x00\x00\x00[1,2]text";
static const char *reply;
static size_t size;

__attribute__((export_name("toolcage_reply"))) uint64_t toolcage_reply(void) {
    return ((uint64_t)(uintptr_t)reply << 32) | (uint64_t)size;
}

int main(int argc, char **argv) {
    const char *args = argc > 1 ? argv[1] : "";
    reply = strstr(args, "long") ? LONG : LIST;
    size = strstr(args, "long") ? sizeof LONG - 1 : sizeof LIST - 1;
    return 0;
}
