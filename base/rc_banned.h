/*
 * rc_banned.h - functions we do not use, made compile errors (after git's banned.h).
 * Include it last in a .c file (after the system headers, whose prototypes it would break).
 * .ci/run also greps the tree for these names, so a file that forgets it is still caught.
 */
#ifndef RC_BANNED_H
#define RC_BANNED_H

#define RC_BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) RC_BANNED(strcpy)
#undef strcat
#define strcat(x, y) RC_BANNED(strcat)
#undef sprintf
#define sprintf(...) RC_BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) RC_BANNED(vsprintf)
#undef strtok
#define strtok(x, y) RC_BANNED(strtok)
#undef atoi
#define atoi(x) RC_BANNED(atoi)
#undef localtime
#define localtime(x) RC_BANNED(localtime)
#undef gets
#define gets(x) RC_BANNED(gets)

#endif
