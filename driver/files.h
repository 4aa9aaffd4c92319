/* The files sgc and sgc-opt read and write: the input is never
 * overwritten, outputs are written all or nothing, and every write
 * (standard output included) is checked. */
#ifndef SGC_FILES_H
#define SGC_FILES_H

#include <stddef.h>

/* One output: the option that names it ("-o", "--header"...), its path
 * ("-": standard output) and its contents, built in memory first. */
typedef struct OutFile {
  const char *what;
  const char *path;
  char *data; /* malloc'd; files_write_all frees it */
  size_t len;
} OutFile;

/* Reads the whole input ("-": standard input). Returns NULL after
 * "TOOL: error: cannot read 'PATH': REASON", or "... is larger than the
 * limit" past MAX_INPUT_BYTES (ir/util.h). */
char *files_read_input(const char *tool, const char *path, size_t *len);

/* Before anything is compiled: returns 2 (bad usage) after
 * "TOOL: error: ..." if an output is the input file, however it is named
 * (./a.sg, a symlink, a hard link: files are compared by device and inode),
 * or if two outputs are one file; 0 if the outputs are fine. */
int files_check_outputs(const char *tool, const char *input, const OutFile *outs, int n);

/* Writes every output, or none: each regular file is written to a
 * temporary file in its own directory, and only once all of them are
 * complete are they renamed over their targets, so a failure leaves
 * existing files as they were and no partial file behind. Devices
 * (/dev/null) and standard output are written in place. Frees the data.
 * Returns 0, or 1 after "TOOL: error: cannot write 'PATH': REASON". */
int files_write_all(const char *tool, OutFile *outs, int n);

/* Flushes and closes standard output before exit: returns 0, or 1 after
 * "TOOL: error: cannot write to standard output: REASON" (a full disk,
 * /dev/full, a closed pipe). */
int files_close_stdout(const char *tool);

#endif
