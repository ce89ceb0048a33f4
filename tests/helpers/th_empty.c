/*
 * th_empty.c - keeps the test helper library non-empty before any helper exists.
 */
#include "th.h"

int th__placeholder(void)
{
    return 0;
}
