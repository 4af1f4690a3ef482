/* Compiles llhttp's generated llhttp.c as shipped by Debian's node-llhttp
 * package (found by configure; nothing is copied into this tree). */
#include <llhttp.c>
