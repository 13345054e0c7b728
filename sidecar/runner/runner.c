/*
 * toolcage-runner: starts a shell session's commands inside the session's one bubblewrap.
 *
 * bubblewrap starts it as the sandbox's command, with CAP_SYS_ADMIN and CAP_SETPCAP (and no
 * other capability) in the sandbox's user namespace:
 *
 *     toolcage-runner SOCKET_FD TMP_BYTES
 *
 * SOCKET_FD is one end of a Unix stream socketpair whose other end the sidecar keeps.
 *
 * Requests (sidecar -> runner), each one frame: a header of four native u32
 *     kind, id, length, count
 * then `length` bytes.
 *   kind 1, EXEC: the bytes are `count` NUL-terminated strings: the working directory, the
 *     argv (up to an empty string), then the environment; three descriptors travel with
 *     the header (SCM_RIGHTS): the command's stdout, stderr and report pipe, which become
 *     its fds 1, 2 and 3 (fd 0 is /dev/null).
 *   kind 2, KILL: SIGKILL to command `id`'s pid 1 (length and count 0).
 * Replies (runner -> sidecar), three native i32: kind, id, value.
 *   kind 3, EXIT: command `id` ended; value is its wait status.
 *   kind 4, FAILED: command `id` could not start; value is an errno.
 *
 * Guarantees, per command:
 * - it is pid 1 of a PID namespace of its own (clone(CLONE_NEWPID|CLONE_NEWNS|CLONE_NEWIPC)):
 *   it sees and can signal only its own processes, never the runner or another command;
 *   when its pid 1 ends, or is killed, the kernel kills every process left in the
 *   namespace (background children, double forks, setsid, nohup alike) -- so nothing a
 *   command started outlives it, and one SIGKILL ends all of it at its deadline;
 * - a fresh /proc of that namespace, and a fresh tmpfs /tmp of TMP_BYTES, in a mount
 *   namespace of its own: no file in /tmp survives the command. (A fresh proc may be
 *   mounted only while a proc is already fully visible in the mount namespace, so the
 *   session's bubblewrap keeps its own --proc; bubblewrap's read-only covers of /proc/sys
 *   and the like are not locked mounts, so they do not count against it);
 * - no capability: the bounding set is cleared, the ambient set emptied and the permitted,
 *   effective and inheritable sets set to zero before exec (bubblewrap already set
 *   no_new_privs and --disable-userns);
 * - the runner itself stops, taking every command along, when the sidecar's end of the
 *   socket closes; bubblewrap's --die-with-parent ends the sandbox if the sidecar dies.
 * Anything malformed from the socket ends the runner (the sidecar then starts a new one).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

enum { EXEC = 1, KILL = 2, EXIT = 3, FAILED = 4 };
enum { MAX_COMMANDS = 256, MAX_BYTES = 4 << 20, MAX_STRINGS = 65536 };

struct command { pid_t pid; uint32_t id; };
static struct command commands[MAX_COMMANDS];
static int sock;
static char tmp_options[64];
static char buffer[MAX_BYTES];
static char *strings[MAX_STRINGS + 1];

static void die(const char *what) {
    fprintf(stderr, "toolcage-runner: %s: %s\n", what, strerror(errno));
    _exit(1);
}

static void reply(int32_t kind, uint32_t id, int32_t value) {
    int32_t message[3] = {kind, (int32_t)id, value};
    if (write(sock, message, sizeof message) != sizeof message) die("reply");
}

static int read_all(char *data, size_t length) {
    while (length > 0) {
        ssize_t got = read(sock, data, length);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        data += got;
        length -= (size_t)got;
    }
    return 0;
}

/* In the new namespaces, as their pid 1: mounts, no capabilities, exec. Never returns. */
static void child(char *cwd, char **argv, char **envp, const int fds[3]) {
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) die("private /");
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, tmp_options) < 0) die("/tmp");
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        die("/proc");
    for (int cap = 0; cap <= 63; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) die("bounding set");
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0) die("ambient set");
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capset, &header, data) < 0) die("capset");
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0) die("stdin");
    for (int i = 0; i < 3; i++)
        if (dup2(fds[i], i + 1) < 0) die("dup2");
    syscall(SYS_close_range, 4, ~0U, 0); /* all else is close-on-exec already */
    if (chdir(cwd) < 0 && chdir("/") < 0) die("chdir");
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(argv[0], argv, envp);
    die(argv[0]);
}

static void start(uint32_t id, uint32_t length, uint32_t count, const int fds[3]) {
    int slot = -1;
    for (int i = 0; i < MAX_COMMANDS && slot < 0; i++)
        if (commands[i].pid == 0) slot = i;
    if (read_all(buffer, length) < 0) die("request");
    if (length == 0 || buffer[length - 1] != 0 || count < 3 || count > MAX_STRINGS) {
        errno = EPROTO;
        die("request");
    }
    char **argv = NULL, **envp = NULL;
    char *at = buffer;
    for (uint32_t i = 0; i < count; i++) {
        if (at >= buffer + length) { errno = EPROTO; die("request"); }
        strings[i] = at;
        at += strlen(at) + 1;
    }
    strings[count] = NULL;
    for (uint32_t i = 1; i < count; i++)
        if (strings[i][0] == 0) {
            strings[i] = NULL;
            argv = strings + 1;
            envp = strings + i + 1;
            break;
        }
    if (argv == NULL || argv[0] == NULL) { errno = EPROTO; die("request"); }
    if (slot < 0) {
        reply(FAILED, id, EAGAIN);
        return;
    }
    long pid = syscall(SYS_clone, CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | SIGCHLD, 0, 0, 0, 0);
    if (pid < 0) {
        reply(FAILED, id, errno);
        return;
    }
    if (pid == 0) child(strings[0], argv, envp, fds);
    commands[slot].pid = (pid_t)pid;
    commands[slot].id = id;
}

static void request(void) {
    uint32_t header[4];
    int fds[3] = {-1, -1, -1};
    char control[CMSG_SPACE(sizeof fds)];
    struct iovec iov = {header, sizeof header};
    struct msghdr message = {.msg_iov = &iov, .msg_iovlen = 1,
                             .msg_control = control, .msg_controllen = sizeof control};
    ssize_t got = recvmsg(sock, &message, MSG_CMSG_CLOEXEC);
    if (got < 0 && errno == EINTR) return;
    if (got == 0) _exit(0); /* the sidecar closed the session */
    if (got < 0) die("recvmsg");
    if (got < (ssize_t)sizeof header && read_all((char *)header + got, sizeof header - got) < 0)
        die("request");
    int nfds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&message); c; c = CMSG_NXTHDR(&message, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            nfds = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            memcpy(fds, CMSG_DATA(c), sizeof(int) * (nfds > 3 ? 3 : nfds));
        }
    if (header[2] > MAX_BYTES) { errno = EMSGSIZE; die("request"); }
    if (header[0] == EXEC && nfds == 3 && !(message.msg_flags & MSG_CTRUNC)) {
        start(header[1], header[2], header[3], fds);
    } else if (header[0] == KILL && header[2] == 0) {
        for (int i = 0; i < MAX_COMMANDS; i++)
            if (commands[i].pid > 0 && commands[i].id == header[1]) kill(commands[i].pid, SIGKILL);
    } else {
        errno = EPROTO;
        die("request");
    }
    for (int i = 0; i < 3 && i < nfds; i++) close(fds[i]);
}

static void reap(int signals) {
    struct signalfd_siginfo info;
    while (read(signals, &info, sizeof info) > 0) {}
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
        for (int i = 0; i < MAX_COMMANDS; i++)
            if (commands[i].pid == pid) {
                commands[i].pid = 0;
                reply(EXIT, commands[i].id, status);
            }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: toolcage-runner SOCKET_FD TMP_BYTES\n");
        return 2;
    }
    sock = atoi(argv[1]);
    snprintf(tmp_options, sizeof tmp_options, "size=%llu,mode=1777",
             strtoull(argv[2], NULL, 10));
    if (fcntl(sock, F_SETFD, FD_CLOEXEC) < 0) die("socket");
    signal(SIGPIPE, SIG_IGN);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) die("sigprocmask");
    int signals = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (signals < 0) die("signalfd");
    struct pollfd watched[2] = {{sock, POLLIN, 0}, {signals, POLLIN, 0}};
    for (;;) {
        if (poll(watched, 2, -1) < 0) {
            if (errno == EINTR) continue;
            die("poll");
        }
        if (watched[1].revents) reap(signals);
        if (watched[0].revents) request();
    }
}
