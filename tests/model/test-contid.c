// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* test-contid.c: audit container IDs: what a write may hold, every rule of
 * the kernel's decision alone and every pair at once (the earlier rule must
 * win), nesting, and the printed chain. */
#include <errno.h>
#include <string.h>

#include "model-test-util.h"

static void test_parse(void)
{
        static const struct {
                const char *text;
                bool ok;
                uint64_t value;
        } rows[] = {
                {"0", true, 0},
                {"5", true, 5},
                {"5\n", true, 5},
                {"007", true, 7},
                {"18446744073709551614", true, UINT64_MAX - 1},
                {"18446744073709551615", true, UINT64_MAX}, /* parses; the decision refuses */
                {"18446744073709551616", false, 0},
                {"99999999999999999999", false, 0},
                {"184467440737095516150", false, 0},
                {"", false, 0},
                {"\n", false, 0},
                {"5\n\n", false, 0},
                {"\n5", false, 0},
                {"-1", false, 0},
                {"+1", false, 0},
                {" 1", false, 0},
                {"1 ", false, 0},
                {"0x10", false, 0},
                {"1a", false, 0},
                {"5\r\n", false, 0},
        };
        for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
                uint64_t v = 42;
                test_note("contid", rows[i].text);
                g_assert_cmpint(ptags_contid_parse(rows[i].text, strlen(rows[i].text), &v), ==,
                                rows[i].ok);
                g_assert_cmpuint(v, ==, rows[i].ok ? rows[i].value : 42);
        }
        uint64_t v = 0;
        g_assert_false(ptags_contid_parse("1\0", 2, &v));
        g_assert_true(ptags_contid_parse("12", 1, &v)); /* length, not NUL, ends it */
        g_assert_cmpuint(v, ==, 1);
}

/* Facts that pass every rule: a fresh child of the orchestrator. */
static ptags_contid_facts good_facts(void)
{
        return (ptags_contid_facts){
                .target_exists = true,
                .value_ok = true,
                .requested = 5,
                .writer_cap_audit_control = true,
                .target_has_children = false,
                .target_threads = 1,
                .target_is_writer = false,
                .target_is_descendant = true,
                .writer_is_root_exempt = false,
                .target_current = PTAGS_CONTID_UNSET,
                .writer_current = PTAGS_CONTID_UNSET,
                .requested_in_use = false,
                .requested_owned_by_writer = false,
        };
}

/* Each way to break one rule, in the kernel's order. */
typedef struct {
        const char *what;
        int err;
        void (*breaks)(ptags_contid_facts *f);
} rule_breaker;

static void gone(ptags_contid_facts *f)
{
        f->target_exists = false;
}
static void partial_write(ptags_contid_facts *f)
{
        f->value_ok = false;
}
static void unset_value(ptags_contid_facts *f)
{
        f->requested = PTAGS_CONTID_UNSET;
}
static void no_cap(ptags_contid_facts *f)
{
        f->writer_cap_audit_control = false;
}
static void has_children(ptags_contid_facts *f)
{
        f->target_has_children = true;
}
static void has_threads(ptags_contid_facts *f)
{
        f->target_threads = 2;
}
static void is_writer(ptags_contid_facts *f)
{
        f->target_is_writer = true;
}
static void not_descendant(ptags_contid_facts *f)
{
        f->target_is_descendant = false;
}
static void already_set(ptags_contid_facts *f)
{
        f->target_current = 9;
        f->writer_current = 8;
}
static void in_use_elsewhere(ptags_contid_facts *f)
{
        f->requested_in_use = true;
        f->requested_owned_by_writer = false;
}

static const rule_breaker breakers[] = {
        {"target gone", ESRCH, gone},
        {"partial write", EINVAL, partial_write},
        {"unset value", EINVAL, unset_value},
        {"no CAP_AUDIT_CONTROL", EPERM, no_cap},
        {"children", EBUSY, has_children},
        {"threads", EBUSY, has_threads},
        {"target is writer", EXDEV, is_writer},
        {"not a descendant", EXDEV, not_descendant},
        {"already has an ID", EEXIST, already_set},
        {"ID in use elsewhere", ENOTUNIQ, in_use_elsewhere},
};

static void test_each_rule(void)
{
        ptags_contid_facts f = good_facts();
        bool nesting = true;
        g_assert_cmpint(ptags_contid_decide(&f, &nesting), ==, 0);
        g_assert_false(nesting);
        g_assert_cmpint(ptags_contid_decide(&f, NULL), ==, 0);
        for (size_t i = 0; i < G_N_ELEMENTS(breakers); i++) {
                f = good_facts();
                breakers[i].breaks(&f);
                nesting = true;
                g_test_message("%s", breakers[i].what);
                g_assert_cmpint(ptags_contid_decide(&f, &nesting), ==, breakers[i].err);
                g_assert_false(nesting);
        }
}

static void test_each_pair(void)
{
        for (size_t i = 0; i < G_N_ELEMENTS(breakers); i++) {
                for (size_t j = i + 1; j < G_N_ELEMENTS(breakers); j++) {
                        ptags_contid_facts f = good_facts();
                        breakers[i].breaks(&f);
                        breakers[j].breaks(&f);
                        g_test_message("%s + %s", breakers[i].what, breakers[j].what);
                        g_assert_cmpint(ptags_contid_decide(&f, NULL), ==, breakers[i].err);
                        /* Applied in the other order, the earlier rule still wins. */
                        f = good_facts();
                        breakers[j].breaks(&f);
                        breakers[i].breaks(&f);
                        g_assert_cmpint(ptags_contid_decide(&f, NULL), ==, breakers[i].err);
                }
        }
}

static void test_exemptions(void)
{
        ptags_contid_facts f = good_facts();
        bool nesting = false;
        /* Root over D-Bus skips the descendant rule, never the self rule. */
        f.target_is_descendant = false;
        f.writer_is_root_exempt = true;
        g_assert_cmpint(ptags_contid_decide(&f, NULL), ==, 0);
        f.target_is_writer = true;
        g_assert_cmpint(ptags_contid_decide(&f, NULL), ==, EXDEV);

        /* Nesting: the writer runs inside the target's container. */
        f = good_facts();
        f.target_current = 3;
        f.writer_current = 3;
        g_assert_cmpint(ptags_contid_decide(&f, &nesting), ==, 0);
        g_assert_true(nesting);
        /* Inside another container than the target's: EEXIST. */
        f.writer_current = 4;
        g_assert_cmpint(ptags_contid_decide(&f, &nesting), ==, EEXIST);
        g_assert_false(nesting);
        /* Both unset is not nesting. */
        f = good_facts();
        g_assert_cmpint(ptags_contid_decide(&f, &nesting), ==, 0);
        g_assert_false(nesting);
        /* Write-once: the registrant cannot change its own container's ID. */
        f.target_current = 5;
        f.requested = 6;
        g_assert_cmpint(ptags_contid_decide(&f, NULL), ==, EEXIST);

        /* The registrant may add more processes with the same value. */
        f = good_facts();
        f.requested_in_use = true;
        f.requested_owned_by_writer = true;
        g_assert_cmpint(ptags_contid_decide(&f, NULL), ==, 0);
        /* One thread is fine, zero (a zombie count) too. */
        f.target_threads = 0;
        g_assert_cmpint(ptags_contid_decide(&f, NULL), ==, 0);
        f.target_threads = 1;
        f.requested = 0;
        g_assert_cmpint(ptags_contid_decide(&f, NULL), ==, 0);
        f.requested = UINT64_MAX - 1;
        g_assert_cmpint(ptags_contid_decide(&f, NULL), ==, 0);
}

static void test_chain(void)
{
        char buf[64];
        const uint64_t ids[] = {5, 3, 1};
        g_assert_cmpuint(ptags_contid_format_chain(ids, 3, buf, sizeof(buf)), ==, 7);
        g_assert_cmpstr(buf, ==, "5,^3,^1");
        g_assert_cmpuint(ptags_contid_format_chain(ids, 1, buf, sizeof(buf)), ==, 1);
        g_assert_cmpstr(buf, ==, "5");
        g_assert_cmpuint(ptags_contid_format_chain(ids, 0, buf, sizeof(buf)), ==, 0);
        g_assert_cmpstr(buf, ==, "");
        /* snprintf-like: truncated but terminated, the full length returned. */
        memset(buf, 'X', sizeof(buf));
        g_assert_cmpuint(ptags_contid_format_chain(ids, 3, buf, 4), ==, 7);
        g_assert_cmpstr(buf, ==, "5,^");
        g_assert_cmpuint(ptags_contid_format_chain(ids, 3, NULL, 0), ==, 7);
        const uint64_t big[] = {UINT64_MAX - 1, 0};
        g_assert_cmpuint(ptags_contid_format_chain(big, 2, buf, sizeof(buf)), ==, 23);
        g_assert_cmpstr(buf, ==, "18446744073709551614,^0");
}

int main(int argc, char **argv)
{
        g_test_init(&argc, &argv, NULL);
        g_test_add_func("/contid/parse", test_parse);
        g_test_add_func("/contid/each-rule", test_each_rule);
        g_test_add_func("/contid/each-pair", test_each_pair);
        g_test_add_func("/contid/exemptions", test_exemptions);
        g_test_add_func("/contid/chain", test_chain);
        return g_test_run();
}
