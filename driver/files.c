/* The files sgc and sgc-opt read and write (see files.h). A compiler that
 * overwrites its source, or leaves half an object behind when it fails,
 * loses work; so outputs are produced in memory, checked against the input
 * before anything is compiled, and committed with rename(2) at the end. */
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../ir/util.h"

char *files_read_input(const char *tool, const char *path, size_t *len) {
  char *src = read_file(path, len);
  if (!src && errno == EFBIG)
    fprintf(stderr, "%s: error: '%s' is larger than %d MiB, the limit on an input file\n", tool,
            path, MAX_INPUT_BYTES >> 20);
  else if (!src)
    fprintf(stderr, "%s: error: cannot read '%s': %s\n", tool, path, strerror(errno));
  return src;
}

static bool is_stdout(const OutFile *o) { return strcmp(o->path, "-") == 0; }

/* The identity of an existing file (following symlinks), or false. */
static bool file_id(const char *path, struct stat *st) {
  if (strcmp(path, "-") == 0)
    return fstat(STDIN_FILENO, st) == 0;
  return stat(path, st) == 0;
}

static bool same_id(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* The path an output that does not exist yet will be created at: its
 * directory resolved, so that `x.o` and `./x.o` compare equal. NULL if
 * the directory does not exist (writing will fail and say so). */
static char *future_path(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
  char *real = realpath(dir, NULL);
  free(dir);
  if (!real)
    return NULL;
  const char *base = slash ? slash + 1 : path;
  char *full = xmalloc(strlen(real) + strlen(base) + 2);
  sprintf(full, "%s/%s", real, base);
  free(real);
  return full;
}

static bool same_output(const char *a, const char *b) {
  struct stat sa, sb;
  bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
  if (ea || eb)
    return ea && eb && same_id(&sa, &sb);
  char *fa = future_path(a), *fb = future_path(b);
  bool same = fa && fb && strcmp(fa, fb) == 0;
  free(fa);
  free(fb);
  return same;
}

int files_check_outputs(const char *tool, const char *input, const OutFile *outs, int n) {
  struct stat in, st;
  bool have_in = file_id(input, &in) && S_ISREG(in.st_mode);
  for (int k = 0; k < n; k++) {
    if (is_stdout(&outs[k]))
      continue;
    if (have_in && stat(outs[k].path, &st) == 0 && same_id(&in, &st)) {
      fprintf(stderr, "%s: error: %s '%s' is the input file; it would be overwritten\n", tool,
              outs[k].what, outs[k].path);
      return 2;
    }
    for (int j = 0; j < k; j++)
      if (!is_stdout(&outs[j]) && same_output(outs[j].path, outs[k].path)) {
        fprintf(stderr, "%s: error: %s and %s name the same file '%s'\n", tool, outs[j].what,
                outs[k].what, outs[k].path);
        return 2;
      }
  }
  return 0;
}

static bool write_fd(int fd, const char *data, size_t len) {
  while (len > 0) {
    ssize_t w = write(fd, data, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      if (w == 0)
        errno = EIO;
      return false;
    }
    data += w;
    len -= (size_t)w;
  }
  return true;
}

/* Where an output goes: a temporary file next to its target (to be
 * renamed over it), or the target itself for standard output and devices.
 * The target of a symlink is replaced, not the link. */
typedef struct Pending {
  char *target; /* NULL: written in place */
  char *temp;
} Pending;

static bool write_temp(const OutFile *o, Pending *p) {
  struct stat st;
  bool exists = stat(o->path, &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) { /* /dev/null, /dev/full, a FIFO */
    int fd = open(o->path, O_WRONLY | O_TRUNC);
    if (fd < 0)
      return false;
    bool ok = write_fd(fd, o->data, o->len);
    int e = errno;
    if (close(fd) != 0 && ok)
      return false;
    errno = e;
    return ok;
  }
  p->target = exists ? realpath(o->path, NULL) : strdup(o->path);
  if (!p->target)
    return false;
  const char *slash = strrchr(p->target, '/');
  size_t dirlen = slash ? (size_t)(slash - p->target) + 1 : 0;
  p->temp = xmalloc(strlen(p->target) + 16);
  sprintf(p->temp, "%.*s.%s.XXXXXX", (int)dirlen, p->target, p->target + dirlen);
  int fd = mkstemp(p->temp);
  if (fd < 0) {
    free(p->temp);
    p->temp = NULL;
    return false;
  }
  /* mkstemp makes the file private (0600); an output gets the mode the
   * file it replaces had, or the usual 0666 less the umask. */
  mode_t mode = st.st_mode & 07777;
  if (!exists) {
    mode_t mask = umask(0);
    umask(mask);
    mode = 0666 & ~mask;
  }
  bool ok = fchmod(fd, mode) == 0 && write_fd(fd, o->data, o->len);
  int e = errno;
  if (close(fd) != 0 && ok)
    return false;
  errno = e;
  return ok;
}

int files_write_all(const char *tool, OutFile *outs, int n) {
  Pending *pend = xmalloc(sizeof(Pending) * (size_t)(n + 1));
  memset(pend, 0, sizeof(Pending) * (size_t)(n + 1));
  int rc = 0;
  for (int k = 0; k < n && rc == 0; k++) {
    bool ok;
    if (is_stdout(&outs[k])) /* past stdio's buffer, so a failure is reported once */
      ok = fflush(stdout) == 0 && write_fd(STDOUT_FILENO, outs[k].data, outs[k].len);
    else
      ok = write_temp(&outs[k], &pend[k]);
    if (!ok && is_stdout(&outs[k])) {
      fprintf(stderr, "%s: error: cannot write to standard output: %s\n", tool, strerror(errno));
      rc = 1;
    } else if (!ok) {
      fprintf(stderr, "%s: error: cannot write '%s': %s\n", tool, outs[k].path, strerror(errno));
      rc = 1;
    }
  }
  for (int k = 0; k < n && rc == 0; k++)
    if (pend[k].temp && rename(pend[k].temp, pend[k].target) != 0) {
      fprintf(stderr, "%s: error: cannot write '%s': %s\n", tool, outs[k].path,
              strerror(errno));
      rc = 1;
    } else if (pend[k].temp) {
      free(pend[k].temp);
      pend[k].temp = NULL;
    }
  for (int k = 0; k < n; k++) {
    if (pend[k].temp)
      unlink(pend[k].temp);
    free(pend[k].temp);
    free(pend[k].target);
    free(outs[k].data);
    outs[k].data = NULL;
  }
  free(pend);
  return rc;
}

int files_close_stdout(const char *tool) {
  errno = 0;
  bool bad = fflush(stdout) != 0 || ferror(stdout);
  int e = errno;
  if (fclose(stdout) != 0 && !bad) {
    bad = true;
    e = errno;
  }
  if (bad) {
    fprintf(stderr, "%s: error: cannot write to standard output: %s\n", tool,
            e ? strerror(e) : "write error");
    return 1;
  }
  return 0;
}
