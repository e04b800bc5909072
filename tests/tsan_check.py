#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# SPDX-FileCopyrightText: 2026 The ptags authors
# tsan_check.py: reads the ThreadSanitizer reports of a ptagsd run and fails
# on any that involve ptagsd's own code off the main thread: the reads and
# root's changes answered in GDBus's worker thread (bus-thread.c) and
# everything they share with the main loop.
#
# Usage: tsan_check.py REPORT_FILE...
#
# GLib is not built with ThreadSanitizer, so GDBus's own handoffs between
# its worker thread and the main thread (a message built on one, written
# or freed on the other, under GLib's futex locks) are reported although
# they are ordered. Those reports show no ptagsd frame on the worker side,
# or are a GLib object freed on one thread after ptagsd's code read it on
# the other (GLib's atomic reference counts order that), or memory GLib
# allocated and filled on the main thread that ptagsd's code read on the
# worker after GDBus handed it over (a message being sent); they are
# counted, and only the others are failures.

import re
import sys

ACCESS = re.compile(r"^\s*(?:Previous )?(?:atomic )?(?:[Rr]ead|[Ww]rite|Mutex|Lock)\b.*\bby "
                    r"(main thread|thread T\d+)")
LOST = "[failed to restore the stack]"
FRAME = re.compile(r"^\s*#\d+ (\S+) (\S+)")


def sections(block):
    """(who, frames) for each access stack of one report; frames are
    (function, file) pairs."""
    who, frames, out = None, [], []
    for line in block.splitlines():
        m = ACCESS.match(line)
        if m:
            if who is not None:
                out.append((who, frames))
            who, frames = m.group(1), []
            continue
        if line.strip().startswith(("Location is", "Thread T", "Mutex M", "SUMMARY")):
            if who is not None:
                out.append((who, frames))
            who, frames = None, []
            continue
        f = FRAME.match(line)
        if f and who is not None:
            frames.append((f.group(1), f.group(2)))
    if who is not None:
        out.append((who, frames))
    return out


def glib_free(frames):
    """A free() inside a GLib unref: the end of an object's life, ordered by
    GLib's atomic reference counts, which ThreadSanitizer cannot see."""
    names = [fn for fn, _ in frames[:3]]
    return bool(names) and names[0] == "free" and any(
        re.match(r"g_\w*_unref$|g_\w*_free\w*$", fn) for fn in names[1:])


def glib_alloc(who, frames):
    """The main thread's side is the allocation itself, by GLib: memory only
    GLib (not instrumented) then filled, such as a message GDBus built on the
    main thread and handed to its worker thread, where ptagsd's filters read
    it. A field ptagsd's own code wrote would show that write instead."""
    names = [fn for fn, _ in frames[:3]]
    return who == "main thread" and bool(names) and names[0] in ("malloc", "calloc", "realloc") \
        and any(re.match(r"g_(malloc|realloc|try_malloc)\w*$", fn) for fn in names[1:])


def glib_copy(who, frames):
    """The main thread's side is GLib copying into memory it had just
    allocated (g_memdup2 or g_strdup behind g_variant_new_string, say): the
    same handoff as glib_alloc, seen at the fill instead of the malloc. The
    frames below GLib's are not to be trusted (GLib has no frame pointers),
    so they are not read. A racy pointer to such a copy would be reported
    at the pointer, written by ptagsd's code."""
    names = [fn for fn, _ in frames]
    if who != "main thread" or not names or names[0] not in ("memcpy", "memmove", "strcpy"):
        return False
    # The interceptor may show twice; the first frame past it is the caller.
    caller = next((n for n in names if n != names[0]), None)
    return caller in ("g_memdup2", "g_memdup", "g_strdup", "g_strndup")


def ours(frames):
    return [fn for fn, where in frames if "src/daemon/" in where or "src/bpf/" in where
            or "src/model/" in where]


def main(paths):
    found = glib_only = 0
    failures = []
    for path in paths:
        with open(path, errors="replace") as f:
            text = f.read()
        for block in text.split("==================\n"):
            if "WARNING: ThreadSanitizer" not in block:
                continue
            found += 1
            kind = block.strip().splitlines()[0]
            secs = sections(block)
            off_main = [(who, ours(fr)) for who, fr in secs if who != "main thread"]
            handoff = "data race" in kind and any(
                glib_free(fr) or glib_alloc(who, fr) or glib_copy(who, fr) for who, fr in secs)
            if handoff:
                glib_only += 1
            elif any(fns for _, fns in off_main) or ("data race" not in kind and ours(
                    [fr for _, frames in sections(block) for fr in frames])):
                failures.append(block)
            else:
                glib_only += 1
    print("tsan: %d reports, %d inside GLib's own thread handoffs, %d in ptagsd's code "
          "off the main thread" % (found, glib_only, len(failures)))
    for block in failures:
        print("==================\n" + block)
        if LOST in block:
            print("tsan: ThreadSanitizer kept no stack for one side of this race (its history "
                  "of that thread had wrapped), so it cannot be judged; raise history_size")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
