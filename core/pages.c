/* pages.c - zeroed memory that costs resident pages only once it is used
 * (pages.h). */
#include "core/pages.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* n rounded up to whole pages. */
static size_t page_round(size_t n)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    return (n + pg - 1) / pg * pg;
}

void *pages_zalloc(size_t n)
{
    void *p = mmap(NULL, page_round(n ? n : 1), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        abort();
    return p;
}

void pages_free(void *p, size_t n)
{
    if (p)
        munmap(p, page_round(n ? n : 1));
}
