/* ptags-bpf-sets.c: the tag-set table behind the BPF backend's set ids,
 * with a crash-safe file so a restarted daemon can resolve every id. */
#include "ptags-bpf-sets.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ptags-model.h"

#define SETS_MAGIC "ptags-sets 1"

static uint64_t text_hash(const char *s, size_t len)
{
        /* FNV-1a: only used to skip most comparisons. */
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i < len; i++) {
                h ^= (unsigned char)s[i];
                h *= 1099511628211ull;
        }
        return h;
}

int ptags_bpf_sets_init(ptags_bpf_sets *t, const char *path)
{
        memset(t, 0, sizeof(*t));
        t->next_id = 1;
        if (path) {
                t->path = strdup(path);
                if (!t->path)
                        return -ENOMEM;
        }
        return 0;
}

static void entries_free(ptags_bpf_sets *t)
{
        for (size_t i = 0; i < t->count; i++)
                free(t->entries[i].text);
        free(t->entries);
        t->entries = NULL;
        t->count = t->capacity = 0;
}

void ptags_bpf_sets_clear(ptags_bpf_sets *t)
{
        entries_free(t);
        free(t->path);
        t->path = NULL;
}

ptags_bpf_set_entry *ptags_bpf_sets_by_text(const ptags_bpf_sets *t, const char *text, size_t len)
{
        uint64_t h = text_hash(text, len);
        for (size_t i = 0; i < t->count; i++) {
                ptags_bpf_set_entry *e = &t->entries[i];
                if (e->hash == h && e->len == len && memcmp(e->text, text, len) == 0)
                        return e;
        }
        return NULL;
}

ptags_bpf_set_entry *ptags_bpf_sets_by_id(const ptags_bpf_sets *t, uint64_t id)
{
        for (size_t i = 0; i < t->count; i++)
                if (t->entries[i].id == id)
                        return &t->entries[i];
        return NULL;
}

static ptags_bpf_set_entry *insert(ptags_bpf_sets *t, uint64_t id, uint64_t kept_id,
                                   const char *text, size_t len)
{
        if (t->count == t->capacity) {
                size_t cap = t->capacity ? t->capacity * 2 : 16;
                ptags_bpf_set_entry *v = realloc(t->entries, cap * sizeof(*v));
                if (!v)
                        return NULL;
                t->entries = v;
                t->capacity = cap;
        }
        char *copy = malloc(len + 1);
        if (!copy)
                return NULL;
        memcpy(copy, text, len);
        copy[len] = '\0';
        ptags_bpf_set_entry *e = &t->entries[t->count++];
        *e = (ptags_bpf_set_entry){.id = id,
                                   .kept_id = kept_id,
                                   .hash = text_hash(text, len),
                                   .text = copy,
                                   .len = len};
        return e;
}

ptags_bpf_set_entry *ptags_bpf_sets_add(ptags_bpf_sets *t, const char *text, size_t len,
                                        uint64_t kept_id)
{
        uint64_t id = t->next_id;
        ptags_bpf_set_entry *e = insert(t, id, kept_id == UINT64_MAX ? id : kept_id, text, len);
        if (e)
                t->next_id++;
        return e;
}

size_t ptags_bpf_sets_retain(ptags_bpf_sets *t, bool (*keep)(uint64_t id, void *data), void *data,
                             void (*removed)(uint64_t id, void *data))
{
        size_t out = 0, dropped = 0;
        for (size_t i = 0; i < t->count; i++) {
                if (keep(t->entries[i].id, data)) {
                        t->entries[out++] = t->entries[i];
                        continue;
                }
                if (removed)
                        removed(t->entries[i].id, data);
                free(t->entries[i].text);
                dropped++;
        }
        t->count = out;
        return dropped;
}

static int write_all(int fd, const char *buf, size_t len)
{
        while (len > 0) {
                ssize_t n = write(fd, buf, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                buf += n;
                len -= (size_t)n;
        }
        return 0;
}

int ptags_bpf_sets_save(const ptags_bpf_sets *t)
{
        char head[96];
        int fd, r = 0;

        if (!t->path)
                return 0;
        size_t tmp_len = strlen(t->path) + 5;
        char *tmp = malloc(tmp_len);
        if (!tmp)
                return -ENOMEM;
        snprintf(tmp, tmp_len, "%s.tmp", t->path);
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) {
                r = -errno;
                free(tmp);
                return r;
        }
        int n = snprintf(head, sizeof(head), SETS_MAGIC " %" PRIu64 "\n", t->next_id);
        r = write_all(fd, head, (size_t)n);
        for (size_t i = 0; r == 0 && i < t->count; i++) {
                const ptags_bpf_set_entry *e = &t->entries[i];
                n = snprintf(head, sizeof(head), "%" PRIu64 " %" PRIu64 " %zu\n", e->id, e->kept_id,
                             e->len);
                r = write_all(fd, head, (size_t)n);
                if (r == 0)
                        r = write_all(fd, e->text, e->len);
        }
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        if (close(fd) < 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(tmp, t->path) < 0)
                r = -errno;
        if (r < 0)
                unlink(tmp);
        free(tmp);
        return r;
}

int ptags_bpf_sets_forget(ptags_bpf_sets *t)
{
        entries_free(t);
        t->next_id = 1;
        if (t->path && unlink(t->path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

static char *read_file(const char *path, size_t *len)
{
        FILE *f = fopen(path, "re");
        if (!f)
                return NULL;
        size_t cap = 4096, used = 0;
        char *buf = malloc(cap + 1);
        while (buf) {
                size_t n = fread(buf + used, 1, cap - used, f);
                used += n;
                if (used < cap)
                        break;
                cap *= 2;
                char *bigger = realloc(buf, cap + 1);
                if (!bigger) {
                        free(buf);
                        buf = NULL;
                }
                buf = bigger;
        }
        int failed = ferror(f);
        fclose(f);
        if (buf && failed) {
                free(buf);
                errno = EIO;
                return NULL;
        }
        if (buf) {
                buf[used] = '\0';
                *len = used;
        } else {
                errno = ENOMEM;
        }
        return buf;
}

/* Parses "ID KEPT LEN\n" at *pos; advances past the newline. */
static bool parse_header(const char *buf, size_t len, size_t *pos, uint64_t *a, uint64_t *b,
                         uint64_t *c)
{
        uint64_t *fields[3] = {a, b, c};
        size_t p = *pos;
        for (int f = 0; f < 3; f++) {
                uint64_t v = 0;
                size_t start = p;
                while (p < len && buf[p] >= '0' && buf[p] <= '9') {
                        if (v > (UINT64_MAX - 9) / 10)
                                return false;
                        v = v * 10 + (uint64_t)(buf[p++] - '0');
                }
                if (p == start || p >= len || buf[p] != (f == 2 ? '\n' : ' '))
                        return false;
                p++;
                *fields[f] = v;
        }
        *pos = p;
        return true;
}

int ptags_bpf_sets_load(ptags_bpf_sets *t, char *err, size_t err_size)
{
        size_t len = 0, pos, magic_len = strlen(SETS_MAGIC " ");
        uint64_t id, kept, text_len, next = 0;

        entries_free(t);
        t->next_id = 1;
        if (!t->path)
                return 0;
        char *buf = read_file(t->path, &len);
        if (!buf) {
                if (errno == ENOENT)
                        return 0;
                snprintf(err, err_size, "cannot read set table %s: %s", t->path, strerror(errno));
                return -errno;
        }
        int r = -EBADMSG;
        if (len < magic_len || memcmp(buf, SETS_MAGIC " ", magic_len) != 0) {
                snprintf(err, err_size, "set table %s: not a ptags set table", t->path);
                goto out;
        }
        pos = magic_len;
        {
                /* "next" shares the number parser with the entry headers. */
                uint64_t v = 0;
                size_t start = pos;
                while (pos < len && buf[pos] >= '0' && buf[pos] <= '9' && v < UINT64_MAX / 10)
                        v = v * 10 + (uint64_t)(buf[pos++] - '0');
                if (pos == start || pos >= len || buf[pos] != '\n') {
                        snprintf(err, err_size, "set table %s: bad header", t->path);
                        goto out;
                }
                pos++;
                next = v;
        }
        while (pos < len) {
                size_t at = pos;
                ptags_set *parsed = NULL;
                if (!parse_header(buf, len, &pos, &id, &kept, &text_len) || text_len > len - pos ||
                    id == 0 || id >= next || kept >= next ||
                    ptags_set_parse(buf + pos, (size_t)text_len, &parsed, NULL) != PTAGS_OK ||
                    ptags_bpf_sets_by_id(t, id)) {
                        ptags_set_free(parsed);
                        snprintf(err, err_size, "set table %s: bad entry at byte %zu", t->path, at);
                        goto out;
                }
                ptags_set_free(parsed);
                if (!insert(t, id, kept, buf + pos, (size_t)text_len)) {
                        r = -ENOMEM;
                        snprintf(err, err_size, "set table %s: out of memory", t->path);
                        goto out;
                }
                pos += (size_t)text_len;
        }
        t->next_id = next;
        r = 0;
out:
        if (r < 0)
                entries_free(t);
        free(buf);
        return r;
}
