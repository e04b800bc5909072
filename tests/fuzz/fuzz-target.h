// SPDX-License-Identifier: GPL-2.0-or-later
// SPDX-FileCopyrightText: 2026 The ptags authors
/* fuzz-target.h: the libFuzzer entry point of fuzz-model.c, shared with the
 * corpus replay driver that runs the same checks in every normal build. */
#pragma once

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
