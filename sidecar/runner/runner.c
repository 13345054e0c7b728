/* toolcage session runner: one per shell session, the command of the session's bubblewrap.
 *
 *     toolcage-runner SOCKET_FD TMP_BYTES
 *
 * bubblewrap starts it as uid 0 of the session's user namespace (the one host uid the
 * session has) with CAP_SYS_ADMIN and CAP_SETFCAP and no other capability, no_new_privs
 * set, in the session's mount, PID, IPC, UTS and network namespaces. The sidecar keeps the
 * other end of the stream socket SOCKET_FD; TMP_BYTES is the size of each command's /tmp.
 *
 * Protocol. Per command the sidecar sends one message: a native u32 length N, carrying
 * four descriptors (SCM_RIGHTS) -- the command's control socket, its stdout, its stderr and
 * its report pipe -- then N bytes: the argv strings, an empty string, then the environment
 * strings, each ended by NUL. The runner answers on the command's control socket only:
 * when the command ends it writes the native i32 wait status of the command's init (see
 * below) and closes it. Anything arriving on the control socket -- a byte, or its end --
 * makes the runner kill the command. The end of SOCKET_FD (the sidecar closed it, or died)
 * ends the runner, and with it the sandbox and every command in it. Anything malformed
 * on SOCKET_FD ends the runner too; the sidecar then starts a new sandbox.
 *
 * Guarantees, per command:
 * - its own PID namespace: it sees and signals only its own processes, never the runner
 *   or another command. Its pid 1 is a tiny init (a fork of the runner) that reaps orphans
 *   and exits when bash does; SIGKILL to it when the sidecar asks. Either way the kernel
 *   then kills everything left in the namespace -- background children, double forks,
 *   setsid and nohup alike -- so nothing a command started outlives it.
 * - its own mount namespace with a fresh tmpfs /tmp of TMP_BYTES and a fresh /proc of its
 *   PID namespace, whose sys, sysrq-trigger, irq and bus are bound read-only as bubblewrap
 *   does; the session's /dev read-only, with a fresh /dev/shm; its own IPC namespace.
 * - its own user namespace, nested in the session's, mapping uid and gid 1000 onto the
 *   session's 0: the mounts above belong to the session's namespace, so the command cannot
 *   undo them, and max_user_namespaces is 0 inside it, so it can make no namespace
 *   (bubblewrap's --disable-userns, which the session's bubblewrap therefore leaves out).
 *   The order matters: the kernel grants a fresh procfs only where a procfs is already
 *   fully visible, and mounts copied into a namespace of a nested user namespace are
 *   locked -- bubblewrap's read-only covers of /proc/sys would then hide it. So /proc is
 *   mounted first, and the nesting comes after; the limit is written through a descriptor
 *   of /proc/sys/user opened before the read-only covers. Mapping the session's uid 0
 *   needs CAP_SETFCAP at the nesting (the kernel's rule for mapping a namespace's root).
 * - no capability: bounding set cleared, ambient set emptied, uid 1000 and a zero capset
 *   (permitted, effective, inheritable) before exec; no_new_privs is inherited.
 * - RLIMIT_NPROC (set by the prelude) counts its own user namespace's processes only.
 * - stdin /dev/null, stdout, stderr and the report on 1, 2 and 3, no other descriptor.
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

#define MAX_COMMANDS 256
#define MAX_MESSAGE (4u << 20)
#define GUEST_ID 1000

struct command {
    pid_t pid;  /* the command's init; 0: a free slot */
    int control;
    int killed; /* its control socket is no longer watched */
};

static struct command commands[MAX_COMMANDS];
static unsigned long long tmp_bytes;

static void fail(const char *step) {
    dprintf(2, "toolcage: sandbox: %s: %s\n", step, strerror(errno));
    _exit(125);
}

static int write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = write(fd, text, strlen(text));
    close(fd);
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

static void read_only(const char *path) {
    if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) != 0) {
        if (errno == ENOENT) return;
        fail(path);
    }
    unsigned long flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
    if (mount(NULL, path, NULL, flags, NULL) != 0) fail(path);
}

/* As pid 1 of the command's new PID and mount namespaces: set up, then run bash. */
static void command_init(char **argv, char **envp) {
    char option[64];
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) fail("private mounts");
    snprintf(option, sizeof option, "size=%llu,mode=1777", tmp_bytes);
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, option) != 0) fail("/tmp");
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
        fail("/proc");
    /* bubblewrap's root is a tmpfs the session's uid owns, holding /bin, /lib* (links) and
     * /run: read-only here, or a command could leave a /bin/bash that every later command
     * of the session runs in place of the prelude, its limits and the checked command */
    if (mount(NULL, "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL))
        fail("read-only /");
    /* bubblewrap's /dev is the session's and writable by its uid: read-only here (device
     * nodes stay usable), with a fresh /dev/shm, so that no command leaves a file there */
    if (mount("/dev", "/dev", NULL, MS_BIND | MS_REC, NULL) != 0) fail("/dev");
    if (mount(NULL, "/dev", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID, NULL) != 0)
        fail("/dev");
    if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, option) != 0 && errno != ENOENT)
        fail("/dev/shm");
    int sysctl = open("/proc/sys/user", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (sysctl < 0) fail("/proc/sys/user");
    read_only("/proc/sys");
    read_only("/proc/sysrq-trigger");
    read_only("/proc/irq");
    read_only("/proc/bus");
    if (unshare(CLONE_NEWUSER) != 0) fail("user namespace");
    char map[32];
    snprintf(map, sizeof map, "%d 0 1\n", GUEST_ID);
    if (write_file("/proc/self/setgroups", "deny") != 0) fail("setgroups");
    if (write_file("/proc/self/uid_map", map) != 0) fail("uid_map");
    if (write_file("/proc/self/gid_map", map) != 0) fail("gid_map");
    int limit = openat(sysctl, "max_user_namespaces", O_WRONLY | O_CLOEXEC);
    if (limit < 0 || write(limit, "0", 1) != 1) fail("max_user_namespaces");
    close(limit);
    close(sysctl);
    for (int cap = 0; prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0; cap++) {
    }
    if (errno != EINVAL) fail("bounding set");
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) fail("ambient");
    if (setresgid(GUEST_ID, GUEST_ID, GUEST_ID) != 0) fail("setresgid");
    if (setresuid(GUEST_ID, GUEST_ID, GUEST_ID) != 0) fail("setresuid");
    struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct none[2] = {{0, 0, 0}, {0, 0, 0}};
    if (syscall(SYS_capset, &header, none) != 0) fail("capset");
    if (chdir("/workspace") != 0 && chdir("/") != 0) fail("chdir");

    pid_t bash = fork();
    if (bash < 0) fail("fork");
    if (bash == 0) {
        sigset_t none_blocked;
        sigemptyset(&none_blocked);
        sigprocmask(SIG_SETMASK, &none_blocked, NULL);
        execve(argv[0], argv, envp);
        fail(argv[0]);
    }
    /* init: hold none of the command's descriptors, reap orphans, end with bash. Its uid
     * is the command's (uid 1000 is the same host id as the 0 it had), so the kernel left
     * it dumpable: made not dumpable, the command can neither trace it nor read its memory
     * (a copy of the runner's, with what earlier commands sent) nor keep it from ending. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    close(0);
    close(1);
    close(2);
    close(3);
    for (;;) {
        int status;
        pid_t done = wait(&status);
        if (done == bash) {
            if (WIFSIGNALED(status)) _exit(128 + WTERMSIG(status));
            _exit(WEXITSTATUS(status));
        }
        if (done < 0 && errno != EINTR) _exit(125);
    }
}

static int read_full(int fd, char *buf, size_t size) {
    while (size > 0) {
        ssize_t n = read(fd, buf, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        buf += n;
        size -= (size_t)n;
    }
    return 0;
}

/* The NUL-ended strings at *at up to an empty one (or end) as a NULL-ended vector. */
static char **strings(char **at, char *end) {
    size_t count = 0;
    for (char *p = *at; p < end && *p; p += strlen(p) + 1) count++;
    char **vector = calloc(count + 1, sizeof *vector);
    if (vector == NULL) return NULL;
    for (size_t i = 0; i < count; i++) {
        vector[i] = *at;
        *at += strlen(*at) + 1;
    }
    if (*at < end) (*at)++; /* the empty separator */
    return vector;
}

static void start(int session) {
    uint32_t length;
    int fds[4] = {-1, -1, -1, -1};
    char control[CMSG_SPACE(sizeof fds)];
    struct iovec iov = {&length, sizeof length};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1,
                         .msg_control = control, .msg_controllen = sizeof control};
    ssize_t got = recvmsg(session, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
    if (got <= 0) exit(0); /* the sidecar is gone: the session ends */
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    if (got != sizeof length || cmsg == NULL || cmsg->cmsg_type != SCM_RIGHTS ||
        cmsg->cmsg_len != CMSG_LEN(sizeof fds) || length == 0 || length > MAX_MESSAGE)
        exit(3); /* a broken stream cannot be resynchronised */
    memcpy(fds, CMSG_DATA(cmsg), sizeof fds);
    char *buf = malloc(length + 1);
    if (buf == NULL || read_full(session, buf, length) != 0) exit(3);
    buf[length] = '\0';
    char *at = buf, *end = buf + length;
    char **argv = strings(&at, end);
    char **envp = strings(&at, end);
    int slot = 0;
    while (slot < MAX_COMMANDS && commands[slot].pid != 0) slot++;
    pid_t pid = -1;
    if (argv != NULL && envp != NULL && argv[0] != NULL && slot < MAX_COMMANDS)
        pid = (pid_t)syscall(SYS_clone, CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | SIGCHLD,
                             0, 0, 0, 0);
    if (pid == 0) {
        int null = open("/dev/null", O_RDONLY);
        if (null < 0 || dup2(null, 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[2], 2) < 0 ||
            dup2(fds[3], 3) < 0)
            _exit(125);
        syscall(SYS_close_range, 4, ~0u, 0);
        command_init(argv, envp);
    }
    close(fds[1]);
    close(fds[2]);
    close(fds[3]);
    free(argv);
    free(envp);
    free(buf);
    if (pid < 0) { /* it cannot start: report exit status 125 */
        int status = 125 << 8;
        (void)!write(fds[0], &status, sizeof status);
        close(fds[0]);
        return;
    }
    commands[slot] = (struct command){pid, fds[0], 0};
}

static void reap(void) {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        for (int i = 0; i < MAX_COMMANDS; i++) {
            if (commands[i].pid != pid) continue;
            (void)!write(commands[i].control, &status, sizeof status);
            close(commands[i].control);
            commands[i] = (struct command){0, -1, 0};
            break;
        }
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: toolcage-runner SOCKET_FD TMP_BYTES\n");
        return 2;
    }
    int session = atoi(argv[1]);
    tmp_bytes = strtoull(argv[2], NULL, 10);
    sigset_t child;
    sigemptyset(&child);
    sigaddset(&child, SIGCHLD);
    sigprocmask(SIG_BLOCK, &child, NULL);
    int children = signalfd(-1, &child, SFD_CLOEXEC | SFD_NONBLOCK);
    if (children < 0) return 2;
    struct pollfd polled[MAX_COMMANDS + 2];
    int slots[MAX_COMMANDS + 2];
    for (;;) {
        int n = 0;
        polled[n++] = (struct pollfd){session, POLLIN, 0};
        polled[n++] = (struct pollfd){children, POLLIN, 0};
        for (int i = 0; i < MAX_COMMANDS; i++) {
            if (commands[i].pid == 0 || commands[i].killed) continue;
            slots[n] = i;
            polled[n++] = (struct pollfd){commands[i].control, POLLIN, 0};
        }
        if (poll(polled, (nfds_t)n, -1) < 0) {
            if (errno == EINTR) continue;
            return 2;
        }
        if (polled[1].revents) {
            struct signalfd_siginfo info;
            while (read(children, &info, sizeof info) > 0) {
            }
            reap();
        }
        for (int j = 2; j < n; j++) {
            struct command *command = &commands[slots[j]];
            if (polled[j].revents && command->pid != 0 && command->control == polled[j].fd) {
                kill(command->pid, SIGKILL); /* the sidecar asked, or is gone */
                command->killed = 1;
            }
        }
        if (polled[0].revents & POLLIN) {
            start(session);
        } else if (polled[0].revents & (POLLHUP | POLLERR)) {
            break;
        }
    }
    return 0;
}
