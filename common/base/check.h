// DMOE_CHECK: aborts on a broken programmer invariant. Never use it on bytes
// that came from a socket, a file or an HTTP body (those are Status values).
#pragma once

#include <cstdio>
#include <cstdlib>

#define DMOE_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: DMOE_CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)
