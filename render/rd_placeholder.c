/*
 * rd_placeholder.c - keeps the render library non-empty until its modules land.
 */
int rd__placeholder(void);

int rd__placeholder(void)
{
    return 0;
}
