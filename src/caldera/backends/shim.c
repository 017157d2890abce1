/* The shim in C: what shim.py does, at the cost of one small exec instead of a Python start-up.

   Every pod's process group is led by a shim (see shim.py's docstring for the whole contract:
   the gate, the log and log.times, signal forwarding, emptying the group and what is below it,
   the exit record). This program behaves the same, byte for byte in what it writes, so the
   executor, adoption and the readers of the pod directory cannot tell which one ran; the
   executor uses it when `make` built it (.venv/bin/caldera-shim) and shim.py otherwise.

   Usage: caldera-shim POD_DIR ATTEMPT -- ARGV...   (started in a new session, FORWARDED blocked,
   stdin the gate, stdout and stderr the pod's log). */

#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define KILL_ROUNDS 10   /* each round kills every member it saw; more rounds only catch forks in flight */
#define KILL_TIMEOUT_MS 10000
#define CHUNK 65536

static volatile sig_atomic_t received, held, spawning;

/* ---------------------------------------------------------------- small helpers */

static int pidfd_open(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }
static int pidfd_kill(int fd) { return (int)syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0); }

static int write_all(int fd, const char *buf, size_t len) {
    while (len > 0) {
        ssize_t n = write(fd, buf, len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The whole of `fd` until EOF, NUL-terminated (the gate's order); NULL if it could not be read. */
static char *read_all(int fd, size_t *len) {
    size_t cap = 4096, used = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        if (used == cap) {
            char *more = realloc(buf, cap * 2 + 1);
            if (!more) break;
            buf = more;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + used, cap - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        if (n == 0) {
            buf[used] = '\0';
            *len = used;
            return buf;
        }
        used += (size_t)n;
    }
    free(buf);
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---------------------------------------------------------------- /proc (as shim.proc_stat & co.) */

/* State, process group and start time of `pid` from /proc/<pid>/stat; 0 if there is no such process. */
static int proc_stat(pid_t pid, char *state, long *pgrp) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = '\0';
    char *close_paren = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
    if (!close_paren || sscanf(close_paren + 2, "%c %*d %ld", state, pgrp) != 2) return 0;
    return 1;
}

static int live(char state) { return state != 'Z' && state != 'X'; }

struct pids { pid_t *v; size_t n, cap; };

static void push(struct pids *p, pid_t pid) {
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        pid_t *v = realloc(p->v, cap * sizeof *v);
        if (!v) return; /* out of memory: this one is missed, a later round sees it */
        p->v = v;
        p->cap = cap;
    }
    p->v[p->n++] = pid;
}

/* The live processes of group `pgid` but `spare`. */
static void group_members(pid_t pgid, pid_t spare, struct pids *out) {
    out->n = 0;
    DIR *proc = opendir("/proc");
    if (!proc) return;
    struct dirent *e;
    while ((e = readdir(proc))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        char state;
        long pgrp;
        if (*end || pid <= 0 || pid == spare) continue;
        if (proc_stat((pid_t)pid, &state, &pgrp) && pgrp == pgid && live(state)) push(out, (pid_t)pid);
    }
    closedir(proc);
}

/* The live processes below `root` (children, theirs, ...), from /proc/<pid>/task/<tid>/children. */
static void descendants(pid_t root, struct pids *out) {
    out->n = 0;
    struct pids todo = {0};
    push(&todo, root);
    while (todo.n) {
        pid_t parent = todo.v[--todo.n];
        char path[96];
        snprintf(path, sizeof path, "/proc/%d/task", (int)parent);
        DIR *tasks = opendir(path);
        if (!tasks) continue; /* gone meanwhile */
        struct dirent *t;
        while ((t = readdir(tasks))) {
            if (t->d_name[0] == '.') continue;
            char children[320];
            snprintf(children, sizeof children, "/proc/%d/task/%s/children", (int)parent, t->d_name);
            int fd = open(children, O_RDONLY | O_CLOEXEC);
            if (fd < 0) continue;
            size_t len = 0;
            char *buf = read_all(fd, &len);
            close(fd);
            for (char *word = buf ? strtok(buf, " \n") : NULL; word; word = strtok(NULL, " \n")) {
                pid_t kid = (pid_t)atol(word);
                push(out, kid);
                push(&todo, kid);
            }
            free(buf);
        }
        closedir(tasks);
    }
    free(todo.v);
}

/* Wait until every process behind `fds` has exited; 0 if none did for KILL_TIMEOUT_MS. */
static int wait_exited(int *fds, size_t n) {
    struct pollfd *polled = calloc(n ? n : 1, sizeof *polled);
    if (!polled) return 0;
    for (size_t i = 0; i < n; i++) polled[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
    size_t left = n;
    int ok = 1;
    while (left) {
        int ready = poll(polled, n, KILL_TIMEOUT_MS);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) { ok = 0; break; }
        for (size_t i = 0; i < n; i++)
            if (polled[i].fd >= 0 && polled[i].revents) {
                polled[i].fd = -1; /* poll ignores negative descriptors */
                left--;
            }
    }
    free(polled);
    return ok;
}

/* SIGKILL every process of `pids` (pinned by a pidfd first; with `pgid` >= 0, only if it is still in
   that group) and wait until they are gone; 0 if one survived. */
static int kill_and_wait(struct pids *pids, long pgid) {
    int *fds = calloc(pids->n ? pids->n : 1, sizeof *fds);
    size_t n = 0;
    if (!fds) return 0;
    for (size_t i = 0; i < pids->n; i++) {
        int fd = pidfd_open(pids->v[i]);
        if (fd < 0) continue;
        char state;
        long pgrp;
        /* read after pinning the process: the pid may have changed hands since the scan */
        if (pgid >= 0 && (!proc_stat(pids->v[i], &state, &pgrp) || pgrp != pgid)) {
            close(fd);
            continue;
        }
        pidfd_kill(fd);
        fds[n++] = fd;
    }
    int ok = wait_exited(fds, n);
    for (size_t i = 0; i < n; i++) close(fds[i]);
    free(fds);
    return ok;
}

static int kill_group(pid_t pgid, pid_t spare) {
    struct pids pids = {0};
    int ok = 1;
    for (int round = 0; round < KILL_ROUNDS && ok; round++) {
        group_members(pgid, spare, &pids);
        if (!pids.n) break;
        ok = kill_and_wait(&pids, pgid);
    }
    if (ok) {
        group_members(pgid, spare, &pids);
        ok = pids.n == 0;
    }
    free(pids.v);
    return ok;
}

static int kill_tree(pid_t root) {
    struct pids pids = {0};
    int ok = 1;
    for (int round = 0; round < KILL_ROUNDS && ok; round++) {
        descendants(root, &pids);
        if (!pids.n) break;
        ok = kill_and_wait(&pids, -1);
    }
    if (ok) {
        descendants(root, &pids);
        ok = pids.n == 0;
    }
    free(pids.v);
    return ok;
}

/* ---------------------------------------------------------------- signals (as shim._Forwarder) */

static void forward(int sig) {
    /* Our own copy is discarded while ignored; handling it would forward it again, forever. */
    struct sigaction ignore = {.sa_handler = SIG_IGN}, previous;
    sigaction(sig, &ignore, &previous);
    killpg(0, sig);
    sigaction(sig, &previous, NULL);
}

static void on_signal(int sig) {
    int saved = errno;
    received = sig;
    if (spawning)
        held = sig; /* while the child is being created, a signal is held and sent after */
    else
        forward(sig);
    errno = saved;
}

static void forwarded_set(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
}

/* ---------------------------------------------------------------- the log (as shim._LogCopier) */

struct log {
    int reader, writer, times;
    int at_line_start;
};

static int ends_a_line(const char *path) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 1;
    off_t size = lseek(fd, 0, SEEK_END);
    char last = '\n';
    if (size > 0 && pread(fd, &last, 1, size - 1) != 1) last = '\n';
    close(fd);
    return size <= 0 || last == '\n';
}

/* Copy one read of the pipe to the log (fd 1), noting when its first new line began; 0 at EOF or error. */
static int copy_once(struct log *log) {
    static char data[CHUNK];
    ssize_t n = read(log->reader, data, sizeof data);
    if (n < 0 && errno == EINTR) return 1;
    if (n <= 0) return 0;
    struct stat st;
    off_t offset = fstat(1, &st) == 0 ? st.st_size : 0; /* O_APPEND: this write lands at the end */
    double when = now();
    ssize_t first = 0;
    if (!log->at_line_start) {
        char *nl = memchr(data, '\n', (size_t)n);
        first = nl ? nl - data + 1 : 0;
    }
    if ((first > 0 && first < n) || (first == 0 && log->at_line_start)) {
        char note[64];
        int len = snprintf(note, sizeof note, "%lld %.6f\n", (long long)(offset + first), when);
        write_all(log->times, note, (size_t)len); /* before the data: a reader never sees a line without its time */
    }
    write_all(1, data, (size_t)n);
    log->at_line_start = data[n - 1] == '\n';
    return 1;
}

/* Copy until the child exits (its pidfd becomes readable) or the pipe has no writer left. */
static void pump(struct log *log, int child_fd) {
    struct pollfd polled[2] = {{.fd = log->reader, .events = POLLIN}, {.fd = child_fd, .events = POLLIN}};
    for (;;) {
        if (poll(polled, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return;
        }
        if (polled[1].revents) return;
        if (polled[0].revents && !copy_once(log)) return;
    }
}

/* What is in the pipe once the group was killed, without waiting: a process that left the group may
   hold a writer for ever. */
static void drain(struct log *log) {
    if (log->writer >= 0) close(log->writer);
    fcntl(log->reader, F_SETFL, fcntl(log->reader, F_GETFL) | O_NONBLOCK);
    while (copy_once(log)) {
    }
    close(log->reader);
    close(log->times);
}

/* ---------------------------------------------------------------- starting the command */

/* execvpe as Python's os.execvpe does it: PATH from the command's own environment (os.defpath if it
   has none), the first error other than ENOENT/ENOTDIR reported, else the last. Returns the errno. */
static int exec_command(char **argv, char **env) {
    if (strchr(argv[0], '/')) {
        execve(argv[0], argv, env);
        return errno;
    }
    const char *path = "/bin:/usr/bin";
    for (char **e = env; *e; e++)
        if (strncmp(*e, "PATH=", 5) == 0) path = *e + 5;
    int saved = 0, last = ENOENT;
    size_t name_len = strlen(argv[0]);
    for (const char *dir = path;; dir++) {
        const char *colon = strchr(dir, ':');
        size_t dir_len = colon ? (size_t)(colon - dir) : strlen(dir);
        char *full = malloc(dir_len + name_len + 2);
        if (!full) return ENOMEM;
        if (dir_len) {
            memcpy(full, dir, dir_len);
            full[dir_len] = '/';
            memcpy(full + dir_len + 1, argv[0], name_len + 1);
        } else {
            memcpy(full, argv[0], name_len + 1); /* an empty entry: the working directory */
        }
        execve(full, argv, env);
        last = errno;
        if (!saved && last != ENOENT && last != ENOTDIR) saved = last;
        free(full);
        if (!colon) break;
        dir = colon;
    }
    return saved ? saved : last;
}

/* Start `argv` as our child, in our group, in `cwd` with exactly `env`, stdin /dev/null, stdout and
   stderr `out`; its pid, or -errno as the child met it. */
static pid_t spawn(char **argv, const char *cwd, char **env, int out) {
    int failed[2];
    if (pipe2(failed, O_CLOEXEC) < 0) return -errno; /* EOF without a word means the exec succeeded */
    sigset_t forwarded, previous;
    forwarded_set(&forwarded);
    sigprocmask(SIG_BLOCK, &forwarded, &previous); /* our handler must not run in the child */
    pid_t pid = fork();
    if (pid == 0) {
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigaction(SIGTERM, &dfl, NULL);
        sigaction(SIGINT, &dfl, NULL);
        sigprocmask(SIG_UNBLOCK, &forwarded, NULL);
        int err = 0;
        if (chdir(cwd) < 0) err = errno;
        if (!err) {
            int null = open("/dev/null", O_RDONLY);
            if (null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0) err = errno;
            if (null > 2) close(null);
        }
        if (!err) err = exec_command(argv, env);
        char word[16];
        int len = snprintf(word, sizeof word, "%d", err);
        write_all(failed[1], word, (size_t)len);
        _exit(127);
    }
    int fork_errno = errno;
    sigprocmask(SIG_SETMASK, &previous, NULL);
    close(failed[1]);
    if (pid < 0) {
        close(failed[0]);
        return -fork_errno;
    }
    size_t len = 0;
    char *word = read_all(failed[0], &len);
    close(failed[0]);
    int code = word && len ? atoi(word) : 0;
    free(word);
    if (len) {
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
        }
        return -(code ? code : EIO);
    }
    return pid;
}

static int exit_code_of(int status) {
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}

/* Run the command to its end; its exit code as a shell reports it. */
static int run(char **argv, const char *cwd, char **env, struct log *log) {
    /* A signal handled before the fork would reach an empty group, and one handled after it by the
       handler and again here would arrive twice: from now until the child exists, signals are held. */
    spawning = 1;
    if (received) return 128 + received; /* stopped before it started */
    pid_t pid = spawn(argv, cwd, env, log->writer);
    close(log->writer); /* the child's are the writers left: their end is the pipe's end */
    log->writer = -1;
    sigset_t forwarded, previous;
    forwarded_set(&forwarded);
    sigprocmask(SIG_BLOCK, &forwarded, &previous);
    spawning = 0;
    int pending = held;
    sigprocmask(SIG_SETMASK, &previous, NULL);
    if (pid < 0) {
        int err = (int)-pid;
        dprintf(2, "caldera: cannot start '%s' in '%s': %s\n", argv[0], cwd, strerror(err));
        return err == ENOENT ? 127 : 126;
    }
    if (pending) forward(pending);
    int pidfd = pidfd_open(pid);
    if (pidfd >= 0) {
        pump(log, pidfd);
        close(pidfd);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return exit_code_of(status);
}

/* The order from the gate: the working directory, then NAME=VALUE per variable, NUL-separated.
   Returns the environment (NULL-terminated) and sets *cwd; NULL if there is no valid order. */
static char **decode_order(char *raw, size_t len, char **cwd) {
    if (!len) return NULL;
    size_t count = 1;
    for (size_t i = 0; i < len; i++) count += raw[i] == '\0';
    char **env = calloc(count + 1, sizeof *env);
    if (!env) return NULL;
    *cwd = raw;
    size_t n = 0;
    for (char *p = raw + strlen(raw) + 1; p <= raw + len; p += strlen(p) + 1) {
        char *eq = strchr(p, '=');
        if (!eq || eq == p) {
            free(env);
            return NULL;
        }
        env[n++] = p;
    }
    return env;
}

static void write_exit(int code, long attempt) {
    char tmp[64], record[160];
    snprintf(tmp, sizeof tmp, ".exit.%d.tmp", (int)getpid());
    int len = snprintf(record, sizeof record, "{\"exit_code\": %d, \"attempt\": %ld, \"finished_at\": %.6f}\n",
                       code, attempt, now());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0 || write_all(fd, record, (size_t)len) < 0 || close(fd) < 0 || rename(tmp, "exit") < 0)
        dprintf(2, "caldera: cannot record the exit code: %s\n", strerror(errno));
}

/* The gate closed with no order: the executor died (or failed) after recording this attempt and before
   opening the gate. Nothing of the user's runs; this file says so to the executor that adopts the pod. */
static void write_unstarted(long attempt) {
    char tmp[64], record[32];
    snprintf(tmp, sizeof tmp, ".unstarted.%d.tmp", (int)getpid());
    int len = snprintf(record, sizeof record, "%ld\n", attempt);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0 || write_all(fd, record, (size_t)len) < 0 || close(fd) < 0 || rename(tmp, "unstarted") < 0)
        dprintf(2, "caldera: cannot record that nothing started: %s\n", strerror(errno));
}

int main(int argc, char **argv) {
    if (argc < 5 || strcmp(argv[3], "--") != 0) {
        dprintf(2, "usage: caldera-shim POD_DIR ATTEMPT -- ARGV...\n");
        return 2;
    }
    char *end;
    long attempt = strtol(argv[2], &end, 10);
    if (*end || chdir(argv[1]) < 0) { /* hold no directory of the daemon's */
        dprintf(2, "caldera-shim: bad pod directory or attempt: %s %s\n", argv[1], argv[2]);
        return 2;
    }
    /* SA_NODEFER: the signal is not blocked while handled, so forward()'s own copy, generated while
       it is ignored, is discarded (a blocked one would stay pending and come back, forever). */
    struct sigaction handler = {.sa_handler = on_signal, .sa_flags = SA_RESTART | SA_NODEFER};
    sigemptyset(&handler.sa_mask);
    sigaction(SIGTERM, &handler, NULL);
    sigaction(SIGINT, &handler, NULL);
    sigset_t forwarded;
    forwarded_set(&forwarded);
    sigprocmask(SIG_UNBLOCK, &forwarded, NULL); /* the executor starts us with them blocked */
    /* Best effort: without it, orphans go to init. */
    int subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;

    size_t len = 0;
    char *raw = read_all(0, &len);
    char *cwd = NULL;
    char **env = raw ? decode_order(raw, len, &cwd) : NULL;
    if (!env) {
        dprintf(2, "caldera: not started: the executor did not record this attempt\n");
        write_unstarted(attempt);
        return 1;
    }
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC); /* the gate is done with */
    if (null >= 0) {
        dup2(null, 0);
        close(null);
    }
    struct log log = {.at_line_start = ends_a_line("log")};
    int pipe_fds[2];
    log.times = open("log.times", O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
    if (pipe2(pipe_fds, O_CLOEXEC) < 0 || log.times < 0) {
        dprintf(2, "caldera: cannot set up the pod's log: %s\n", strerror(errno));
        return 1;
    }
    log.reader = pipe_fds[0];
    log.writer = pipe_fds[1];
    int code = run(argv + 4, cwd, env, &log);
    /* Every process of our group is below us: we lead the session (only our descendants are in it)
       and orphans come back to us, a subreaper. So emptying the tree (what left the group with setsid
       included) empties the group without scanning all of /proc, as shim.py does; unless the
       subreaper could not be set, when orphans of the group went to init. */
    if (!subreaper) kill_group(getpgrp(), getpid());
    kill_tree(getpid());
    drain(&log);
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    write_exit(code, attempt);
    return 0;
}
