// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* replay.c: runs every file of the fuzz corpus through the fuzz target's
 * checks, so normal builds and CI exercise them without libFuzzer. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz-target.h"

static int replay_file(const char *path)
{
        FILE *f = fopen(path, "rb");
        if (f == NULL) {
                perror(path);
                return -1;
        }
        size_t cap = 4096, len = 0;
        unsigned char *buf = malloc(cap);
        for (;;) {
                if (buf == NULL) {
                        fclose(f);
                        return -1;
                }
                len += fread(buf + len, 1, cap - len, f);
                if (len < cap)
                        break;
                cap *= 2;
                buf = realloc(buf, cap);
        }
        int failed = ferror(f);
        fclose(f);
        if (!failed)
                LLVMFuzzerTestOneInput(buf, len);
        free(buf);
        return failed ? -1 : 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
        return strcmp((*a)->d_name, (*b)->d_name);
}

int main(int argc, char **argv)
{
        size_t replayed = 0;
        for (int i = 1; i < argc; i++) {
                struct stat st;
                if (stat(argv[i], &st) != 0) {
                        perror(argv[i]);
                        return 1;
                }
                if (!S_ISDIR(st.st_mode)) {
                        if (replay_file(argv[i]) != 0)
                                return 1;
                        replayed++;
                        continue;
                }
                struct dirent **names;
                int n = scandir(argv[i], &names, NULL, by_name);
                if (n < 0) {
                        perror(argv[i]);
                        return 1;
                }
                for (int k = 0; k < n; k++) {
                        char path[4096];
                        if (names[k]->d_name[0] != '.' &&
                            snprintf(path, sizeof(path), "%s/%s", argv[i], names[k]->d_name) <
                                    (int)sizeof(path)) {
                                if (replay_file(path) != 0)
                                        return 1;
                                replayed++;
                        }
                        free(names[k]);
                }
                free(names);
        }
        printf("replayed %zu inputs\n", replayed);
        /* An empty or missing corpus is a broken test, not a pass. */
        return replayed > 0 ? 0 : 1;
}
