// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ptags-bpf-sets.h: the daemon-side table of tag sets (id <-> contents and
 * kept subset), shared by identical sets and kept in an append-only journal. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ptags_bpf_set_entry ptags_bpf_set_entry;
struct ptags_bpf_set_entry {
        uint64_t id;
        uint64_t kept_id; /* 0 when nothing is kept; == id when all is kept */
        uint64_t hash;
        char *text; /* the set in the kernel's read format (content key) */
        size_t len;
        /* For the collector (ptags-bpf-tasks.c): the walk that last saw a
         * holder, and since when (ms, CLOCK_MONOTONIC) none was seen; 0 =
         * held at the last walk. */
        uint64_t seen;
        int64_t unref_since;
        ptags_bpf_set_entry *next_by_id, *next_by_text; /* hash chains */
        ptags_bpf_set_entry *prev, *next;               /* every entry, in no order */
};

typedef struct {
        ptags_bpf_set_entry **by_id, **by_text; /* n_buckets chains each */
        size_t n_buckets;
        ptags_bpf_set_entry *first;
        size_t count;
        uint64_t next_id;
        uint64_t hash_key[2]; /* random: a caller cannot choose colliding sets */
        char *path;           /* NULL: not persisted */
        int fd;               /* the journal, open for appending; -1 when not open */
        uint64_t file_size;   /* bytes of whole records in the journal */
        uint64_t live_bytes;  /* what a compacted journal would take */
        uint64_t added_bytes; /* record bytes added since the caller last reset it */
        bool must_rewrite;    /* the journal's tail is not known good */
} ptags_bpf_sets;

/* An empty table that will persist to @path (NULL: never). 0 or -errno. */
int ptags_bpf_sets_init(ptags_bpf_sets *t, const char *path);
void ptags_bpf_sets_clear(ptags_bpf_sets *t);
/* Reads the table from its journal (a missing file is an empty table) and
 * keeps the journal open for appending. A torn last record, as a writer
 * killed mid-append leaves, is cut off; a file that does not parse
 * otherwise is refused (-EBADMSG) and leaves @t empty, reason in @err. */
int ptags_bpf_sets_load(ptags_bpf_sets *t, char *err, size_t err_size);
/* Rewrites the journal with the live entries only (temporary file and
 * rename, so a kill at any point leaves the old or the new one). */
int ptags_bpf_sets_compact(ptags_bpf_sets *t);
/* Empties the table and deletes the file (a fresh start after a reboot
 * lost the kernel state). */
int ptags_bpf_sets_forget(ptags_bpf_sets *t);

ptags_bpf_set_entry *ptags_bpf_sets_by_text(const ptags_bpf_sets *t, const char *text, size_t len);
ptags_bpf_set_entry *ptags_bpf_sets_by_id(const ptags_bpf_sets *t, uint64_t id);
/* Adds a set with a fresh id; @kept_id 0 = none, UINT64_MAX = itself. Its
 * record is in the journal when this returns 0 (*out = the entry). Costs
 * time in proportion to @len only. */
int ptags_bpf_sets_add(ptags_bpf_sets *t, const char *text, size_t len, uint64_t kept_id,
                       ptags_bpf_set_entry **out);
/* Removes one entry (journalled; the entry is freed even when that fails). */
int ptags_bpf_sets_remove(ptags_bpf_sets *t, ptags_bpf_set_entry *e);
/* Removes every entry for which @keep returns false, calling @removed
 * (may be NULL) before each goes; *dropped gets how many. Compacts the
 * journal once its garbage outweighs the live entries. 0 or -errno (the
 * entries are gone from memory either way). */
int ptags_bpf_sets_retain(ptags_bpf_sets *t, bool (*keep)(ptags_bpf_set_entry *e, void *data),
                          void *data, void (*removed)(uint64_t id, void *data), size_t *dropped);
