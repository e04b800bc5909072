// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* ptags-bpf-sets.c: the tag-set table behind the BPF backend's set ids: two
 * hash indexes in memory, an append-only checksummed journal on disk. */
#include "ptags-bpf-sets.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ptags-model.h"

/* The journal (host byte order: it never leaves this machine, and means
 * nothing after a reboot, when the kernel state it describes is gone):
 *   16 bytes MAGIC, then records, each a rec_head and, for ADD, the text.
 * ADD gives a set its id and kept subset, DROP ends it, NEXT (written first
 * by a compaction) carries the id counter past ids no ADD shows any more.
 * Appends are one positioned write at the end of the last whole record; a
 * writer killed in the middle leaves a torn record at the very end, which
 * the next load cuts off. Nothing is fsynced: a crash of the process keeps
 * what write() returned for, and a crash of the machine discards the table
 * anyway (the pinned maps it describes do not survive a reboot). */
#define MAGIC        "ptags-sets 2\n\0\0\0"
#define MAGIC_LEN    16
#define LEGACY_MAGIC "ptags-sets 1 "
enum { REC_ADD = 'A', REC_DROP = 'D', REC_NEXT = 'N' };

struct rec_head {
        uint32_t head_crc; /* CRC-32C of the rest of the head */
        uint32_t text_crc; /* CRC-32C of the text */
        uint64_t id;       /* ADD, DROP: the set; NEXT: the next id to hand out */
        uint64_t kept;     /* ADD: the kept subset's id, 0 = none */
        uint32_t type;     /* REC_* */
        uint32_t len;      /* ADD: bytes of text after the head */
};
#define HEAD_LEN    sizeof(struct rec_head)
#define HEADER_SIZE (MAGIC_LEN + HEAD_LEN) /* magic and the NEXT record */

/* A journal is rewritten once its dead records outweigh the live ones (and
 * this floor, so small tables are not rewritten on every collection). */
#define COMPACT_MIN_GARBAGE (64u * 1024u)
#define MIN_BUCKETS         16u

/* ------------------------------------------------------------- hashing */

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
        for (uint32_t i = 0; i < 256; i++) {
                uint32_t c = i;
                for (int k = 0; k < 8; k++)
                        c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1; /* Castagnoli */
                crc_table[0][i] = c;
        }
        for (uint32_t i = 0; i < 256; i++)
                for (int s = 1; s < 8; s++)
                        crc_table[s][i] = (crc_table[s - 1][i] >> 8) ^
                                          crc_table[0][crc_table[s - 1][i] & 0xff];
}

/* CRC-32C, eight bytes a step; @crc is the previous result (0 to start). */
static uint32_t crc32c(uint32_t crc, const void *data, size_t len)
{
        const unsigned char *p = data;
        pthread_once(&crc_once, crc_init);
        crc = ~crc;
        for (; len >= 8; len -= 8, p += 8) {
                uint32_t lo, hi;
                memcpy(&lo, p, 4);
                memcpy(&hi, p + 4, 4);
                lo ^= crc;
                crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
                      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
                      crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
                      crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
        }
        while (len--)
                crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
        return ~crc;
}

/* The head has its own checksum, so a damaged length is told from a torn
 * tail: only a whole head is trusted to say where the record ends. */
static uint32_t head_crc(const struct rec_head *h)
{
        return crc32c(0, (const char *)h + sizeof(h->head_crc), HEAD_LEN - sizeof(h->head_crc));
}

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
        do {                                                                                       \
                v0 += v1;                                                                          \
                v1 = ROTL(v1, 13);                                                                 \
                v1 ^= v0;                                                                          \
                v0 = ROTL(v0, 32);                                                                 \
                v2 += v3;                                                                          \
                v3 = ROTL(v3, 16);                                                                 \
                v3 ^= v2;                                                                          \
                v0 += v3;                                                                          \
                v3 = ROTL(v3, 21);                                                                 \
                v3 ^= v0;                                                                          \
                v2 += v1;                                                                          \
                v1 = ROTL(v1, 17);                                                                 \
                v1 ^= v2;                                                                          \
                v2 = ROTL(v2, 32);                                                                 \
        } while (0)

/* SipHash-2-4 under the table's random key: tag texts come from callers,
 * who must not be able to pile their sets into one chain. */
static uint64_t text_hash(const ptags_bpf_sets *t, const char *s, size_t len)
{
        uint64_t v0 = 0x736f6d6570736575ull ^ t->hash_key[0];
        uint64_t v1 = 0x646f72616e646f6dull ^ t->hash_key[1];
        uint64_t v2 = 0x6c7967656e657261ull ^ t->hash_key[0];
        uint64_t v3 = 0x7465646279746573ull ^ t->hash_key[1];
        const unsigned char *p = (const unsigned char *)s;
        size_t left = len;
        uint64_t m;
        for (; left >= 8; left -= 8, p += 8) {
                memcpy(&m, p, 8);
                v3 ^= m;
                SIPROUND;
                SIPROUND;
                v0 ^= m;
        }
        m = (uint64_t)len << 56;
        for (size_t i = 0; i < left; i++)
                m |= (uint64_t)p[i] << (8 * i);
        v3 ^= m;
        SIPROUND;
        SIPROUND;
        v0 ^= m;
        v2 ^= 0xff;
        for (int i = 0; i < 4; i++)
                SIPROUND;
        return v0 ^ v1 ^ v2 ^ v3;
}

static size_t id_bucket(const ptags_bpf_sets *t, uint64_t id)
{
        /* Ids are a counter: a multiplicative hash spreads them evenly. */
        return (size_t)((id * 0x9e3779b97f4a7c15ull) >> 32) & (t->n_buckets - 1);
}

/* --------------------------------------------------------------- table */

int ptags_bpf_sets_init(ptags_bpf_sets *t, const char *path)
{
        memset(t, 0, sizeof(*t));
        t->next_id = 1;
        t->fd = -1;
        t->live_bytes = HEADER_SIZE;
        if (getrandom(t->hash_key, sizeof(t->hash_key), GRND_NONBLOCK) != sizeof(t->hash_key)) {
                /* Early boot without entropy: still unpredictable enough
                 * from outside, and only a matter of chain lengths. */
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                t->hash_key[0] = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
                t->hash_key[1] = (uint64_t)(uintptr_t)t ^ (uint64_t)ts.tv_sec;
        }
        if (path) {
                t->path = strdup(path);
                if (!t->path)
                        return -ENOMEM;
        }
        return 0;
}

static size_t rec_size(const ptags_bpf_set_entry *e)
{
        return HEAD_LEN + e->len;
}

static void entries_free(ptags_bpf_sets *t)
{
        for (ptags_bpf_set_entry *e = t->first, *next; e; e = next) {
                next = e->next;
                free(e);
        }
        free(t->by_id);
        free(t->by_text);
        t->by_id = t->by_text = NULL;
        t->first = NULL;
        t->n_buckets = 0;
        t->count = 0;
        t->live_bytes = HEADER_SIZE;
}

static void close_journal(ptags_bpf_sets *t)
{
        if (t->fd >= 0)
                close(t->fd);
        t->fd = -1;
        t->file_size = 0;
}

void ptags_bpf_sets_clear(ptags_bpf_sets *t)
{
        entries_free(t);
        close_journal(t);
        free(t->path);
        t->path = NULL;
}

/* Rebuilds both indexes with @n buckets (a power of two). */
static int rehash(ptags_bpf_sets *t, size_t n)
{
        ptags_bpf_set_entry **by_id = calloc(n, sizeof(*by_id));
        ptags_bpf_set_entry **by_text = calloc(n, sizeof(*by_text));
        if (!by_id || !by_text) {
                free(by_id);
                free(by_text);
                return -ENOMEM;
        }
        free(t->by_id);
        free(t->by_text);
        t->by_id = by_id;
        t->by_text = by_text;
        t->n_buckets = n;
        for (ptags_bpf_set_entry *e = t->first; e; e = e->next) {
                size_t i = id_bucket(t, e->id), j = e->hash & (n - 1);
                e->next_by_id = by_id[i];
                by_id[i] = e;
                e->next_by_text = by_text[j];
                by_text[j] = e;
        }
        return 0;
}

ptags_bpf_set_entry *ptags_bpf_sets_by_text(const ptags_bpf_sets *t, const char *text, size_t len)
{
        if (t->n_buckets == 0)
                return NULL;
        uint64_t h = text_hash(t, text, len);
        for (ptags_bpf_set_entry *e = t->by_text[h & (t->n_buckets - 1)]; e; e = e->next_by_text)
                if (e->hash == h && e->len == len && memcmp(e->text, text, len) == 0)
                        return e;
        return NULL;
}

ptags_bpf_set_entry *ptags_bpf_sets_by_id(const ptags_bpf_sets *t, uint64_t id)
{
        if (t->n_buckets == 0)
                return NULL;
        for (ptags_bpf_set_entry *e = t->by_id[id_bucket(t, id)]; e; e = e->next_by_id)
                if (e->id == id)
                        return e;
        return NULL;
}

/* Links a new entry into memory only; NULL when out of memory. */
static ptags_bpf_set_entry *insert(ptags_bpf_sets *t, uint64_t id, uint64_t kept_id,
                                   const char *text, size_t len)
{
        if (t->count >= t->n_buckets &&
            rehash(t, t->n_buckets ? t->n_buckets * 2 : MIN_BUCKETS) < 0)
                return NULL;
        ptags_bpf_set_entry *e = malloc(sizeof(*e) + len + 1);
        if (!e)
                return NULL;
        *e = (ptags_bpf_set_entry){.id = id,
                                   .kept_id = kept_id,
                                   .hash = text_hash(t, text, len),
                                   .text = (char *)(e + 1),
                                   .len = len};
        memcpy(e->text, text, len);
        e->text[len] = '\0';
        size_t i = id_bucket(t, id), j = e->hash & (t->n_buckets - 1);
        e->next_by_id = t->by_id[i];
        t->by_id[i] = e;
        e->next_by_text = t->by_text[j];
        t->by_text[j] = e;
        e->next = t->first;
        if (t->first)
                t->first->prev = e;
        t->first = e;
        t->count++;
        t->live_bytes += rec_size(e);
        return e;
}

/* Unlinks and frees @e (memory only). */
static void unlink_entry(ptags_bpf_sets *t, ptags_bpf_set_entry *e)
{
        ptags_bpf_set_entry **p = &t->by_id[id_bucket(t, e->id)];
        while (*p != e)
                p = &(*p)->next_by_id;
        *p = e->next_by_id;
        p = &t->by_text[e->hash & (t->n_buckets - 1)];
        while (*p != e)
                p = &(*p)->next_by_text;
        *p = e->next_by_text;
        if (e->prev)
                e->prev->next = e->next;
        else
                t->first = e->next;
        if (e->next)
                e->next->prev = e->prev;
        t->count--;
        t->live_bytes -= rec_size(e);
        free(e);
}

/* Space follows the live entries down as well as up. */
static void maybe_shrink(ptags_bpf_sets *t)
{
        size_t n = t->n_buckets;
        while (n > MIN_BUCKETS && t->count < n / 8)
                n /= 2;
        if (n != t->n_buckets)
                rehash(t, n); /* out of memory: keep the larger index */
}

/* ------------------------------------------------------------- journal */

static int pwrite_all(int fd, const void *buf, size_t len, uint64_t at)
{
        const char *p = buf;
        while (len > 0) {
                ssize_t n = pwrite(fd, p, len, (off_t)at);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -EIO;
                p += n;
                len -= (size_t)n;
                at += (uint64_t)n;
        }
        return 0;
}

static struct rec_head make_head(uint32_t type, uint64_t id, uint64_t kept, const char *text,
                                 size_t len)
{
        struct rec_head h = {.type = type, .id = id, .kept = kept, .len = (uint32_t)len};
        h.text_crc = crc32c(0, text, len);
        h.head_crc = head_crc(&h);
        return h;
}

/* Appends whole records (@a then @b, either may be empty) after the last
 * whole record. On failure the file is cut back to it; if even that fails,
 * the next change rewrites the journal first. */
static int append(ptags_bpf_sets *t, const void *a, size_t a_len, const void *b, size_t b_len)
{
        int r = pwrite_all(t->fd, a, a_len, t->file_size);
        if (r == 0)
                r = pwrite_all(t->fd, b, b_len, t->file_size + a_len);
        if (r < 0) {
                if (ftruncate(t->fd, (off_t)t->file_size) < 0)
                        t->must_rewrite = true;
                return r;
        }
        t->file_size += a_len + b_len;
        return 0;
}

/* Buffered writes of a new journal. */
typedef struct {
        int fd;
        uint64_t at;
        size_t used;
        int error;
        char buf[65536];
} writer;

static void w_flush(writer *w)
{
        if (w->error == 0 && w->used > 0)
                w->error = pwrite_all(w->fd, w->buf, w->used, w->at);
        w->at += w->used;
        w->used = 0;
}

static void w_put(writer *w, const void *data, size_t len)
{
        if (len > sizeof(w->buf) - w->used) {
                w_flush(w);
                if (len > sizeof(w->buf)) {
                        if (w->error == 0)
                                w->error = pwrite_all(w->fd, data, len, w->at);
                        w->at += len;
                        return;
                }
        }
        memcpy(w->buf + w->used, data, len);
        w->used += len;
}

int ptags_bpf_sets_compact(ptags_bpf_sets *t)
{
        if (!t->path)
                return 0;
        size_t tmp_len = strlen(t->path) + 5;
        char *tmp = malloc(tmp_len);
        writer *w = malloc(sizeof(*w));
        int r = 0;
        if (!tmp || !w) {
                free(tmp);
                free(w);
                return -ENOMEM;
        }
        snprintf(tmp, tmp_len, "%s.tmp", t->path);
        *w = (writer){.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)};
        if (w->fd < 0) {
                r = -errno;
                goto out;
        }
        w_put(w, MAGIC, MAGIC_LEN);
        struct rec_head h = make_head(REC_NEXT, t->next_id, 0, NULL, 0);
        w_put(w, &h, HEAD_LEN);
        for (ptags_bpf_set_entry *e = t->first; e && w->error == 0; e = e->next) {
                h = make_head(REC_ADD, e->id, e->kept_id, e->text, e->len);
                w_put(w, &h, HEAD_LEN);
                w_put(w, e->text, e->len);
        }
        w_flush(w);
        r = w->error;
        /* The rename is the commit point: before it the old journal is the
         * table, after it the new one; the open fd follows the new file. */
        if (r == 0 && rename(tmp, t->path) < 0)
                r = -errno;
        if (r < 0) {
                close(w->fd);
                unlink(tmp);
                goto out;
        }
        close_journal(t);
        t->fd = w->fd;
        t->file_size = w->at;
        t->must_rewrite = false;
out:
        free(tmp);
        free(w);
        return r;
}

/* The journal exists and its tail is whole before anything is appended:
 * 0, or 1 when it had to be rewritten from the table in memory, which then
 * holds every removal made so far (no drop record may follow: the load
 * refuses the drop of a set it does not know), or -errno. */
static int journal_ready(ptags_bpf_sets *t)
{
        if (t->fd >= 0 && !t->must_rewrite)
                return 0;
        int r = ptags_bpf_sets_compact(t);
        return r < 0 ? r : 1;
}

int ptags_bpf_sets_add(ptags_bpf_sets *t, const char *text, size_t len, uint64_t kept_id,
                       ptags_bpf_set_entry **out)
{
        uint64_t id = t->next_id;
        if (len > UINT32_MAX) /* far above what a process may hold */
                return -EFBIG;
        if (kept_id == UINT64_MAX)
                kept_id = id;
        if (t->path) {
                int r = journal_ready(t);
                if (r < 0)
                        return r;
                struct rec_head h = make_head(REC_ADD, id, kept_id, text, len);
                r = append(t, &h, HEAD_LEN, text, len);
                if (r < 0)
                        return r;
        }
        /* The id is spent once its record may be on disk, whatever follows. */
        t->next_id++;
        ptags_bpf_set_entry *e = insert(t, id, kept_id, text, len);
        if (!e) {
                if (t->path) {
                        struct rec_head h = make_head(REC_DROP, id, 0, NULL, 0);
                        if (append(t, &h, HEAD_LEN, NULL, 0) < 0)
                                t->must_rewrite = true;
                }
                return -ENOMEM;
        }
        t->added_bytes += rec_size(e);
        *out = e;
        return 0;
}

static bool compaction_due(const ptags_bpf_sets *t)
{
        uint64_t garbage = t->file_size > t->live_bytes ? t->file_size - t->live_bytes : 0;
        return t->path &&
               (t->must_rewrite || (garbage > COMPACT_MIN_GARBAGE && garbage > t->live_bytes));
}

int ptags_bpf_sets_retain(ptags_bpf_sets *t, bool (*keep)(ptags_bpf_set_entry *e, void *data),
                          void *data, void (*removed)(uint64_t id, void *data), size_t *dropped)
{
        struct rec_head *drops = NULL;
        size_t n = 0, cap = 0;
        int r = 0;
        for (ptags_bpf_set_entry *e = t->first, *next; e; e = next) {
                next = e->next;
                if (keep(e, data))
                        continue;
                if (t->path && r == 0 && n == cap) {
                        size_t c = cap ? cap * 2 : 64;
                        struct rec_head *v = realloc(drops, c * sizeof(*v));
                        if (v) {
                                drops = v;
                                cap = c;
                        } else {
                                /* The journal keeps the set: a reload
                                 * revives it as garbage until the rewrite. */
                                r = -ENOMEM;
                                t->must_rewrite = true;
                        }
                }
                if (t->path && n < cap)
                        drops[n++] = make_head(REC_DROP, e->id, 0, NULL, 0);
                if (removed)
                        removed(e->id, data);
                unlink_entry(t, e);
                (*dropped)++;
        }
        /* Unlinked from memory above, so a rewrite has dropped them. */
        if (n > 0 && journal_ready(t) == 0 && append(t, drops, n * HEAD_LEN, NULL, 0) < 0)
                t->must_rewrite = true;
        free(drops);
        maybe_shrink(t);
        if (compaction_due(t)) {
                int c = ptags_bpf_sets_compact(t);
                if (r == 0)
                        r = c;
        }
        return r;
}

int ptags_bpf_sets_remove(ptags_bpf_sets *t, ptags_bpf_set_entry *e)
{
        uint64_t id = e->id;
        unlink_entry(t, e);
        if (!t->path)
                return 0;
        struct rec_head h = make_head(REC_DROP, id, 0, NULL, 0);
        int r = journal_ready(t);
        if (r == 0)
                r = append(t, &h, HEAD_LEN, NULL, 0);
        return r < 0 ? r : 0;
}

int ptags_bpf_sets_forget(ptags_bpf_sets *t)
{
        entries_free(t);
        close_journal(t);
        t->next_id = 1;
        t->must_rewrite = false;
        if (t->path && unlink(t->path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

/* ---------------------------------------------------------------- load */

/* Parses "ID KEPT LEN\n" at *pos (format 1); advances past the newline. */
static bool parse_legacy_header(const char *buf, size_t len, size_t *pos, uint64_t v[3])
{
        size_t p = *pos;
        for (int f = 0; f < 3; f++) {
                uint64_t x = 0;
                size_t start = p;
                while (p < len && buf[p] >= '0' && buf[p] <= '9') {
                        if (x > (UINT64_MAX - 9) / 10)
                                return false;
                        x = x * 10 + (uint64_t)(buf[p++] - '0');
                }
                if (p == start || p >= len || buf[p] != (f == 2 ? '\n' : ' '))
                        return false;
                p++;
                v[f] = x;
        }
        *pos = p;
        return true;
}

/* The text table of earlier versions ("ptags-sets 1 NEXT\n", then "ID KEPT
 * LEN\n" and the text per set), read once so an upgrade keeps every id. */
static int load_legacy(ptags_bpf_sets *t, const char *buf, size_t len, char *err, size_t err_size)
{
        size_t pos = strlen(LEGACY_MAGIC);
        uint64_t v[3], next = 0;
        while (pos < len && buf[pos] >= '0' && buf[pos] <= '9' && next < UINT64_MAX / 10)
                next = next * 10 + (uint64_t)(buf[pos++] - '0');
        if (pos >= len || buf[pos] != '\n') {
                snprintf(err, err_size, "set table %s: bad header", t->path);
                return -EBADMSG;
        }
        pos++;
        while (pos < len) {
                size_t at = pos;
                if (!parse_legacy_header(buf, len, &pos, v) || v[2] > len - pos || v[0] == 0 ||
                    v[0] >= next || v[1] >= next || ptags_bpf_sets_by_id(t, v[0])) {
                        snprintf(err, err_size, "set table %s: bad entry at byte %zu", t->path, at);
                        return -EBADMSG;
                }
                if (!insert(t, v[0], v[1], buf + pos, (size_t)v[2])) {
                        snprintf(err, err_size, "set table %s: out of memory", t->path);
                        return -ENOMEM;
                }
                pos += (size_t)v[2];
        }
        t->next_id = next;
        return 0;
}

/* Replays the journal; *good_end gets the end of its last whole record. */
static int load_journal(ptags_bpf_sets *t, const char *buf, size_t len, size_t *good_end, char *err,
                        size_t err_size)
{
        size_t pos = MAGIC_LEN;
        uint64_t next = 1;
        while (len - pos >= HEAD_LEN) {
                struct rec_head h;
                memcpy(&h, buf + pos, HEAD_LEN);
                const char *text = buf + pos + HEAD_LEN;
                const char *bad = NULL;
                ptags_bpf_set_entry *e;
                if (h.head_crc != head_crc(&h)) {
                        bad = "checksum mismatch";
                } else if (h.len > len - pos - HEAD_LEN) {
                        /* A whole head whose record runs past the end: the
                         * torn tail a killed writer leaves. */
                        break;
                } else if (h.text_crc != crc32c(0, text, h.len)) {
                        bad = "checksum mismatch";
                } else if (h.type == REC_ADD) {
                        if (h.id == 0 || h.id == UINT64_MAX || ptags_bpf_sets_by_id(t, h.id))
                                bad = "duplicate or invalid set id";
                        else if (h.kept > h.id)
                                bad = "kept subset newer than its set";
                        else if (!insert(t, h.id, h.kept, text, (size_t)h.len)) {
                                snprintf(err, err_size, "set table %s: out of memory", t->path);
                                return -ENOMEM;
                        }
                        if (!bad && h.id >= next)
                                next = h.id + 1;
                } else if (h.type == REC_DROP) {
                        if (!(e = ptags_bpf_sets_by_id(t, h.id)) || h.len != 0)
                                bad = "drop of an unknown set";
                        else
                                unlink_entry(t, e);
                } else if (h.type == REC_NEXT && h.len == 0) {
                        if (h.id > next)
                                next = h.id;
                } else {
                        bad = "unknown record";
                }
                if (bad) {
                        snprintf(err, err_size, "set table %s: %s in the record at byte %zu",
                                 t->path, bad, pos);
                        return -EBADMSG;
                }
                pos += HEAD_LEN + (size_t)h.len;
        }
        for (ptags_bpf_set_entry *e = t->first; e; e = e->next)
                if (e->kept_id != 0 && e->kept_id != e->id &&
                    !ptags_bpf_sets_by_id(t, e->kept_id)) {
                        snprintf(err, err_size,
                                 "set table %s: set %" PRIu64 " lacks its kept "
                                 "subset %" PRIu64,
                                 t->path, e->id, e->kept_id);
                        return -EBADMSG;
                }
        t->next_id = next;
        *good_end = pos;
        return 0;
}

int ptags_bpf_sets_load(ptags_bpf_sets *t, char *err, size_t err_size)
{
        struct stat st;
        entries_free(t);
        close_journal(t);
        t->next_id = 1;
        t->must_rewrite = false;
        if (!t->path)
                return 0;
        /* A compaction killed before its rename left this behind. */
        size_t tmp_len = strlen(t->path) + 5;
        char *tmp = malloc(tmp_len);
        if (!tmp)
                return -ENOMEM;
        snprintf(tmp, tmp_len, "%s.tmp", t->path);
        unlink(tmp);
        free(tmp);

        int fd = open(t->path, O_RDWR | O_CLOEXEC);
        if (fd < 0 && errno == ENOENT) {
                int r = ptags_bpf_sets_compact(t);
                if (r < 0)
                        snprintf(err, err_size, "cannot create set table %s: %s", t->path,
                                 strerror(-r));
                return r;
        }
        if (fd < 0 || fstat(fd, &st) < 0) {
                int r = -errno;
                snprintf(err, err_size, "cannot read set table %s: %s", t->path, strerror(-r));
                if (fd >= 0)
                        close(fd);
                return r;
        }
        size_t len = (size_t)st.st_size, good_end = 0;
        char *map = NULL;
        if (len > 0) {
                map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
                if (map == MAP_FAILED) {
                        int r = -errno;
                        snprintf(err, err_size, "cannot read set table %s: %s", t->path,
                                 strerror(-r));
                        close(fd);
                        return r;
                }
        }
        int r = 0;
        if (len >= MAGIC_LEN && memcmp(map, MAGIC, MAGIC_LEN) == 0) {
                r = load_journal(t, map, len, &good_end, err, err_size);
        } else if (len >= strlen(LEGACY_MAGIC) &&
                   memcmp(map, LEGACY_MAGIC, strlen(LEGACY_MAGIC)) == 0) {
                r = load_legacy(t, map, len, err, err_size);
                /* Nothing may be appended to the old format. */
                t->must_rewrite = true;
        } else if (len < MAGIC_LEN && memcmp(map ? map : "", MAGIC, len) == 0) {
                /* Killed while the first compaction wrote the magic? Not
                 * possible (it renames a whole file), but empty is empty. */
                t->must_rewrite = true;
        } else {
                snprintf(err, err_size, "set table %s: not a ptags set table", t->path);
                r = -EBADMSG;
        }
        if (map)
                munmap(map, len);
        if (r < 0) {
                entries_free(t);
                t->next_id = 1;
                t->must_rewrite = false;
                close(fd);
                return r;
        }
        t->fd = fd;
        t->file_size = good_end;
        if (good_end < len && !t->must_rewrite && ftruncate(fd, (off_t)good_end) < 0)
                t->must_rewrite = true;
        /* Garbage left by the last run goes now, so start-up and space stay
         * linear in the live sets; a failure here only delays it. */
        if (compaction_due(t))
                ptags_bpf_sets_compact(t);
        return 0;
}
