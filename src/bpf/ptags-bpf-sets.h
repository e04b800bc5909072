/* ptags-bpf-sets.h: the daemon-side table of tag sets (id <-> contents and
 * kept subset), shared by identical sets and persisted across restarts. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
        uint64_t id;
        uint64_t kept_id; /* 0 when nothing is kept; == id when all is kept */
        uint64_t hash;
        char *text; /* the set in the kernel's read format (content key) */
        size_t len;
} ptags_bpf_set_entry;

typedef struct {
        ptags_bpf_set_entry *entries;
        size_t count, capacity;
        uint64_t next_id;
        char *path; /* NULL: not persisted */
} ptags_bpf_sets;

/* An empty table that will persist to @path (NULL: never). 0 or -errno. */
int ptags_bpf_sets_init(ptags_bpf_sets *t, const char *path);
void ptags_bpf_sets_clear(ptags_bpf_sets *t);
/* Reads the table from its file; a missing file is an empty table. A file
 * that does not parse is refused (-EBADMSG) and leaves @t empty, with the
 * reason in @err. */
int ptags_bpf_sets_load(ptags_bpf_sets *t, char *err, size_t err_size);
/* Writes the table atomically (temporary file, fsync, rename). */
int ptags_bpf_sets_save(const ptags_bpf_sets *t);
/* Deletes the file (a fresh start after a reboot lost the kernel state). */
int ptags_bpf_sets_forget(ptags_bpf_sets *t);

ptags_bpf_set_entry *ptags_bpf_sets_by_text(const ptags_bpf_sets *t, const char *text, size_t len);
ptags_bpf_set_entry *ptags_bpf_sets_by_id(const ptags_bpf_sets *t, uint64_t id);
/* Adds a set with a fresh id; @kept_id 0 = none, UINT64_MAX = itself.
 * Returns the new entry or NULL when out of memory. */
ptags_bpf_set_entry *ptags_bpf_sets_add(ptags_bpf_sets *t, const char *text, size_t len,
                                        uint64_t kept_id);
/* Removes every entry for which @keep returns false; returns how many. */
size_t ptags_bpf_sets_retain(ptags_bpf_sets *t, bool (*keep)(uint64_t id, void *data), void *data,
                             void (*removed)(uint64_t id, void *data));
