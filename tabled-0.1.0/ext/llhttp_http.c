/* Compiles llhttp's generated http.c as shipped by Debian's node-llhttp
 * package (found by configure; nothing is copied into this tree). */
#include <http.c>
