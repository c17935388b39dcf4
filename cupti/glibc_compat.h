/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * glibc_compat.h - the oldest glibc symbol versions, so that librankscope_cupti.so, built on a
 * current Debian, loads into training images with an older glibc (Ubuntu 20.04 and the NGC
 * images of its age have 2.31). glibc 2.34 moved the pthread and dl functions into libc.so.6
 * under new versions; libc.so.6 keeps the old ones (x86_64: GLIBC_2.2.5), and so do
 * libpthread.so.0 and libdl.so.2 of older glibc, which the library therefore lists as needed
 * (see the Makefile). The floor is then GLIBC_2.17 (clock_gettime); `make check` checks it
 * (tests/e2e/cupti_lib.sh). Included by every cupti/ source before anything else.
 */
#ifndef RS_GLIBC_COMPAT_H
#define RS_GLIBC_COMPAT_H

#include <features.h>	/* __GLIBC__ */

#if defined(__x86_64__) && defined(__GLIBC__) && !defined(RSC_NO_GLIBC_COMPAT)
#define RSC_OLD(sym) __asm__(".symver " #sym "," #sym "@GLIBC_2.2.5");
RSC_OLD(dlopen)
RSC_OLD(dlsym)
RSC_OLD(dlclose)
RSC_OLD(pthread_create)
RSC_OLD(pthread_detach)
RSC_OLD(pthread_sigmask)
RSC_OLD(pthread_mutex_timedlock)
#undef RSC_OLD
#endif

#endif /* RS_GLIBC_COMPAT_H */
