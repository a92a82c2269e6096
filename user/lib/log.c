// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "lib/log.h"

int gl_verbosity;
