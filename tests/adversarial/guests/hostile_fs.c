/* A hostile WASI guest: tries every way it knows to change a read-only preopen, or to
 * reach outside its preopens, while a read-write preopen is granted in the same instance.
 *
 * Preopens: /ro (read-only: file, dir/, dir/inner) and /rw (read-write: x). argv[1] is the
 * host path of a sentinel outside every preopen.
 *
 * Prints one line per attempt: "<name> denied <errno>" or "<name> ALLOWED"; lines starting
 * with "control" are operations that must succeed, proving the guest really runs. WASI
 * preview 1 has no call that changes permissions (no chmod/fchmod/chown), so those attacks
 * cannot even be expressed; timestamps (utimensat, futimens) and fd flags can, and are tried.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void report(const char *name, int failed) {
    if (failed)
        printf("%s denied %d\n", name, errno);
    else
        printf("%s ALLOWED\n", name);
}

static void try_open(const char *name, const char *path, int flags) {
    errno = 0;
    int fd = open(path, flags, 0644);
    report(name, fd < 0);
    if (fd >= 0) close(fd);
}

static void try_read(const char *name, const char *path) {
    errno = 0;
    int fd = open(path, O_RDONLY);
    char buf[64] = {0};
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    report(name, n < 0);
    if (fd >= 0) close(fd);
}

int main(int argc, char **argv) {
    const char *outside = argc > 1 ? argv[1] : "/nonexistent";

    /* controls: the read-write preopen works, the read-only one can be read */
    int fd = open("/rw/control", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    printf("control_rw_create %s\n", fd >= 0 && write(fd, "ok", 2) == 2 ? "ok" : "failed");
    if (fd >= 0) close(fd);
    fd = open("/ro/file", O_RDONLY);
    char buf[64] = {0};
    printf("control_ro_read %s\n", fd >= 0 && read(fd, buf, sizeof buf - 1) > 0 ? "ok" : "failed");

    /* writes through a descriptor opened for reading */
    if (fd >= 0) {
        errno = 0;
        report("write_on_rdonly_fd", write(fd, "x", 1) < 0);
        errno = 0;
        report("ftruncate_on_rdonly_fd", ftruncate(fd, 0) < 0);
        struct timespec times[2] = {{0, 0}, {0, 0}};
        errno = 0;
        report("futimens_on_ro_file", futimens(fd, times) < 0);
        errno = 0;
        int flags = fcntl(fd, F_GETFL);
        report("fcntl_setfl_append", fcntl(fd, F_SETFL, flags | O_APPEND) < 0
                                         || (write(fd, "x", 1) < 0 ? (errno = EBADF, 1) : 0));
        close(fd);
    }

    /* opening for writing, truncating, creating */
    try_open("open_wronly", "/ro/file", O_WRONLY);
    try_open("open_rdwr", "/ro/file", O_RDWR);
    try_open("open_trunc", "/ro/file", O_WRONLY | O_TRUNC);
    try_open("open_rdonly_trunc", "/ro/file", O_RDONLY | O_TRUNC);
    try_open("open_append", "/ro/file", O_WRONLY | O_APPEND);
    try_open("open_creat", "/ro/new", O_WRONLY | O_CREAT);
    try_open("open_creat_excl", "/ro/dir/new", O_WRONLY | O_CREAT | O_EXCL);
    try_open("open_creat_rdonly", "/ro/new2", O_RDONLY | O_CREAT);
    errno = 0;
    report("truncate", truncate("/ro/file", 0) < 0);

    /* namespace changes */
    errno = 0;
    report("rename_within_ro", rename("/ro/file", "/ro/renamed") < 0);
    errno = 0;
    report("rename_ro_to_rw", rename("/ro/file", "/rw/stolen") < 0);
    errno = 0;
    report("rename_rw_over_ro", rename("/rw/x", "/ro/file") < 0);
    errno = 0;
    report("rename_dir_ro_to_rw", rename("/ro/dir", "/rw/dir") < 0);
    errno = 0;
    report("unlink", unlink("/ro/file") < 0);
    errno = 0;
    report("unlink_inner", unlink("/ro/dir/inner") < 0);
    errno = 0;
    report("rmdir", rmdir("/ro/dir") < 0);
    errno = 0;
    report("mkdir", mkdir("/ro/newdir", 0755) < 0);
    errno = 0;
    report("symlink_in_ro", symlink("file", "/ro/newlink") < 0);
    errno = 0;
    report("link_rw_into_ro", link("/rw/x", "/ro/hard") < 0);
    errno = 0;
    report("link_ro_into_rw", link("/ro/file", "/rw/hard") < 0);

    /* timestamps by path */
    struct timespec times[2] = {{0, 0}, {0, 0}};
    errno = 0;
    report("utimensat", utimensat(AT_FDCWD, "/ro/file", times, 0) < 0);
    errno = 0;
    report("utimensat_dir", utimensat(AT_FDCWD, "/ro/dir", times, 0) < 0);

    /* escaping the preopens */
    try_read("read_dotdot_ro", "/ro/../outside/secret.txt");
    try_read("read_dotdot_rw", "/rw/../outside/secret.txt");
    try_read("read_dotdot_deep", "/rw/../../../../../../../etc/passwd");
    try_read("read_absolute_host", outside);
    try_read("read_etc_passwd", "/etc/passwd");
    symlink("../outside/secret.txt", "/rw/rel_escape");
    try_read("read_via_relative_symlink", "/rw/rel_escape");
    symlink(outside, "/rw/abs_escape");
    try_read("read_via_absolute_symlink", "/rw/abs_escape");
    symlink("/ro/file", "/rw/abs_into_ro");
    try_open("write_via_symlink_into_ro", "/rw/abs_into_ro", O_WRONLY | O_TRUNC);
    symlink("../ro/file", "/rw/rel_into_ro");
    try_open("write_via_relative_symlink_into_ro", "/rw/rel_into_ro", O_WRONLY | O_TRUNC);
    errno = 0;
    DIR *dir = opendir("/rw/..");
    report("opendir_parent", dir == NULL);
    if (dir) closedir(dir);
    return 0;
}
