// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-lineage.c: the /proc facts behind the container rules (parent chain,
 * children, threads, start time) on real processes of this test. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lineage.h"

/* A child that forks a grandchild and waits; returns both pids. */
static pid_t spawn_chain(pid_t *grandchild)
{
        int fds[2];
        g_assert_cmpint(pipe(fds), ==, 0);
        pid_t child = fork();
        g_assert_cmpint(child, >=, 0);
        if (child == 0) {
                pid_t g = fork();
                if (g == 0) {
                        pause();
                        _exit(0);
                }
                (void)!write(fds[1], &g, sizeof(g));
                pause();
                _exit(0);
        }
        g_assert_cmpint(read(fds[0], grandchild, sizeof(*grandchild)), ==, sizeof(*grandchild));
        close(fds[0]);
        close(fds[1]);
        return child;
}

static void test_chain(void)
{
        pid_t grandchild = 0;
        pid_t child = spawn_chain(&grandchild);

        g_assert_cmpint(ptags_lineage_parent(child), ==, getpid());
        g_assert_cmpint(ptags_lineage_parent(grandchild), ==, child);
        g_assert_true(ptags_lineage_is_descendant(grandchild, getpid()));
        g_assert_true(ptags_lineage_is_descendant(grandchild, child));
        g_assert_false(ptags_lineage_is_descendant(child, grandchild));
        g_assert_false(ptags_lineage_is_descendant(child, child));
        g_assert_false(ptags_lineage_is_descendant(getpid(), child));
        g_assert_true(ptags_lineage_has_children(child));
        g_assert_false(ptags_lineage_has_children(grandchild));
        g_assert_cmpuint(ptags_lineage_threads(child), ==, 1);

        /* Descendants, nearest first, bounded. */
        gboolean complete = FALSE;
        g_autoptr(GArray) all = ptags_lineage_descendants(child, 16, &complete);
        g_assert_true(complete);
        g_assert_cmpuint(all->len, ==, 1);
        g_assert_cmpint(g_array_index(all, PtagsLineageChild, 0).pid, ==, grandchild);
        g_assert_cmpint(g_array_index(all, PtagsLineageChild, 0).parent, ==, child);
        g_autoptr(GArray) mine = ptags_lineage_descendants(getpid(), 16, &complete);
        g_assert_true(complete);
        g_assert_cmpuint(mine->len, ==, 2);
        g_assert_cmpint(g_array_index(mine, PtagsLineageChild, 0).pid, ==, child);
        g_assert_cmpint(g_array_index(mine, PtagsLineageChild, 1).pid, ==, grandchild);
        g_autoptr(GArray) cut = ptags_lineage_descendants(getpid(), 1, &complete);
        g_assert_false(complete);
        g_assert_cmpuint(cut->len, ==, 1);
        g_autoptr(GArray) none = ptags_lineage_descendants(grandchild, 16, &complete);
        g_assert_true(complete);
        g_assert_cmpuint(none->len, ==, 0);

        guint64 start = ptags_lineage_start_time(child);
        g_assert_cmpuint(start, >, 0);
        g_assert_cmpuint(start, ==, ptags_lineage_start_time(child));
        g_assert_cmpuint(start, >=, ptags_lineage_start_time(getpid()));

        kill(grandchild, SIGKILL);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        g_assert_cmpint(ptags_lineage_parent(child), ==, 0);
        g_assert_cmpuint(ptags_lineage_threads(child), ==, 0);
        g_assert_cmpuint(ptags_lineage_start_time(child), ==, 0);
}

static gpointer sleeper(gpointer data)
{
        g_usleep(G_USEC_PER_SEC / 2);
        return NULL;
}

static void test_threads(void)
{
        guint before = ptags_lineage_threads(getpid());
        GThread *t = g_thread_new("sleeper", sleeper, NULL);

        g_assert_cmpuint(ptags_lineage_threads(getpid()), ==, before + 1);
        g_thread_join(t);
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/lineage/chain", test_chain);
        g_test_add_func("/lineage/threads", test_threads);
        return g_test_run();
}
