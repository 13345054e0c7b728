/* A guest without the SDK that prints the result document its "shape" argument names:
 * members of every malformed kind ("junk"), a display of two lines ("lines"), or details
 * and artifacts far over any output limit ("huge"). */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    const char *args = argc > 1 ? argv[1] : "";
    if (strstr(args, "junk")) {
        puts("{\"ok\":true,\"text\":\"done\",\"details\":[1,2],\"display\":7,\"artifacts\":["
             "{\"kind\":\"file\"},\"x\",{\"kind\":\"file\",\"ref\":\"/data/a\",\"action\":"
             "\"renamed\"},{\"kind\":\"file\",\"ref\":\"/data/b\",\"action\":\"created\"},"
             "{\"kind\":\"file\",\"ref\":\"/data/c\",\"action\":[1]}]}");
    } else if (strstr(args, "lines")) {
        puts("{\"ok\":true,\"text\":\"done\",\"details\":{\"n\":1},\"display\":\"line one\\n"
             "line two\",\"artifacts\":\"all of them\"}");
    } else if (strstr(args, "huge")) {
        fputs("{\"ok\":true,\"text\":\"done\",\"details\":{\"rows\":[", stdout);
        for (int i = 0; i < 20000; i++) printf("%s\"row-%05d\"", i ? "," : "", i);
        fputs("]},\"artifacts\":[", stdout);
        for (int i = 0; i < 5000; i++)
            printf("%s{\"kind\":\"file\",\"ref\":\"/data/f%05d\",\"action\":\"created\"}",
                   i ? "," : "", i);
        puts("]}");
    } else {
        puts("{\"ok\":true,\"text\":\"plain\"}");
    }
    return 0;
}
