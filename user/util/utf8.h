/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* UTF-8 as the text formats rankscope writes need it: JSON strings and Prometheus labels. */
#ifndef RS_UTF8_H
#define RS_UTF8_H

#include <stddef.h>

/* Length of the valid UTF-8 sequence at s (at most n bytes, n >= 1), or 0 if it is not one:
 * a stray continuation byte, a truncated sequence, an overlong form, a surrogate, or a code
 * point past U+10FFFF. */
size_t utf8__len(const unsigned char *s, size_t n);

#endif /* RS_UTF8_H */
