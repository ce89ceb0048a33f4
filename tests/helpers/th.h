/*
 * th.h - shared test helpers. CMocka 1.1 needs these headers before <cmocka.h>.
 */
#ifndef TH_H
#define TH_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

int th__placeholder(void);

#endif
