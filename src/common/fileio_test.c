/* fileio tests — an output never destroys what is not ours to replace: a symlink stays a link and
 * its target is updated, a dangling link creates its target, a device or FIFO is written in place,
 * a full disk (injected short write, /dev/full, a small tmpfs where this machine lets us mount one)
 * leaves the old file whole and no temp file behind, a read-only folder refuses before anything,
 * and the existing file's mode is kept. */
#include "harness.h"
#include "common/fileio.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

static char *slurp(const char *path) {
    char *d = NULL;
    size_t n;
    return fileio_read_all(path, &d, &n) == 0 ? d : NULL;
}

static void put(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (f) { fputs(text, f); fclose(f); }
}

/* Entries of dir other than . and .., so a temp or probe file left behind is seen. */
static int entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

TEST(fileio_symlink_target_updated_link_kept) {
    char dir[512], sub[600], target[700], link[700];
    snprintf(dir, sizeof dir, "%s", harness_tmpdir());
    snprintf(sub, sizeof sub, "%s/real", dir);
    mkdir(sub, 0755);
    snprintf(target, sizeof target, "%s/data.json", sub);
    snprintf(link, sizeof link, "%s/link.json", dir);
    put(target, "old");
    CHECK(symlink("real/data.json", link) == 0);     /* relative: resolved against the link's folder */
    CHECK(fileio_check_writable(link) == 0);
    CHECK(fileio_write_atomic(link, "new", 3) == 0);
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    char *t = slurp(target);
    CHECK_STR(t, "new");
    free(t);
    CHECK_EQ_INT(entries(sub), 1);                   /* the temp file was beside the target, and is gone */
    /* a chain of two links */
    char link2[700];
    snprintf(link2, sizeof link2, "%s/link2.json", dir);
    CHECK(symlink(link, link2) == 0);
    CHECK(fileio_write_atomic(link2, "newer", 5) == 0);
    CHECK(lstat(link2, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    t = slurp(target);
    CHECK_STR(t, "newer");
    free(t);
}

TEST(fileio_dangling_symlink_creates_target) {
    char link[600], target[600];
    snprintf(target, sizeof target, "%s/made.json", harness_tmpdir());
    snprintf(link, sizeof link, "%s/dangling.json", harness_tmpdir());
    CHECK(symlink(target, link) == 0);
    CHECK(fileio_check_writable(link) == 0);
    CHECK(fileio_write_atomic(link, "x", 1) == 0);
    struct stat st;
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    char *t = slurp(target);
    CHECK_STR(t, "x");
    free(t);
    /* a link into a folder that does not exist: refused before the run, and at the write */
    char bad[600];
    snprintf(bad, sizeof bad, "%s/to-nowhere.json", harness_tmpdir());
    CHECK(symlink("/nonexistent-dir/x.json", bad) == 0);
    errno = 0;
    CHECK(fileio_check_writable(bad) == -1 && errno == ENOENT);
    CHECK(fileio_write_atomic(bad, "x", 1) == -1 && errno == ENOENT);
    CHECK(lstat(bad, &st) == 0 && S_ISLNK(st.st_mode));
}

TEST(fileio_device_written_in_place) {
    char link[600];
    snprintf(link, sizeof link, "%s/null.json", harness_tmpdir());
    CHECK(symlink("/dev/null", link) == 0);
    CHECK(fileio_check_writable("/dev/null") == 0);
    CHECK(fileio_write_atomic("/dev/null", "{}\n", 3) == 0);
    CHECK(fileio_write_atomic(link, "{}\n", 3) == 0);
    struct stat st;
    CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));
    CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    /* a full device: the error comes back, the device stays a device */
    errno = 0;
    CHECK(fileio_write_atomic("/dev/full", "{}\n", 3) == -1 && errno == ENOSPC);
    CHECK(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode));
    /* a folder is not replaced either */
    errno = 0;
    CHECK(fileio_write_atomic(harness_tmpdir(), "x", 1) == -1 && errno == EISDIR);
    CHECK(fileio_check_writable(harness_tmpdir()) == -1 && errno == EISDIR);
}

TEST(fileio_fifo_written_in_place) {
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s/pipe", harness_tmpdir());
    CHECK(mkfifo(fifo, 0644) == 0);
    CHECK(fileio_check_writable(fifo) == 0);
    int p[2];
    CHECK(pipe(p) == 0);
    pid_t reader = fork();
    if (reader == 0) {      /* reads the FIFO to its end and hands what it read back over the pipe */
        close(p[0]);
        int fd = open(fifo, O_RDONLY);
        char buf[256];
        ssize_t n;
        while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0) (void)!write(p[1], buf, (size_t)n);
        _exit(0);
    }
    close(p[1]);
    const char *doc = "{\"schema\":\"x\"}\n";
    CHECK(fileio_write_atomic(fifo, doc, strlen(doc)) == 0);
    char got[256] = "";
    size_t n = 0;
    ssize_t r;
    while (n < sizeof got - 1 && (r = read(p[0], got + n, sizeof got - 1 - n)) > 0) n += (size_t)r;
    got[n] = 0;
    close(p[0]);
    int status;
    waitpid(reader, &status, 0);
    CHECK_STR(got, doc);
    struct stat st;
    CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
}

/* An injected full disk: the write stops after a short write with ENOSPC; the old file is whole,
 * no temp file is left; the streamed writer fails the same way. */
TEST(fileio_full_disk_keeps_old_file) {
    char path[600];
    snprintf(path, sizeof path, "%s/run.json", harness_tmpdir());
    put(path, "the earlier run");
    char big[8192];
    memset(big, 'a', sizeof big);
    setenv("DSPERF_FILEIO_FAIL_AFTER", "100", 1);
    errno = 0;
    CHECK(fileio_write_atomic(path, big, sizeof big) == -1 && errno == ENOSPC);
    char *t = slurp(path);
    CHECK_STR(t, "the earlier run");
    free(t);
    CHECK_EQ_INT(entries(harness_tmpdir()), 1);
    fileio_out *o = fileio_out_open(path);
    CHECK(o != NULL);
    if (o) {
        for (int i = 0; i < 1000; i++) fprintf(fileio_out_file(o), "{\"index\":%d}\n", i);
        errno = 0;
        CHECK(fileio_out_commit(o) == -1 && errno == ENOSPC);
    }
    t = slurp(path);
    CHECK_STR(t, "the earlier run");
    free(t);
    CHECK_EQ_INT(entries(harness_tmpdir()), 1);
    unsetenv("DSPERF_FILEIO_FAIL_AFTER");
    CHECK(fileio_write_atomic(path, big, sizeof big) == 0);
    /* a real small filesystem, where this machine lets a test mount one (root in a container that
     * allows it); the injected case above covers every machine */
    char mnt[600];
    snprintf(mnt, sizeof mnt, "%s/tiny", harness_tmpdir());
    mkdir(mnt, 0755);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=16k") == 0) {
        char in[700];
        snprintf(in, sizeof in, "%s/run.json", mnt);
        put(in, "kept");
        char *huge = malloc(1 << 20);
        memset(huge, 'b', 1 << 20);
        errno = 0;
        CHECK(fileio_write_atomic(in, huge, 1 << 20) == -1 && errno == ENOSPC);
        free(huge);
        t = slurp(in);
        CHECK_STR(t, "kept");
        free(t);
        CHECK_EQ_INT(entries(mnt), 1);
        umount(mnt);
    }
}

/* A read-only folder: refused by the check (before any run) and by the write, the file in it
 * untouched. Root ignores permission bits, so as root the check runs in a child that gives up
 * root first (setuid to nobody). */
TEST(fileio_read_only_folder_refused) {
    char dir[600], path[700];
    snprintf(dir, sizeof dir, "%s/ro", harness_tmpdir());
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/run.json", dir);
    put(path, "kept");
    chmod(path, 0666);
    chmod(dir, 0555);
    chmod(harness_tmpdir(), 0755);
    pid_t c = fork();
    if (c == 0) {
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(10);
        int code = 0;
        errno = 0;
        if (!(fileio_check_writable(path) == -1 && errno == EACCES)) code |= 1;
        errno = 0;
        if (!(fileio_write_atomic(path, "new", 3) == -1 && errno == EACCES)) code |= 2;
        char other[800];
        snprintf(other, sizeof other, "%s/new.json", dir);
        if (fileio_check_writable(other) != -1) code |= 4;
        _exit(code);
    }
    int status = 0;
    waitpid(c, &status, 0);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", WEXITSTATUS(status));
    char *t = slurp(path);
    CHECK_STR(t, "kept");
    free(t);
    chmod(dir, 0755);
}

TEST(fileio_mode_kept_and_unique_names) {
    char path[600];
    snprintf(path, sizeof path, "%s/secret.json", harness_tmpdir());
    put(path, "a");
    chmod(path, 0600);
    CHECK(fileio_write_atomic(path, "b", 1) == 0);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    /* default names: two in the same second are two files */
    setenv("DSPERF_RESULTS_DIR", harness_tmpdir(), 1);
    char a[700], b[700];
    CHECK(fileio_unique_path("sweep", "json", a, sizeof a) == 0);
    CHECK(fileio_unique_path("sweep", "json", b, sizeof b) == 0);
    CHECK(strcmp(a, b) != 0);
    CHECK(access(a, F_OK) == 0 && access(b, F_OK) == 0);
    CHECK(strncmp(a, harness_tmpdir(), strlen(harness_tmpdir())) == 0 && strstr(a, "/sweep-"));
}
